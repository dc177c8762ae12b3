package a2aemitv2

import (
	"context"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2aclient"

	"github.com/carddrift/carddrift/events/client"
	"github.com/carddrift/carddrift/events/client/internal/track"
)

// Emitter publishes lifecycle events; *client.Emitter implements it.
type Emitter = client.Lifecycle

// DefaultMaxTasks bounds the tasks an Interceptor remembers.
const DefaultMaxTasks = track.DefaultMaxTasks

// Plan is what the client planned a task for beyond what the call shows.
type Plan = client.Plan

// WithPlan attaches the plan of the task a send call creates.
func WithPlan(ctx context.Context, p Plan) context.Context {
	return client.WithPlan(ctx, p)
}

// Options configure an Interceptor.
type Options = client.InterceptorOptions

// Interceptor is an a2a-go/v2 a2aclient.CallInterceptor that publishes the
// task lifecycle through an Emitter. Safe for concurrent use.
type Interceptor struct {
	t *track.Tracker
}

var _ a2aclient.CallInterceptor = (*Interceptor)(nil)

// New returns an Interceptor publishing through em.
func New(em Emitter, opts Options) *Interceptor {
	return &Interceptor{t: track.New(em, opts, track.SDK{Inspect: inspect, Code: ErrorCode})}
}

// WithLifecycleEvents adds the interceptor to the clients a factory makes.
func WithLifecycleEvents(em Emitter, opts Options) a2aclient.FactoryOption {
	return a2aclient.WithCallInterceptors(New(em, opts))
}

// Before emits a2a.task.request for calls on a known task. It never
// answers in the agent's place nor fails the call.
func (ic *Interceptor) Before(ctx context.Context, req *a2aclient.Request) (context.Context, any, error) {
	c := &track.Call{Method: wireMethod(req.Method, req.Card), BaseURL: req.BaseURL}
	if req.Card != nil {
		c.Card = req.Card
	}
	switch p := req.Payload.(type) {
	case *a2a.SendMessageRequest:
		if p != nil && p.Message != nil {
			c.Send(string(p.Message.TaskID), c.Method == MethodSendStreamingMessage,
				p.Config != nil && p.Config.PushConfig != nil, MediaTypes(p.Message.Parts))
		}
	case *a2a.GetTaskRequest:
		c.TaskID = string(track.Deref(p).ID)
	case *a2a.CancelTaskRequest:
		c.TaskID = string(track.Deref(p).ID)
	case *a2a.SubscribeToTaskRequest:
		c.TaskID = string(track.Deref(p).ID)
	case *a2a.GetTaskPushConfigRequest:
		c.TaskID = string(track.Deref(p).TaskID)
	case *a2a.ListTaskPushConfigRequest:
		c.TaskID = string(track.Deref(p).TaskID)
	case *a2a.DeleteTaskPushConfigRequest:
		c.TaskID = string(track.Deref(p).TaskID)
	case *a2a.PushConfig:
		c.TaskID = string(track.Deref(p).TaskID)
	}
	return ic.t.Begin(ctx, c), nil, nil
}

// After submits new tasks and emits status changes, artifacts and errors.
// It never returns an error.
func (ic *Interceptor) After(ctx context.Context, resp *a2aclient.Response) error {
	ic.t.After(ctx, resp.Payload, resp.Err)
	return nil
}

// Tasks returns how many tasks the interceptor remembers.
func (ic *Interceptor) Tasks() int { return ic.t.Tasks() }

// inspect returns what a response payload shows of its task.
func inspect(payload any) track.Response {
	var r track.Response
	switch p := payload.(type) {
	case *a2a.Task:
		if p == nil {
			return r
		}
		r.Status = track.NewStatus(p.Status.State, p.Status.Message)
		for _, a := range p.Artifacts {
			r.Artifacts = appendArtifact(r.Artifacts, a)
		}
	case *a2a.TaskStatusUpdateEvent:
		if p == nil {
			return r
		}
		r.Status = track.NewStatus(p.Status.State, p.Status.Message)
	case *a2a.TaskArtifactUpdateEvent:
		if p == nil {
			return r
		}
		r.Artifacts = appendArtifact(nil, p.Artifact)
	case *a2a.Message:
		if p == nil {
			return r
		}
	default:
		return r // not an event: nothing about a task
	}
	r.TaskID = string(payload.(a2a.TaskInfoProvider).TaskInfo().TaskID)
	return r
}

func appendArtifact(out []track.Artifact, a *a2a.Artifact) []track.Artifact {
	if a == nil {
		return out
	}
	return append(out, track.Artifact{ID: string(a.ID), MediaTypes: MediaTypes(a.Parts)})
}

// A2A v1.0 method names, as the a2a-go/v2 JSON-RPC transport sends them.
const (
	MethodSendMessage          = "SendMessage"
	MethodSendStreamingMessage = "SendStreamingMessage"
	MethodGetTask              = "GetTask"
	MethodListTasks            = "ListTasks"
	MethodCancelTask           = "CancelTask"
	MethodSubscribeToTask      = "SubscribeToTask"
	MethodCreatePushConfig     = "CreateTaskPushNotificationConfig"
	MethodGetPushConfig        = "GetTaskPushNotificationConfig"
	MethodListPushConfigs      = "ListTaskPushNotificationConfigs"
	MethodDeletePushConfig     = "DeleteTaskPushNotificationConfig"
	MethodGetExtendedAgentCard = "GetExtendedAgentCard"
)

// wireMethods are the v1.0 names of the methods the client names otherwise.
var wireMethods = map[string]string{
	"GetTaskPushConfig":    MethodGetPushConfig,
	"ListTaskPushConfigs":  MethodListPushConfigs,
	"CreateTaskPushConfig": MethodCreatePushConfig,
	"DeleteTaskPushConfig": MethodDeletePushConfig,
}

// wireMethod returns the A2A v1.0 name of an a2a-go/v2 client method (a
// streaming send without card streaming is sent as SendMessage).
func wireMethod(method string, card *a2a.AgentCard) string {
	if method == MethodSendStreamingMessage && card != nil && !card.Capabilities.Streaming {
		return MethodSendMessage
	}
	if name, ok := wireMethods[method]; ok {
		return name
	}
	return method // SendMessage, GetTask, ListTasks, CancelTask, SubscribeToTask, GetExtendedAgentCard
}
