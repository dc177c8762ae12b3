package test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/carddrift/carddrift/events"
	"github.com/carddrift/carddrift/events/client"
	"github.com/carddrift/carddrift/events/service/servicetest"
	"github.com/carddrift/carddrift/store/natstest"
)

// Row 8 of issue 19: storage is unbounded. A publisher allowed to publish
// lifecycle events fills the store, and then carddrift's own writes — its
// verdicts, its dead letters — fail. These tests run `carddrift serve` (the
// limits come from its CARDDRIFT_* environment, which a build without them
// ignores) against a JetStream server whose storage is small, and attack it
// with nothing but publishes.

// startStorageServer starts an in-process nats-server with JetStream
// storage capped at maxStore bytes, as a deployment's max_file_store caps
// it, and connects to it.
func startStorageServer(t *testing.T, maxStore int64) (*server.Server, *nats.Conn, jetstream.JetStream) {
	t.Helper()
	return natstest.StartJetStreamWith(t, func(o *server.Options) { o.JetStreamMaxStore = maxStore })
}

// startServeEnv is startServe with CARDDRIFT_* settings in the child's
// environment (env: "NAME=value" without the prefix).
func startServeEnv(t *testing.T, bin, natsURL, name string, env ...string) *serveProc {
	t.Helper()
	return launchServe(t, bin, name, "carddrift_store", env,
		"--nats-url", natsURL, "--fetch-allow", "127.0.0.0/8", "--ack-wait", "2s", "--partitions", "4", "--drain-timeout", "3s",
		"--log-format", "json", "--log-level", "info")
}

// floodEvent is a well-formed lifecycle event of a task nobody pinned,
// padded to about pad bytes by a CloudEvents extension attribute.
func floodEvent(i, pad int) (string, []byte) {
	id := "flood-" + strconv.Itoa(i)
	ev := map[string]any{
		"specversion": "1.0", "id": id, "source": "attacker", "type": "a2a.task.status", "subject": id,
		"datacontenttype": "application/json", "xpad": strings.Repeat("x", pad),
		"data": map[string]any{"taskId": id, "agentUrl": "https://agent.example.com", "state": "working"},
	}
	b, _ := json.Marshal(ev)
	return "a2a.task.status." + id, b
}

func publishStructured(ctx context.Context, js jetstream.JetStream, subject string, data []byte) error {
	m := nats.NewMsg(subject)
	m.Header.Set("Content-Type", "application/cloudevents+json")
	m.Data = data
	_, err := js.PublishMsg(ctx, m)
	return err
}

func streamState(t *testing.T, js jetstream.JetStream, name string) *jetstream.StreamInfo {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	s, err := js.Stream(ctx, name)
	if err != nil {
		t.Fatalf("Stream(%s): %v", name, err)
	}
	info, err := s.Info(ctx)
	if err != nil {
		t.Fatalf("Info(%s): %v", name, err)
	}
	return info
}

// TestAdversaryStorageFloodLifecycle: a publisher floods A2A_TASKS with
// more than the server can store (75 MiB into a 64 MiB max_file_store).
// The stream stays within its byte limit (its oldest events go first, every
// publish succeeds), and afterwards carddrift still dead-letters a
// malformed event and still publishes a card.pinned; /metrics shows the
// limit and a log line says the stream reached it.
//
// On e91b0a3 the stream has no byte limit (MaxBytes -1): the flood fills
// the server, the flood's own publishes start failing, and so do the dead
// letter and the verdict.
func TestAdversaryStorageFloodLifecycle(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the carddrift binary")
	}
	bin := buildCarddrift(t)
	const (
		maxStore = 64 << 20
		limit    = 48 << 20 // --storage-limit: A2A_TASKS gets 8/24 of it
		tasksMax = limit / 3
		pad      = 32 << 10
		flood    = 2400 // × ~32 KiB ≈ 75 MiB
	)
	_, nc, js := startStorageServer(t, maxStore)
	p := startServeEnv(t, bin, nc.ConnectedUrl(), "serve-storage",
		"STORAGE_LIMIT="+strconv.Itoa(limit), "STORE_CHECK_INTERVAL=1s")

	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	failed := 0
	var firstErr error
	for i := range flood {
		subj, data := floodEvent(i, pad)
		if err := publishStructured(ctx, js, subj, data); err != nil {
			if firstErr == nil {
				firstErr = fmt.Errorf("publish %d: %w", i, err)
			}
			failed++
		}
	}
	info := streamState(t, js, "A2A_TASKS")
	t.Logf("after the flood: A2A_TASKS MaxBytes %d, holds %d bytes, %d msgs, seq %d..%d; %d of %d publishes failed (first: %v)",
		info.Config.MaxBytes, info.State.Bytes, info.State.Msgs, info.State.FirstSeq, info.State.LastSeq, failed, flood, firstErr)
	if info.Config.MaxBytes <= 0 || info.Config.MaxBytes > tasksMax {
		t.Errorf("A2A_TASKS MaxBytes = %d, want a byte limit ≤ %d", info.Config.MaxBytes, tasksMax)
	}
	if info.State.Bytes > tasksMax {
		t.Errorf("A2A_TASKS holds %d bytes, over its bound %d", info.State.Bytes, tasksMax)
	}
	if failed > 0 {
		t.Errorf("%d of %d lifecycle publishes failed (first: %v), want none: a full stream discards its oldest", failed, flood, firstErr)
	}
	if info.State.FirstSeq <= 1 || info.State.LastSeq != flood {
		t.Errorf("A2A_TASKS seq %d..%d, want the oldest gone and the newest (%d) kept", info.State.FirstSeq, info.State.LastSeq, flood)
	}

	// The dead letter of a malformed event still reaches CARDDRIFT_DLQ.
	dlqBefore := streamState(t, js, "CARDDRIFT_DLQ").State.LastSeq
	if err := publishStructured(ctx, js, "a2a.task.status.after-flood", []byte(`{"specversion":"1.0",`)); err != nil {
		t.Errorf("publish the malformed event: %v", err)
	}
	var dlqErr error
	eventually(t, 60*time.Second, "the malformed event's dead letter in CARDDRIFT_DLQ", func() bool {
		s, err := js.Stream(ctx, "CARDDRIFT_DLQ")
		if err != nil {
			dlqErr = err
			return false
		}
		for seq := s.CachedInfo().State.LastSeq; seq > dlqBefore; seq-- {
			m, err := s.GetMsg(ctx, seq)
			if err != nil {
				dlqErr = err
				continue
			}
			// The stored subject carries the partition: a2a.task.status.after-flood.<p>.
			if strings.HasPrefix(m.Header.Get("Carddrift-Original-Subject"), "a2a.task.status.after-flood.") {
				return true
			}
		}
		return false
	})
	if dlqErr != nil {
		t.Logf("last DLQ read error: %v", dlqErr)
	}

	// A verdict-side publish still succeeds: a submitted task is pinned.
	emit, err := client.NewEmitter(js, "victim-client")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { emit.Close(context.Background()) })
	card := strings.ReplaceAll(servicetest.WriteupT0, "AGENT", "https://agent.example.com/a2a")
	if err := emit.Submitted(ctx, events.Submitted{TaskID: "victim", AgentURL: "https://agent.example.com", SkillID: "summarize", Card: json.RawMessage(card)}); err != nil {
		t.Fatalf("publish the victim's submission: %v", err)
	}
	eventually(t, 60*time.Second, "card.pinned of the victim in CARD_EVENTS", func() bool {
		s, err := js.Stream(ctx, "CARD_EVENTS")
		if err != nil {
			return false
		}
		_, err = s.GetLastMsgForSubject(ctx, "card.pinned.*.victim")
		return err == nil
	})

	// The limit shows on /metrics, and a log line said it bit.
	eventually(t, 30*time.Second, "carddrift_store_limit_bytes and a limit hit of A2A_TASKS on /metrics", func() bool {
		m := p.metrics("carddrift_store_")
		return strings.Contains(m, `carddrift_store_limit_bytes{stream="A2A_TASKS"} `+strconv.FormatFloat(float64(info.Config.MaxBytes), 'g', -1, 64)) &&
			strings.Contains(m, `carddrift_store_limit_hits_total{stream="A2A_TASKS"} 1`)
	})
	t.Logf("serve's store metrics:\n%s", p.metrics("carddrift_store_"))
	if !strings.Contains(p.logs.String(), "stream at its byte limit") {
		t.Errorf("no log line says A2A_TASKS reached its byte limit:\n%s", p.logs.String())
	}
}

// TestAdversaryStorageOrphanCardBodies: a publisher submits tasks with
// distinct client cards, so every submission stores a card body. Once a
// task's pin (and any lease) is gone, its body is removed; a body a pin
// still names stays.
//
// On e91b0a3 card bodies never expire: all of them stay.
func TestAdversaryStorageOrphanCardBodies(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the carddrift binary")
	}
	bin := buildCarddrift(t)
	_, nc, js := startStorageServer(t, 256<<20)
	startServeEnv(t, bin, nc.ConnectedUrl(), "serve-gc",
		"STORAGE_LIMIT=96MiB", "CARDS_GC_INTERVAL=1s", "CARDS_GC_GRACE=1s")
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	emit, err := client.NewEmitter(js, "attacker")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { emit.Close(context.Background()) })
	const n = 20
	for i := range n {
		card := strings.ReplaceAll(servicetest.WriteupT0, "AGENT", "https://agent.example.com/a2a")
		card = strings.Replace(card, "Summarizes text", "Summarizes text, variant "+strconv.Itoa(i), 1)
		if err := emit.Submitted(ctx, events.Submitted{TaskID: "orphan-" + strconv.Itoa(i), AgentURL: "https://agent.example.com",
			SkillID: "summarize", Card: json.RawMessage(card)}); err != nil {
			t.Fatalf("submit %d: %v", i, err)
		}
	}
	pins, err := js.KeyValue(ctx, "carddrift-pins")
	if err != nil {
		t.Fatal(err)
	}
	cards, err := js.KeyValue(ctx, "carddrift-cards")
	if err != nil {
		t.Fatal(err)
	}
	keys := func(kv jetstream.KeyValue) []string {
		ks, err := kv.ListKeys(ctx)
		if err != nil {
			return nil
		}
		var out []string
		for k := range ks.Keys() {
			out = append(out, k)
		}
		return out
	}
	eventually(t, 60*time.Second, "every task pinned and its body stored", func() bool {
		return len(keys(pins)) == n && len(keys(cards)) == n
	})
	// The tasks end: their pins go (here as a TTL expiry would take them;
	// client-card tasks have no lease). One task stays.
	kept := ""
	for _, k := range keys(pins) {
		e, err := pins.Get(ctx, k)
		if err != nil {
			t.Fatal(err)
		}
		var pin struct{ TaskID, Digest string }
		if err := json.Unmarshal(e.Value(), &pin); err != nil {
			t.Fatal(err)
		}
		if pin.TaskID == "orphan-0" {
			kept = strings.TrimPrefix(pin.Digest, "sha256:")
			continue
		}
		if err := pins.Delete(ctx, k); err != nil {
			t.Fatal(err)
		}
	}
	if kept == "" {
		t.Fatal("no pin of orphan-0")
	}
	eventually(t, 60*time.Second, "the bodies of the gone pins removed", func() bool {
		ks := keys(cards)
		return len(ks) == 1 && ks[0] == kept
	})
	if _, err := cards.Get(ctx, kept); err != nil {
		t.Fatalf("body of the pin still there: %v", err)
	}
	if _, err := cards.Get(ctx, keys(cards)[0]); errors.Is(err, jetstream.ErrKeyNotFound) {
		t.Fatal("kept body gone")
	}
}
