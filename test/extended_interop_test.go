package test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	a2av2 "github.com/a2aproject/a2a-go/v2/a2a"
	a2asrvv2 "github.com/a2aproject/a2a-go/v2/a2asrv"

	"github.com/carddrift/carddrift/detector"
	"github.com/carddrift/carddrift/detector/signature/signaturetest"
	"github.com/carddrift/carddrift/events"
	"github.com/carddrift/carddrift/events/service/servicetest"
	"github.com/carddrift/carddrift/events/worker"
	"github.com/carddrift/carddrift/store/fetcher"
)

// Interop of authenticated extended cards (issue 22, item 1) with the
// official Go SDK's v1.0 line: an a2a-go/v2 v2.3.1 server serves its public
// card with NewStaticAgentCardHandler and its extended card with
// WithExtendedAgentCard, over JSON-RPC (GetExtendedAgentCard) and HTTP+JSON
// (GET /extendedAgentCard), behind an auth middleware — the SDK's own
// handler checks no credential: it serves the extended card to anyone who
// reaches it, so the middleware is what refuses (401) a request without the
// bearer token.

const interopToken = "Bearer interop-7d1e-extended"

// v2Executor answers nothing: only cards are asked for here.
type v2Executor struct{}

func (v2Executor) Execute(context.Context, *a2asrvv2.ExecutorContext) iter.Seq2[a2av2.Event, error] {
	return func(func(a2av2.Event, error) bool) {}
}

func (v2Executor) Cancel(context.Context, *a2asrvv2.ExecutorContext) iter.Seq2[a2av2.Event, error] {
	return func(func(a2av2.Event, error) bool) {}
}

// v2ExtendedAgent runs an a2a-go/v2 agent whose preferred interface has the
// given binding; the extended card adds the skill audit-ledger.
func v2ExtendedAgent(t *testing.T, binding a2av2.TransportProtocol) *httptest.Server {
	t.Helper()
	mux := http.NewServeMux()
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	skill := func(id string) a2av2.AgentSkill {
		return a2av2.AgentSkill{ID: id, Name: id, Description: "d", Tags: []string{"ledger"}}
	}
	card := func(skills ...a2av2.AgentSkill) *a2av2.AgentCard {
		jsonrpc := a2av2.NewAgentInterface(srv.URL+"/a2a/jsonrpc", a2av2.TransportProtocolJSONRPC)
		rest := a2av2.NewAgentInterface(srv.URL+"/a2a/rest", a2av2.TransportProtocolHTTPJSON)
		ifaces := []*a2av2.AgentInterface{jsonrpc, rest}
		if binding == a2av2.TransportProtocolHTTPJSON {
			ifaces = []*a2av2.AgentInterface{rest, jsonrpc}
		}
		return &a2av2.AgentCard{
			Name: "Ledger (a2a-go/v2)", Description: "ledger agent", Version: "1.0.0",
			SupportedInterfaces: ifaces,
			Capabilities:        a2av2.AgentCapabilities{Streaming: true, ExtendedAgentCard: true},
			DefaultInputModes:   []string{"text/plain"}, DefaultOutputModes: []string{"text/plain"},
			Skills: skills,
		}
	}
	handler := a2asrvv2.NewHandler(v2Executor{}, a2asrvv2.WithExtendedAgentCard(card(skill("summarize"), skill("audit-ledger"))))
	auth := func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Header.Get("Authorization") != interopToken {
				w.Header().Set("WWW-Authenticate", "Bearer")
				http.Error(w, "unauthorized", http.StatusUnauthorized)
				return
			}
			h.ServeHTTP(w, r)
		})
	}
	mux.Handle("/.well-known/agent-card.json", a2asrvv2.NewStaticAgentCardHandler(card(skill("summarize"))))
	mux.Handle("/a2a/jsonrpc", auth(a2asrvv2.NewJSONRPCHandler(handler)))
	mux.Handle("/a2a/rest/", auth(http.StripPrefix("/a2a/rest", a2asrvv2.NewRESTHandler(handler))))
	return srv
}

// TestExtendedCardA2AGoV2: carddrift fetches the SDK's extended card with the
// credential over each binding, and is refused (401, card.unreachable
// "unauthorized") with a wrong one; through a worker the task that uses the
// extended card is pinned on it.
func TestExtendedCardA2AGoV2(t *testing.T) {
	for _, binding := range []a2av2.TransportProtocol{a2av2.TransportProtocolJSONRPC, a2av2.TransportProtocolHTTPJSON} {
		t.Run(string(binding), func(t *testing.T) {
			srv := v2ExtendedAgent(t, binding)
			for _, tc := range []struct {
				token  string
				reason fetcher.Reason
			}{{interopToken, ""}, {"Bearer wrong", fetcher.ReasonUnauthorized}} {
				creds, err := fetcher.ParseCredentials(fmt.Appendf(nil, `{%q: {"headers": {"Authorization": %q}}}`, srv.URL, tc.token), nil)
				if err != nil {
					t.Fatal(err)
				}
				o := servicetest.LoopbackFetch()
				o.Credentials = creds
				f, err := fetcher.New(o)
				if err != nil {
					t.Fatal(err)
				}
				defer f.Close()
				ctx := context.Background()
				pub, err := f.ObserveAgent(ctx, srv.URL, "", false)
				if err != nil {
					t.Fatalf("public card: %v", err)
				}
				ext, err := f.ObserveExtended(ctx, pub, false)
				if tc.reason != "" {
					var fe *fetcher.FetchError
					if !errors.As(err, &fe) || fe.Reason != tc.reason || fe.Status != http.StatusUnauthorized {
						t.Errorf("with a wrong token: %v, want %s (401)", err, tc.reason)
					}
					continue
				}
				if err != nil {
					t.Fatalf("ObserveExtended: %v", err)
				}
				if _, ok := ext.Card.Skill("audit-ledger"); !ok || ext.Digest == pub.Digest {
					t.Errorf("extended card %s (skills %v), public %s: want the SDK's extended card", ext.Digest, ext.Card.Skills, pub.Digest)
				}
				if _, ok := pub.Card.Skill("audit-ledger"); ok {
					t.Error("the public card has the extended card's skill")
				}
				wantPath := map[a2av2.TransportProtocol]string{a2av2.TransportProtocolJSONRPC: "/a2a/jsonrpc#extended", a2av2.TransportProtocolHTTPJSON: "/a2a/rest/extendedAgentCard#extended"}[binding]
				if !strings.Contains(ext.CardURL, wantPath) {
					t.Errorf("extended card observed at %s, want %s", ext.CardURL, wantPath)
				}
			}
		})
	}

	srv := v2ExtendedAgent(t, a2av2.TransportProtocolJSONRPC)
	creds, err := fetcher.ParseCredentials(fmt.Appendf(nil, `{%q: {"headers": {"Authorization": %q}}}`, srv.URL, interopToken), nil)
	if err != nil {
		t.Fatal(err)
	}
	r := servicetest.Start(t, servicetest.Options{Workers: []string{"w1"}, Worker: func(o *worker.Options) { o.Fetch.Credentials = creds }})
	ctx := context.Background()
	if err := r.Emit.Submitted(ctx, events.Submitted{TaskID: "v2-ext", AgentURL: srv.URL, SkillID: "audit-ledger",
		Requires: events.Requires{ExtendedCard: true}}); err != nil {
		t.Fatal(err)
	}
	r.Eventually("card.pinned", func() bool { return len(r.Out().Events(events.TypePinned, "v2-ext")) == 1 })
	p := r.Out().Events(events.TypePinned, "v2-ext")[0].Data.(events.Pinned)
	pin, _, err := r.Stores.Pins.Get(ctx, "v2-ext")
	if err != nil {
		t.Fatal(err)
	}
	body, err := r.Stores.Cards.Get(ctx, p.Digest)
	if err != nil {
		t.Fatalf("the extended card's body is not stored under its digest: %v", err)
	}
	card, err := detector.Parse(body)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := card.Skill("audit-ledger"); p.Extended != events.ExtendedPinned || pin.Extended != events.ExtendedPinned || !ok {
		t.Errorf("card.pinned %+v, pin extended %q: want the extended card pinned", p, pin.Extended)
	}
}

// TestExtendedCardJSSDK: the JavaScript SDK's extended card
// (test/interop/sdkextended.mjs, @a2a-js/sdk 1.3.0) is fetched with the
// credential — by GetExtendedAgentCard over its v1.0 JSON-RPC interface, the
// first its card names, and over HTTP+JSON and the v0.3 method when those
// are the first — and refused (401) without it.
func TestExtendedCardJSSDK(t *testing.T) {
	node := signaturetest.SDKNode(t, interopDir)
	cmd := exec.Command(node, filepath.Join(interopDir, "sdkextended.mjs"))
	cmd.Env = append(os.Environ(), "TOKEN="+interopToken, "PORT=0")
	c, line := startChild(t, "sdkextended.mjs", cmd, func(string) bool { return true })
	t.Cleanup(func() { c.stop(syscall.SIGTERM, 5*time.Second) })
	var hello struct {
		Port int    `json:"port"`
		Card string `json:"card"`
	}
	if err := json.Unmarshal([]byte(line), &hello); err != nil || hello.Port == 0 {
		t.Fatalf("sdkextended.mjs: first line %q: %v", line, err)
	}
	base := "http://" + net.JoinHostPort("127.0.0.1", strconv.Itoa(hello.Port))
	ctx := context.Background()
	observe := func(token string) (fetcher.Observation, fetcher.Observation, *fetcher.Fetcher, error) {
		t.Helper()
		creds, err := fetcher.ParseCredentials(fmt.Appendf(nil, `{%q: {"headers": {"Authorization": %q}}}`, base, token), nil)
		if err != nil {
			t.Fatal(err)
		}
		o := servicetest.LoopbackFetch()
		o.Credentials = creds
		f, err := fetcher.New(o)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = f.Close() })
		pub, err := f.ObserveAgent(ctx, base, "", false)
		if err != nil {
			t.Fatalf("public card: %v", err)
		}
		ext, err := f.ObserveExtended(ctx, pub, false)
		return pub, ext, f, err
	}
	pub, ext, _, err := observe(interopToken)
	if err != nil {
		t.Fatalf("ObserveExtended: %v", err)
	}
	if _, ok := ext.Card.Skill("audit-ledger"); !ok || ext.Digest == pub.Digest || !strings.Contains(ext.CardURL, "method="+fetcher.MethodExtendedV10) {
		t.Errorf("extended card at %s: %s with skills %v (public %s): want the SDK's extended card by %s", ext.CardURL, ext.Digest, ext.Card.Skills, pub.Digest, fetcher.MethodExtendedV10)
	}
	// The other interfaces the SDK's card names: HTTP+JSON, and the v0.3
	// JSON-RPC method (the SDK answers by A2A-Version).
	for _, pick := range []struct{ binding, version, want string }{
		{"HTTP+JSON", "1.0", "/a2a/rest/extendedAgentCard#"},
		{"JSONRPC", "0.3", "method=" + url.QueryEscape(fetcher.MethodExtendedV03)},
	} {
		p := pub
		card := *pub.Card
		card.Interfaces = nil
		for _, in := range pub.Card.Interfaces {
			if in.ProtocolBinding == pick.binding && strings.HasPrefix(in.ProtocolVersion, pick.version) {
				card.Interfaces = append(card.Interfaces, in)
			}
		}
		p.Card = &card
		_, _, f, _ := observe(interopToken)
		got, err := f.ObserveExtended(ctx, p, false)
		if err != nil {
			t.Errorf("%s %s: %v", pick.binding, pick.version, err)
			continue
		}
		if _, ok := got.Card.Skill("audit-ledger"); !ok || !strings.Contains(got.CardURL, pick.want) {
			t.Errorf("%s %s: extended card at %s with skills %v", pick.binding, pick.version, got.CardURL, got.Card.Skills)
		}
	}
	_, _, _, err = observe("Bearer wrong")
	var fe *fetcher.FetchError
	if !errors.As(err, &fe) || fe.Reason != fetcher.ReasonUnauthorized || fe.Status != http.StatusUnauthorized {
		t.Errorf("with a wrong token: %v, want unauthorized (401)", err)
	}
}
