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
