package census

// TallyStats counts what a Tally read: the full reads of the pins bucket
// (Loads), the messages read in all and
// by the last Refresh of each thing followed, the pins uncounted because
// the bucket dropped their last message for a limit, and the records,
// (agent, card version) groups and leases held now.
type TallyStats struct {
	Loads                          uint64
	Read, LastRead                 uint64
	LeasesRead, LeasesLastRead     uint64
	ObservedRead, ObservedLastRead uint64
	Dropped                        uint64
	Pins, Groups, Leases           int
}

// Stats returns what the Tally read and holds.
func (t *Tally) Stats() TallyStats {
	t.mu.Lock()
	defer t.mu.Unlock()
	s := TallyStats{
		Loads: t.pins.loads, Read: t.pins.read, LastRead: t.pins.lastRead,
		Dropped: t.pins.dropped, Pins: len(t.pins.entries), Groups: len(t.groups),
	}
	if t.leases != nil {
		s.LeasesRead, s.LeasesLastRead, s.Leases = t.leases.read, t.leases.lastRead, len(t.leases.entries)
	}
	if t.observed != nil {
		s.ObservedRead, s.ObservedLastRead = t.observed.read, t.observed.lastRead
	}
	return s
}
