package fetcher

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"os"
	"slices"

	"github.com/carddrift/carddrift/detector"
)

// Reason is why a fetch failed. Its string form is used verbatim as the
// `reason` of a card.unreachable event, so the values are part of the public
// contract: add new ones, never rename. UnreachableReasons is the one list of
// the reasons an event may carry; the card.unreachable schema and schemas/README.md
// are tested against it.
//
// A Reason is also the error that errors.Is matches against any *FetchError
// with that reason: errors.Is(err, ReasonTimeout).
type Reason string

// Reasons of a *FetchError, each described in the reasons table below (the
// one schemas/README.md repeats).
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

// The errors the redirect policy wraps (a fetch failing with them has their
// reason).
var (
	ErrTooManyRedirects error = ReasonTooManyRedirects
	ErrRedirectRefused  error = ReasonRedirectRefused
)

// ErrClosed is wrapped (inside a *FetchError with ReasonCanceled) by calls
// made after Close and by fetches that Close interrupted.
var ErrClosed = errors.New("fetcher: closed")

// reasons is the one list of reasons, in the order of the contract, each
// with the one-line description schemas/README.md's table of reasons
// repeats (a test compares them). A card.unreachable event carries every
// one but ReasonCanceled.
var reasons = []struct {
	reason      Reason
	description string
}{
	{ReasonTimeout, "the fetch did not finish within the total timeout, or the connection within the connect timeout"},
	{ReasonConnect, "the TCP connection failed (refused, reset, unreachable) or broke before a complete response"},
	{ReasonDNS, "the agent's host name did not resolve"},
	{ReasonTLS, "the TLS handshake failed (unknown authority, wrong name, expired certificate, protocol error)"},
	{ReasonRefusedAddress, "the SSRF guard refused the resolved address of the request or of a redirect"},
	{ReasonTooManyRedirects, "more redirects than the limit"},
	{ReasonRedirectRefused, "a redirect to a scheme other than http or https, or from https down to http"},
	{ReasonStatus, "a final HTTP status other than 2xx or 304 (the detail names it)"},
	{ReasonTooLarge, "the body is over the size limit"},
	{ReasonInvalidJSON, "the body is not JSON"},
	{ReasonInvalidUTF8, "the body is not valid UTF-8"},
	{ReasonDuplicateKeys, "an object in the body has the same key twice"},
	{ReasonTooDeep, "the body nests deeper than the card parser allows"},
	{ReasonUnsupportedVersion, "no longer sent: before contract v1.1, the card declared a protocol version carddrift did not read"},
	{ReasonNotACard, "the body is JSON but not an object"},
	{ReasonInvalidURL, "the card URL is not an absolute http or https URL"},
	{ReasonUnauthorized, "the agent refused the authenticated extended card with HTTP 401: the credential for its origin was not accepted"},
	{ReasonForbidden, "the agent refused the authenticated extended card with HTTP 403: the credential is not allowed it"},
	{ReasonRPCError, "the agent answered the request for its extended card with a JSON-RPC error (the detail names its code)"},
	{ReasonCanceled, ""},
}

// Error makes a Reason the error errors.Is matches a *FetchError against;
// it is the Reason itself, so a Reason prints the same as an error or not.
func (r Reason) Error() string { return string(r) }

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
	return slices.DeleteFunc(Reasons(), func(r Reason) bool { return r == ReasonCanceled })
}

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
// errors.Is matches its Reason (ReasonTimeout, ReasonRefusedAddress, ...)
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

// Unwrap returns the Reason and Err.
func (e *FetchError) Unwrap() []error {
	out := make([]error, 0, 2)
	if e.Reason != "" {
		out = append(out, e.Reason)
	}
	if e.Err != nil {
		out = append(out, e.Err)
	}
	return out
}

// refusedError is what the dial guard returns; it matches ReasonRefusedAddress
// wherever it surfaces in the error chain.
type refusedError struct {
	addr string
	why  string
}

func (e *refusedError) Error() string {
	return "address " + e.addr + " refused by the SSRF guard (" + e.why + ")"
}

func (e *refusedError) Is(target error) bool { return target == ReasonRefusedAddress }

// classifyTransport turns an error from http.Client.Do or a body read into a
// *FetchError. ctx is the fetch's own context: its expiry means "timeout", its
// cancellation (by the caller or by Close) means "canceled".
func classifyTransport(url string, ctx context.Context, err error) *FetchError {
	fe := &FetchError{URL: url, Err: err}
	dnsErr, isDNS := errors.AsType[*net.DNSError](err)
	netErr, isNet := errors.AsType[net.Error](err)
	// The client's own checks (the SSRF guard, the redirect policy, the
	// body limit) surface from http.Client.Do or a body read.
	for _, r := range []Reason{ReasonRefusedAddress, ReasonTooManyRedirects, ReasonRedirectRefused, ReasonTooLarge} {
		if errors.Is(err, r) {
			fe.Reason = r
			return fe
		}
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
	case isDNS && dnsErr.IsTimeout:
		fe.Reason = ReasonTimeout
	case isDNS:
		fe.Reason = ReasonDNS
	case isA[*tls.CertificateVerificationError](err), isA[x509.UnknownAuthorityError](err), isA[x509.HostnameError](err),
		isA[x509.CertificateInvalidError](err), isA[tls.RecordHeaderError](err), isA[tls.AlertError](err):
		fe.Reason = ReasonTLS
	case isNet && netErr.Timeout():
		fe.Reason = ReasonTimeout
	case errors.Is(err, context.Canceled):
		fe.Reason = ReasonCanceled
	default:
		fe.Reason = ReasonConnect
	}
	return fe
}

// isA reports whether err wraps an E.
func isA[E error](err error) bool {
	_, ok := errors.AsType[E](err)
	return ok
}

// classifyParse turns an error from detector.Parse or detector.Digest into a
// *FetchError. A parse failure is an unreachable card, never drift: the
// parser's errors that have a Reason of their own get it, any other is
// ReasonNotACard.
func classifyParse(url string, status int, err error) *FetchError {
	fe := &FetchError{URL: url, Status: status, Err: err, Reason: ReasonNotACard}
	for _, m := range []struct {
		err    error
		reason Reason
	}{
		{detector.ErrTooLarge, ReasonTooLarge},
		{detector.ErrTooDeep, ReasonTooDeep},
		{detector.ErrDuplicateKey, ReasonDuplicateKeys},
		{detector.ErrInvalidUTF8, ReasonInvalidUTF8},
		{detector.ErrNotJSON, ReasonInvalidJSON},
	} {
		if errors.Is(err, m.err) {
			fe.Reason = m.reason
			break
		}
	}
	return fe
}
