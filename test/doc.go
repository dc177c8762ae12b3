// Package test holds carddrift's end-to-end suites, which need the whole
// product and so belong to no one package: the drift cases through a real
// worker (drift_once, pinning, fingerprint, hostile), the fault suites
// (kill, redelivery_order, cluster: three nats-server processes with the
// shipped configuration), the adversary suite of the trust boundary
// (adversary_*), interop against the official A2A SDKs (interop,
// signed_interop; test/interop holds the @a2a-js/sdk npm project, no Go), the import
// test of the layout (layout), and the benchmarks measured as deployed
// (bench). They run on events/service/servicetest; this package has no code
// of its own outside its tests, and nothing imports it.
package test
