package main

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
)

// offline is an embedded JetStream server on a private copy of a store
// directory. It accepts no network connections (DontListen): only this
// process reaches it, in process.
type offline struct {
	dir string
	srv *server.Server
}

// openOffline copies the store directory dir to a temporary directory and
// starts an embedded server on the copy. The original is only read: a
// server rewrites index files and applies retention as it opens a store, so
// it must never open the original.
func openOffline(dir string) (_ *offline, err error) {
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
	if err := copyTree(dir, tmp); err != nil {
		return nil, fmt.Errorf("copy %s: %w", dir, err)
	}
	o.srv, err = server.NewServer(&server.Options{
		ServerName: "carddrift-replay",
		JetStream:  true,
		StoreDir:   tmp,
		DontListen: true,
		NoSigs:     true,
		NoLog:      true,
	})
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

// Close stops the server and removes the copy.
func (o *offline) Close() {
	if o.srv != nil {
		o.srv.Shutdown()
		o.srv.WaitForShutdown()
	}
	os.RemoveAll(o.dir)
}

// copyTree copies the directories and regular files under src into dst
// (which exists). Other kinds of files (sockets, devices) are skipped;
// symbolic links are followed only for the root.
func copyTree(src, dst string) error {
	return filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, path)
		if err != nil {
			return err
		}
		target := filepath.Join(dst, rel)
		switch {
		case d.IsDir():
			return os.MkdirAll(target, 0o700)
		case d.Type().IsRegular():
			return copyFile(path, target)
		}
		return nil
	})
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
