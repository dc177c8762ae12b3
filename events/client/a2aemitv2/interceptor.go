package a2aemitv2

import (
	"context"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2aclient"

	"github.com/carddrift/carddrift/events/client"
	"github.com/carddrift/carddrift/events/client/internal/track"
	"github.com/carddrift/carddrift/store/fetcher"
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
	streams := req.Card == nil || req.Card.Capabilities.Streaming
	c := &track.Call{Method: track.WireMethod(req.Method, streams, wireMethods), BaseURL: req.BaseURL}
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
	return track.Response{} // not an event: nothing about a task
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

// Media types of parts that carry none of their own.
const (
	MediaTypeText   = track.MediaTypeText
	MediaTypeData   = track.MediaTypeData
	MediaTypeBinary = track.MediaTypeBinary
)

// MediaTypes returns the media types of parts, each once, in order: a
// part's mediaType, else by kind (MediaTypeText, MediaTypeData,
// MediaTypeBinary for raw bytes or a URL).
func MediaTypes(parts a2a.ContentParts) []string {
	var out []string
	for _, p := range parts {
		if p == nil || p.Content == nil {
			continue
		}
		mt := p.MediaType
		if mt == "" {
			switch p.Content.(type) {
			case a2a.Text:
				mt = MediaTypeText
			case a2a.Data:
				mt = MediaTypeData
			default:
				mt = MediaTypeBinary
			}
		}
		out = track.Union(out, []string{mt})
	}
	return out
}

// errorCodes maps a2a-go/v2's sentinel errors back to their JSON-RPC codes
// (the SDK's own table, internal to it).
var errorCodes = []track.Sentinel{
	{Err: a2a.ErrParseError, Code: -32700},
	{Err: a2a.ErrInvalidRequest, Code: -32600},
	{Err: a2a.ErrMethodNotFound, Code: -32601},
	{Err: a2a.ErrInvalidParams, Code: -32602},
	{Err: a2a.ErrInternalError, Code: -32603},
	{Err: a2a.ErrServerError, Code: -32000},
	{Err: a2a.ErrTaskNotFound, Code: -32001},
	{Err: a2a.ErrTaskNotCancelable, Code: -32002},
	{Err: a2a.ErrPushNotificationNotSupported, Code: -32003},
	{Err: a2a.ErrUnsupportedOperation, Code: -32004},
	{Err: a2a.ErrUnsupportedContentType, Code: -32005},
	{Err: a2a.ErrInvalidAgentResponse, Code: -32006},
	{Err: a2a.ErrExtendedCardNotConfigured, Code: -32007},
	{Err: a2a.ErrExtensionSupportRequired, Code: -32008},
	{Err: a2a.ErrVersionNotSupported, Code: -32009},
	{Err: a2a.ErrUnauthenticated, Code: -31401},
	{Err: a2a.ErrUnauthorized, Code: -31403},
}

// ErrorCode returns the A2A/JSON-RPC code of an a2a-go/v2 client error,
// false when it carries none (a transport failure, a canceled context).
func ErrorCode(err error) (int, bool) {
	return track.Code(err, errorCodes)
}

// Well-known card paths, current first.
const (
	WellKnownPath       = fetcher.WellKnownPath
	LegacyWellKnownPath = fetcher.LegacyWellKnownPath
)

// ResolvedCard is a2aemit.ResolvedCard for the a2a-go/v2 struct.
type ResolvedCard = track.ResolvedCard[a2a.AgentCard]

// ErrCardStatus is a2aemit.ErrCardStatus.
var ErrCardStatus = track.ErrCardStatus

// ResolveCard is a2aemit.ResolveCard, decoding the v1.0 card shape as the
// SDK's default card parser does.
func ResolveCard(ctx context.Context, f *fetcher.Fetcher, agentURL string) (*ResolvedCard, error) {
	return track.Resolve[a2a.AgentCard](ctx, f, agentURL, "a2aemitv2")
}
