// Package track is the half of carddrift's A2A client interceptors that no
// SDK shapes: package a2aemit (a2a-go v0.3) and package a2aemitv2 (a2a-go/v2,
// A2A v1.0) translate their SDK's calls, payloads and errors into a Call,
// Response values and error codes, and a Tracker turns those into the
// lifecycle events carddrift judges — a2a.task.submitted, request, status,
// artifact and error — remembering per task the state last seen, the media
// types reported per artifact and the consecutive failures per method
// (the attempt number). It also holds what both share around the card: the
// fetch through carddrift's fetcher (Resolve) and its ErrCardStatus.
//
// A Tracker never fails a call: publish errors go to Options.OnError.
package track
