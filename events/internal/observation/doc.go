// Package observation is how the shells that judge live cards through the
// task core — the worker and the planner's Checker — read them: Card
// observes the card a task is judged against (the public card, or for a
// task that uses the authenticated extended card, the extended card with
// the fetcher's credentials), and Of turns a fetcher observation into the
// core's (task.Observation). One observation and one conversion, so that a
// check sees the card a transition is judged on and hands the core the
// same split-brain facts from the shared lease.
package observation
