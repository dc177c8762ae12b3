package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"syscall"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// hostProbeEvents is how many messages the host probe consumes.
const hostProbeEvents = 20000

// DemoCost is what the demo's process (clients, workers and embedded
// server together) spent per 1,000 lifecycle events, beside the host's
// raw consume+ack rate on the same embedded server, so that runs on a slow
// and a fast host can be compared.
type DemoCost struct {
	Events       int64   `json:"events"`
	CPUSeconds   float64 `json:"cpuSeconds"`
	CPUMsPer1000 float64 `json:"cpuMsPer1000Events"`
	// HostRawPerSecond is one durable pull consumer's consume+ack rate,
	// in the demo's process, over hostProbeEvents messages published
	// beforehand to a scratch stream of the demo's storage (0: not read).
	HostRawPerSecond float64     `json:"hostRawConsumeAckPerSecond"`
	LoadBefore       *[3]float64 `json:"loadBefore,omitempty"`
}

// processCPU is this process's user and system CPU so far.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// hostRate measures the host: hostProbeEvents messages of 512 bytes
// published to a scratch stream, then consumed and acknowledged by one
// durable pull consumer; the rate is from the first delivery to the last
// ack. The stream is deleted before it returns.
func hostRate(ctx context.Context, js jetstream.JetStream, storage jetstream.StorageType) (float64, error) {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	s, err := newScratch(ctx, js, jetstream.StreamConfig{Storage: storage})
	if err != nil {
		return 0, err
	}
	defer s.drop()
	body, msgs := bytes.Repeat([]byte("x"), 512), make([]*nats.Msg, hostProbeEvents)
	for i := range msgs {
		msgs[i] = &nats.Msg{Subject: fmt.Sprintf("%s.%d", s.subject, i), Data: body}
	}
	if err := publishAll(ctx, js, msgs); err != nil {
		return 0, err
	}
	c, err := js.Consumer(ctx, s.name, "raw")
	if err != nil {
		return 0, err
	}
	done := make(chan struct{})
	var n int
	var first time.Time
	cc, err := c.Consume(func(m jetstream.Msg) {
		if n == 0 {
			first = time.Now()
		}
		m.Ack()
		if n++; n == hostProbeEvents {
			close(done)
		}
	})
	if err != nil {
		return 0, err
	}
	defer cc.Stop()
	select {
	case <-done:
		return float64(n) / time.Since(first).Seconds(), nil
	case <-ctx.Done():
		return 0, ctx.Err()
	}
}

func (c *DemoCost) write(w io.Writer) {
	fmt.Fprintf(w, "  the demo's process (clients, workers, embedded server): %.1f s of CPU for %d lifecycle events, %.0f ms per 1,000\n",
		c.CPUSeconds, c.Events, c.CPUMsPer1000)
	if c.HostRawPerSecond > 0 {
		fmt.Fprintf(w, "  this host: raw consume+ack %.0f msg/s (one durable pull consumer on the demo's server, before the run)", c.HostRawPerSecond)
		if c.LoadBefore != nil {
			fmt.Fprintf(w, ", load %.2f %.2f %.2f", c.LoadBefore[0], c.LoadBefore[1], c.LoadBefore[2])
		}
		fmt.Fprintln(w)
	}
}
