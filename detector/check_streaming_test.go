package detector

import "testing"

func TestCheckStreamingDisabled(t *testing.T) {
	runCheck(t, "checkStreamingDisabled(pinned, live)", checkStreamingDisabled, []checkCase{
		{
			name:   "turned off",
			pinned: testCard(),
			live:   modified(func(c *Card) { c.Capabilities.Streaming = false }),
			want: []Finding{{
				Rule: RuleStreamingDisabled, Severity: Breaking, Path: "/capabilities/streaming",
				Before: true, After: false,
				Message: "streaming is no longer supported: streaming calls will not get an event stream",
			}},
		},
		{
			name:   "turned on",
			pinned: modified(func(c *Card) { c.Capabilities.Streaming = false }),
			live:   testCard(),
		},
	})
}

func TestCheckStreamingEnabled(t *testing.T) {
	runCheck(t, "checkStreamingEnabled(pinned, live)", checkStreamingEnabled, []checkCase{
		{
			name:   "turned on",
			pinned: modified(func(c *Card) { c.Capabilities.Streaming = false }),
			live:   testCard(),
			want: []Finding{{
				Rule: RuleStreamingEnabled, Severity: Info, Path: "/capabilities/streaming",
				Before: false, After: true, Message: "streaming is now supported",
			}},
		},
		{
			name:   "turned off",
			pinned: testCard(),
			live:   modified(func(c *Card) { c.Capabilities.Streaming = false }),
		},
	})
}
