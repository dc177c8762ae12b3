package track_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"reflect"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"

	v03 "github.com/a2aproject/a2a-go/a2a"
	v03client "github.com/a2aproject/a2a-go/a2aclient"
	v1 "github.com/a2aproject/a2a-go/v2/a2a"
	v1client "github.com/a2aproject/a2a-go/v2/a2aclient"

	"github.com/carddrift/carddrift/detector"
	"github.com/carddrift/carddrift/events"
	"github.com/carddrift/carddrift/events/client"
	"github.com/carddrift/carddrift/events/client/a2aemit"
	"github.com/carddrift/carddrift/events/client/a2aemitv2"
	"github.com/carddrift/carddrift/events/client/a2aemitv2/a2aemitv2test"
	"github.com/carddrift/carddrift/events/client/clienttest"
	"github.com/carddrift/carddrift/events/client/internal/track"
	"github.com/carddrift/carddrift/events/service/servicetest"
	"github.com/carddrift/carddrift/store/fetcher"
)

// The two SDK lines side by side: each case makes the same calls through
// the a2a-go v0.3 interceptor (package a2aemit) and the a2a-go/v2 one
// (package a2aemitv2), each call in its SDK's types, and expects the same
// events, each in its line's spelling (spellings).

// spellings are the method names the two lines write differently: {name}
// in an expected line stands for the v0.3 spelling, then the v1.0 one. Any
// other {name} is a state: v0.3 spells it name, v1.0 TASK_STATE_NAME.
var spellings = map[string][2]string{
	"send":        {"message/send", "SendMessage"},
	"stream":      {"message/stream", "SendStreamingMessage"},
	"get":         {"tasks/get", "GetTask"},
	"cancel":      {"tasks/cancel", "CancelTask"},
	"subscribe":   {"tasks/resubscribe", "SubscribeToTask"},
	"push/set":    {"tasks/pushNotificationConfig/set", "CreateTaskPushNotificationConfig"},
	"push/get":    {"tasks/pushNotificationConfig/get", "GetTaskPushNotificationConfig"},
	"push/list":   {"tasks/pushNotificationConfig/list", "ListTaskPushNotificationConfigs"},
	"push/delete": {"tasks/pushNotificationConfig/delete", "DeleteTaskPushNotificationConfig"},
}

// old and cur are one call as the v0.3 and the v1.0 client make it: the
// client's method name, its card, the payload, and the responses (a
// payload, or an error: the call's failure). A zero call is not made.
type (
	old struct {
		method    string
		card      *v03.AgentCard
		payload   any
		responses []any
	}
	cur struct {
		method    string
		card      *v1.AgentCard
		payload   any
		responses []any
	}
)

// pair is the two interceptors of a case, each publishing to its recorder.
type pair struct {
	v03 *a2aemit.Interceptor
	v1  *a2aemitv2.Interceptor
	rec [2]*clienttest.Recorder
}

func newPair(opts client.InterceptorOptions) *pair {
	p := &pair{rec: [2]*clienttest.Recorder{{}, {}}}
	p.v03, p.v1 = a2aemit.New(p.rec[0], opts), a2aemitv2.New(p.rec[1], opts)
	return p
}

const baseURL = "https://agent.example/a2a"

// do makes a call in each line as its client does: Before, then After once
// per response (a stream has many).
func (p *pair) do(t *testing.T, ctx context.Context, a old, b cur) {
	t.Helper()
	if a.method != "" {
		actx, err := p.v03.Before(ctx, &v03client.Request{Method: a.method, BaseURL: baseURL, Card: a.card, Payload: a.payload})
		if err != nil {
			t.Fatalf("v0.3 Before: %v", err)
		}
		for _, r := range a.responses {
			err, _ := r.(error)
			resp := &v03client.Response{Method: a.method, BaseURL: baseURL, Card: a.card, Err: err}
			if err == nil {
				resp.Payload = r
			}
			if err := p.v03.After(actx, resp); err != nil {
				t.Fatalf("v0.3 After: %v", err)
			}
		}
	}
	if b.method != "" {
		bctx, early, err := p.v1.Before(ctx, &v1client.Request{Method: b.method, BaseURL: baseURL, Card: b.card, Payload: b.payload})
		if early != nil || err != nil {
			t.Fatalf("v1.0 Before = %v, %v: the interceptor must not answer for the agent", early, err)
		}
		for _, r := range b.responses {
			resp := &v1client.Response{Method: b.method, BaseURL: baseURL, Card: b.card}
			if resp.Err, _ = r.(error); resp.Err == nil {
				resp.Payload = r
			}
			if err := p.v1.After(bctx, resp); err != nil {
				t.Fatalf("v1.0 After: %v", err)
			}
		}
	}
}

var state = regexp.MustCompile(`{[a-z-]+}`)

// expect checks each line published want, in its spelling, and that
// carddrift knows every state and method published.
func (p *pair) expect(t *testing.T, want ...string) {
	t.Helper()
	for i, rec := range p.rec {
		spelt := make([]string, len(want))
		for j, w := range want {
			for name, s := range spellings {
				w = strings.ReplaceAll(w, "{"+name+"}", s[i])
			}
			spelt[j] = state.ReplaceAllStringFunc(w, func(st string) string {
				if st = strings.Trim(st, "{}"); i == 1 {
					st = "TASK_STATE_" + strings.ToUpper(strings.ReplaceAll(st, "-", "_"))
				}
				return st
			})
		}
		rec.Expect(t, spelt...)
		for _, d := range rec.Events() {
			switch d := d.(type) {
			case events.Status:
				if _, known := detector.NormalizeState(d.State); !known {
					t.Errorf("state %q: carddrift does not model it", d.State)
				}
			case events.Request:
				if detector.ClassifyMethod(d.Method) == detector.MethodUnknown {
					t.Errorf("method %q: carddrift does not know it", d.Method)
				}
			}
		}
	}
}

// reset forgets what both lines published.
func (p *pair) reset() { p.rec[0].Reset(); p.rec[1].Reset() }

var (
	card03 = &v03.AgentCard{Name: "agent", Capabilities: v03.AgentCapabilities{Streaming: true}}
	card1  = &v1.AgentCard{Name: "agent", Capabilities: v1.AgentCapabilities{Streaming: true}}
)

func status03(task string, st v03.TaskState) *v03.TaskStatusUpdateEvent {
	return &v03.TaskStatusUpdateEvent{TaskID: v03.TaskID(task), Status: v03.TaskStatus{State: st}}
}

func status1(task string, st v1.TaskState) *v1.TaskStatusUpdateEvent {
	return &v1.TaskStatusUpdateEvent{TaskID: v1.TaskID(task), Status: v1.TaskStatus{State: st}}
}

// A streaming task from submission to completion: method names and
// states in each line's spelling, which carddrift reads; the status
// message's skill; the media types of the message's and the artifacts'
// parts (the lifecycle itself is package track's, tested in track_test.go).
func TestSDKLifecycle(t *testing.T) {
	p := newPair(client.InterceptorOptions{RawCard: []byte(`{"name":"agent"}`)})
	ctx := a2aemit.WithPlan(context.Background(), a2aemit.Plan{SkillID: "translate"})
	skill := map[string]any{"skillId": "pick-language"}
	p.do(t, ctx, old{"SendStreamingMessage", card03, &v03.MessageSendParams{Message: v03.NewMessage(v03.MessageRoleUser,
		v03.TextPart{Text: "hi"}, v03.FilePart{File: v03.FileBytes{FileMeta: v03.FileMeta{MimeType: "image/png"}, Bytes: "AA=="}})}, []any{
		&v03.Task{ID: "t1", Status: v03.TaskStatus{State: v03.TaskStateSubmitted}},
		status03("t1", v03.TaskStateWorking), status03("t1", v03.TaskStateWorking),
		&v03.TaskStatusUpdateEvent{TaskID: "t1", Status: v03.TaskStatus{State: v03.TaskStateInputRequired, Message: &v03.Message{Metadata: skill}}},
	}}, cur{"SendStreamingMessage", card1, &v1.SendMessageRequest{Message: v1.NewMessage(v1.MessageRoleUser,
		v1.NewTextPart("hi"), &v1.Part{Content: v1.Raw("AA=="), MediaType: "image/png"})}, []any{
		&v1.Task{ID: "t1", Status: v1.TaskStatus{State: v1.TaskStateSubmitted}},
		status1("t1", v1.TaskStateWorking), status1("t1", v1.TaskStateWorking),
		&v1.TaskStatusUpdateEvent{TaskID: "t1", Status: v1.TaskStatus{State: v1.TaskStateInputRequired, Message: &v1.Message{Metadata: skill}}},
	}})
	// The client answers; the agent streams an artifact in chunks.
	p.do(t, ctx, old{"SendStreamingMessage", card03, &v03.MessageSendParams{Message: &v03.Message{TaskID: "t1", Parts: v03.ContentParts{v03.TextPart{Text: "fr"}}}}, []any{
		status03("t1", v03.TaskStateWorking),
		&v03.TaskArtifactUpdateEvent{TaskID: "t1", Artifact: &v03.Artifact{ID: "a1", Parts: v03.ContentParts{v03.TextPart{Text: "bon"}}}},
		&v03.TaskArtifactUpdateEvent{TaskID: "t1", Append: true, Artifact: &v03.Artifact{ID: "a1", Parts: v03.ContentParts{v03.TextPart{Text: "jour"}}}},
		&v03.TaskArtifactUpdateEvent{TaskID: "t1", Append: true, Artifact: &v03.Artifact{ID: "a1", Parts: v03.ContentParts{v03.DataPart{Data: map[string]any{"k": 1}}}}},
		status03("t1", v03.TaskStateCompleted),
	}}, cur{"SendStreamingMessage", card1, &v1.SendMessageRequest{Message: &v1.Message{TaskID: "t1", Parts: v1.ContentParts{v1.NewTextPart("fr")}}}, []any{
		status1("t1", v1.TaskStateWorking),
		&v1.TaskArtifactUpdateEvent{TaskID: "t1", Artifact: &v1.Artifact{ID: "a1", Parts: v1.ContentParts{v1.NewTextPart("bon")}}},
		&v1.TaskArtifactUpdateEvent{TaskID: "t1", Append: true, Artifact: &v1.Artifact{ID: "a1", Parts: v1.ContentParts{v1.NewTextPart("jour")}}},
		&v1.TaskArtifactUpdateEvent{TaskID: "t1", Append: true, Artifact: &v1.Artifact{ID: "a1", Parts: v1.ContentParts{v1.NewDataPart(map[string]any{"k": 1})}}},
		status1("t1", v1.TaskStateCompleted),
	}})
	p.expect(t,
		"submitted t1 skill=translate stream=true push=false in=[text/plain image/png] posture= card=true",
		"request t1 {stream} #1",
		"status t1 {submitted}",
		"status t1 {working}",
		"status t1 {input-required} skill=pick-language",
		"request t1 {stream} #1",
		"status t1 {working}",
		"artifact t1 a1 [text/plain]",
		"artifact t1 a1 [application/json]",
		"status t1 {completed}",
	)
}

// Every call on a task carries its line's method name, whatever its
// payload (v1.0: the protocol's push-config names, not the client's); the
// SDK's errors become a2a.task.error with their code (and, on v1.0, the
// A2A error's message); a transport error is a failure with no code.
func TestSDKMethodsAndErrors(t *testing.T) {
	p := newPair(client.InterceptorOptions{})
	ctx := context.Background()
	p.do(t, ctx, old{"SendMessage", card03, &v03.MessageSendParams{Message: v03.NewMessage(v03.MessageRoleUser, v03.TextPart{Text: "x"})},
		[]any{&v03.Task{ID: "t2", Status: v03.TaskStatus{State: v03.TaskStateInputRequired}}}},
		cur{"SendMessage", card1, &v1.SendMessageRequest{Message: v1.NewMessage(v1.MessageRoleUser, v1.NewTextPart("x"))},
			[]any{&v1.Task{ID: "t2", Status: v1.TaskStatus{State: v1.TaskStateInputRequired}}}})
	p.reset()

	follow03 := &v03.MessageSendParams{Message: &v03.Message{TaskID: "t2", Parts: v03.ContentParts{v03.TextPart{Text: "y"}}}}
	follow1 := &v1.SendMessageRequest{Message: &v1.Message{TaskID: "t2", Parts: v1.ContentParts{v1.NewTextPart("y")}}}
	reset := errors.New("connection reset")
	for _, c := range []struct {
		a old
		b cur
	}{
		{old{"SendMessage", card03, follow03, []any{fmt.Errorf("bad part: %w", v03.ErrInvalidParams)}},
			cur{"SendMessage", card1, follow1, []any{v1.NewError(v1.ErrInvalidParams, "bad part")}}},
		{old{"SendMessage", card03, follow03, []any{reset}}, cur{"SendMessage", card1, follow1, []any{reset}}},
		{old{"GetTask", card03, &v03.TaskQueryParams{ID: "t2"}, []any{&v03.Task{ID: "t2", Status: v03.TaskStatus{State: v03.TaskStateInputRequired}}}},
			cur{"GetTask", card1, &v1.GetTaskRequest{ID: "t2"}, []any{&v1.Task{ID: "t2", Status: v1.TaskStatus{State: v1.TaskStateInputRequired}}}}},
		{old{"SendMessage", card03, follow03, []any{v03.ErrUnsupportedContentType}},
			cur{"SendMessage", card1, follow1, []any{v1.ErrUnsupportedContentType}}},
		{old{"SendMessage", card03, follow03, []any{&v03.Task{ID: "t2", Status: v03.TaskStatus{State: v03.TaskStateWorking}}}},
			cur{"SendMessage", card1, follow1, []any{&v1.Task{ID: "t2", Status: v1.TaskStatus{State: v1.TaskStateWorking}}}}},
		{old{"SendMessage", card03, follow03, []any{&v03.Task{ID: "t2", Status: v03.TaskStatus{State: v03.TaskStateWorking}}}},
			cur{"SendMessage", card1, follow1, []any{&v1.Task{ID: "t2", Status: v1.TaskStatus{State: v1.TaskStateWorking}}}}},
		{old{"SetTaskPushConfig", card03, &v03.TaskPushConfig{TaskID: "t2"}, []any{v03.ErrPushNotificationNotSupported}},
			cur{"CreateTaskPushConfig", card1, &v1.PushConfig{TaskID: "t2"}, []any{v1.ErrPushNotificationNotSupported}}},
		{old{"GetTaskPushConfig", card03, &v03.GetTaskPushConfigParams{TaskID: "t2"}, []any{v03.ErrPushNotificationNotSupported}},
			cur{"GetTaskPushConfig", card1, &v1.GetTaskPushConfigRequest{TaskID: "t2"}, []any{v1.ErrPushNotificationNotSupported}}},
		{old{"ListTaskPushConfig", card03, &v03.ListTaskPushConfigParams{TaskID: "t2"}, []any{[]*v03.TaskPushConfig{}}},
			cur{"ListTaskPushConfigs", card1, &v1.ListTaskPushConfigRequest{TaskID: "t2"}, []any{[]*v1.PushConfig{}}}},
		{old{"DeleteTaskPushConfig", card03, &v03.DeleteTaskPushConfigParams{TaskID: "t2"}, []any{struct{}{}}},
			cur{"DeleteTaskPushConfig", card1, &v1.DeleteTaskPushConfigRequest{TaskID: "t2"}, []any{struct{}{}}}},
		{old{"ResubscribeToTask", card03, &v03.TaskIDParams{ID: "t2"}, []any{status03("t2", v03.TaskStateWorking)}},
			cur{"SubscribeToTask", card1, &v1.SubscribeToTaskRequest{ID: "t2"}, []any{status1("t2", v1.TaskStateWorking)}}},
		{old{"CancelTask", card03, &v03.TaskIDParams{ID: "t2"}, []any{v03.ErrTaskNotCancelable}},
			cur{"CancelTask", card1, &v1.CancelTaskRequest{ID: "t2"}, []any{v1.ErrTaskNotCancelable}}},
	} {
		p.do(t, ctx, c.a, c.b)
	}
	p.expect(t,
		"request t2 {send} #1",
		"error t2 {send} -32602",
		"request t2 {send} #2",
		"request t2 {get} #1",
		"request t2 {send} #3",
		"error t2 {send} -32005",
		"request t2 {send} #4",
		"status t2 {working}",
		"request t2 {send} #1",
		"request t2 {push/set} #1",
		"error t2 {push/set} -32003",
		"request t2 {push/get} #1",
		"error t2 {push/get} -32003",
		"request t2 {push/list} #1",
		"request t2 {push/delete} #1",
		"request t2 {subscribe} #1",
		"request t2 {cancel} #1",
		"error t2 {cancel} -32002",
	)
	if e := p.rec[1].Events()[1].(events.Error); e.Message != "bad part" {
		t.Errorf("v1.0 error message = %q, want the A2A error's message", e.Message)
	}
}

// A new task whose call fails emits nothing; a non-streaming card turns a
// streaming call into a send that does not require streaming; push
// configuration is a requirement; a task's artifacts come before its
// state; MarshalCard sends the round trip of the line's card struct; a
// message reply with no task, calls on no task and nil payloads (the SDK's
// zero values) emit nothing.
func TestSDKNewTaskVariants(t *testing.T) {
	p := newPair(client.InterceptorOptions{MarshalCard: true, AgentURL: "https://agent.example"})
	ctx := context.Background()
	new03 := func() *v03.MessageSendParams {
		return &v03.MessageSendParams{Message: v03.NewMessage(v03.MessageRoleUser, v03.DataPart{Data: map[string]any{"q": 1}})}
	}
	new1 := func() *v1.SendMessageRequest {
		return &v1.SendMessageRequest{Message: v1.NewMessage(v1.MessageRoleUser, v1.NewDataPart(map[string]any{"q": 1}))}
	}
	p.do(t, ctx, old{"SendMessage", card03, new03(), []any{v03.ErrInvalidParams}}, cur{"SendMessage", card1, new1(), []any{v1.ErrInvalidParams}})
	p.expect(t)
	plain03 := &v03.AgentCard{Name: "plain", URL: "https://agent.example/a2a"}
	plain1 := &v1.AgentCard{Name: "plain", SupportedInterfaces: []*v1.AgentInterface{v1.NewAgentInterface("https://agent.example/a2a", v1.TransportProtocolJSONRPC)}}
	p.do(t, ctx, old{"SendStreamingMessage", plain03, new03(), []any{&v03.Task{ID: "t3", Status: v03.TaskStatus{State: v03.TaskStateCompleted},
		Artifacts: []*v03.Artifact{{ID: "a", Parts: v03.ContentParts{v03.FilePart{File: v03.FileURI{FileMeta: v03.FileMeta{MimeType: "application/pdf"}}}}}}}}},
		cur{"SendStreamingMessage", plain1, new1(), []any{&v1.Task{ID: "t3", Status: v1.TaskStatus{State: v1.TaskStateCompleted},
			Artifacts: []*v1.Artifact{{ID: "a", Parts: v1.ContentParts{v1.NewFileURLPart("https://x/y.pdf", "application/pdf")}}}}}})
	push03, push1 := new03(), new1()
	push03.Config = &v03.MessageSendConfig{PushConfig: &v03.PushConfig{URL: "https://client.example/hook"}}
	push1.Config = &v1.SendMessageConfig{PushConfig: &v1.PushConfig{URL: "https://client.example/hook"}}
	p.do(t, ctx, old{"SendMessage", card03, push03, []any{&v03.Message{TaskID: "t4"}}}, cur{"SendMessage", card1, push1, []any{&v1.Message{TaskID: "t4"}}})
	p.expect(t,
		"submitted t3 skill= stream=false push=false in=[application/json] posture= card=true",
		"request t3 {send} #1",
		"artifact t3 a [application/pdf]",
		"status t3 {completed}",
		"submitted t4 skill= stream=false push=true in=[application/json] posture= card=true",
		"request t4 {send} #1",
	)
	for i, shape := range []string{"url", "supportedInterfaces"} {
		var round map[string]any
		card := p.rec[i].Events()[0].(events.Submitted).Card
		if err := json.Unmarshal(card, &round); err != nil || round["name"] != "plain" || round[shape] == nil {
			t.Errorf("marshalled card = %s (%v), want the struct's round trip with %s", card, err, shape)
		}
	}
	p.reset()
	p.do(t, ctx, old{"SendMessage", card03, new03(), []any{&v03.Message{ID: "m"}}}, cur{"SendMessage", card1, new1(), []any{&v1.Message{ID: "m"}}})
	p.do(t, ctx, old{"GetAgentCard", card03, nil, []any{card03}}, cur{"GetExtendedAgentCard", card1, &v1.GetExtendedAgentCardRequest{}, []any{card1}})
	p.do(t, ctx, old{}, cur{"ListTasks", card1, &v1.ListTasksRequest{}, []any{&v1.ListTasksResponse{}}})
	p.do(t, ctx, old{}, cur{"SendMessage", card1, (*v1.SendMessageRequest)(nil), []any{(*v1.Task)(nil)}})
	p.do(t, ctx, old{}, cur{"SendStreamingMessage", card1, &v1.SendMessageRequest{}, []any{(*v1.TaskStatusUpdateEvent)(nil),
		(*v1.TaskArtifactUpdateEvent)(nil), (*v1.Message)(nil), nil}})
	p.expect(t)
}

// Each line's media types: a part's own media type, else its kind's.
func TestSDKMediaTypes(t *testing.T) {
	want := []string{"text/plain", "application/json", "application/pdf", "image/png", "application/octet-stream"}
	parts03 := v03.ContentParts{
		v03.TextPart{Text: "a"},
		&v03.TextPart{Text: "b"},
		v03.DataPart{Data: map[string]any{}},
		v03.FilePart{File: v03.FileURI{FileMeta: v03.FileMeta{MimeType: "application/pdf"}, URI: "https://x/y.pdf"}},
		&v03.FilePart{File: &v03.FileBytes{FileMeta: v03.FileMeta{MimeType: "image/png"}}},
		v03.FilePart{File: v03.FileBytes{Bytes: "AA=="}},
	}
	if got := a2aemit.MediaTypes(parts03); !reflect.DeepEqual(got, want) {
		t.Errorf("v0.3 MediaTypes = %v, want %v", got, want)
	}
	parts1 := v1.ContentParts{
		v1.NewTextPart("a"),
		{Content: v1.Text("# b"), MediaType: "text/markdown"},
		v1.NewDataPart(map[string]any{}),
		v1.NewFileURLPart("https://x/y.pdf", "application/pdf"),
		{Content: v1.Raw("png"), MediaType: "image/png"},
		v1.NewRawPart([]byte("?")),
		v1.NewFileURLPart("https://x/z", ""),
		nil,
		{},
	}
	want1 := []string{"text/plain", "text/markdown", "application/json", "application/pdf", "image/png", "application/octet-stream"}
	if got := a2aemitv2.MediaTypes(parts1); !reflect.DeepEqual(got, want1) {
		t.Errorf("v1.0 MediaTypes = %v, want %v", got, want1)
	}
	if a2aemit.MediaTypes(nil) != nil || a2aemitv2.MediaTypes(nil) != nil {
		t.Error("MediaTypes(nil) is not nil")
	}
}

// Each line's sentinel errors map back to their wire codes; a code the
// v0.3 SDK does not know has no sentinel there (nil).
func TestSDKErrorCode(t *testing.T) {
	for _, c := range []struct {
		code    int
		v03, v1 error
	}{
		{-32602, v03.ErrInvalidParams, v1.ErrInvalidParams},
		{-32601, fmt.Errorf("wrapped: %w", v03.ErrMethodNotFound), fmt.Errorf("wrapped: %w", v1.ErrMethodNotFound)},
		{-32001, v03.ErrTaskNotFound, v1.NewError(v1.ErrTaskNotFound, "gone")},
		{-32007, v03.ErrAuthenticatedExtendedCardNotConfigured, v1.ErrExtendedCardNotConfigured},
		{-32603, v03.ErrInternalError, v1.ErrInternalError},
		{-32008, nil, v1.ErrExtensionSupportRequired},
		{-32009, nil, v1.ErrVersionNotSupported},
		{-31401, nil, v1.ErrUnauthenticated},
		{-31403, nil, v1.ErrUnauthorized},
		{0, errors.New("dial tcp: refused"), errors.New("dial tcp: refused")},
		{0, context.DeadlineExceeded, context.DeadlineExceeded},
	} {
		for i, err := range []error{c.v03, c.v1} {
			if err == nil {
				continue
			}
			if code, ok := errorCode[i](err); code != c.code || ok != (c.code != 0) {
				t.Errorf("%s: ErrorCode(%v) = %d, %v, want %d", lineNames[i], err, code, ok, c.code)
			}
		}
	}
	for i, code := range errorCode {
		if _, ok := code(nil); ok {
			t.Errorf("%s: ErrorCode(nil) has a code", lineNames[i])
		}
	}
}

var (
	errorCode = [2]func(error) (int, bool){a2aemit.ErrorCode, a2aemitv2.ErrorCode}
	lineNames = [2]string{"v0.3", "v1.0"}
)

// track.Resolve fetches as the workers do — their headers, the legacy path on 404
// and 410, the SSRF guard the caller sets — and decodes into the SDK's
// struct; a status other than 2xx is ErrCardStatus holding the
// *fetcher.FetchError.
func TestResolve(t *testing.T) {
	type agentCard struct {
		Name string `json:"name"`
	}
	card := `{"name":"legacy","x-extra":[1,2]}`
	var headers atomic.Value
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		headers.Store(r.Header.Clone())
		switch r.URL.Path {
		case "/legacy" + fetcher.LegacyWellKnownPath, "/moved" + fetcher.LegacyWellKnownPath:
			w.Write([]byte(card))
		case "/broken" + fetcher.WellKnownPath:
			w.WriteHeader(http.StatusInternalServerError)
		case "/bad" + fetcher.WellKnownPath:
			w.Write([]byte(`{"name": 7}`))
		case "/moved" + fetcher.WellKnownPath:
			w.WriteHeader(http.StatusGone)
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	ctx := context.Background()
	f, err := fetcher.New(servicetest.LoopbackFetch())
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	c, err := track.Resolve[agentCard](ctx, f, srv.URL+"/legacy/", "pkg")
	if err != nil {
		t.Fatalf("Resolve: %v", err)
	}
	if string(c.Raw) != card || c.URL != srv.URL+"/legacy"+fetcher.LegacyWellKnownPath || c.AgentCard.Name != "legacy" {
		t.Errorf("card = %+v", c)
	}
	if h := headers.Load().(http.Header); h.Get("A2A-Version") != fetcher.DefaultA2AVersion || h.Get("User-Agent") != fetcher.DefaultUserAgent {
		t.Errorf("headers = %v, want the workers' fixed headers", h)
	}
	if c, err := track.Resolve[agentCard](ctx, f, srv.URL+"/moved", "pkg"); err != nil || c.URL != srv.URL+"/moved"+fetcher.LegacyWellKnownPath {
		t.Errorf("410 then legacy: Resolve = %+v, %v", c, err)
	}
	_, err = track.Resolve[agentCard](ctx, f, srv.URL+"/broken", "pkg")
	var fe *fetcher.FetchError
	if !errors.Is(err, track.ErrCardStatus) || !errors.As(err, &fe) || fe.Status != http.StatusInternalServerError || !strings.HasPrefix(err.Error(), "pkg: ") {
		t.Errorf("500: Resolve = %v, want ErrCardStatus and a *fetcher.FetchError with the status", err)
	}
	if _, err := track.Resolve[agentCard](ctx, f, srv.URL+"/bad", "pkg"); err == nil {
		t.Error("a card that does not decode: Resolve = nil error")
	}
	if _, err := track.Resolve[agentCard](ctx, nil, srv.URL+"/legacy", "pkg"); !errors.Is(err, fetcher.ReasonRefusedAddress) {
		t.Errorf("default guard: Resolve = %v, want ReasonRefusedAddress", err)
	}
}

// ResolveCard decodes each line's card shape — v0.3's url at the legacy
// path, v1.0's supportedInterfaces — and keeps the bytes as served; both
// wrap ErrCardStatus (the fetch is track.Resolve's, tested above).
func TestSDKResolveCard(t *testing.T) {
	legacy := `{"name":"legacy","url":"http://x/a2a","capabilities":{"streaming":true},"x-extra":[1,2]}`
	current := string(a2aemitv2test.CardJSON("http://x/a2a", true))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/v03" + a2aemit.LegacyWellKnownPath:
			w.Write([]byte(legacy))
		case "/v1" + a2aemitv2.WellKnownPath:
			w.Write([]byte(current))
		case "/broken" + a2aemit.WellKnownPath:
			w.WriteHeader(http.StatusInternalServerError)
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	ctx, f := context.Background(), clienttest.LoopbackFetcher(t)
	old, err := a2aemit.ResolveCard(ctx, f, srv.URL+"/v03/")
	if err != nil {
		t.Fatalf("v0.3 ResolveCard: %v", err)
	}
	if string(old.Raw) != legacy || old.URL != srv.URL+"/v03"+a2aemit.LegacyWellKnownPath || old.AgentCard.Name != "legacy" ||
		old.AgentCard.URL != "http://x/a2a" || !old.AgentCard.Capabilities.Streaming {
		t.Errorf("v0.3 card = %+v", old)
	}
	cur, err := a2aemitv2.ResolveCard(ctx, f, srv.URL+"/v1")
	if err != nil {
		t.Fatalf("v1.0 ResolveCard: %v", err)
	}
	if string(cur.Raw) != current || cur.URL != srv.URL+"/v1"+a2aemitv2.WellKnownPath || cur.AgentCard.Name != "Translator" ||
		!cur.AgentCard.Capabilities.Streaming || len(cur.AgentCard.SupportedInterfaces) != 1 || cur.AgentCard.SupportedInterfaces[0].URL != "http://x/a2a" {
		t.Errorf("v1.0 card = %+v", cur)
	}
	if _, err := a2aemit.ResolveCard(ctx, f, srv.URL+"/broken"); !errors.Is(err, a2aemit.ErrCardStatus) || !strings.HasPrefix(err.Error(), "a2aemit: ") {
		t.Errorf("v0.3 500: ResolveCard = %v, want ErrCardStatus", err)
	}
	if _, err := a2aemitv2.ResolveCard(ctx, f, srv.URL+"/broken"); !errors.Is(err, a2aemitv2.ErrCardStatus) || !strings.HasPrefix(err.Error(), "a2aemitv2: ") {
		t.Errorf("v1.0 500: ResolveCard = %v, want ErrCardStatus", err)
	}
}
