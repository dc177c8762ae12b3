package main

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/prometheus/procfs"

	"github.com/carddrift/carddrift/events/service"
)

// costFlags say where bench and simulate read the deployment's CPU: serve's
// /metrics and a local NATS server's /proc/<pid>/stat.
type costFlags struct {
	metricsURL string
	serverPID  int
}

func (c *costFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&c.metricsURL, "metrics-url", "http://127.0.0.1:9464/metrics", "serve's /metrics, read before and after for its CPU "+
		"(process_cpu_seconds_total): the cost figure, CPU per 1,000 events (empty: not read)")
	fs.IntVar(&c.serverPID, "nats-server-pid", 0, "pid of the NATS server process when it runs on this machine apart from serve: "+
		"its CPU (/proc/PID/stat) is reported beside serve's (0: not read)")
}

// procCPU returns the user + system CPU time process pid has used.
func procCPU(pid int) (time.Duration, error) {
	p, err := procfs.NewProc(pid)
	if err != nil {
		return 0, err
	}
	st, err := p.Stat()
	if err != nil {
		return 0, err
	}
	return time.Duration(st.CPUTime() * float64(time.Second)), nil
}

// metricsCPU reads process_cpu_seconds_total from url (a busy serve takes
// seconds to render its /metrics, hence the generous bound).
func metricsCPU(ctx context.Context, url string) (time.Duration, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, err
	}
	req.Header.Set("Accept", "text/plain")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	return parseMetricsCPU(resp.Body)
}

var errNoCPUMetric = errors.New("no process_cpu_seconds_total on the page")

func parseMetricsCPU(r io.Reader) (time.Duration, error) {
	p := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := p.TextToMetricFamilies(r)
	if err != nil {
		return 0, err
	}
	mf := mfs["process_cpu_seconds_total"]
	if mf == nil || len(mf.GetMetric()) == 0 {
		return 0, errNoCPUMetric
	}
	return time.Duration(mf.GetMetric()[0].GetCounter().GetValue() * float64(time.Second)), nil
}

// loadAvg returns the machine's load averages over 1, 5 and 15 minutes.
func loadAvg() ([3]float64, error) {
	fs, err := procfs.NewDefaultFS()
	if err != nil {
		return [3]float64{}, err
	}
	l, err := fs.LoadAvg()
	if err != nil {
		return [3]float64{}, err
	}
	return [3]float64{l.Load1, l.Load5, l.Load15}, nil
}

// embeddedServer reports whether nc is connected to carddrift's embedded
// server: serve's CPU then includes the server's.
func embeddedServer(nc *nats.Conn) bool {
	return nc.ConnectedServerName() == service.EmbeddedServerName
}

// cpuReading is one reading; an error says why a figure was not read.
type cpuReading struct {
	serve, server       time.Duration
	serveErr, serverErr error
	load                [3]float64
	loadErr             error
}

func (c *costFlags) read(ctx context.Context) cpuReading {
	var r cpuReading
	if c.metricsURL == "" {
		r.serveErr = errors.New("--metrics-url is empty")
	} else {
		r.serve, r.serveErr = metricsCPU(ctx, c.metricsURL)
	}
	if c.serverPID == 0 {
		r.serverErr = errors.New("pass --nats-server-pid")
	} else {
		r.server, r.serverErr = procCPU(c.serverPID)
	}
	r.load, r.loadErr = loadAvg()
	return r
}

// Cost is what serve and a standalone NATS server spent on Events between
// two readings; a figure not read is absent, its reason in NotRead.
type Cost struct {
	Events             int64             `json:"events"`
	Embedded           bool              `json:"embeddedServer"`
	ServeCPUSeconds    *float64          `json:"serveCpuSeconds,omitempty"`
	ServeCPUMsPer1000  *float64          `json:"serveCpuMsPer1000Events,omitempty"`
	ServeSource        string            `json:"serveSource,omitempty"`
	ServerCPUSeconds   *float64          `json:"serverCpuSeconds,omitempty"`
	ServerCPUMsPer1000 *float64          `json:"serverCpuMsPer1000Events,omitempty"`
	ServerSource       string            `json:"serverSource,omitempty"`
	NotRead            map[string]string `json:"notRead,omitempty"`
	LoadBefore         *[3]float64       `json:"loadBefore,omitempty"`
	LoadAfter          *[3]float64       `json:"loadAfter,omitempty"`
	// DrainWaitSeconds: how long serve still worked through its backlog.
	DrainWaitSeconds *float64 `json:"drainWaitSeconds,omitempty"`
}

// afterDrained waits, for at most 5 minutes, until the lifecycle stream's
// consumers have handled everything, then returns the cost since before.
func (c *costFlags) afterDrained(ctx context.Context, js jetstream.JetStream, stream string, before cpuReading, events int64, embedded bool) *Cost {
	start := time.Now()
	durables, err := streamConsumers(ctx, js, stream)
	if err == nil {
		err = waitDrained(ctx, js, stream, durables, 100*time.Millisecond, 5*time.Minute)
	}
	waited := time.Since(start).Seconds()
	out := c.cost(before, c.read(ctx), events, embedded)
	if err != nil {
		if out.NotRead == nil {
			out.NotRead = map[string]string{}
		}
		out.NotRead["drained"] = fmt.Sprintf("serve's backlog: %v (the CPU figures may miss its last events)", err)
	} else {
		out.DrainWaitSeconds = &waited
	}
	return out
}

func (c *costFlags) cost(a, b cpuReading, events int64, embedded bool) *Cost {
	out := &Cost{Events: events, Embedded: embedded, NotRead: map[string]string{}}
	per := func(d time.Duration) (*float64, *float64) {
		s := d.Seconds()
		ms := 1e6 * s / float64(max(events, 1))
		return &s, &ms
	}
	switch err := cmp.Or(a.serveErr, b.serveErr); {
	case err != nil:
		out.NotRead["serve"] = err.Error()
	default:
		out.ServeCPUSeconds, out.ServeCPUMsPer1000 = per(b.serve - a.serve)
		out.ServeSource = c.metricsURL + " process_cpu_seconds_total"
	}
	switch err := cmp.Or(a.serverErr, b.serverErr); {
	case embedded && c.serverPID == 0:
		// serve's CPU is the server's too.
	case err != nil:
		out.NotRead["server"] = err.Error()
	default:
		out.ServerCPUSeconds, out.ServerCPUMsPer1000 = per(b.server - a.server)
		out.ServerSource = fmt.Sprintf("/proc/%d/stat", c.serverPID)
	}
	if a.loadErr == nil {
		out.LoadBefore = &a.load
	} else {
		out.NotRead["load"] = a.loadErr.Error()
	}
	if b.loadErr == nil {
		out.LoadAfter = &b.load
	}
	if len(out.NotRead) == 0 {
		out.NotRead = nil
	}
	return out
}

func (c *Cost) write(w io.Writer, what string) {
	if c.ServeCPUMsPer1000 != nil {
		incl := ""
		if c.Embedded {
			incl = " (its embedded NATS server's included)"
		}
		fmt.Fprintf(w, "  serve's CPU: %.1f s for %d %s, %.0f ms per 1,000%s\n", *c.ServeCPUSeconds, c.Events, what, *c.ServeCPUMsPer1000, incl)
	} else {
		fmt.Fprintf(w, "  serve's CPU: not read (%s)\n", c.NotRead["serve"])
	}
	switch {
	case c.ServerCPUMsPer1000 != nil:
		fmt.Fprintf(w, "  NATS server's CPU (%s): %.1f s, %.0f ms per 1,000\n", c.ServerSource, *c.ServerCPUSeconds, *c.ServerCPUMsPer1000)
	case c.NotRead["server"] != "":
		fmt.Fprintf(w, "  NATS server's CPU: not read (%s)\n", c.NotRead["server"])
	}
	if c.DrainWaitSeconds != nil {
		fmt.Fprintf(w, "  (read once serve had worked through its backlog, %.1f s after the run)\n", *c.DrainWaitSeconds)
	} else if r := c.NotRead["drained"]; r != "" {
		fmt.Fprintf(w, "  (%s)\n", r)
	}
	writeLoad(w, c.LoadBefore, c.LoadAfter)
}

func writeLoad(w io.Writer, a, b *[3]float64) {
	if a != nil && b != nil {
		fmt.Fprintf(w, "  load average (1, 5, 15 min): before %.2f %.2f %.2f, after %.2f %.2f %.2f\n", a[0], a[1], a[2], b[0], b[1], b[2])
	}
}
