// Package track is the half of carddrift's A2A client interceptors that no
// SDK shapes: package a2aemit (a2a-go v0.3) and package a2aemitv2 (a2a-go/v2,
// A2A v1.0) translate their SDK's calls into a Call (Begin), and tell the
// Tracker how to read their SDK's responses and errors (SDK: a Response,
// an error code); the Tracker turns them into the lifecycle events
// carddrift judges — a2a.task.submitted, request, status, artifact and
// error — remembering per task the state last seen, the media types
// reported per artifact and the consecutive failures per method (the
// attempt number). It also holds what both share around the payloads and
// the card: NewStatus, Deref, the fetch through carddrift's fetcher
// (Resolve, into a ResolvedCard of the SDK's card struct) and its
// ErrCardStatus.
//
// A Tracker never fails a call: publish errors go to Options.OnError.
//
// The tests are written once: track_test.go drives a Tracker with plain
// Responses, sdk_test.go makes the same calls through both SDK lines'
// interceptors and expects the same events in each line's spelling.
package track
