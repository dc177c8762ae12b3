// Package impact answers a vendor's question before a deploy: if this agent
// served this card now, what would happen to every task pinned on it?
//
// Assess reads every pin of the agent from the pin store (a Scanner: one
// pass over the bucket), loads each pinned card body once, and asks the task
// core what it would decide of the proposed card at a capability-dependent
// transition (task.Assess: the worker's own decision, task.Decide, under
// each pin's requirements and posture). It publishes nothing and changes
// nothing.
//
//	rep, err := impact.Assess(ctx, impact.Source{Pins: st.Pins, Cards: st.Cards}, agentURL, raw, impact.Options{})
//	…
//	if rep.Counts.Abort > 0 { … block the deploy … }
package impact
