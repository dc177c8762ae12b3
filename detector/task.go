package detector

// Posture is how a task reacts to breaking drift that touches it.
type Posture string

// Postures from the pinning write-up.
const (
	// FailClosed aborts on any impacting breaking drift and surfaces
	// re-negotiation.
	FailClosed Posture = "fail-closed"
	// Degrade re-plans against the new card when the task is idempotent and its
	// required skill is still offered; otherwise it aborts like FailClosed.
	Degrade Posture = "degrade"
)

// ParsePosture reads "fail-closed" or "degrade"; "" means FailClosed.
func ParsePosture(s string) (Posture, error) {
	switch Posture(s) {
	case "", FailClosed:
		return FailClosed, nil
	case Degrade:
		return Degrade, nil
	}
	return "", &ValueError{Field: "posture", Value: s, Allowed: []string{string(FailClosed), string(Degrade)}}
}

// Action is what a planner should do with a task.
type Action string

// Actions of a verdict.
const (
	Abort    Action = "abort"
	Replan   Action = "replan"
	Continue Action = "continue"
)

// Counts counts verdicts by action: the summaries of carddrift impact and
// of a replayed task's story.
type Counts struct {
	Abort    int `json:"abort"`
	Replan   int `json:"replan"`
	Continue int `json:"continue"`
}

// Add counts one verdict's action (an action that is none of the three is
// not counted).
func (c *Counts) Add(a Action) {
	switch a {
	case Abort:
		c.Abort++
	case Replan:
		c.Replan++
	case Continue:
		c.Continue++
	}
}

// Requirements is what a task needs of the agent, as the client planned it.
type Requirements struct {
	SkillID           string   `json:"skillId,omitempty"`
	Streaming         bool     `json:"streaming,omitempty"`
	PushNotifications bool     `json:"pushNotifications,omitempty"`
	InputModes        []string `json:"inputModes,omitempty"`
	OutputModes       []string `json:"outputModes,omitempty"`
	// Security names the security schemes the client authenticates with.
	Security []string `json:"security,omitempty"`
	// Scopes maps a security scheme name to the OAuth scopes the client
	// requests of it. Nil: the client did not say, and the scopes of the pinned
	// requirements that apply to the task's skill are assumed.
	Scopes map[string][]string `json:"scopes,omitempty"`
	// Extensions are the extension URIs the client activates.
	Extensions []string `json:"extensions,omitempty"`
	// ExtendedCard reports that the task uses the authenticated extended card.
	ExtendedCard bool    `json:"extendedCard,omitempty"`
	Posture      Posture `json:"posture,omitempty"`
	Idempotent   bool    `json:"idempotent,omitempty"`
}

// Verdict is the task-scoped outcome of evaluating drift.
type Verdict struct {
	Action  Action  `json:"action"`
	Posture Posture `json:"posture"`
	Reason  string  `json:"reason"`
	// ReplanSkill is the skill id a replan goes onto when it is not the
	// task's own: under degrade, an idempotent task whose skill was renamed
	// (skill-renamed) re-plans onto the skill's new id. Empty otherwise.
	ReplanSkill string `json:"replanSkill,omitempty"`
	// Impacting are the findings that touch the task (a subset of all the
	// findings between the two cards), in Diff order.
	Impacting []Finding `json:"-"`
}
