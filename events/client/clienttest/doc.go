// Package clienttest is the test rig of carddrift's client side, shared by
// the SDK interceptors' tests (packages a2aemit and a2aemitv2, and their
// core's): a Recorder that stands in for the Emitter and renders what it
// was asked to publish one line per event (Line; Kind without the task),
// readers of the lifecycle stream for end-to-end tests, and a fetcher that
// reaches loopback agents. For tests only.
package clienttest
