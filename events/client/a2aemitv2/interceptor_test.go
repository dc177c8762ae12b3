package a2aemitv2_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2aclient"

	"github.com/carddrift/carddrift/detector"
	"github.com/carddrift/carddrift/events"
	"github.com/carddrift/carddrift/events/client/a2aemitv2"
	"github.com/carddrift/carddrift/events/client/clienttest"
)

// A streaming task from submission to completion in the v1.0 spelling:
// method names, states, the status message's skill, the media types of the
// message's and the artifacts' parts (the lifecycle itself is package
// track's, tested there).
func TestInterceptorLifecycle(t *testing.T) {
	rec := &recording{}
	ic := a2aemitv2.New(rec, a2aemitv2.Options{RawCard: []byte(`{"name":"agent","supportedInterfaces":[]}`)})
	ctx := a2aemitv2.WithPlan(context.Background(), a2aemitv2.Plan{SkillID: "translate", Posture: detector.Degrade, Idempotent: true,
		Requires: events.Requires{OutputModes: []string{"application/json"}}})

	msg := a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart("hi"), &a2a.Part{Content: a2a.Raw("AA=="), MediaType: "image/png"})
	call(t, ic, ctx, "SendStreamingMessage", streamingCard, &a2a.SendMessageRequest{Message: msg},
		ok(&a2a.Task{ID: "t1", Status: a2a.TaskStatus{State: a2a.TaskStateSubmitted}}),
		ok(status("t1", a2a.TaskStateWorking)),
		ok(status("t1", a2a.TaskStateWorking)), // no change: nothing emitted
		ok(&a2a.TaskStatusUpdateEvent{TaskID: "t1", Status: a2a.TaskStatus{State: a2a.TaskStateInputRequired,
			Message: &a2a.Message{Metadata: map[string]any{"skillId": "pick-language"}}}}),
	)
	// The client answers; the agent streams an artifact in chunks.
	call(t, ic, ctx, "SendStreamingMessage", streamingCard, &a2a.SendMessageRequest{Message: &a2a.Message{TaskID: "t1", Parts: a2a.ContentParts{a2a.NewTextPart("fr")}}},
		ok(status("t1", a2a.TaskStateWorking)),
		ok(&a2a.TaskArtifactUpdateEvent{TaskID: "t1", Artifact: &a2a.Artifact{ID: "a1", Parts: a2a.ContentParts{a2a.NewTextPart("bon")}}}),
		ok(&a2a.TaskArtifactUpdateEvent{TaskID: "t1", Append: true, Artifact: &a2a.Artifact{ID: "a1", Parts: a2a.ContentParts{a2a.NewTextPart("jour")}}}),
		ok(&a2a.TaskArtifactUpdateEvent{TaskID: "t1", Append: true, Artifact: &a2a.Artifact{ID: "a1", Parts: a2a.ContentParts{a2a.NewDataPart(map[string]any{"k": 1})}}}),
		ok(status("t1", a2a.TaskStateCompleted)),
	)
	rec.Expect(t,
		"submitted t1 skill=translate stream=true push=false in=[text/plain image/png] card=true",
		"request t1 SendStreamingMessage #1",
		"status t1 TASK_STATE_SUBMITTED",
		"status t1 TASK_STATE_WORKING",
		"status t1 TASK_STATE_INPUT_REQUIRED skill=pick-language",
		"request t1 SendStreamingMessage #1",
		"status t1 TASK_STATE_WORKING",
		"artifact t1 a1 [text/plain]",
		"artifact t1 a1 [application/json]",
		"status t1 TASK_STATE_COMPLETED",
	)
	// carddrift reads every state the interceptor reports.
	for _, l := range rec.Events() {
		if s, isStatus := l.(events.Status); isStatus {
			if _, known := detector.NormalizeState(s.State); !known {
				t.Errorf("state %q: carddrift does not model it", s.State)
			}
		}
	}
}

// Every call on a task carries its A2A v1.0 method name, whatever its
// payload (push-config and subscribe calls the protocol's names, not the
// client's); a2a-go/v2's errors become a2a.task.error with their code and
// message; a transport error is a failure with no code.
func TestInterceptorMethodsAndErrors(t *testing.T) {
	rec := &recording{}
	ic := a2aemitv2.New(rec, a2aemitv2.Options{})
	ctx := context.Background()
	call(t, ic, ctx, "SendMessage", streamingCard, &a2a.SendMessageRequest{Message: a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart("x"))},
		ok(&a2a.Task{ID: "t2", Status: a2a.TaskStatus{State: a2a.TaskStateInputRequired}}))
	rec.Reset()

	follow := &a2a.SendMessageRequest{Message: &a2a.Message{TaskID: "t2", Parts: a2a.ContentParts{a2a.NewTextPart("y")}}}
	call(t, ic, ctx, "SendMessage", streamingCard, follow, a2aclient.Response{Err: a2a.NewError(a2a.ErrInvalidParams, "bad part")})
	call(t, ic, ctx, "SendMessage", streamingCard, follow, a2aclient.Response{Err: errors.New("connection reset")})
	call(t, ic, ctx, "GetTask", streamingCard, &a2a.GetTaskRequest{ID: "t2"}, ok(&a2a.Task{ID: "t2", Status: a2a.TaskStatus{State: a2a.TaskStateInputRequired}}))
	call(t, ic, ctx, "SendMessage", streamingCard, follow, a2aclient.Response{Err: a2a.ErrVersionNotSupported})
	call(t, ic, ctx, "SendMessage", streamingCard, follow, ok(&a2a.Task{ID: "t2", Status: a2a.TaskStatus{State: a2a.TaskStateWorking}}))
	call(t, ic, ctx, "SendMessage", streamingCard, follow, ok(&a2a.Task{ID: "t2", Status: a2a.TaskStatus{State: a2a.TaskStateWorking}}))
	call(t, ic, ctx, "CreateTaskPushConfig", streamingCard, &a2a.PushConfig{TaskID: "t2"}, a2aclient.Response{Err: a2a.ErrPushNotificationNotSupported})
	call(t, ic, ctx, "GetTaskPushConfig", streamingCard, &a2a.GetTaskPushConfigRequest{TaskID: "t2"}, a2aclient.Response{Err: a2a.ErrPushNotificationNotSupported})
	call(t, ic, ctx, "ListTaskPushConfigs", streamingCard, &a2a.ListTaskPushConfigRequest{TaskID: "t2"}, ok([]*a2a.PushConfig{}))
	call(t, ic, ctx, "DeleteTaskPushConfig", streamingCard, &a2a.DeleteTaskPushConfigRequest{TaskID: "t2"}, ok(struct{}{}))
	call(t, ic, ctx, "SubscribeToTask", streamingCard, &a2a.SubscribeToTaskRequest{ID: "t2"}, ok(status("t2", a2a.TaskStateWorking)))
	call(t, ic, ctx, "CancelTask", streamingCard, &a2a.CancelTaskRequest{ID: "t2"}, a2aclient.Response{Err: a2a.ErrTaskNotCancelable})
	rec.Expect(t,
		"request t2 SendMessage #1",
		"error t2 SendMessage -32602",
		"request t2 SendMessage #2",
		"request t2 GetTask #1",
		"request t2 SendMessage #3",
		"error t2 SendMessage -32009",
		"request t2 SendMessage #4",
		"status t2 TASK_STATE_WORKING",
		"request t2 SendMessage #1",
		"request t2 CreateTaskPushNotificationConfig #1",
		"error t2 CreateTaskPushNotificationConfig -32003",
		"request t2 GetTaskPushNotificationConfig #1",
		"error t2 GetTaskPushNotificationConfig -32003",
		"request t2 ListTaskPushNotificationConfigs #1",
		"request t2 DeleteTaskPushNotificationConfig #1",
		"request t2 SubscribeToTask #1",
		"request t2 CancelTask #1",
		"error t2 CancelTask -32002",
	)
	// Every method name is one carddrift classifies.
	for _, d := range rec.Events() {
		if r, isReq := d.(events.Request); isReq && detector.ClassifyMethod(r.Method) == detector.MethodUnknown {
			t.Errorf("method %q: carddrift does not know it", r.Method)
		}
	}
	if e := rec.Events()[1].(events.Error); e.Message != "bad part" {
		t.Errorf("error message = %q, want the A2A error's message", e.Message)
	}
}

// A new task whose call fails emits nothing; a non-streaming card turns a
// streaming call into SendMessage that does not require streaming; push
// configuration is a requirement; a task's artifacts come before its state;
// MarshalCard sends the v1.0 struct's round trip.
func TestInterceptorNewTaskVariants(t *testing.T) {
	rec := &recording{}
	ic := a2aemitv2.New(rec, a2aemitv2.Options{MarshalCard: true, AgentURL: "https://agent.example"})
	ctx := context.Background()
	newMsg := func() *a2a.SendMessageRequest {
		return &a2a.SendMessageRequest{Message: a2a.NewMessage(a2a.MessageRoleUser, a2a.NewDataPart(map[string]any{"q": 1}))}
	}
	call(t, ic, ctx, "SendMessage", streamingCard, newMsg(), a2aclient.Response{Err: a2a.ErrInvalidParams})
	if got := rec.Lines(); len(got) != 0 {
		t.Fatalf("a failed new task emitted %v", got)
	}
	plain := &a2a.AgentCard{Name: "plain", SupportedInterfaces: []*a2a.AgentInterface{a2a.NewAgentInterface("https://agent.example/a2a", a2a.TransportProtocolJSONRPC)}}
	call(t, ic, ctx, "SendStreamingMessage", plain, newMsg(), ok(&a2a.Task{ID: "t3", Status: a2a.TaskStatus{State: a2a.TaskStateCompleted},
		Artifacts: []*a2a.Artifact{{ID: "a", Parts: a2a.ContentParts{a2a.NewFileURLPart("https://x/y.pdf", "application/pdf")}}}}))
	p := newMsg()
	p.Config = &a2a.SendMessageConfig{PushConfig: &a2a.PushConfig{URL: "https://client.example/hook"}}
	call(t, ic, ctx, "SendMessage", streamingCard, p, ok(&a2a.Message{TaskID: "t4"}))
	rec.Expect(t,
		"submitted t3 skill= stream=false push=false in=[application/json] card=true",
		"request t3 SendMessage #1",
		"artifact t3 a [application/pdf]",
		"status t3 TASK_STATE_COMPLETED",
		"submitted t4 skill= stream=false push=true in=[application/json] card=true",
		"request t4 SendMessage #1",
	)
	var round map[string]any
	if err := json.Unmarshal(rec.Events()[0].(events.Submitted).Card, &round); err != nil || round["name"] != "plain" || round["supportedInterfaces"] == nil {
		t.Errorf("marshalled card = %s (%v), want the v1.0 shape", rec.Events()[0].(events.Submitted).Card, err)
	}
	// A message reply with no task, and calls without a task, emit nothing.
	rec.Reset()
	call(t, ic, ctx, "SendMessage", streamingCard, newMsg(), ok(&a2a.Message{ID: "m"}))
	call(t, ic, ctx, "GetExtendedAgentCard", streamingCard, &a2a.GetExtendedAgentCardRequest{}, ok(streamingCard))
	call(t, ic, ctx, "ListTasks", streamingCard, &a2a.ListTasksRequest{}, ok(&a2a.ListTasksResponse{}))
	// Nil payloads (the SDK's zero values) neither panic nor emit.
	call(t, ic, ctx, "SendMessage", streamingCard, (*a2a.SendMessageRequest)(nil), ok((*a2a.Task)(nil)))
	call(t, ic, ctx, "SendStreamingMessage", streamingCard, &a2a.SendMessageRequest{}, ok((*a2a.TaskStatusUpdateEvent)(nil)),
		ok((*a2a.TaskArtifactUpdateEvent)(nil)), ok((*a2a.Message)(nil)), ok(nil))
	if got := rec.Lines(); len(got) != 0 {
		t.Errorf("task-less calls emitted %v", got)
	}
}

func TestMediaTypes(t *testing.T) {
	parts := a2a.ContentParts{
		a2a.NewTextPart("a"),
		{Content: a2a.Text("# b"), MediaType: "text/markdown"},
		a2a.NewDataPart(map[string]any{}),
		a2a.NewFileURLPart("https://x/y.pdf", "application/pdf"),
		{Content: a2a.Raw("png"), MediaType: "image/png"},
		a2a.NewRawPart([]byte("?")),
		a2a.NewFileURLPart("https://x/z", ""),
		nil,
		{},
	}
	want := []string{"text/plain", "text/markdown", "application/json", "application/pdf", "image/png", "application/octet-stream"}
	if got := a2aemitv2.MediaTypes(parts); !reflect.DeepEqual(got, want) {
		t.Errorf("MediaTypes = %v, want %v", got, want)
	}
	if got := a2aemitv2.MediaTypes(nil); got != nil {
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
		{a2a.NewError(a2a.ErrTaskNotFound, "gone"), -32001, true},
		{a2a.ErrExtendedCardNotConfigured, -32007, true},
		{a2a.ErrExtensionSupportRequired, -32008, true},
		{a2a.ErrVersionNotSupported, -32009, true},
		{a2a.ErrUnauthenticated, -31401, true},
		{a2a.ErrUnauthorized, -31403, true},
		{a2a.ErrInternalError, -32603, true},
		{errors.New("dial tcp: refused"), 0, false},
		{context.DeadlineExceeded, 0, false},
		{nil, 0, false},
	}
	for _, c := range cases {
		code, ok := a2aemitv2.ErrorCode(c.err)
		if code != c.code || ok != c.ok {
			t.Errorf("ErrorCode(%v) = %d, %v, want %d, %v", c.err, code, ok, c.code, c.ok)
		}
	}
}

// A real a2a-go/v2 error from a real server reaches the interceptor as the
// SDK's sentinel and is reported with the wire code.
func TestInterceptorWireErrorCode(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	a := newAgent(t, true)
	rec := &recording{}
	cl, _ := newClient(t, ctx, a, rec, a2aemitv2.Options{})
	id, state := stream(t, ctx, cl, a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart("hello")))
	if state != a2a.TaskStateInputRequired {
		t.Fatalf("first stream ended in %q", state)
	}
	a.SetReject(a2a.NewError(a2a.ErrUnsupportedContentType, "text is no longer accepted"))
	_, err := cl.SendMessage(ctx, &a2a.SendMessageRequest{Message: a2a.NewMessageForTask(a2a.MessageRoleUser, a2a.TaskInfo{TaskID: id}, a2a.NewTextPart("fr"))})
	if !errors.Is(err, a2a.ErrUnsupportedContentType) {
		t.Fatalf("SendMessage = %v, want the agent's error", err)
	}
	got := rec.Lines()
	want := fmt.Sprintf("error %s SendMessage -32005", id)
	if len(got) == 0 || got[len(got)-1] != want {
		t.Errorf("events %v, want the last to be %q", got, want)
	}
}

// A publish that fails never breaks the client's call: a real a2a-go/v2
// client whose every publish fails gets the agent's answers unchanged, and
// every failure reaches OnError. Before never answers for the agent, After
// without Before is a no-op.
func TestInterceptorPublishErrorsNeverBreakTheCall(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	boom := errors.New("jetstream down")
	rec := &recording{Fail: boom}
	var mu sync.Mutex
	var got []error
	a := newAgent(t, true)
	cl, _ := newClient(t, ctx, a, rec, a2aemitv2.Options{OnError: func(err error) { mu.Lock(); got = append(got, err); mu.Unlock() }})

	id, state := stream(t, ctx, cl, a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart("hello")))
	if id == "" || state != a2a.TaskStateInputRequired {
		t.Fatalf("stream with failing publishes ended with task %q in %q, want input-required", id, state)
	}
	res, err := cl.SendMessage(ctx, &a2a.SendMessageRequest{Message: a2a.NewMessageForTask(a2a.MessageRoleUser, a2a.TaskInfo{TaskID: id}, a2a.NewTextPart("fr"))})
	if err != nil {
		t.Fatalf("SendMessage with failing publishes: %v", err)
	}
	if task, isTask := res.(*a2a.Task); !isTask || task.Status.State != a2a.TaskStateCompleted || len(task.Artifacts) != 1 {
		t.Errorf("SendMessage = %#v, want the completed task with its artifact", res)
	}
	if _, err := cl.GetTask(ctx, &a2a.GetTaskRequest{ID: id}); err != nil {
		t.Errorf("GetTask with failing publishes: %v", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(got) != len(rec.Lines()) || len(got) < 8 {
		t.Errorf("OnError got %d errors for %d publishes, want one per publish", len(got), len(rec.Lines()))
	}
	for _, err := range got {
		if !errors.Is(err, boom) {
			t.Errorf("OnError got %v", err)
		}
	}
	ic := a2aemitv2.New(rec, a2aemitv2.Options{})
	if err := ic.After(context.Background(), &a2aclient.Response{Err: a2a.ErrInternalError}); err != nil {
		t.Errorf("After without Before = %v", err)
	}
}

// ResolveCard decodes the v1.0 card (its supportedInterfaces) and keeps the
// bytes as served; the fetch is package track's, tested there.
func TestResolveCard(t *testing.T) {
	card := string(cardJSON("http://x/a2a", true))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/v1" + a2aemitv2.WellKnownPath:
			w.Write([]byte(card))
		case "/broken" + a2aemitv2.WellKnownPath:
			w.WriteHeader(http.StatusInternalServerError)
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	f := clienttest.LoopbackFetcher(t)
	c, err := a2aemitv2.ResolveCard(context.Background(), f, srv.URL+"/v1")
	if err != nil {
		t.Fatalf("ResolveCard: %v", err)
	}
	if string(c.Raw) != card || c.URL != srv.URL+"/v1"+a2aemitv2.WellKnownPath || c.AgentCard.Name != "Translator" ||
		!c.AgentCard.Capabilities.Streaming || len(c.AgentCard.SupportedInterfaces) != 1 || c.AgentCard.SupportedInterfaces[0].URL != "http://x/a2a" {
		t.Errorf("card = %+v", c)
	}
	if _, err := a2aemitv2.ResolveCard(context.Background(), f, srv.URL+"/broken"); !errors.Is(err, a2aemitv2.ErrCardStatus) {
		t.Errorf("500: ResolveCard = %v, want ErrCardStatus", err)
	}
}
