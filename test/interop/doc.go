// Package interop is the @a2a-js/sdk toolchain the interop tests run against:
// the npm project in this folder (package.json, package-lock.json, the
// scripts the tests hand to node), installed by `npm ci --prefix
// test/interop` (.ci/run does). Imported by tests only.
package interop
