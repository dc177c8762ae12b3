package client

import (
	"context"

	"github.com/carddrift/carddrift/detector"
	"github.com/carddrift/carddrift/events"
)

// Lifecycle publishes the lifecycle events of A2A tasks; *Emitter
// implements it.
type Lifecycle interface {
	Submitted(ctx context.Context, d events.Submitted) error
	Request(ctx context.Context, d events.Request) error
	Status(ctx context.Context, d events.Status) error
	Artifact(ctx context.Context, d events.Artifact) error
	Error(ctx context.Context, d events.Error) error
}

var _ Lifecycle = (*Emitter)(nil)

// Plan is what a client planned a task for beyond what an interceptor sees
// in the call that creates it.
type Plan struct {
	SkillID    string
	Requires   events.Requires
	Posture    detector.Posture
	Idempotent bool
}

type planKey struct{}

// WithPlan attaches the plan of the task a call made with ctx creates.
func WithPlan(ctx context.Context, p Plan) context.Context {
	return context.WithValue(ctx, planKey{}, p)
}

// PlanFrom returns the plan WithPlan attached to ctx, if any.
func PlanFrom(ctx context.Context) (Plan, bool) {
	p, ok := ctx.Value(planKey{}).(Plan)
	return p, ok
}

// InterceptorOptions configure the SDK interceptors (a2aemit.Options and
// a2aemitv2.Options).
type InterceptorOptions struct {
	// AgentURL is the agentUrl of every event (default: the scheme and
	// host of the interface URL).
	AgentURL string
	// CardURL and RawCard are the card's URL and bytes as served
	// (ResolveCard returns both); RawCard goes into every submission.
	CardURL string
	RawCard []byte
	// MarshalCard, without RawCard, sends json.Marshal of the SDK's card
	// struct: a lossy round trip whose digest differs from the served card.
	MarshalCard bool
	Plan        Plan // of tasks whose call carries none
	// MaxTasks bounds the tasks remembered (default 10,000; oldest first).
	MaxTasks int
	// OnError receives every publish error, possibly concurrently.
	OnError func(error)
}
