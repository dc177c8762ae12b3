// Package census takes the fleet's census: every agent carddrift watches
// (its live card, version and protocol versions, when it last changed, the
// tasks pinned per card version, whether it is unreachable, whether its
// replicas disagree) and the skills several agents offer under one id but
// not under one contract. It reads the stores (leases, pins, card bodies)
// and the card event stream (the last card.observed of every agent, for
// agents whose lease expired), and changes nothing.
//
//	f, err := census.Take(ctx, census.Source{Pins: st.Pins, Leases: st.Leases, Cards: st.Cards, JS: js}, census.Options{})
//
// carddrift fleet prints it; carddrift serve shows it at /fleet and
// /fleet.json and exports its gauges (Collector), taking it again and again
// with a Tally, which keeps the pins per agent and card version, the
// leases and the last observations from the buckets' and the card stream's
// changes: each census reads only what was written since the last.
//
//	src.Tally = census.NewTally(js, st.Pins.KV(), census.TallyOptions{Leases: st.Leases.KV(), Events: cfg.EventsStream})
package census
