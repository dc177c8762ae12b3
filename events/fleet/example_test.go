package fleet_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/carddrift/carddrift/events/fleet"
	"github.com/carddrift/carddrift/events/service"
	"github.com/carddrift/carddrift/events/service/servicetest"
)

func ExampleScenarioNames() {
	for _, name := range fleet.ScenarioNames() {
		fmt.Println(name)
	}
	// Output:
	// pinning-rotation
	// modes-without-version-bump
	// security-scheme-swap
	// protocol-version-change
	// interface-move
	// skill-removed
	// skill-renamed
	// description-only
	// flapping
	// rolling-deploy
	// agent-down
	// split-brain
}

func ExampleLookupScenario() {
	s, _ := fleet.LookupScenario(fleet.PinningRotation)
	for _, e := range s.Expect {
		fmt.Printf("%s→%s %-12s %s\n", e.From, e.To, e.Profile, e.Outcome)
	}
	// Output:
	// base→rotated stream       abort
	// base→rotated degrade      replan
	// base→rotated degrade-once abort
	// base→rotated plain        abort
}

func ExampleParseScenarios() {
	names, err := fleet.ParseScenarios("flapping, agent-down")
	fmt.Println(names, err)
	_, err = fleet.ParseScenarios("flaping")
	fmt.Println(err != nil)
	// Output:
	// [flapping agent-down] <nil>
	// true
}

// TestDrive plays a schedule on a started fleet against carddrift's
// workers (servicetest: an embedded JetStream, fetches to loopback) and
// scores what the planner's view saw: the traffic's tasks and events, every
// agent fetched, a header naming where; a schedule it cannot make is an
// error of the options, before anything is published.
func TestDrive(t *testing.T) {
	r := servicetest.Start(t, servicetest.Options{Workers: []string{"w1"}})
	fl, err := fleet.New(fleet.Options{Agents: 4, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := fl.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer fl.Close()
	var out servicetest.Output
	o := fleet.DriveOptions{
		JetStream: r.JS, EventsStream: r.Config.EventsStream,
		Seed: 1, Duration: 5 * time.Second, DriftShare: 0.75, TaskEvery: 500 * time.Millisecond, TaskPrefix: "drive-",
		Lease: fleet.LeaseFunc(time.Second, 2*time.Second, 10*time.Second), FullFetch: 10 * time.Second,
		Idle: func() {
			ictx, cancel := context.WithTimeout(ctx, time.Minute)
			defer cancel()
			if err := service.WaitDrained(ictx, r.JS, r.Config.LifecycleStream, r.Config.ConsumerNames(), 20*time.Millisecond); err != nil {
				t.Error(err)
			}
		},
		Where: "the test's workers", Out: &out, Verdicts: true,
	}
	card, err := fl.Drive(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	if card.Agents != 4 || card.Tasks == 0 || card.Events == 0 || card.FetchesPerAgentPerLease <= 0 {
		t.Errorf("Drive = agents %d, tasks %d, events %d, fetches per agent per lease %v: want 4 agents, tasks, events and fetches",
			card.Agents, card.Tasks, card.Events, card.FetchesPerAgentPerLease)
	}
	for _, want := range []string{"carddrift 4 agents, 5s, seed 1", "the test's workers; verdicts as a planner sees them"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("Drive's output lacks %q:\n%s", want, out.String())
		}
	}

	o.DriftShare = 2
	if _, err := fl.Drive(ctx, o); !errors.Is(err, fleet.ErrInvalidOptions) {
		t.Errorf("Drive with a drift share of 2 = %v, want ErrInvalidOptions", err)
	}
}
