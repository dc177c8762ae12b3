// Package a2aemitv2test is the test rig for package a2aemitv2 and the
// end-to-end tests that drive an A2A v1.0 Go client: a real a2a-go/v2
// server (its request handler behind its JSON-RPC handler, and its
// agent-card handler) on an httptest server, whose v1.0 card the test can
// change while clients run — the vendor's change, also in the middle of a
// task — and whose follow-up messages it can make fail. For tests only.
package a2aemitv2test
