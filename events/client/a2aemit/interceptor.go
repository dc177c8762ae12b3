package a2aemit

import (
	"context"

	"github.com/a2aproject/a2a-go/a2a"
	"github.com/a2aproject/a2a-go/a2aclient"

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

// Interceptor is an a2aclient.CallInterceptor that publishes the task
// lifecycle through an Emitter. Create it with New; safe for concurrent use.
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
	return a2aclient.WithInterceptors(New(em, opts))
}

// Before emits a2a.task.request for calls on a known task.
func (ic *Interceptor) Before(ctx context.Context, req *a2aclient.Request) (context.Context, error) {
	c := &track.Call{Method: wireMethod(req.Method, req.Card), BaseURL: req.BaseURL}
	if req.Card != nil {
		c.Card = req.Card
	}
	switch p := req.Payload.(type) {
	case *a2a.MessageSendParams:
		if p != nil && p.Message != nil {
			c.Send(string(p.Message.TaskID), c.Method == "message/stream",
				p.Config != nil && p.Config.PushConfig != nil, MediaTypes(p.Message.Parts))
		}
	case *a2a.TaskQueryParams:
		c.TaskID = string(track.Deref(p).ID)
	case *a2a.TaskIDParams:
		c.TaskID = string(track.Deref(p).ID)
	case *a2a.GetTaskPushConfigParams:
		c.TaskID = string(track.Deref(p).TaskID)
	case *a2a.ListTaskPushConfigParams:
		c.TaskID = string(track.Deref(p).TaskID)
	case *a2a.DeleteTaskPushConfigParams:
		c.TaskID = string(track.Deref(p).TaskID)
	case *a2a.TaskPushConfig:
		c.TaskID = string(track.Deref(p).TaskID)
	}
	return ic.t.Begin(ctx, c), nil
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
	switch p := payload.(type) {
	case *a2a.Task:
		if p != nil {
			return track.Response{TaskID: string(p.ID), Status: track.NewStatus(p.Status.State, p.Status.Message),
				Artifacts: artifacts(p.Artifacts...)}
		}
	case *a2a.TaskStatusUpdateEvent:
		if p != nil {
			return track.Response{TaskID: string(p.TaskID), Status: track.NewStatus(p.Status.State, p.Status.Message)}
		}
	case *a2a.TaskArtifactUpdateEvent:
		if p != nil {
			return track.Response{TaskID: string(p.TaskID), Artifacts: artifacts(p.Artifact)}
		}
	case *a2a.Message:
		if p != nil {
			return track.Response{TaskID: string(p.TaskID)}
		}
	}
	return track.Response{}
}

// artifacts returns the ids and media types of the artifacts, nil skipped.
func artifacts(as ...*a2a.Artifact) []track.Artifact {
	var out []track.Artifact
	for _, a := range as {
		if a != nil {
			out = append(out, track.Artifact{ID: string(a.ID), MediaTypes: MediaTypes(a.Parts)})
		}
	}
	return out
}

// wireMethods are the JSON-RPC v0.3 names of the a2a-go client's methods.
var wireMethods = map[string]string{
	"SendMessage":          "message/send",
	"SendStreamingMessage": "message/stream",
	"GetTask":              "tasks/get",
	"CancelTask":           "tasks/cancel",
	"ResubscribeToTask":    "tasks/resubscribe",
	"GetTaskPushConfig":    "tasks/pushNotificationConfig/get",
	"ListTaskPushConfig":   "tasks/pushNotificationConfig/list",
	"SetTaskPushConfig":    "tasks/pushNotificationConfig/set",
	"DeleteTaskPushConfig": "tasks/pushNotificationConfig/delete",
	"GetAgentCard":         "agent/getAuthenticatedExtendedCard",
}

// wireMethod returns the JSON-RPC v0.3 name of an a2a-go client method (a
// streaming send without card streaming is sent as message/send).
func wireMethod(method string, card *a2a.AgentCard) string {
	if method == "SendStreamingMessage" && card != nil && !card.Capabilities.Streaming {
		return "message/send"
	}
	if name, ok := wireMethods[method]; ok {
		return name
	}
	return method
}
