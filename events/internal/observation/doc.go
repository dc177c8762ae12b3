// Package observation is how the worker and the planner's Checker read the
// live card a task is judged against (Card) and hand it to the task core
// (Of), so that a check sees the card a transition is judged on.
package observation
