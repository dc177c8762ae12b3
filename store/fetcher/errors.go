package fetcher

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"os"

	"github.com/carddrift/carddrift/detector"
)

// Reason is why a fetch failed. Its string form is used verbatim as the
// `reason` of a card.unreachable event, so the values are part of the public
// contract: add new ones, never rename. UnreachableReasons is the one list of
// the reasons an event may carry; the card.unreachable schema and schemas/README.md
// are tested against it.
type Reason string

// Reasons of a *FetchError, each described in the reasons table below (the
// one schemas/README.md repeats). Each has a sentinel error (ErrTimeout, ...)
// that errors.Is matches against any *FetchError with that reason.
const (
	ReasonTimeout          Reason = "timeout"
	ReasonConnect          Reason = "connect"
	ReasonDNS              Reason = "dns"
	ReasonTLS              Reason = "tls"
	ReasonRefusedAddress   Reason = "refused-address"
	ReasonTooManyRedirects Reason = "too-many-redirects"
	ReasonRedirectRefused  Reason = "redirect-refused"
	ReasonStatus           Reason = "status"
	ReasonTooLarge         Reason = "too-large"
	ReasonInvalidJSON      Reason = "invalid-json"
	ReasonInvalidUTF8      Reason = "invalid-utf8"
	ReasonDuplicateKeys    Reason = "duplicate-keys"
	ReasonTooDeep          Reason = "too-deep"
	// Deprecated: no longer returned (since contract v1.1 any JSON object is a
	// card); kept because card.unreachable events recorded before carry it.
	ReasonUnsupportedVersion Reason = "unsupported-version"
	ReasonNotACard           Reason = "not-a-card"
	ReasonInvalidURL         Reason = "invalid-url"
	ReasonUnauthorized       Reason = "unauthorized"
	ReasonForbidden          Reason = "forbidden"
	ReasonRPCError           Reason = "rpc-error"
	ReasonCanceled           Reason = "canceled"
)

// Sentinel errors, one per Reason. A *FetchError matches the sentinel of its
// Reason with errors.Is; use errors.As to read its URL and Status.
var (
	ErrTimeout          = errors.New("fetcher: timeout")
	ErrConnect          = errors.New("fetcher: connection failed")
	ErrDNS              = errors.New("fetcher: host name not resolved")
	ErrTLS              = errors.New("fetcher: TLS handshake failed")
	ErrRefusedAddress   = errors.New("fetcher: address refused by the SSRF guard")
	ErrTooManyRedirects = errors.New("fetcher: too many redirects")
	ErrRedirectRefused  = errors.New("fetcher: redirect refused")
	ErrStatus           = errors.New("fetcher: unexpected HTTP status")
	ErrTooLarge         = errors.New("fetcher: body too large")
	ErrInvalidJSON      = errors.New("fetcher: body is not JSON")
	ErrInvalidUTF8      = errors.New("fetcher: body is not valid UTF-8")
	ErrDuplicateKeys    = errors.New("fetcher: body has duplicate keys")
	ErrTooDeep          = errors.New("fetcher: body nests too deep")
	// Deprecated: ReasonUnsupportedVersion is no longer returned.
	ErrUnsupportedVersion = errors.New("fetcher: unsupported protocol version")
	ErrNotACard           = errors.New("fetcher: body is not an agent card")
	ErrInvalidURL         = errors.New("fetcher: invalid card URL")
	ErrUnauthorized       = errors.New("fetcher: extended card refused: unauthorized")
	ErrForbidden          = errors.New("fetcher: extended card refused: forbidden")
	ErrRPCError           = errors.New("fetcher: JSON-RPC error answer")
	ErrCanceled           = errors.New("fetcher: canceled")
)

// ErrClosed is wrapped (inside a *FetchError with ReasonCanceled) by calls
// made after Close and by fetches that Close interrupted.
var ErrClosed = errors.New("fetcher: closed")

// reasons is the one list of reasons, in the order of the contract: each
// with its sentinel, whether a card.unreachable event carries it, and the
// one-line description schemas/README.md's table of reasons repeats (a test
// compares them).
var reasons = []struct {
	reason      Reason
	sentinel    error
	unreachable bool
	description string
}{
	{ReasonTimeout, ErrTimeout, true, "the fetch did not finish within the total timeout, or the connection within the connect timeout"},
	{ReasonConnect, ErrConnect, true, "the TCP connection failed (refused, reset, unreachable) or broke before a complete response"},
	{ReasonDNS, ErrDNS, true, "the agent's host name did not resolve"},
	{ReasonTLS, ErrTLS, true, "the TLS handshake failed (unknown authority, wrong name, expired certificate, protocol error)"},
	{ReasonRefusedAddress, ErrRefusedAddress, true, "the SSRF guard refused the resolved address of the request or of a redirect"},
	{ReasonTooManyRedirects, ErrTooManyRedirects, true, "more redirects than the limit"},
	{ReasonRedirectRefused, ErrRedirectRefused, true, "a redirect to a scheme other than http or https, or from https down to http"},
	{ReasonStatus, ErrStatus, true, "a final HTTP status other than 2xx or 304 (the detail names it)"},
	{ReasonTooLarge, ErrTooLarge, true, "the body is over the size limit"},
	{ReasonInvalidJSON, ErrInvalidJSON, true, "the body is not JSON"},
	{ReasonInvalidUTF8, ErrInvalidUTF8, true, "the body is not valid UTF-8"},
	{ReasonDuplicateKeys, ErrDuplicateKeys, true, "an object in the body has the same key twice"},
	{ReasonTooDeep, ErrTooDeep, true, "the body nests deeper than the card parser allows"},
	{ReasonUnsupportedVersion, ErrUnsupportedVersion, true, "no longer sent: before contract v1.1, the card declared a protocol version carddrift did not read"},
	{ReasonNotACard, ErrNotACard, true, "the body is JSON but not an object"},
	{ReasonInvalidURL, ErrInvalidURL, true, "the card URL is not an absolute http or https URL"},
	{ReasonUnauthorized, ErrUnauthorized, true, "the agent refused the authenticated extended card with HTTP 401: the credential for its origin was not accepted"},
	{ReasonForbidden, ErrForbidden, true, "the agent refused the authenticated extended card with HTTP 403: the credential is not allowed it"},
	{ReasonRPCError, ErrRPCError, true, "the agent answered the request for its extended card with a JSON-RPC error (the detail names its code)"},
	{ReasonCanceled, ErrCanceled, false, ""},
}

var sentinels = func() map[Reason]error {
	m := make(map[Reason]error, len(reasons))
	for _, r := range reasons {
		m[r.reason] = r.sentinel
	}
	return m
}()

// Reasons returns every Reason, in declaration order (for metrics).
func Reasons() []Reason {
	out := make([]Reason, len(reasons))
	for i, r := range reasons {
		out[i] = r.reason
	}
	return out
}

// UnreachableReasons returns the reasons a card.unreachable event may carry,
// in the order of Reasons: every Reason but ReasonCanceled, which says
// nothing about the agent (a worker retries the event instead). It is the
// one list of the contract: the card.unreachable schema's knownReasons and
// schemas/README.md's table of reasons are tested against it.
func UnreachableReasons() []Reason {
	var out []Reason
	for _, r := range reasons {
		if r.unreachable {
			out = append(out, r.reason)
		}
	}
	return out
}

// Sentinel returns the sentinel error of r, or nil for an unknown reason.
func (r Reason) Sentinel() error { return sentinels[r] }

// Description returns a one-line description of when a fetch fails with r,
// "" for ReasonCanceled and for a reason this package does not know.
func (r Reason) Description() string {
	for _, x := range reasons {
		if x.reason == r {
			return x.description
		}
	}
	return ""
}

// FetchError is returned for every failed fetch: the card is unreachable, which
// is never drift. Reason goes into card.unreachable verbatim.
//
// errors.Is matches the Reason's sentinel (ErrTimeout, ErrRefusedAddress, ...)
// and anything Err wraps (context.DeadlineExceeded, detector.ErrDuplicateKey,
// ...).
type FetchError struct {
	// URL is the card URL requested (not a redirect target).
	URL    string
	Reason Reason
	// Status is the final HTTP status when one was received, else 0.
	Status int
	// Err is the underlying error, if any.
	Err error
}

func (e *FetchError) Error() string {
	msg := fmt.Sprintf("fetch %s: %s", e.URL, e.Reason)
	if e.Status != 0 {
		msg += fmt.Sprintf(" (HTTP %d)", e.Status)
	}
	if e.Err != nil {
		msg += ": " + e.Err.Error()
	}
	return msg
}

// Unwrap returns the Reason's sentinel and Err.
func (e *FetchError) Unwrap() []error {
	out := make([]error, 0, 2)
	if s := e.Reason.Sentinel(); s != nil {
		out = append(out, s)
	}
	if e.Err != nil {
		out = append(out, e.Err)
	}
	return out
}

// refusedError is what the dial guard returns; it matches ErrRefusedAddress
// wherever it surfaces in the error chain.
type refusedError struct {
	addr string
	why  string
}

func (e *refusedError) Error() string {
	return "address " + e.addr + " refused by the SSRF guard (" + e.why + ")"
}

func (e *refusedError) Is(target error) bool { return target == ErrRefusedAddress }

// classifyTransport turns an error from http.Client.Do or a body read into a
// *FetchError. ctx is the fetch's own context: its expiry means "timeout", its
// cancellation (by the caller or by Close) means "canceled".
func classifyTransport(url string, ctx context.Context, err error) *FetchError {
	fe := &FetchError{URL: url, Err: err}
	var (
		dnsErr    *net.DNSError
		certErr   *tls.CertificateVerificationError
		unkAuth   x509.UnknownAuthorityError
		hostErr   x509.HostnameError
		certInval x509.CertificateInvalidError
		recErr    tls.RecordHeaderError
		alertErr  tls.AlertError
		netErr    net.Error
	)
	if r, ok := matchReason(err, transportReasons); ok {
		fe.Reason = r
		return fe
	}
	switch {
	case ctx.Err() != nil:
		cause := context.Cause(ctx)
		if errors.Is(cause, context.DeadlineExceeded) {
			fe.Reason = ReasonTimeout
		} else {
			fe.Reason = ReasonCanceled
		}
		if cause != nil && !errors.Is(err, cause) {
			fe.Err = fmt.Errorf("%w (%w)", cause, err)
		}
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, os.ErrDeadlineExceeded):
		fe.Reason = ReasonTimeout
	case errors.As(err, &dnsErr):
		if dnsErr.IsTimeout {
			fe.Reason = ReasonTimeout
		} else {
			fe.Reason = ReasonDNS
		}
	case errors.As(err, &certErr), errors.As(err, &unkAuth), errors.As(err, &hostErr),
		errors.As(err, &certInval), errors.As(err, &recErr), errors.As(err, &alertErr):
		fe.Reason = ReasonTLS
	case errors.As(err, &netErr) && netErr.Timeout():
		fe.Reason = ReasonTimeout
	case errors.Is(err, context.Canceled):
		fe.Reason = ReasonCanceled
	default:
		fe.Reason = ReasonConnect
	}
	return fe
}

// classifyParse turns an error from detector.Parse or detector.Digest into a
// *FetchError. A parse failure is an unreachable card, never drift.
func classifyParse(url string, status int, err error) *FetchError {
	fe := &FetchError{URL: url, Status: status, Err: err, Reason: ReasonNotACard}
	if r, ok := matchReason(err, parseReasons); ok {
		fe.Reason = r
	}
	return fe
}

// errorReason pairs an error with the Reason of a fetch that fails with it.
type errorReason struct {
	err    error
	reason Reason
}

// transportReasons are the errors of the client's own checks (the SSRF
// guard, the redirect policy, the body limit) that can surface from
// http.Client.Do or a body read.
var transportReasons = []errorReason{
	{ErrRefusedAddress, ReasonRefusedAddress},
	{ErrTooManyRedirects, ReasonTooManyRedirects},
	{ErrRedirectRefused, ReasonRedirectRefused},
	{ErrTooLarge, ReasonTooLarge},
}

// parseReasons are the errors of detector.Parse and detector.Digest that
// have a Reason of their own; any other is ReasonNotACard.
var parseReasons = []errorReason{
	{detector.ErrTooLarge, ReasonTooLarge},
	{detector.ErrTooDeep, ReasonTooDeep},
	{detector.ErrDuplicateKey, ReasonDuplicateKeys},
	{detector.ErrInvalidUTF8, ReasonInvalidUTF8},
	{detector.ErrNotJSON, ReasonInvalidJSON},
}

// matchReason returns the reason of the first entry of table whose error
// err wraps.
func matchReason(err error, table []errorReason) (Reason, bool) {
	for _, m := range table {
		if errors.Is(err, m.err) {
			return m.reason, true
		}
	}
	return "", false
}
