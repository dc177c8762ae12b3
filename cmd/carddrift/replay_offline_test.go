package main

import (
	"context"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/carddrift/carddrift/events/inspect/replay"
	"github.com/carddrift/carddrift/store/natstest"
)

// TestOfflineCopiesTheRange: a file store whose stream spans several
// message blocks, copied for a range that starts after the first ones,
// leaves those blocks out; the server opens the copy with every message
// stored within the range, the original's files are byte-identical
// afterwards, and a stream copied empty and the consumers are left out.
func TestOfflineCopiesTheRange(t *testing.T) {
	dir := t.TempDir()
	srv, nc, js := natstest.StartJetStreamWith(t, func(o *server.Options) { o.StoreDir = dir })
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	// A MaxBytes this small makes the server choose its smallest blocks
	// (32 kB): the 750 messages below fill several.
	for _, name := range []string{"LIFE", "OTHER"} {
		if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: name, Subjects: []string{strings.ToLower(name) + ".>"},
			Storage: jetstream.FileStorage, MaxBytes: 120_000}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := js.CreateOrUpdateConsumer(ctx, "LIFE", jetstream.ConsumerConfig{Durable: "worker"}); err != nil {
		t.Fatal(err)
	}
	payload := make([]byte, 80)
	publish := func(from, n int) {
		for i := from; i < from+n; i++ {
			if _, err := js.Publish(ctx, fmt.Sprintf("life.%d", i), payload); err != nil {
				t.Fatal(err)
			}
		}
	}
	publish(0, 600)
	mark := time.Now() // after the server stored (and acknowledged) the first 600
	publish(600, 150)
	if _, err := js.Publish(ctx, "other.x", payload); err != nil {
		t.Fatal(err)
	}
	nc.Close()
	srv.Shutdown()
	srv.WaitForShutdown()
	before := treeHash(t, dir)

	streams := filepath.Join(dir, "jetstream", "$G", "streams")
	blocks, _ := filepath.Glob(filepath.Join(streams, "LIFE", "msgs", "*.blk"))
	if len(blocks) < 3 {
		t.Fatalf("the stream has %d blocks, want at least 3", len(blocks))
	}
	cp := t.TempDir()
	sel := offlineCopy{empty: map[string]bool{"OTHER": true}, noConsumers: true, ranges: map[string]replay.Range{"LIFE": {From: mark}}}
	if err := copyTree(dir, cp, sel); err != nil {
		t.Fatal(err)
	}
	copied, _ := filepath.Glob(filepath.Join(cp, "jetstream", "$G", "streams", "LIFE", "msgs", "*.blk"))
	if len(copied) == 0 || len(copied) >= len(blocks) {
		t.Fatalf("copied %d of %d blocks, want the last ones only", len(copied), len(blocks))
	}
	if left, _ := os.ReadDir(filepath.Join(cp, "jetstream", "$G", "streams", "LIFE", "obs")); len(left) != 0 {
		t.Errorf("the copy has %d consumer(s)", len(left))
	}

	off := &offline{dir: cp}
	defer off.Close()
	var err error
	if off.srv, err = server.NewServer(&server.Options{JetStream: true, StoreDir: cp, DontListen: true, NoSigs: true, NoLog: true}); err != nil {
		t.Fatal(err)
	}
	off.srv.Start()
	if !off.srv.ReadyForConnections(15 * time.Second) {
		t.Fatal("embedded server on the copy not ready")
	}
	onc, err := off.connect("test")
	if err != nil {
		t.Fatal(err)
	}
	defer onc.Close()
	ojs, _ := jetstream.New(onc)
	s, err := ojs.Stream(ctx, "LIFE")
	if err != nil {
		t.Fatal(err)
	}
	st := s.CachedInfo().State
	// Every message from 601 on was stored at or after mark.
	if st.FirstSeq <= 1 || st.FirstSeq > 601 || st.LastSeq != 750 || st.Msgs != st.LastSeq-st.FirstSeq+1 {
		t.Errorf("copy holds %d..%d (%d messages), want a suffix holding 601..750", st.FirstSeq, st.LastSeq, st.Msgs)
	}
	if o, err := ojs.Stream(ctx, "OTHER"); err != nil || o.CachedInfo().State.Msgs != 0 {
		t.Errorf("OTHER in the copy: %v, want an empty stream", err)
	}
	if after := treeHash(t, dir); after != before {
		t.Error("copying changed the store directory")
	}
}

// FuzzBlockHeader: any bytes as a block's first record header either give a
// time within the bounds parseBlockHeader checks or are refused; nothing
// panics.
func FuzzBlockHeader(f *testing.F) {
	real := make([]byte, 22)
	binary.LittleEndian.PutUint32(real, 0x80000220)
	binary.LittleEndian.PutUint64(real[4:], 27630)
	binary.LittleEndian.PutUint64(real[12:], uint64(time.Date(2026, 12, 1, 20, 36, 6, 0, time.UTC).UnixNano()))
	binary.LittleEndian.PutUint16(real[20:], 38)
	f.Add(real)
	f.Add([]byte{})
	f.Add(make([]byte, 22))
	f.Fuzz(func(t *testing.T, b []byte) {
		tm, ok := parseBlockHeader(b)
		if ok && (tm.Year() < 2000 || tm.After(time.Now().Add(25*time.Hour)) || len(b) < 22) {
			t.Errorf("parseBlockHeader(%x) = %s, true", b, tm)
		}
		if !ok && !tm.IsZero() {
			t.Errorf("parseBlockHeader(%x) refused it with a time %s", b, tm)
		}
	})
}
