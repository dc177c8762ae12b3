package replay

import "errors"

var (
	// ErrInvalidQuery is returned (wrapped) by the Reader's methods and by
	// ParseTime for a query they cannot run: an agent URL that is not an
	// http(s) URL with a host, Until before Since, or an unreadable time.
	ErrInvalidQuery = errors.New("replay: invalid query")
	// ErrStalled is returned (wrapped) when a stream stops delivering before
	// the read reached the stream's last sequence at its start, for longer
	// than Options.IdleTimeout (for example when the server is unreachable).
	ErrStalled = errors.New("replay: stream stopped delivering")
)
