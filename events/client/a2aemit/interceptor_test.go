package a2aemit_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"reflect"
	"testing"

	"github.com/a2aproject/a2a-go/a2a"
	"github.com/a2aproject/a2a-go/a2aclient"

	"github.com/carddrift/carddrift/detector"
	"github.com/carddrift/carddrift/events"
	"github.com/carddrift/carddrift/events/client/a2aemit"
	"github.com/carddrift/carddrift/events/client/clienttest"
)

// recording stands in for the Emitter.
type recording = clienttest.Recorder

// calls drives the interceptor as the a2a-go client does: Before, then After
// once per response (a stream has many).
func call(t *testing.T, ic *a2aemit.Interceptor, ctx context.Context, method string, card *a2a.AgentCard, payload any, responses ...a2aclient.Response) {
	t.Helper()
	req := &a2aclient.Request{Method: method, BaseURL: "https://agent.example/a2a", Meta: a2aclient.CallMeta{}, Card: card, Payload: payload}
	ctx, err := ic.Before(ctx, req)
	if err != nil {
		t.Fatalf("Before: %v", err)
	}
	for _, resp := range responses {
		resp.Method, resp.BaseURL, resp.Card = method, req.BaseURL, card
		if err := ic.After(ctx, &resp); err != nil {
			t.Fatalf("After: %v", err)
		}
	}
}

func ok(payload any) a2aclient.Response { return a2aclient.Response{Payload: payload} }

func status(task string, st a2a.TaskState) *a2a.TaskStatusUpdateEvent {
	return &a2a.TaskStatusUpdateEvent{TaskID: a2a.TaskID(task), Status: a2a.TaskStatus{State: st}}
}

var streamingCard = &a2a.AgentCard{Name: "agent", Capabilities: a2a.AgentCapabilities{Streaming: true}}

// A streaming task from submission to completion in the v0.3 spelling:
// JSON-RPC v0.3 method names, states, the status message's skill, the
// media types of the message's and the artifacts' parts (the lifecycle
// itself is package track's, tested there).
func TestInterceptorLifecycle(t *testing.T) {
	rec := &recording{}
	ic := a2aemit.New(rec, a2aemit.Options{RawCard: []byte(`{"name":"agent"}`), Plan: a2aemit.Plan{SkillID: "default-skill"}})
	ctx := a2aemit.WithPlan(context.Background(), a2aemit.Plan{SkillID: "translate", Posture: detector.Degrade, Idempotent: true,
		Requires: events.Requires{OutputModes: []string{"application/json"}}})

	msg := a2a.NewMessage(a2a.MessageRoleUser, a2a.TextPart{Text: "hi"},
		a2a.FilePart{File: a2a.FileBytes{FileMeta: a2a.FileMeta{MimeType: "image/png"}, Bytes: "AA=="}})
	call(t, ic, ctx, "SendStreamingMessage", streamingCard, &a2a.MessageSendParams{Message: msg},
		ok(&a2a.Task{ID: "t1", Status: a2a.TaskStatus{State: a2a.TaskStateSubmitted}}),
		ok(status("t1", a2a.TaskStateWorking)),
		ok(status("t1", a2a.TaskStateWorking)), // no change: nothing emitted
		ok(&a2a.TaskStatusUpdateEvent{TaskID: "t1", Status: a2a.TaskStatus{State: a2a.TaskStateInputRequired,
			Message: &a2a.Message{Metadata: map[string]any{"skillId": "pick-language"}}}}),
	)
	// The client answers; the agent streams an artifact in chunks.
	call(t, ic, ctx, "SendStreamingMessage", streamingCard, &a2a.MessageSendParams{Message: &a2a.Message{TaskID: "t1", Parts: a2a.ContentParts{a2a.TextPart{Text: "fr"}}}},
		ok(status("t1", a2a.TaskStateWorking)),
		ok(&a2a.TaskArtifactUpdateEvent{TaskID: "t1", Artifact: &a2a.Artifact{ID: "a1", Parts: a2a.ContentParts{a2a.TextPart{Text: "bon"}}}}),
		ok(&a2a.TaskArtifactUpdateEvent{TaskID: "t1", Append: true, Artifact: &a2a.Artifact{ID: "a1", Parts: a2a.ContentParts{a2a.TextPart{Text: "jour"}}}}),
		ok(&a2a.TaskArtifactUpdateEvent{TaskID: "t1", Append: true, Artifact: &a2a.Artifact{ID: "a1", Parts: a2a.ContentParts{a2a.DataPart{Data: map[string]any{"k": 1}}}}}),
		ok(status("t1", a2a.TaskStateCompleted)),
	)
	want := []string{
		"submitted t1 skill=translate stream=true push=false in=[text/plain image/png] card=true",
		"request t1 message/stream #1",
		"status t1 submitted",
		"status t1 working",
		"status t1 input-required skill=pick-language",
		"request t1 message/stream #1",
		"status t1 working",
		"artifact t1 a1 [text/plain]",
		"artifact t1 a1 [application/json]",
		"status t1 completed",
	}
	rec.Expect(t, want...)
}

// Every call on a task carries its v0.3 method name, whatever its payload;
// a2a-go's sentinel errors become a2a.task.error with their JSON-RPC code;
// a transport error is a failure with no code.
func TestInterceptorMethodsAndErrors(t *testing.T) {
	rec := &recording{}
	ic := a2aemit.New(rec, a2aemit.Options{})
	ctx := context.Background()
	call(t, ic, ctx, "SendMessage", streamingCard, &a2a.MessageSendParams{Message: a2a.NewMessage(a2a.MessageRoleUser, a2a.TextPart{Text: "x"})},
		ok(&a2a.Task{ID: "t2", Status: a2a.TaskStatus{State: a2a.TaskStateInputRequired}}))
	rec.Reset()

	follow := &a2a.MessageSendParams{Message: &a2a.Message{TaskID: "t2", Parts: a2a.ContentParts{a2a.TextPart{Text: "y"}}}}
	call(t, ic, ctx, "SendMessage", streamingCard, follow, a2aclient.Response{Err: fmt.Errorf("bad part: %w", a2a.ErrInvalidParams)})
	call(t, ic, ctx, "SendMessage", streamingCard, follow, a2aclient.Response{Err: errors.New("connection reset")})
	call(t, ic, ctx, "GetTask", streamingCard, &a2a.TaskQueryParams{ID: "t2"}, ok(&a2a.Task{ID: "t2", Status: a2a.TaskStatus{State: a2a.TaskStateInputRequired}}))
	call(t, ic, ctx, "SendMessage", streamingCard, follow, a2aclient.Response{Err: a2a.ErrUnsupportedContentType})
	call(t, ic, ctx, "SendMessage", streamingCard, follow, ok(&a2a.Task{ID: "t2", Status: a2a.TaskStatus{State: a2a.TaskStateWorking}}))
	call(t, ic, ctx, "SendMessage", streamingCard, follow, ok(&a2a.Task{ID: "t2", Status: a2a.TaskStatus{State: a2a.TaskStateWorking}}))
	call(t, ic, ctx, "SetTaskPushConfig", streamingCard, &a2a.TaskPushConfig{TaskID: "t2"}, a2aclient.Response{Err: a2a.ErrPushNotificationNotSupported})
	call(t, ic, ctx, "GetTaskPushConfig", streamingCard, &a2a.GetTaskPushConfigParams{TaskID: "t2"}, a2aclient.Response{Err: a2a.ErrPushNotificationNotSupported})
	call(t, ic, ctx, "ListTaskPushConfig", streamingCard, &a2a.ListTaskPushConfigParams{TaskID: "t2"}, ok([]*a2a.TaskPushConfig{}))
	call(t, ic, ctx, "DeleteTaskPushConfig", streamingCard, &a2a.DeleteTaskPushConfigParams{TaskID: "t2"}, ok(struct{}{}))
	call(t, ic, ctx, "ResubscribeToTask", streamingCard, &a2a.TaskIDParams{ID: "t2"}, ok(status("t2", a2a.TaskStateWorking)))
	call(t, ic, ctx, "CancelTask", streamingCard, &a2a.TaskIDParams{ID: "t2"}, a2aclient.Response{Err: a2a.ErrTaskNotCancelable})
	want := []string{
		"request t2 message/send #1",
		"error t2 message/send -32602",
		"request t2 message/send #2",
		"request t2 tasks/get #1",
		"request t2 message/send #3",
		"error t2 message/send -32005",
		"request t2 message/send #4",
		"status t2 working",
		"request t2 message/send #1",
		"request t2 tasks/pushNotificationConfig/set #1",
		"error t2 tasks/pushNotificationConfig/set -32003",
		"request t2 tasks/pushNotificationConfig/get #1",
		"error t2 tasks/pushNotificationConfig/get -32003",
		"request t2 tasks/pushNotificationConfig/list #1",
		"request t2 tasks/pushNotificationConfig/delete #1",
		"request t2 tasks/resubscribe #1",
		"request t2 tasks/cancel #1",
		"error t2 tasks/cancel -32002",
	}
	rec.Expect(t, want...)
}

// A new task whose call fails emits nothing; a non-streaming card turns a
// streaming call into message/send that does not require streaming; push
// configuration is a requirement; a task's artifacts come before its state;
// MarshalCard sends the lossy round trip.
func TestInterceptorNewTaskVariants(t *testing.T) {
	rec := &recording{}
	ic := a2aemit.New(rec, a2aemit.Options{MarshalCard: true, AgentURL: "https://agent.example"})
	ctx := context.Background()
	newMsg := func() *a2a.MessageSendParams {
		return &a2a.MessageSendParams{Message: a2a.NewMessage(a2a.MessageRoleUser, a2a.DataPart{Data: map[string]any{"q": 1}})}
	}
	call(t, ic, ctx, "SendMessage", streamingCard, newMsg(), a2aclient.Response{Err: a2a.ErrInvalidParams})
	if got := rec.Lines(); len(got) != 0 {
		t.Fatalf("a failed new task emitted %v", got)
	}
	plain := &a2a.AgentCard{Name: "plain", URL: "https://agent.example/a2a"}
	call(t, ic, ctx, "SendStreamingMessage", plain, newMsg(), ok(&a2a.Task{ID: "t3", Status: a2a.TaskStatus{State: a2a.TaskStateCompleted},
		Artifacts: []*a2a.Artifact{{ID: "a", Parts: a2a.ContentParts{a2a.FilePart{File: a2a.FileURI{FileMeta: a2a.FileMeta{MimeType: "application/pdf"}}}}}}}))
	p := newMsg()
	p.Config = &a2a.MessageSendConfig{PushConfig: &a2a.PushConfig{URL: "https://client.example/hook"}}
	call(t, ic, ctx, "SendMessage", streamingCard, p, ok(&a2a.Message{TaskID: "t4"}))
	want := []string{
		"submitted t3 skill= stream=false push=false in=[application/json] card=true",
		"request t3 message/send #1",
		"artifact t3 a [application/pdf]",
		"status t3 completed",
		"submitted t4 skill= stream=false push=true in=[application/json] card=true",
		"request t4 message/send #1",
	}
	rec.Expect(t, want...)
	var round map[string]any
	if err := json.Unmarshal(rec.Events()[0].(events.Submitted).Card, &round); err != nil || round["name"] != "plain" {
		t.Errorf("marshalled card = %s (%v)", rec.Events()[0].(events.Submitted).Card, err)
	}
	// A message reply with no task, and calls without a task, emit nothing.
	rec.Reset()
	call(t, ic, ctx, "SendMessage", streamingCard, newMsg(), ok(&a2a.Message{ID: "m"}))
	call(t, ic, ctx, "GetAgentCard", streamingCard, nil, ok(streamingCard))
	if got := rec.Lines(); len(got) != 0 {
		t.Errorf("task-less calls emitted %v", got)
	}
}

func TestMediaTypes(t *testing.T) {
	parts := a2a.ContentParts{
		a2a.TextPart{Text: "a"},
		&a2a.TextPart{Text: "b"},
		a2a.DataPart{Data: map[string]any{}},
		a2a.FilePart{File: a2a.FileURI{FileMeta: a2a.FileMeta{MimeType: "application/pdf"}, URI: "https://x/y.pdf"}},
		&a2a.FilePart{File: &a2a.FileBytes{FileMeta: a2a.FileMeta{MimeType: "image/png"}}},
		a2a.FilePart{File: a2a.FileBytes{Bytes: "AA=="}},
	}
	want := []string{"text/plain", "application/json", "application/pdf", "image/png", "application/octet-stream"}
	if got := a2aemit.MediaTypes(parts); !reflect.DeepEqual(got, want) {
		t.Errorf("MediaTypes = %v, want %v", got, want)
	}
	if got := a2aemit.MediaTypes(nil); got != nil {
		t.Errorf("MediaTypes(nil) = %v", got)
	}
}

func TestErrorCode(t *testing.T) {
	cases := []struct {
		err  error
		code int
		ok   bool
	}{
		{a2a.ErrInvalidParams, -32602, true},
		{fmt.Errorf("wrapped: %w", a2a.ErrMethodNotFound), -32601, true},
		{a2a.ErrTaskNotFound, -32001, true},
		{a2a.ErrAuthenticatedExtendedCardNotConfigured, -32007, true},
		{a2a.ErrInternalError, -32603, true},
		{errors.New("dial tcp: refused"), 0, false},
		{nil, 0, false},
	}
	for _, c := range cases {
		code, ok := a2aemit.ErrorCode(c.err)
		if code != c.code || ok != c.ok {
			t.Errorf("ErrorCode(%v) = %d, %v, want %d, %v", c.err, code, ok, c.code, c.ok)
		}
	}
}

// ResolveCard decodes the v0.3 card (its url, capabilities) and keeps the
// bytes as served; the fetch is package track's, tested there.
func TestResolveCard(t *testing.T) {
	card := `{"name":"legacy","url":"http://x/a2a","capabilities":{"streaming":true},"x-extra":[1,2]}`
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/legacy" + a2aemit.LegacyWellKnownPath:
			w.Write([]byte(card))
		case "/broken" + a2aemit.WellKnownPath:
			w.WriteHeader(http.StatusInternalServerError)
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	f := clienttest.LoopbackFetcher(t)
	c, err := a2aemit.ResolveCard(context.Background(), f, srv.URL+"/legacy/")
	if err != nil {
		t.Fatalf("ResolveCard: %v", err)
	}
	if string(c.Raw) != card || c.URL != srv.URL+"/legacy"+a2aemit.LegacyWellKnownPath || c.AgentCard.Name != "legacy" ||
		c.AgentCard.URL != "http://x/a2a" || !c.AgentCard.Capabilities.Streaming {
		t.Errorf("card = %+v", c)
	}
	if _, err := a2aemit.ResolveCard(context.Background(), f, srv.URL+"/broken"); !errors.Is(err, a2aemit.ErrCardStatus) {
		t.Errorf("500: ResolveCard = %v, want ErrCardStatus", err)
	}
}
