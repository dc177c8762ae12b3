// Package natstest is the NATS harness of carddrift's tests: an embedded
// JetStream server per test (StartJetStream, StartConf), one with the
// shipped deployment's publish permissions (StartShipped), and the one wait
// helper, Eventually.
package natstest
