package fleet

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"sync"
	"time"
)

// Applied records one step a Player applied, when, and its error.
type Applied struct {
	Agent string
	Step  int
	Spec  Step
	At    time.Time
	Err   error
}

// Player applies a schedule's steps at their offsets. It owns one goroutine,
// which exits when every step has been applied, when the context given to
// Play ends, when Stop is called or when the fleet closes.
type Player struct {
	start  time.Time
	cancel context.CancelFunc
	done   chan struct{}

	mu      sync.Mutex
	applied []Applied
	err     error
}

type timedStep struct {
	as   *Assignment
	i    int
	step Step
}

// Play validates the schedule, applies the steps at offset 0 before it
// returns, and starts the goroutine that applies the others at start+At.
// Errors: ErrNotStarted, ErrUnknownLabel. Do not modify the schedule while
// the Player runs.
func (f *Fleet) Play(ctx context.Context, schedule []Assignment) (*Player, error) {
	var steps []timedStep
	for i := range schedule {
		as := &schedule[i]
		if as.Agent == nil || as.Agent.host == "" {
			return nil, fmt.Errorf("%w: assignment %s", ErrNotStarted, as.AgentID)
		}
		for j, s := range as.Steps {
			for _, l := range append([]string{s.Card}, s.Replicas...) {
				if l != "" && as.Card(l) == nil {
					return nil, fmt.Errorf("%w: %s step %d serves %q", ErrUnknownLabel, as.AgentID, j, l)
				}
			}
			steps = append(steps, timedStep{as: as, i: j, step: s})
		}
	}
	slices.SortStableFunc(steps, func(x, y timedStep) int {
		return cmp.Or(cmp.Compare(x.step.At, y.step.At), cmp.Compare(x.as.Agent.index, y.as.Agent.index), cmp.Compare(x.i, y.i))
	})

	ctx, cancel := context.WithCancel(ctx)
	origin := time.Now()
	p := &Player{start: origin, cancel: cancel, done: make(chan struct{})}
	n := 0
	for n < len(steps) && steps[n].step.At <= 0 {
		p.apply(steps[n])
		n++
	}
	go p.run(ctx, f, origin, steps[n:])
	return p, nil
}

func (p *Player) run(ctx context.Context, f *Fleet, origin time.Time, steps []timedStep) {
	defer close(p.done)
	defer p.cancel()
	timer := time.NewTimer(0)
	defer timer.Stop()
	<-timer.C
	for len(steps) > 0 {
		timer.Reset(time.Until(origin.Add(steps[0].step.At)))
		select {
		case <-ctx.Done():
			return
		case <-f.closed:
			p.fail(ErrClosed)
			return
		case <-timer.C:
		}
		now := time.Since(origin)
		for len(steps) > 0 && steps[0].step.At <= now {
			p.apply(steps[0])
			steps = steps[1:]
		}
	}
}

func (p *Player) apply(ts timedStep) {
	a, s := ts.as.Agent, ts.step
	labels := s.Replicas
	if len(labels) == 0 && s.Card != "" {
		labels = []string{s.Card}
	}
	var bodies [][]byte
	for _, l := range labels {
		bodies = append(bodies, ts.as.Card(l))
	}
	a.SetReplicas(bodies...)
	err := a.SetOutage(s.Outage)
	p.mu.Lock()
	p.applied = append(p.applied, Applied{Agent: a.id, Step: ts.i, Spec: s, At: time.Now(), Err: err})
	p.mu.Unlock()
	if err != nil {
		p.fail(fmt.Errorf("fleet: %s step %d: %w", a.id, ts.i, err))
	}
}

func (p *Player) fail(err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.err == nil {
		p.err = err
	}
}

// Start returns when the schedule started: step offsets count from it.
func (p *Player) Start() time.Time { return p.start }

// Done is closed when the Player's goroutine has exited.
func (p *Player) Done() <-chan struct{} { return p.done }

// Stop stops applying steps and waits for the goroutine to exit; safe to
// call again.
func (p *Player) Stop() {
	p.cancel()
	<-p.done
}

// Applied returns the steps applied so far, in the order they took effect.
func (p *Player) Applied() []Applied {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.applied)
}

// Err returns the first error of a step, ErrClosed if the fleet closed
// before the last step, or nil.
func (p *Player) Err() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.err
}
