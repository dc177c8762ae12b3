package detector

// Posture is how a task reacts to breaking drift that touches it.
type Posture string

// Postures (see Judge).
const (
	FailClosed Posture = "fail-closed"
	Degrade    Posture = "degrade"
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

// Counts counts verdicts by action.
type Counts struct {
	Abort    int `json:"abort"`
	Replan   int `json:"replan"`
	Continue int `json:"continue"`
}

// Add counts one verdict's action.
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
	Security          []string `json:"security,omitempty"` // schemes the client authenticates with
	// Scopes maps a scheme name to the OAuth scopes requested of it. Nil: the
	// scopes of the pinned requirements that apply to the skill are assumed.
	Scopes       map[string][]string `json:"scopes,omitempty"`
	Extensions   []string            `json:"extensions,omitempty"` // URIs the client activates
	ExtendedCard bool                `json:"extendedCard,omitempty"`
	Posture      Posture             `json:"posture,omitempty"`
	Idempotent   bool                `json:"idempotent,omitempty"`
}

// Verdict is the task-scoped outcome of evaluating drift.
type Verdict struct {
	Action  Action  `json:"action"`
	Posture Posture `json:"posture"`
	Reason  string  `json:"reason"`
	// ReplanSkill is the new id of a renamed skill a replan goes onto.
	ReplanSkill string `json:"replanSkill,omitempty"`
	// Impacting are the findings that touch the task, in Diff order.
	Impacting []Finding `json:"-"`
}
