package client

import (
	"context"

	"github.com/carddrift/carddrift/detector"
	"github.com/carddrift/carddrift/events"
)

// Lifecycle publishes the lifecycle events of A2A tasks, one call per
// event; *Emitter implements it. The SDK interceptors (packages a2aemit and
// a2aemitv2) publish through one.
type Lifecycle interface {
	Submitted(ctx context.Context, d events.Submitted) error
	Request(ctx context.Context, d events.Request) error
	Status(ctx context.Context, d events.Status) error
	Artifact(ctx context.Context, d events.Artifact) error
	Error(ctx context.Context, d events.Error) error
}

var _ Lifecycle = (*Emitter)(nil)

// Plan is what a client planned a task for, beyond what an interceptor sees
// in the call that creates it: the skill, the posture and idempotency, and
// requirements the call does not show (output modes, security schemes).
type Plan struct {
	SkillID    string
	Requires   events.Requires
	Posture    detector.Posture
	Idempotent bool
}

type planKey struct{}

// WithPlan attaches the plan of the task a call made with ctx creates. The
// interceptors of packages a2aemit and a2aemitv2 read it (PlanFrom).
func WithPlan(ctx context.Context, p Plan) context.Context {
	return context.WithValue(ctx, planKey{}, p)
}

// PlanFrom returns the plan WithPlan attached to ctx, if any.
func PlanFrom(ctx context.Context) (Plan, bool) {
	p, ok := ctx.Value(planKey{}).(Plan)
	return p, ok
}

// InterceptorOptions configure the SDK interceptors (a2aemit.Options and
// a2aemitv2.Options are this type).
type InterceptorOptions struct {
	// AgentURL is the agentUrl of every event. Default: the scheme and host
	// of the interface URL the client talks to.
	AgentURL string
	// CardURL is the URL the card was read from (ResolveCard returns it).
	// Default none: carddrift then resolves the agent's well-known card URL.
	CardURL string
	// RawCard is the card the client was built from, byte for byte as served
	// (ResolveCard returns it); it goes into every a2a.task.submitted.
	RawCard []byte
	// MarshalCard, when RawCard is nil, sends json.Marshal of the client's
	// card struct (the SDK's a2a.AgentCard) instead of no card. The round
	// trip loses fields the struct does not model and every false/absent
	// distinction, so its digest differs from the served card's and
	// carddrift may report drift that is only the round trip (or miss fields
	// it dropped). Prefer RawCard.
	MarshalCard bool
	// Plan is the plan of tasks whose call carries none (WithPlan).
	Plan Plan
	// MaxTasks bounds the tasks remembered (default 10,000); past it the
	// oldest is forgotten (its next call then counts attempts anew).
	MaxTasks int
	// OnError, if set, receives every publish error. It may be called
	// concurrently.
	OnError func(error)
}
