// Package deployments holds the shipped deployment files — the 3-node NATS
// cluster configuration and configuration (nats/, tls/), Docker Compose, Kubernetes
// manifests (kubernetes/) and the Helm chart (helm/) — and, in its tests, the checks
// that they agree with carddrift: stream and bucket names, accounts and
// permissions, the CARDDRIFT_* environment against serve's flags, helm lint
// and helm template. test/cluster_test.go runs the NATS configuration for
// real. It has no code; nothing imports it.
package deployments
