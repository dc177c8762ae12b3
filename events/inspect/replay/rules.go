package replay

import (
	"fmt"
	"io"

	"github.com/carddrift/carddrift/detector"
)

// Rules is the rule set a re-evaluation judges with: the detector's one rule
// set type (detector.RuleSet, beside the registry), which the worker and the
// planner's Checker judge with too. Its file form is
//
//	{"disable": ["descriptive-text-changed"], "severity": {"interface-changed": "warning"}}
type Rules = detector.RuleSet

// RulesError is the error ParseRules returns: detector.RuleSetError. Rule is
// the offending rule id ("" when the file itself is malformed).
type RulesError = detector.RuleSetError

// ParseRules reads a rules file (carddrift replay --reevaluate --rules) with
// detector.ParseRuleSet; its errors say "replay:". Errors are *RulesError
// (errors.Is ErrInvalidRules).
func ParseRules(r io.Reader) (*Rules, error) {
	rs, err := detector.ParseRuleSet(r)
	if err != nil {
		return nil, fmt.Errorf("replay: %w", err)
	}
	return rs, nil
}
