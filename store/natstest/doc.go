// Package natstest is the NATS harness of carddrift's tests: an embedded
// JetStream server per test (StartJetStream, StartJetStreamWith), one whose
// only user has the shipped deployment's publish permissions
// (StartShipped), and the one wait helper, Eventually. Every package whose
// tests need a real JetStream imports it; the conformance suite of the
// store interfaces is package storetest, beside it.
package natstest
