package track

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"sync"

	"go.opentelemetry.io/otel/trace"

	"github.com/carddrift/carddrift/events"
	"github.com/carddrift/carddrift/events/client"
	"github.com/carddrift/carddrift/events/internal/defaults"
	"github.com/carddrift/carddrift/events/publish"
	"github.com/carddrift/carddrift/store/fetcher"
)

// DefaultMaxTasks bounds the tasks a Tracker remembers.
const DefaultMaxTasks = 10_000

// MaxMessageBytes bounds the message of an a2a.task.error.
const MaxMessageBytes = 1024

// Media types of parts that carry none of their own.
const (
	MediaTypeText   = "text/plain"
	MediaTypeData   = "application/json"
	MediaTypeBinary = "application/octet-stream"
)

// Tracker turns the calls an interceptor sees into lifecycle events. Safe
// for concurrent use.
type Tracker struct {
	em   client.Lifecycle
	opts client.InterceptorOptions
	sdk  SDK

	mu    sync.Mutex
	tasks map[string]*taskState
	order []string // insertion order, for eviction
}

type taskState struct {
	state     string
	artifacts map[string]map[string]bool // artifact id → media types reported
	failures  map[string]int             // method → consecutive failures
}

// SDK is what an adapter tells the Tracker of its SDK line.
type SDK struct {
	Inspect func(payload any) Response
	Code    func(err error) (int, bool)
}

func New(em client.Lifecycle, opts client.InterceptorOptions, sdk SDK) *Tracker {
	opts.MaxTasks = defaults.Positive(opts.MaxTasks, DefaultMaxTasks)
	return &Tracker{em: em, opts: opts, sdk: sdk, tasks: map[string]*taskState{}}
}

// Call is one call of an SDK client as Before saw it.
type Call struct {
	Method  string // the SDK's wire name
	BaseURL string // the interface URL the client talks to
	TaskID  string // "" for a call that creates a task or is on none
	NewTask bool   // the call sends a message that names no task
	// Streams, Push and InputModes are what a new task requires.
	Streams    bool
	Push       bool
	InputModes []string
	Card       any // the SDK's card struct, for Options.MarshalCard

	agentURL string
	plan     client.Plan

	mu        sync.Mutex
	announced bool // the new task was submitted
	succeeded bool // failures of the method were reset
}

// Response is what one response (or stream event) shows of its task.
type Response struct {
	TaskID    string
	Status    *Status // nil: the response shows no (specified) state
	Artifacts []Artifact
}

// Status is a task state as the SDK spells it.
type Status struct {
	State    string
	Terminal bool
	SkillID  string // the status message's metadata "skillId"
}

// State is an SDK's task state: its spelling, "" when unspecified.
type State interface {
	~string
	Terminal() bool
}

// NewStatus returns the Status of st and its message (nil when st is "").
func NewStatus[S State, M any, PM interface {
	*M
	Meta() map[string]any
}](st S, msg PM) *Status {
	if st == "" {
		return nil
	}
	s := &Status{State: string(st), Terminal: st.Terminal()}
	if msg != nil {
		s.SkillID, _ = msg.Meta()["skillId"].(string)
	}
	return s
}

// Artifact is an artifact's id and the media types of its parts.
type Artifact struct {
	ID         string
	MediaTypes []string
}

// Send records that c sends a message on taskID; with none, it creates a
// task that requires what the call shows.
func (c *Call) Send(taskID string, streams, push bool, inputModes []string) {
	c.TaskID = taskID
	if taskID == "" {
		c.NewTask, c.Streams, c.Push, c.InputModes = true, streams, push, inputModes
	}
}

type callKey struct{}

// Begin emits a2a.task.request for a call on a known task; ctx carries c.
func (t *Tracker) Begin(ctx context.Context, c *Call) context.Context {
	c.agentURL = t.agentURL(c.BaseURL)
	if c.NewTask {
		c.plan = t.opts.Plan
		if p, ok := client.PlanFrom(ctx); ok {
			c.plan = p
		}
	}
	if c.TaskID != "" && !c.NewTask {
		t.mu.Lock()
		attempt := t.state(c.TaskID).failures[c.Method] + 1
		t.mu.Unlock()
		t.emit(t.em.Request(emitCtx(ctx), events.Request{TaskID: c.TaskID, AgentURL: c.agentURL, Method: c.Method, Attempt: attempt}))
	}
	return context.WithValue(ctx, callKey{}, c)
}

// After handles one response of the call Begin stored in ctx (a stream has
// many). It does nothing when Begin did not run.
func (t *Tracker) After(ctx context.Context, payload any, err error) {
	c, _ := ctx.Value(callKey{}).(*Call)
	switch {
	case c == nil:
	case err != nil:
		t.failed(ctx, c, err)
	default:
		t.observe(ctx, c, t.sdk.Inspect(payload))
	}
}

// failed records a failed call (the next one of its method is a retry) and
// emits a2a.task.error when it has a code.
func (t *Tracker) failed(ctx context.Context, c *Call, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.TaskID == "" {
		return
	}
	t.mu.Lock()
	t.state(c.TaskID).failures[c.Method]++
	t.mu.Unlock()
	if code, ok := t.sdk.Code(err); ok {
		msg := err.Error()
		t.emit(t.em.Error(emitCtx(ctx), events.Error{
			TaskID: c.TaskID, AgentURL: c.agentURL, Method: c.Method, Code: code, Message: msg[:min(len(msg), MaxMessageBytes)],
		}))
	}
}

// observe handles one successful response of c.
func (t *Tracker) observe(ctx context.Context, c *Call, r Response) {
	c.mu.Lock()
	defer c.mu.Unlock()
	ectx := emitCtx(ctx)
	if c.NewTask && !c.announced && r.TaskID != "" {
		c.TaskID, c.announced = r.TaskID, true
		t.submit(ectx, c)
	}
	if c.TaskID != "" && !c.succeeded {
		c.succeeded = true
		t.mu.Lock()
		if s, ok := t.tasks[c.TaskID]; ok {
			delete(s.failures, c.Method)
		}
		t.mu.Unlock()
	}
	taskID := cmp.Or(r.TaskID, c.TaskID)
	if taskID == "" {
		return
	}
	// Artifacts first: a terminal status forgets the task.
	for _, a := range r.Artifacts {
		t.artifact(ectx, c.agentURL, taskID, a)
	}
	if r.Status != nil && r.Status.State != "" {
		t.status(ectx, c.agentURL, taskID, r.Status)
	}
}

// submit emits a2a.task.submitted and the request that created the task.
func (t *Tracker) submit(ctx context.Context, c *Call) {
	req := c.plan.Requires
	req.Streaming = req.Streaming || c.Streams
	req.PushNotifications = req.PushNotifications || c.Push
	req.InputModes = Union(req.InputModes, c.InputModes)
	d := events.Submitted{
		TaskID: c.TaskID, AgentURL: c.agentURL, SkillID: c.plan.SkillID, Requires: req,
		Posture: c.plan.Posture, Idempotent: c.plan.Idempotent, CardURL: t.opts.CardURL,
	}
	switch {
	case t.opts.RawCard != nil:
		d.Card = t.opts.RawCard
	case t.opts.MarshalCard && c.Card != nil:
		raw, err := json.Marshal(c.Card)
		if err != nil {
			t.emit(fmt.Errorf("marshal the client's card: %w", err))
		} else {
			d.Card = raw
		}
	}
	t.mu.Lock()
	t.state(c.TaskID)
	t.mu.Unlock()
	t.emit(t.em.Submitted(ctx, d))
	t.emit(t.em.Request(ctx, events.Request{TaskID: c.TaskID, AgentURL: c.agentURL, Method: c.Method, Attempt: 1}))
}

func (t *Tracker) status(ctx context.Context, agentURL, taskID string, st *Status) {
	t.mu.Lock()
	s := t.state(taskID)
	changed := s.state != st.State
	s.state = st.State
	if st.Terminal {
		t.forget(taskID)
	}
	t.mu.Unlock()
	if changed {
		t.emit(t.em.Status(ctx, events.Status{TaskID: taskID, AgentURL: agentURL, State: st.State, SkillID: st.SkillID}))
	}
}

func (t *Tracker) artifact(ctx context.Context, agentURL, taskID string, a Artifact) {
	t.mu.Lock()
	s := t.state(taskID)
	seen := s.artifacts[a.ID]
	if seen == nil {
		seen = map[string]bool{}
		s.artifacts[a.ID] = seen
	}
	fresh := false
	for _, mt := range a.MediaTypes {
		if !seen[mt] {
			seen[mt], fresh = true, true
		}
	}
	t.mu.Unlock()
	if fresh {
		t.emit(t.em.Artifact(ctx, events.Artifact{TaskID: taskID, AgentURL: agentURL, ArtifactID: a.ID, MediaTypes: a.MediaTypes}))
	}
}

// state returns the state of a task, remembering it; t.mu is held.
func (t *Tracker) state(taskID string) *taskState {
	if s, ok := t.tasks[taskID]; ok {
		return s
	}
	for len(t.tasks) >= t.opts.MaxTasks && len(t.order) > 0 {
		oldest := t.order[0]
		t.order = t.order[1:]
		delete(t.tasks, oldest)
	}
	s := &taskState{artifacts: map[string]map[string]bool{}, failures: map[string]int{}}
	t.tasks[taskID] = s
	t.order = append(t.order, taskID)
	return s
}

// forget drops a finished task; t.mu is held.
func (t *Tracker) forget(taskID string) {
	delete(t.tasks, taskID)
	if i := slices.Index(t.order, taskID); i >= 0 {
		t.order = slices.Delete(t.order, i, i+1)
	}
}

// Tasks returns how many tasks the Tracker remembers.
func (t *Tracker) Tasks() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.tasks)
}

func (t *Tracker) emit(err error) {
	if err != nil && t.opts.OnError != nil {
		t.opts.OnError(err)
	}
}

func (t *Tracker) agentURL(baseURL string) string {
	if t.opts.AgentURL != "" {
		return t.opts.AgentURL
	}
	u, err := url.Parse(baseURL)
	if err != nil || u.Host == "" {
		return baseURL
	}
	return u.Scheme + "://" + u.Host
}

// emitCtx keeps the call's values but not its cancellation (an event about
// a canceled call is still worth publishing), and puts an OpenTelemetry
// span's W3C trace context on the events.
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

// Union returns a copy of a followed by the elements of b not in it.
func Union(a, b []string) []string {
	out := slices.Clone(a)
	for _, s := range b {
		if !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out
}

// Deref returns *p, or the zero value for a nil p.
func Deref[T any](p *T) T {
	if p == nil {
		var zero T
		return zero
	}
	return *p
}

// WireMethod returns the wire name of an SDK client's method, names
// holding those the SDK renames; a streaming send on a card that declares
// no streaming is sent as a send.
func WireMethod(method string, cardStreams bool, names map[string]string) string {
	if method == "SendStreamingMessage" && !cardStreams {
		method = "SendMessage"
	}
	if name, ok := names[method]; ok {
		return name
	}
	return method
}

// Sentinel pairs an SDK's sentinel error with its JSON-RPC code.
type Sentinel struct {
	Err  error
	Code int
}

// Code returns the code of the first sentinel err matches.
func Code(err error, sentinels []Sentinel) (int, bool) {
	if err == nil {
		return 0, false
	}
	for _, s := range sentinels {
		if errors.Is(err, s.Err) {
			return s.Code, true
		}
	}
	return 0, false
}

// ErrCardStatus is a2aemit.ErrCardStatus.
var ErrCardStatus = errors.New("card request failed")

// ResolvedCard is a2aemit.ResolvedCard for the SDK's card struct T.
type ResolvedCard[T any] struct {
	AgentCard *T
	Raw       []byte
	URL       string
}

// Resolve is a2aemit.ResolveCard decoding into T; pkg prefixes its errors.
func Resolve[T any](ctx context.Context, f *fetcher.Fetcher, agentURL, pkg string) (*ResolvedCard[T], error) {
	if f == nil {
		var err error
		if f, err = fetcher.New(fetcher.Options{}); err != nil {
			return nil, fmt.Errorf("%s: %w", pkg, err)
		}
		defer f.Close()
	}
	obs, err := f.FetchAgent(ctx, agentURL, "")
	if errors.Is(err, fetcher.ReasonStatus) {
		return nil, fmt.Errorf("%s: %w: %w", pkg, ErrCardStatus, err)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", pkg, err)
	}
	var card T
	if err := json.Unmarshal(obs.Raw, &card); err != nil {
		return nil, fmt.Errorf("%s: card %s: %w", pkg, obs.CardURL, err)
	}
	return &ResolvedCard[T]{AgentCard: &card, Raw: obs.Raw, URL: obs.CardURL}, nil
}
