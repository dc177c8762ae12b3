package detector

import "testing"

func noStreaming(c *Card) { c.Capabilities.Streaming = false }

func TestCheckStreamingDisabled(t *testing.T) {
	runCheck(t, "checkStreamingDisabled(pinned, live)", checkStreamingDisabled, flipCases(noStreaming, []Finding{{
		Rule: RuleStreamingDisabled, Severity: Breaking, Path: "/capabilities/streaming",
		Before: true, After: false,
		Message: "streaming is no longer supported: streaming calls will not get an event stream",
	}}, nil))
}

func TestCheckStreamingEnabled(t *testing.T) {
	runCheck(t, "checkStreamingEnabled(pinned, live)", checkStreamingEnabled, flipCases(noStreaming, nil, []Finding{{
		Rule: RuleStreamingEnabled, Severity: Info, Path: "/capabilities/streaming",
		Before: false, After: true, Message: "streaming is now supported",
	}}))
}
