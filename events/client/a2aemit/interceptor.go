package a2aemit

import (
	"cmp"
	"context"

	"github.com/a2aproject/a2a-go/a2a"
	"github.com/a2aproject/a2a-go/a2aclient"

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

// Interceptor is an a2aclient.CallInterceptor that publishes the task
// lifecycle through an Emitter. Create it with New; safe for concurrent use.
type Interceptor struct {
	t *track.Tracker
}

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
	streams := req.Card == nil || req.Card.Capabilities.Streaming
	c := &track.Call{Method: track.WireMethod(req.Method, streams, wireMethods), BaseURL: req.BaseURL}
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

// Media types of parts that carry none of their own.
const (
	MediaTypeText   = track.MediaTypeText
	MediaTypeData   = track.MediaTypeData
	MediaTypeBinary = track.MediaTypeBinary
)

// MediaTypes returns the media types of parts, each once, in order: a
// FilePart's mimeType (else MediaTypeBinary), MediaTypeData, MediaTypeText.
func MediaTypes(parts a2a.ContentParts) []string {
	var out []string
	add := func(mt string) { out = track.Union(out, []string{mt}) }
	for _, p := range parts {
		switch p := p.(type) {
		case a2a.TextPart, *a2a.TextPart:
			add(MediaTypeText)
		case a2a.DataPart, *a2a.DataPart:
			add(MediaTypeData)
		case a2a.FilePart:
			add(fileMediaType(p.File))
		case *a2a.FilePart:
			if p != nil {
				add(fileMediaType(p.File))
			}
		}
	}
	return out
}

func fileMediaType(c a2a.FilePartContent) string {
	var mt string
	switch f := c.(type) {
	case a2a.FileBytes:
		mt = f.MimeType
	case *a2a.FileBytes:
		mt = track.Deref(f).MimeType
	case a2a.FileURI:
		mt = f.MimeType
	case *a2a.FileURI:
		mt = track.Deref(f).MimeType
	}
	return cmp.Or(mt, MediaTypeBinary)
}

// errorCodes maps a2a-go's sentinel errors back to their JSON-RPC codes.
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
	{Err: a2a.ErrAuthenticatedExtendedCardNotConfigured, Code: -32007},
}

// ErrorCode returns the A2A/JSON-RPC code of an a2a-go client error,
// false when it carries none (a transport failure, a canceled context).
func ErrorCode(err error) (int, bool) {
	return track.Code(err, errorCodes)
}

// Well-known card paths, current first.
const (
	WellKnownPath       = fetcher.WellKnownPath
	LegacyWellKnownPath = fetcher.LegacyWellKnownPath
)

// MaxCardBytes bounds a card body ResolveCard reads (the fetcher's).
const MaxCardBytes = fetcher.DefaultMaxBodyBytes

// ResolvedCard is what ResolveCard found: the a2a-go struct to build the
// client from, the body as served (pass Raw as Options.RawCard) and the
// URL that served it (Options.CardURL).
type ResolvedCard = track.ResolvedCard[a2a.AgentCard]

// ErrCardStatus is wrapped by ResolveCard when no card URL answered 2xx
// (the error also matches fetcher.ReasonStatus and holds a *fetcher.FetchError).
var ErrCardStatus = track.ErrCardStatus

// ResolveCard fetches the public card of the agent at agentURL through f as
// the workers do (fetcher.Fetcher.FetchAgent: WellKnownPath, then
// LegacyWellKnownPath on 404, 405 or 410; f's SSRF guard, whose Allow is
// the caller's to widen). A nil f is a default Fetcher (refusing loopback
// and private addresses) made for this call. A failed fetch's error holds
// the *fetcher.FetchError; a body that does not decode is an error too.
func ResolveCard(ctx context.Context, f *fetcher.Fetcher, agentURL string) (*ResolvedCard, error) {
	return track.Resolve[a2a.AgentCard](ctx, f, agentURL, "a2aemit")
}
