package main

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/carddrift/carddrift/events/inspect/replay"
	"github.com/carddrift/carddrift/events/task"
	"github.com/carddrift/carddrift/store"
)

// storeSource is an open connection to carddrift's stores and streams: a
// live deployment, or an embedded server on a copy of a store directory.
type storeSource struct {
	nc     *nats.Conn
	js     jetstream.JetStream
	stores *store.Stores[task.Pin]
	off    *offline
}

func (s *storeSource) Close() {
	if s.nc != nil {
		s.nc.Close()
	}
	if s.off != nil {
		s.off.Close()
	}
}

// storeFlags say where replay, impact and fleet find the stores.
type storeFlags struct {
	nats    natsFlags
	dataDir string
	copy    offlineCopy // what of --data-dir the command needs
}

// register adds the connection flags and --data-dir; reads says what the
// command does offline.
func (s *storeFlags) register(fs *flag.FlagSet, reads string) {
	s.nats.register(fs)
	fs.StringVar(&s.dataDir, "data-dir", "", reads+" from this store directory (the one `serve` or `demo --data-dir` wrote); it is copied first and never changed")
}

// open connects to --nats-url or a copy of --data-dir and binds the stores.
func (s *storeFlags) open(ctx context.Context, name string) (_ *storeSource, err error) {
	src := &storeSource{}
	defer func() {
		if err != nil {
			src.Close()
		}
	}()
	if s.nats.url != "" && s.dataDir != "" {
		return nil, usagef("--nats-url and --data-dir are exclusive: a live deployment or a store directory")
	}
	if s.dataDir == "" {
		n := s.nats // jetStream sets the default URL on its copy only
		src.nc, src.js, err = n.jetStream(name)
	} else if src.off, err = openOffline(s.dataDir, s.copy); err == nil {
		if src.nc, err = src.off.connect(name); err == nil {
			src.js, err = jetstream.New(src.nc)
		}
	}
	if err != nil {
		return nil, err
	}
	bctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	if src.stores, err = store.Bind[task.Pin](bctx, src.js, store.DefaultConfig()); err != nil {
		return nil, fmt.Errorf("open the carddrift stores: %w", err)
	}
	return src, nil
}

type outputFlags struct {
	format string
	out    string
}

func (o *outputFlags) register(fs *flag.FlagSet, formats string) {
	fs.StringVar(&o.format, "format", "text", formats)
	fs.StringVar(&o.out, "out", "", "write the output to this file instead of stdout")
}

func (o *outputFlags) check() error {
	switch o.format {
	case "text", "json", "html":
		return nil
	}
	return usagef("--format %q: want text, json or html", o.format)
}

// writeReport renders a report in o's format to stdout or --out, once whole.
func writeReport(e *env, o *outputFlags, asJSON, asHTML, asText func(io.Writer) error) error {
	write := asText
	switch o.format {
	case "json":
		write = asJSON
	case "html":
		write = asHTML
	}
	var buf bytes.Buffer
	if err := write(&buf); err != nil {
		return err
	}
	if o.out == "" || o.out == "-" {
		_, err := e.stdout.Write(buf.Bytes())
		return err
	}
	if err := os.WriteFile(o.out, buf.Bytes(), 0o644); err != nil {
		return fmt.Errorf("--out: %w", err)
	}
	fmt.Fprintf(e.stderr, "carddrift: wrote %s (%d bytes)\n", o.out, buf.Len())
	return nil
}

// offline is an embedded JetStream server, reached in process only, on a
// private copy of a store directory.
type offline struct {
	dir string
	srv *server.Server
}

// offlineCopy says what of a store directory a command needs; the zero
// value copies everything.
type offlineCopy struct {
	empty       map[string]bool // streams copied without their messages
	noConsumers bool
	// ranges bounds, by stream, the stored times whose message blocks are
	// copied (pickBlocks).
	ranges map[string]replay.Range
}

// openOffline copies what sel needs of dir and starts an embedded server
// on the copy: a server rewrites index files and applies retention as it
// opens a store, so it must never open the original.
func openOffline(dir string, sel offlineCopy) (_ *offline, err error) {
	st, err := os.Stat(dir)
	if err != nil {
		return nil, usagef("--data-dir: %v", err)
	}
	if !st.IsDir() {
		return nil, usagef("--data-dir %s is not a directory", dir)
	}
	if _, err := os.Stat(filepath.Join(dir, "jetstream")); err != nil {
		return nil, usagef("--data-dir %s holds no JetStream store (no jetstream/ directory)", dir)
	}
	tmp, err := os.MkdirTemp("", "carddrift-replay-")
	if err != nil {
		return nil, err
	}
	o := &offline{dir: tmp}
	defer func() {
		if err != nil {
			o.Close()
		}
	}()
	if err := copyTree(dir, tmp, sel); err != nil {
		return nil, fmt.Errorf("copy %s: %w", dir, err)
	}
	o.srv, err = server.NewServer(&server.Options{ServerName: "carddrift-replay", JetStream: true, StoreDir: tmp, DontListen: true, NoSigs: true, NoLog: true})
	if err != nil {
		return nil, fmt.Errorf("embedded NATS: %w", err)
	}
	o.srv.Start()
	if !o.srv.ReadyForConnections(15 * time.Second) {
		return nil, errors.New("embedded NATS on the store copy did not become ready within 15s")
	}
	return o, nil
}

func (o *offline) connect(name string) (*nats.Conn, error) {
	return nats.Connect("", nats.Name(name), nats.InProcessServer(o.srv))
}

func (o *offline) Close() {
	if o.srv != nil {
		o.srv.Shutdown()
		o.srv.WaitForShutdown()
	}
	os.RemoveAll(o.dir)
}

// copyTree copies the directories and regular files under src into dst,
// but what sel leaves out.
func copyTree(src, dst string, sel offlineCopy) error {
	var keep func(name string) bool // of the msgs directory being copied
	return filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, path)
		if err != nil {
			return err
		}
		target := filepath.Join(dst, rel)
		// jetstream/<account>/streams/<stream>/{meta.inf,msgs/,obs/}
		parts := strings.Split(filepath.ToSlash(rel), "/")
		var stream, part string
		if len(parts) >= 5 && parts[0] == "jetstream" && parts[2] == "streams" {
			stream, part = parts[3], parts[4]
		}
		switch {
		case d.IsDir():
			if err := os.MkdirAll(target, 0o700); err != nil || len(parts) != 5 {
				return err
			}
			if part == "obs" && sel.noConsumers || part == "msgs" && sel.empty[stream] {
				return fs.SkipDir
			}
			if part == "msgs" {
				keep, err = pickBlocks(path, sel.ranges[stream])
			}
			return err
		case !d.Type().IsRegular(), part == "msgs" && len(parts) == 6 && !keep(d.Name()):
			return nil
		}
		return copyFile(path, target)
	})
}

// pickBlocks returns which files of the msgs directory dir r needs: the
// blocks (N.blk) that can hold messages stored within r, and the index only
// when no block is left out (the server then rebuilds the stream's state).
// A block whose first record does not read counts as within r, and so does
// the block before it.
func pickBlocks(dir string, r replay.Range) (func(name string) bool, error) {
	if r.From.IsZero() && r.To.IsZero() {
		return func(string) bool { return true }, nil
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	type blk struct {
		name  string
		n     int
		first time.Time
		ok    bool
	}
	var bs []blk
	for _, e := range ents {
		num, isBlk := strings.CutSuffix(e.Name(), ".blk")
		n, err := strconv.Atoi(num)
		if !isBlk || err != nil || !e.Type().IsRegular() {
			continue
		}
		t, ok := blockFirstTime(filepath.Join(dir, e.Name()))
		bs = append(bs, blk{e.Name(), n, t, ok})
	}
	slices.SortFunc(bs, func(a, b blk) int { return a.n - b.n })
	kept, dropped := map[string]bool{}, false
	for i, b := range bs {
		// Before the range: the next block starts before From.
		before := !r.From.IsZero() && i+1 < len(bs) && bs[i+1].ok && !bs[i+1].first.After(r.From)
		after := !r.To.IsZero() && b.ok && b.first.After(r.To)
		kept[b.name] = !before && !after
		dropped = dropped || before || after
	}
	return func(name string) bool {
		if strings.HasSuffix(name, ".blk") {
			return kept[name]
		}
		return !dropped || !strings.HasPrefix(name, "index")
	}, nil
}

// blockFirstTime reads the time of a message block's first record: a
// 4-byte length, an 8-byte sequence and an 8-byte Unix time in ns,
// little-endian (nats-server's file store); false for anything else.
func blockFirstTime(path string) (time.Time, bool) {
	f, err := os.Open(path)
	if err != nil {
		return time.Time{}, false
	}
	defer f.Close()
	var hdr [22]byte
	if _, err := io.ReadFull(f, hdr[:]); err != nil {
		return time.Time{}, false
	}
	return parseBlockHeader(hdr[:])
}

func parseBlockHeader(b []byte) (time.Time, bool) {
	if len(b) < 22 {
		return time.Time{}, false
	}
	rl := binary.LittleEndian.Uint32(b[0:]) &^ (1 << 31) // the high bit says the record has headers
	ts := int64(binary.LittleEndian.Uint64(b[12:]))
	slen := binary.LittleEndian.Uint16(b[20:])
	if rl < 22+8 || uint32(slen) > rl {
		return time.Time{}, false
	}
	t := time.Unix(0, ts).UTC()
	if t.Year() < 2000 || t.After(time.Now().Add(24*time.Hour)) {
		return time.Time{}, false
	}
	return t, true
}

func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}
