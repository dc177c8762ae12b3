package a2aemitv2test

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"net/http"
	"net/http/httptest"
	"sync"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2asrv"
)

// CardJSON is the agent's A2A v1.0 card (supportedInterfaces, no top-level
// url): one skill, translate, on the JSON-RPC interface at url, text in and
// out, with a vendor field the SDK's struct drops.
func CardJSON(url string, streaming bool) []byte {
	return CardJSONModes(url, streaming, `"text/plain"`)
}

// CardJSONModes is CardJSON with the given default input modes (a JSON
// list's elements, for example `"application/json"`).
func CardJSONModes(url string, streaming bool, inputModes string) []byte {
	return fmt.Appendf(nil, `{
  "name": "Translator", "description": "translates text", "version": "1.0.0",
  "supportedInterfaces": [{"url": %q, "protocolBinding": "JSONRPC", "protocolVersion": "1.0"}],
  "capabilities": {"streaming": %v},
  "defaultInputModes": [%s], "defaultOutputModes": ["text/plain"],
  "skills": [{"id": "translate", "name": "Translate", "description": "translates", "tags": ["text"]}],
  "x-vendor": {"region": "eu"}
}`, url, streaming, inputModes)
}

// Agent is an a2a-go/v2 translator agent: a new task works and asks for
// input; the answer completes it with a text artifact. The card is served
// with Cache-Control: no-cache. Safe for concurrent use.
type Agent struct {
	srv *httptest.Server

	mu      sync.Mutex
	card    []byte
	midTask func()
	reject  error
}

// NewAgent starts an Agent serving CardJSON(its URL + "/a2a", streaming);
// Close stops it.
func NewAgent(streaming bool) *Agent {
	a := &Agent{}
	mux := http.NewServeMux()
	a.srv = httptest.NewServer(mux)
	a.card = CardJSON(a.srv.URL+"/a2a", streaming)
	handler := a2asrv.NewHandler(executor{a}, a2asrv.WithCallInterceptors(rejecter{a: a}))
	mux.Handle("/a2a", a2asrv.NewJSONRPCHandler(handler))
	cards := a2asrv.NewAgentCardHandler(producer{a})
	mux.HandleFunc(a2asrv.WellKnownAgentCardPath, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "no-cache")
		cards.ServeHTTP(w, r)
	})
	return a
}

// URL is the agent's base URL (JSON-RPC at URL + "/a2a").
func (a *Agent) URL() string { return a.srv.URL }

// Close stops the agent's server.
func (a *Agent) Close() { a.srv.Close() }

// SetCard replaces the card served from now on.
func (a *Agent) SetCard(card []byte) { a.locked(func() { a.card = card }) }

// Served returns the card bytes served now.
func (a *Agent) Served() []byte {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.card
}

// SetMidTask sets what runs while a new task works (nil: nothing).
func (a *Agent) SetMidTask(f func()) { a.locked(func() { a.midTask = f }) }

// SetReject makes every follow-up message fail with err (nil: accept).
func (a *Agent) SetReject(err error) { a.locked(func() { a.reject = err }) }

func (a *Agent) locked(f func()) {
	a.mu.Lock()
	defer a.mu.Unlock()
	f()
}

type producer struct{ a *Agent }

var errJSONOnly = errors.New("a2aemitv2test: the agent serves its card as JSON")

func (producer) Card(context.Context) (*a2a.AgentCard, error) { return nil, errJSONOnly }

// CardJSON implements a2asrv.AgentCardJSONProducer: the bytes as set.
func (p producer) CardJSON(context.Context) ([]byte, error) { return p.a.Served(), nil }

type executor struct{ a *Agent }

func (e executor) Execute(ctx context.Context, ec *a2asrv.ExecutorContext) iter.Seq2[a2a.Event, error] {
	return func(yield func(a2a.Event, error) bool) {
		if ec.StoredTask == nil {
			if !yield(a2a.NewSubmittedTask(ec, ec.Message), nil) || !yield(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateWorking, nil), nil) {
				return
			}
			var mid func()
			e.a.locked(func() { mid = e.a.midTask })
			if mid != nil {
				mid()
			}
			yield(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateInputRequired,
				a2a.NewMessageForTask(a2a.MessageRoleAgent, ec, a2a.NewTextPart("into which language?"))), nil)
			return
		}
		if !yield(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateWorking, nil), nil) ||
			!yield(a2a.NewArtifactEvent(ec, a2a.NewTextPart("bonjour")), nil) {
			return
		}
		yield(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateCompleted, nil), nil)
	}
}

func (executor) Cancel(ctx context.Context, ec *a2asrv.ExecutorContext) iter.Seq2[a2a.Event, error] {
	return func(yield func(a2a.Event, error) bool) {
		yield(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateCanceled, nil), nil)
	}
}

// rejecter is a server-side interceptor failing follow-up messages with the
// agent's reject error.
type rejecter struct {
	a2asrv.PassthroughCallInterceptor
	a *Agent
}

func (r rejecter) Before(ctx context.Context, cc *a2asrv.CallContext, req *a2asrv.Request) (context.Context, any, error) {
	var err error
	r.a.locked(func() { err = r.a.reject })
	if p, ok := req.Payload.(*a2a.SendMessageRequest); ok && err != nil && p.Message != nil && p.Message.TaskID != "" {
		return ctx, nil, err
	}
	return ctx, nil, nil
}
