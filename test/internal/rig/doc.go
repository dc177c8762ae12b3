// Package rig is what the measuring tools under test/ (test/soak) share:
// a command's main, the machine's load, the backlog of a stream's
// durables, and, for their tests, a carddrift serve of their own built
// from cmd/carddrift.
package rig
