package fetcher

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"time"
)

// DefaultCredentialsReload is how often a CredentialsFile looks at its file
// again, at most (CredentialsFileOptions.Reload).
const DefaultCredentialsReload = 2 * time.Second

// CredentialsFileOptions configure OpenCredentials.
type CredentialsFileOptions struct {
	// Reload is the least time between two looks at the file: a lookup
	// after it reads the file again (bounded, MaxCredentialsFileBytes and
	// the PEM bounds) and, when its bytes or those of the PEM files it
	// names changed, parses it. Default DefaultCredentialsReload.
	Reload time.Duration
	// OnReload, if set, is called after every look that found the file
	// changed: err nil when the new credentials replaced the old, else why
	// the old ones stay (a *CredentialsError, or the error reading the file;
	// never a value). Called without locks held, on the caller of For.
	OnReload func(origins int, err error)
	// Now is the clock. Default time.Now.
	Now func() time.Time
}

// CredentialsFile is a credentials file that is read again when it changes
// (carddrift serve --agent-credentials FILE): For answers from the newest
// version that parsed; a version that does not parse keeps the previous one
// and is reported once (OnReload). It needs no goroutine: For looks at the
// file at most once per Reload. Safe for concurrent use.
type CredentialsFile struct {
	path string
	opts CredentialsFileOptions

	mu      sync.Mutex
	cur     *Credentials
	sum     [sha256.Size]byte // of the bytes last looked at (file and PEM files)
	checked time.Time
	loading bool
}

// OpenCredentials reads and parses the credentials file at path (relative
// PEM paths are relative to its directory). Its error is a
// *CredentialsError or the error reading the file.
func OpenCredentials(path string, opts CredentialsFileOptions) (*CredentialsFile, error) {
	setDefault(&opts.Reload, DefaultCredentialsReload)
	if opts.Now == nil {
		opts.Now = time.Now
	}
	cf := &CredentialsFile{path: path, opts: opts}
	c, sum, err := cf.load()
	if err != nil {
		return nil, err
	}
	cf.cur, cf.sum, cf.checked = c, sum, opts.Now()
	return cf, nil
}

// For returns the credential for origin from the newest version of the file
// that parsed, looking at the file first when Reload has passed since the
// last look.
func (cf *CredentialsFile) For(origin string) (Credential, bool) {
	return cf.Current().For(origin)
}

// String names the file, never a credential's value.
func (cf *CredentialsFile) String() string { return "agent credentials " + cf.path }

// Format writes String for every verb.
func (cf *CredentialsFile) Format(f fmt.State, _ rune) { _, _ = io.WriteString(f, cf.String()) }

// Current returns the credentials of the newest version that parsed.
func (cf *CredentialsFile) Current() *Credentials {
	now := cf.opts.Now()
	cf.mu.Lock()
	if cf.loading || now.Sub(cf.checked) < cf.opts.Reload {
		c := cf.cur
		cf.mu.Unlock()
		return c
	}
	cf.loading, cf.checked = true, now
	prev := cf.sum
	cf.mu.Unlock()

	c, sum, err := cf.load()
	changed := sum != prev

	cf.mu.Lock()
	cf.loading = false
	if changed {
		cf.sum = sum
		if err == nil {
			cf.cur = c
		}
	}
	cur := cf.cur
	cf.mu.Unlock()
	if changed && cf.opts.OnReload != nil {
		n := 0
		if err == nil {
			n = len(c.byOrigin)
		}
		cf.opts.OnReload(n, err)
	}
	return cur
}

// load reads the file and the PEM files it names, and parses it. sum covers
// every byte read, so that an unchanged file is not parsed again and a
// version that failed is reported once.
func (cf *CredentialsFile) load() (*Credentials, [sha256.Size]byte, error) {
	h := sha256.New()
	b, err := readFileBounded(cf.path, MaxCredentialsFileBytes)
	h.Write(b)
	if err != nil {
		fmt.Fprintf(h, "\x00error:%v", err)
		return nil, [sha256.Size]byte(h.Sum(nil)), &CredentialsError{File: cf.path, Err: err}
	}
	dir := filepath.Dir(cf.path)
	read := func(p string) ([]byte, error) {
		if !filepath.IsAbs(p) {
			p = filepath.Join(dir, p)
		}
		pb, err := readFileBounded(p, MaxCredentialPEMBytes)
		h.Write([]byte{0})
		h.Write(pb)
		return pb, err
	}
	c, err := ParseCredentials(b, read)
	sum := [sha256.Size]byte(h.Sum(nil))
	if err != nil {
		if ce := (*CredentialsError)(nil); errors.As(err, &ce) {
			ce.File = cf.path
		}
		return nil, sum, err
	}
	return c, sum, nil
}

// readFileBounded reads the file at path, failing with
// ErrCredentialsTooLarge when it is larger than limit bytes.
func readFileBounded(path string, limit int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, limit+1))
	switch {
	case err != nil:
		return nil, err
	case int64(len(b)) > limit:
		return nil, fmt.Errorf("%s: %w: larger than %d bytes", path, ErrCredentialsTooLarge, limit)
	}
	return b, nil
}
