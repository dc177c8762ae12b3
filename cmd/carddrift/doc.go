// Command carddrift detects A2A agent-card drift: it pins the card each task
// was planned against, revalidates it at capability-dependent transitions, and
// tells planners whether a task must abort, re-plan or may continue.
//
// main only wires signals; run holds the whole CLI so tests can drive it
// in-process.
package main
