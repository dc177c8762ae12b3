package a2aemit

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"sync"

	"github.com/a2aproject/a2a-go/a2a"
	"github.com/a2aproject/a2a-go/a2aclient"
	"go.opentelemetry.io/otel/trace"

	"github.com/carddrift/carddrift/detector"
	"github.com/carddrift/carddrift/events"
	"github.com/carddrift/carddrift/events/client"
	"github.com/carddrift/carddrift/events/internal/defaults"
	"github.com/carddrift/carddrift/events/publish"
)

// Emitter publishes lifecycle events; *client.Emitter implements it.
type Emitter interface {
	Submitted(ctx context.Context, d events.Submitted) error
	Request(ctx context.Context, d events.Request) error
	Status(ctx context.Context, d events.Status) error
	Artifact(ctx context.Context, d events.Artifact) error
	Error(ctx context.Context, d events.Error) error
}

var _ Emitter = (*client.Emitter)(nil)

// DefaultMaxTasks bounds the tasks an Interceptor remembers.
const DefaultMaxTasks = 10_000

// Plan is what the client planned a task for, beyond what the interceptor
// sees in the call: the skill, the posture and idempotency, and requirements
// the call does not show (output modes, security schemes).
type Plan struct {
	SkillID    string
	Requires   events.Requires
	Posture    detector.Posture
	Idempotent bool
}

type planKey struct{}

// WithPlan attaches the plan of the task a SendMessage or
// SendStreamingMessage call creates. It overrides Options.Plan for that call.
func WithPlan(ctx context.Context, p Plan) context.Context {
	return context.WithValue(ctx, planKey{}, p)
}

// Options configure an Interceptor.
type Options struct {
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
	// a2a.AgentCard instead of no card. The round trip loses fields the
	// struct does not model and every false/absent distinction, so its digest
	// differs from the served card's and carddrift may report drift that is
	// only the round trip (or miss fields it dropped). Prefer RawCard.
	MarshalCard bool
	// Plan is the plan of tasks whose call carries none (WithPlan).
	Plan Plan
	// MaxTasks bounds the tasks remembered (default DefaultMaxTasks); past
	// it the oldest is forgotten (its next call then counts attempts anew).
	MaxTasks int
	// OnError, if set, receives every publish error. It may be called
	// concurrently.
	OnError func(error)
}

// Interceptor is an a2aclient.CallInterceptor that publishes the task
// lifecycle through an Emitter. Create it with New; safe for concurrent use.
type Interceptor struct {
	em   Emitter
	opts Options

	mu    sync.Mutex
	tasks map[string]*taskState
	order []string // insertion order, for eviction
}

var _ a2aclient.CallInterceptor = (*Interceptor)(nil)

type taskState struct {
	state     string
	artifacts map[string]map[string]bool // artifact id → media types reported
	failures  map[string]int             // method → consecutive failures
}

// New returns an Interceptor publishing through em.
func New(em Emitter, opts Options) *Interceptor {
	opts.MaxTasks = defaults.Positive(opts.MaxTasks, DefaultMaxTasks)
	return &Interceptor{em: em, opts: opts, tasks: map[string]*taskState{}}
}

// WithLifecycleEvents is the one option that adds the interceptor to the
// clients an a2aclient.Factory (or a2aclient.NewFromCard,
// NewFromEndpoints) creates.
func WithLifecycleEvents(em Emitter, opts Options) a2aclient.FactoryOption {
	return a2aclient.WithInterceptors(New(em, opts))
}

// call is what Before learned, for After.
type call struct {
	method   string // wire name
	agentURL string
	taskID   string // "" until a new task is named
	newTask  bool   // the call creates a task
	plan     Plan
	card     *a2a.AgentCard
	streams  bool
	push     bool
	inModes  []string

	mu        sync.Mutex
	announced bool // the new task was submitted
	succeeded bool // failures of the method were reset
}

type callKey struct{}

// Before implements a2aclient.CallInterceptor: it emits a2a.task.request
// for calls on a known task and remembers what After needs.
func (ic *Interceptor) Before(ctx context.Context, req *a2aclient.Request) (context.Context, error) {
	c := &call{method: wireMethod(req.Method, req.Card), agentURL: ic.agentURL(req.BaseURL), card: req.Card}
	switch p := req.Payload.(type) {
	case *a2a.MessageSendParams:
		if p == nil || p.Message == nil {
			break
		}
		c.taskID = string(p.Message.TaskID)
		if c.taskID == "" {
			c.newTask = true
			c.plan = ic.opts.Plan
			if pl, ok := ctx.Value(planKey{}).(Plan); ok {
				c.plan = pl
			}
			c.streams = c.method == "message/stream"
			c.push = p.Config != nil && p.Config.PushConfig != nil
			c.inModes = MediaTypes(p.Message.Parts)
		}
	case *a2a.TaskQueryParams:
		c.taskID = string(deref(p).ID)
	case *a2a.TaskIDParams:
		c.taskID = string(deref(p).ID)
	case *a2a.GetTaskPushConfigParams:
		c.taskID = string(deref(p).TaskID)
	case *a2a.ListTaskPushConfigParams:
		c.taskID = string(deref(p).TaskID)
	case *a2a.DeleteTaskPushConfigParams:
		c.taskID = string(deref(p).TaskID)
	case *a2a.TaskPushConfig:
		c.taskID = string(deref(p).TaskID)
	}
	if c.taskID != "" && !c.newTask {
		ic.emit(ic.em.Request(emitCtx(ctx), events.Request{
			TaskID: c.taskID, AgentURL: c.agentURL, Method: c.method, Attempt: ic.attempt(c.taskID, c.method),
		}))
	}
	return context.WithValue(ctx, callKey{}, c), nil
}

// After implements a2aclient.CallInterceptor: it submits new tasks, and
// emits status changes, artifacts and errors. It never returns an error.
func (ic *Interceptor) After(ctx context.Context, resp *a2aclient.Response) error {
	c, _ := ctx.Value(callKey{}).(*call)
	if c == nil {
		return nil // Before did not run (another interceptor failed first)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	ectx := emitCtx(ctx)
	if resp.Err != nil {
		if c.taskID == "" {
			return nil // a task that was never created
		}
		ic.failed(c.taskID, c.method)
		if code, ok := ErrorCode(resp.Err); ok {
			ic.emit(ic.em.Error(ectx, events.Error{
				TaskID: c.taskID, AgentURL: c.agentURL, Method: c.method, Code: code, Message: truncate(resp.Err.Error(), 1024),
			}))
		}
		return nil
	}
	taskID, status, artifacts := inspect(resp.Payload)
	if c.newTask && !c.announced && taskID != "" {
		c.taskID, c.announced = taskID, true
		ic.submit(ectx, c)
	}
	if c.taskID != "" && !c.succeeded {
		c.succeeded = true
		ic.succeeded(c.taskID, c.method)
	}
	if taskID == "" {
		taskID = c.taskID
	}
	if taskID == "" {
		return nil
	}
	// Artifacts first: a terminal status forgets the task.
	for _, a := range artifacts {
		ic.artifact(ectx, c.agentURL, taskID, a)
	}
	if status != nil {
		ic.status(ectx, c.agentURL, taskID, status)
	}
	return nil
}

// submit emits a2a.task.submitted and the request that created the task.
func (ic *Interceptor) submit(ctx context.Context, c *call) {
	req := c.plan.Requires
	req.Streaming = req.Streaming || c.streams
	req.PushNotifications = req.PushNotifications || c.push
	req.InputModes = union(req.InputModes, c.inModes)
	d := events.Submitted{
		TaskID: c.taskID, AgentURL: c.agentURL, SkillID: c.plan.SkillID, Requires: req,
		Posture: c.plan.Posture, Idempotent: c.plan.Idempotent, CardURL: ic.opts.CardURL,
	}
	switch {
	case ic.opts.RawCard != nil:
		d.Card = ic.opts.RawCard
	case ic.opts.MarshalCard && c.card != nil:
		raw, err := json.Marshal(c.card)
		if err != nil {
			ic.emit(fmt.Errorf("a2aemit: marshal the client's card: %w", err))
		} else {
			d.Card = raw
		}
	}
	ic.mu.Lock()
	ic.state(c.taskID)
	ic.mu.Unlock()
	ic.emit(ic.em.Submitted(ctx, d))
	ic.emit(ic.em.Request(ctx, events.Request{TaskID: c.taskID, AgentURL: c.agentURL, Method: c.method, Attempt: 1}))
}

func (ic *Interceptor) status(ctx context.Context, agentURL, taskID string, st *a2a.TaskStatus) {
	if st.State == a2a.TaskStateUnspecified {
		return
	}
	state := string(st.State)
	ic.mu.Lock()
	s := ic.state(taskID)
	changed := s.state != state
	s.state = state
	if st.State.Terminal() {
		ic.forget(taskID)
	}
	ic.mu.Unlock()
	if !changed {
		return
	}
	d := events.Status{TaskID: taskID, AgentURL: agentURL, State: state}
	if st.Message != nil {
		if skill, ok := st.Message.Metadata["skillId"].(string); ok {
			d.SkillID = skill
		}
	}
	ic.emit(ic.em.Status(ctx, d))
}

func (ic *Interceptor) artifact(ctx context.Context, agentURL, taskID string, a *a2a.Artifact) {
	if a == nil {
		return
	}
	types := MediaTypes(a.Parts)
	ic.mu.Lock()
	s := ic.state(taskID)
	seen := s.artifacts[string(a.ID)]
	if seen == nil {
		seen = map[string]bool{}
		s.artifacts[string(a.ID)] = seen
	}
	fresh := false
	for _, t := range types {
		if !seen[t] {
			seen[t], fresh = true, true
		}
	}
	ic.mu.Unlock()
	if !fresh {
		return
	}
	ic.emit(ic.em.Artifact(ctx, events.Artifact{TaskID: taskID, AgentURL: agentURL, ArtifactID: string(a.ID), MediaTypes: types}))
}

// attempt returns the attempt number of the next call of method on a task.
func (ic *Interceptor) attempt(taskID, method string) int {
	ic.mu.Lock()
	defer ic.mu.Unlock()
	return ic.state(taskID).failures[method] + 1
}

func (ic *Interceptor) failed(taskID, method string) {
	ic.mu.Lock()
	ic.state(taskID).failures[method]++
	ic.mu.Unlock()
}

func (ic *Interceptor) succeeded(taskID, method string) {
	ic.mu.Lock()
	if s, ok := ic.tasks[taskID]; ok {
		delete(s.failures, method)
	}
	ic.mu.Unlock()
}

// state returns the state of a task, remembering it; ic.mu is held.
func (ic *Interceptor) state(taskID string) *taskState {
	if s, ok := ic.tasks[taskID]; ok {
		return s
	}
	for len(ic.tasks) >= ic.opts.MaxTasks && len(ic.order) > 0 {
		oldest := ic.order[0]
		ic.order = ic.order[1:]
		delete(ic.tasks, oldest)
	}
	s := &taskState{artifacts: map[string]map[string]bool{}, failures: map[string]int{}}
	ic.tasks[taskID] = s
	ic.order = append(ic.order, taskID)
	return s
}

// forget drops a finished task; ic.mu is held.
func (ic *Interceptor) forget(taskID string) {
	delete(ic.tasks, taskID)
	for i, id := range ic.order {
		if id == taskID {
			ic.order = append(ic.order[:i], ic.order[i+1:]...)
			break
		}
	}
}

// Tasks returns how many tasks the interceptor remembers.
func (ic *Interceptor) Tasks() int {
	ic.mu.Lock()
	defer ic.mu.Unlock()
	return len(ic.tasks)
}

func (ic *Interceptor) emit(err error) {
	if err != nil && ic.opts.OnError != nil {
		ic.opts.OnError(err)
	}
}

func (ic *Interceptor) agentURL(baseURL string) string {
	if ic.opts.AgentURL != "" {
		return ic.opts.AgentURL
	}
	u, err := url.Parse(baseURL)
	if err != nil || u.Host == "" {
		return baseURL
	}
	return u.Scheme + "://" + u.Host
}

// emitCtx keeps the call's values but not its cancellation: an event about a
// call that was canceled is still worth publishing. The Emitter's timeout
// bounds it. When the call runs inside an OpenTelemetry span, its W3C trace
// context goes with the events (CloudEvents traceparent/tracestate), and
// carddrift carries it on to the verdicts they cause.
func emitCtx(ctx context.Context) context.Context {
	ctx = context.WithoutCancel(ctx)
	if publish.TraceContext(ctx) != nil {
		return ctx // the caller set it explicitly
	}
	if sc := trace.SpanContextFromContext(ctx); sc.IsValid() {
		tp := "00-" + sc.TraceID().String() + "-" + sc.SpanID().String() + "-" + sc.TraceFlags().String()
		ctx = publish.WithTraceContext(ctx, tp, sc.TraceState().String())
	}
	return ctx
}

// inspect returns the task id, status and artifacts a response payload
// shows.
func inspect(payload any) (taskID string, status *a2a.TaskStatus, artifacts []*a2a.Artifact) {
	switch p := payload.(type) {
	case *a2a.Task:
		if p != nil {
			return string(p.ID), &p.Status, p.Artifacts
		}
	case *a2a.TaskStatusUpdateEvent:
		if p != nil {
			return string(p.TaskID), &p.Status, nil
		}
	case *a2a.TaskArtifactUpdateEvent:
		if p != nil {
			return string(p.TaskID), nil, []*a2a.Artifact{p.Artifact}
		}
	case *a2a.Message:
		if p != nil {
			return string(p.TaskID), nil, nil
		}
	}
	return "", nil, nil
}

// wireMethod returns the JSON-RPC v0.3 name of an a2a-go client method. A
// streaming send on a client whose card does not declare streaming is sent
// as message/send by the a2a-go client, and named so.
func wireMethod(method string, card *a2a.AgentCard) string {
	switch method {
	case "SendMessage":
		return "message/send"
	case "SendStreamingMessage":
		if card != nil && !card.Capabilities.Streaming {
			return "message/send"
		}
		return "message/stream"
	case "GetTask":
		return "tasks/get"
	case "CancelTask":
		return "tasks/cancel"
	case "ResubscribeToTask":
		return "tasks/resubscribe"
	case "GetTaskPushConfig":
		return "tasks/pushNotificationConfig/get"
	case "ListTaskPushConfig":
		return "tasks/pushNotificationConfig/list"
	case "SetTaskPushConfig":
		return "tasks/pushNotificationConfig/set"
	case "DeleteTaskPushConfig":
		return "tasks/pushNotificationConfig/delete"
	case "GetAgentCard":
		return "agent/getAuthenticatedExtendedCard"
	}
	return method
}

func union(a, b []string) []string {
	out := append([]string(nil), a...)
	for _, s := range b {
		found := false
		for _, o := range out {
			if o == s {
				found = true
				break
			}
		}
		if !found {
			out = append(out, s)
		}
	}
	return out
}

// deref returns *p, or the zero value for a nil p (a payload or part the
// caller left nil).
func deref[T any](p *T) T {
	if p == nil {
		var zero T
		return zero
	}
	return *p
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n]
}
