// Package census takes the fleet's census: every agent carddrift watches
// (its live card, version and protocol versions, when it last changed, the
// tasks pinned per card version, whether it is unreachable, whether its
// replicas disagree) and the skills several agents offer under one id but
// not under one contract. It reads, through a Tally, the pins and leases
// buckets and the last card.observed of every agent, and the card bodies;
// it changes nothing. A Tally reads everything once, then only what was
// written since, so serve takes the census again and again at the cost of
// the changes (Collector exports its gauges):
//
//	tally := census.NewTally(js, st.Pins.KV(), census.TallyOptions{Leases: st.Leases.KV(), Events: cfg.EventsStream})
//	f, err := census.Take(ctx, census.Source{Tally: tally, Cards: st.Cards}, census.Options{})
//
// carddrift fleet prints it; carddrift serve shows it at /fleet and
// /fleet.json.
package census
