package replay_test

import (
	"fmt"
	"strings"
	"time"

	"github.com/carddrift/carddrift/detector"
	"github.com/carddrift/carddrift/events/inspect/replay"
)

// A --rules file (detector.ParseRuleSet) disables rules and re-grades
// others; Apply runs it over findings before a verdict is judged.
func Example_rules() {
	rules, err := detector.ParseRuleSet(strings.NewReader(`{
		"disable": ["descriptive-text-changed"],
		"severity": {"interface-changed": "warning"}
	}`))
	if err != nil {
		fmt.Println(err)
		return
	}
	findings := []detector.Finding{
		{Rule: detector.RuleDescriptiveTextChanged, Severity: detector.Info, Path: "/description"},
		{Rule: detector.RuleInterfaceChanged, Severity: detector.Breaking, Path: "/supportedInterfaces/0"},
		{Rule: detector.RuleStreamingDisabled, Severity: detector.Breaking, Path: "/capabilities/streaming"},
	}
	for _, f := range rules.Apply(findings) {
		fmt.Println(f.Severity, f.Rule)
	}

	_, err = detector.ParseRuleSet(strings.NewReader(`{"disable":["no-such-rule"]}`))
	fmt.Println(err)
	// Output:
	// breaking streaming-disabled
	// warning interface-changed
	// invalid rules: "no-such-rule": not a rule id (disable)
}

// Since and Until take RFC 3339 times or durations before now.
func ExampleParseTime() {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	for _, s := range []string{"15m", "2026-03-01T10:30:00+01:00"} {
		t, err := replay.ParseTime(s, now)
		fmt.Println(t, err)
	}
	// Output:
	// 2026-03-01 11:45:00 +0000 UTC <nil>
	// 2026-03-01 09:30:00 +0000 UTC <nil>
}
