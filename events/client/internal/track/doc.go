// Package track is the SDK-independent half of carddrift's A2A client
// interceptors: a2aemit (a2a-go v0.3) and a2aemitv2 (a2a-go/v2) translate
// their SDK's calls into a Call and tell the Tracker how to read responses
// and errors (SDK); the Tracker turns them into lifecycle events,
// remembering per task the last state, the media types reported per
// artifact and the consecutive failures per method. It never fails a call:
// publish errors go to Options.OnError.
package track
