package fleet_test

import (
	"fmt"

	"github.com/carddrift/carddrift/events/fleet"
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
