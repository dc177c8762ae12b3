// Package observation turns a fetcher observation into the task core's
// (task.Observation), for every shell that reads live cards through the
// fetcher and judges them through the core: the worker and the planner's
// Checker. One conversion, so that both hand the core the same split-brain
// facts from the shared lease.
package observation
