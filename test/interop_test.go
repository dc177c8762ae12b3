package test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/a2a"
	"github.com/a2aproject/a2a-go/a2asrv"
	"github.com/a2aproject/a2a-go/a2asrv/eventqueue"
	a2av2 "github.com/a2aproject/a2a-go/v2/a2a"
	a2asrvv2 "github.com/a2aproject/a2a-go/v2/a2asrv"

	"github.com/carddrift/carddrift/detector"
	"github.com/carddrift/carddrift/detector/signature/signaturetest"
	"github.com/carddrift/carddrift/events"
	"github.com/carddrift/carddrift/events/service/servicetest"
	"github.com/carddrift/carddrift/events/worker"
	"github.com/carddrift/carddrift/store/fetcher"
)

// Interop with the official A2A SDKs (issue 9, item 8). Agents built on
// @a2a-js/sdk 1.3.0 (test/interop/sdkagent.mjs, run with node) and on a2a-go
// v0.3.3 serve their cards through the SDKs' own card handlers; carddrift must
// pin what they serve to a v1.0 client (A2A-Version: 1.0, what carddrift's
// fetcher sends) and to a client that sends no A2A-Version, and the JS SDK's
// two forms (it answers by A2A-Version) must be one card (schemas/README.md, "One
// card, several forms").
//
// test/interop/testdata/served holds the bodies the SDKs served, verbatim
// from an agent on servedBase; the tests check that the SDKs still serve
// exactly those (CARDDRIFT_INTEROP_UPDATE=1 rewrites them from a run).
//
// The JS tests need node and `npm ci --prefix test/interop`: without them
// they skip, or fail when CI is set (.ci/run sets it).

const (
	interopDir = "interop"
	servedDir  = "interop/testdata/served"
	// servedBase is the agents' base URL in the saved bodies; a run's own base
	// URL is replaced by it before comparing.
	servedBase = "http://127.0.0.1:41241"
)

func interopUpdate() bool { return os.Getenv("CARDDRIFT_INTEROP_UPDATE") != "" }

// sdkAgent is a running test/interop/sdkagent.mjs.
type sdkAgent struct {
	base    string // http://127.0.0.1:port
	cardURL string
}

// startSDKAgent starts the JS SDK agent on a random loopback port; its card
// handler sends Cache-Control max-age=maxAge (no-cache for 0).
func startSDKAgent(t *testing.T, node string, maxAge int) *sdkAgent {
	t.Helper()
	cmd := exec.Command(node, filepath.Join(interopDir, "sdkagent.mjs"), "--port", "0", "--max-age", strconv.Itoa(maxAge))
	c, line := startChild(t, "sdkagent.mjs", cmd, func(string) bool { return true })
	t.Cleanup(func() { c.stop(syscall.SIGTERM, 5*time.Second) })
	var hello struct {
		Port int    `json:"port"`
		Card string `json:"card"`
	}
	if err := json.Unmarshal([]byte(line), &hello); err != nil || hello.Port == 0 || hello.Card == "" {
		t.Fatalf("sdkagent.mjs: first line %q is not {\"port\":…,\"card\":…}: %v", line, err)
	}
	return &sdkAgent{base: "http://" + net.JoinHostPort("127.0.0.1", strconv.Itoa(hello.Port)), cardURL: hello.Card}
}

// control changes the card the agent serves (see sdkagent.mjs).
func (a *sdkAgent) control(t *testing.T, change string) {
	t.Helper()
	resp, err := http.Post(a.base+"/control", "application/json", strings.NewReader(change))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(resp.Body)
		t.Fatalf("POST /control %s: %s %s", change, resp.Status, body)
	}
}

// getCard fetches a card as a client sending A2A-Version: version would (no
// header when version is "").
func getCard(t *testing.T, cardURL, version string) ([]byte, http.Header) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, cardURL, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Accept", "application/json")
	if version != "" {
		req.Header.Set("A2A-Version", version)
	}
	c := http.Client{Timeout: 5 * time.Second}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s (A2A-Version %q): %s %s", cardURL, version, resp.Status, body)
	}
	return body, resp.Header
}

// checkServed compares a served body (its base URL replaced by servedBase)
// with testdata/served/name, or rewrites the file under CARDDRIFT_INTEROP_UPDATE.
func checkServed(t *testing.T, name, base string, body []byte) {
	t.Helper()
	got := bytes.ReplaceAll(body, []byte(base), []byte(servedBase))
	path := filepath.Join(servedDir, name)
	if interopUpdate() {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("the SDK no longer serves %s (rerun with CARDDRIFT_INTEROP_UPDATE=1 and review the change):\n got %s\nwant %s", path, got, want)
	}
}

// form is one form of a card as carddrift pins it.
type form struct {
	name   string
	raw    []byte
	card   *detector.Card
	digest string
}

// pinV1 pins the card through carddrift's fetcher, as every worker does: with
// A2A-Version: 1.0.
func pinV1(t *testing.T, cardURL string) (form, bool) {
	t.Helper()
	f, err := fetcher.New(servicetest.LoopbackFetch())
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	obs, err := f.Fetch(ctx, fetcher.Request{URL: cardURL})
	if err != nil {
		t.Errorf("the form served to a v1.0 client (carddrift's fetcher) is refused: %v", err)
		return form{name: "v1.0 client"}, false
	}
	return form{name: "v1.0 client", raw: obs.Raw, card: obs.Card, digest: obs.Digest}, true
}

// pinNoVersion pins the card a client sending no A2A-Version gets (the
// fetcher always sends one, so this is a plain GET parsed as the fetcher
// parses).
func pinNoVersion(t *testing.T, cardURL string) (form, bool) {
	t.Helper()
	raw, _ := getCard(t, cardURL, "")
	return parseForm(t, "client without A2A-Version", raw)
}

func parseForm(t *testing.T, name string, raw []byte) (form, bool) {
	t.Helper()
	card, err := detector.Parse(raw)
	if err != nil {
		t.Errorf("the form served to a %s is refused: %v", name, err)
		return form{name: name, raw: raw}, false
	}
	digest, err := detector.Digest(raw)
	if err != nil {
		t.Errorf("the form served to a %s has no digest: %v", name, err)
		return form{name: name, raw: raw}, false
	}
	return form{name: name, raw: raw, card: card, digest: digest}, true
}

// checkOneCard asserts that two forms of a card are one card: no finding
// either way, and the same skill fingerprint.
func checkOneCard(t *testing.T, a, b form) {
	t.Helper()
	for _, p := range [][2]form{{a, b}, {b, a}} {
		if fs := detector.Diff(p[0].card, p[1].card); len(fs) > 0 {
			t.Errorf("pinned on the form served to a %s, revalidated against the form served to a %s: %d findings, want none (one card, several forms):\n%s",
				p[0].name, p[1].name, len(fs), describeFindings(fs))
		}
	}
	if fa, fb := detector.Fingerprint(a.card), detector.Fingerprint(b.card); fa != fb {
		t.Errorf("skill fingerprints differ between the forms: %s (%s) vs %s (%s)", fa, a.name, fb, b.name)
	}
}

func describeFindings(fs []detector.Finding) string {
	var b strings.Builder
	for _, f := range fs {
		fmt.Fprintf(&b, "  %s %s %s: %v → %v (%s)\n", f.Severity, f.Rule, f.Path, f.Before, f.After, f.Message)
	}
	return b.String()
}

// The saved bodies themselves, without node: every one is a card carddrift
// pins, and the JS SDK's two forms are one card.
func TestInteropServedForms(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(servedDir, "*.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no saved bodies in %s: %v", servedDir, err)
	}
	forms := map[string]form{}
	for _, path := range files {
		raw, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		name := filepath.Base(path)
		if f, ok := parseForm(t, "saved "+name, raw); ok {
			forms[name] = f
			t.Logf("%s: digest %s, protocol versions %v", name, f.digest, f.card.ProtocolVersions())
		}
	}
	for _, pair := range [][2]string{{"jssdk-v1.0.json", "jssdk-v0.3.json"}, {"a2ago-v1.0.json", "a2ago-v0.3.json"}} {
		a, okA := forms[pair[0]]
		b, okB := forms[pair[1]]
		if okA && okB {
			checkOneCard(t, a, b)
		}
	}
}

// The JS SDK's agent: what its card handler serves per A2A-Version, both forms
// pinned and one card, `carddrift pin`, and end to end through `carddrift
// serve`.
func TestInteropJSSDK(t *testing.T) {
	node := signaturetest.SDKNode(t, interopDir)
	var bin string
	if !testing.Short() {
		bin = buildCarddrift(t)
	}
	a := startSDKAgent(t, node, 3600) // the SDK's default max-age

	t.Run("served-forms", func(t *testing.T) {
		etags := map[string]string{}
		for _, c := range []struct{ version, file string }{
			{"1.0", "jssdk-v1.0.json"}, {"1.0.0", "jssdk-v1.0.json"},
			{"", "jssdk-v0.3.json"}, {"0.3", "jssdk-v0.3.json"},
		} {
			body, h := getCard(t, a.cardURL, c.version)
			checkServed(t, c.file, a.base, body)
			if !slices.Contains(h.Values("Vary"), "A2A-Version") {
				t.Errorf("A2A-Version %q: Vary %q, want A2A-Version", c.version, h.Values("Vary"))
			}
			if cc := h.Get("Cache-Control"); cc != "public, max-age=3600" {
				t.Errorf("A2A-Version %q: Cache-Control %q", c.version, cc)
			}
			if prev, ok := etags[c.file]; ok && prev != h.Get("ETag") {
				t.Errorf("%s served with ETags %s and %s", c.file, prev, h.Get("ETag"))
			}
			etags[c.file] = h.Get("ETag")
		}
		if etags["jssdk-v1.0.json"] == etags["jssdk-v0.3.json"] {
			t.Errorf("both forms served with ETag %s", etags["jssdk-v1.0.json"])
		}
	})

	t.Run("pin", func(t *testing.T) {
		v1, ok1 := pinV1(t, a.cardURL)
		v03, ok03 := pinNoVersion(t, a.cardURL)
		if !ok1 || !ok03 {
			return
		}
		if v1.digest == v03.digest {
			t.Errorf("both forms have digest %s: the SDK served one form to both clients", v1.digest)
		}
		checkOneCard(t, v1, v03)
		if bin == "" {
			return
		}
		out, err := exec.Command(bin, "pin", "--json", a.cardURL).CombinedOutput()
		if err != nil {
			t.Errorf("carddrift pin --json %s: %v\n%s", a.cardURL, err, out)
			return
		}
		var pin struct {
			Digest           string   `json:"digest"`
			ProtocolVersions []string `json:"protocolVersions"`
		}
		if err := json.Unmarshal(out, &pin); err != nil {
			t.Fatalf("carddrift pin --json: %v\n%s", err, out)
		}
		if pin.Digest != v1.digest {
			t.Errorf("carddrift pin: digest %s, the fetcher's %s (both send A2A-Version: 1.0)", pin.Digest, v1.digest)
		}
		if !slices.Contains(pin.ProtocolVersions, "1.0") {
			t.Errorf("carddrift pin: protocol versions %v, want 1.0 among them", pin.ProtocolVersions)
		}
	})

	t.Run("serve", func(t *testing.T) {
		if bin == "" {
			t.Skip("builds and runs the carddrift binary")
		}
		testInteropServe(t, bin, node)
	})
}

// testInteropServe: two tasks on the JS SDK's agent, one planned on the card
// a v1.0 client got, one on the card a client without A2A-Version got;
// carddrift (a real `carddrift serve`) revalidates both against what it
// fetches (the v1.0 form). A streaming request sees no drift while the card is
// unchanged; once the agent turns streaming off, the next streaming request
// of each task gets card.drift streaming-disabled with action abort.
func testInteropServe(t *testing.T, bin, node string) {
	r := newRig(t, testConfig())
	out := r.collect()
	startServe(t, bin, r.nc.ConnectedUrl(), "serve-interop")
	a := startSDKAgent(t, node, 0) // no-cache: every transition revalidates
	v1, _ := getCard(t, a.cardURL, "1.0")
	v03, _ := getCard(t, a.cardURL, "")
	planned := map[string][]byte{"jssdk-planned-on-v1": v1, "jssdk-planned-on-v03": v03}
	tasks := []string{"jssdk-planned-on-v1", "jssdk-planned-on-v03"}
	ctx := context.Background()
	for _, task := range tasks {
		must(t, r.emit.Submitted(ctx, events.Submitted{TaskID: task, AgentURL: a.base, CardURL: a.cardURL,
			SkillID: "summarize-invoice", Requires: events.Requires{Streaming: true, Security: []string{"bearer"}},
			Posture: detector.FailClosed, Card: planned[task]}))
	}
	out.waitFor(t, "both tasks pinned", func(o *outbound) bool {
		p := countBy(o, events.TypePinned)
		return p[tasks[0]] == 1 && p[tasks[1]] == 1
	})
	stream := func() {
		for _, task := range tasks {
			must(t, r.emit.Request(ctx, events.Request{TaskID: task, AgentURL: a.base, Method: "message/stream", Attempt: 1}))
		}
	}
	unreachable := func() []string {
		var us []string
		for _, ev := range out.all(events.TypeUnreachable) {
			u := ev.Data.(events.Unreachable)
			us = append(us, fmt.Sprintf("%s (task %q): %s: %s", u.CardURL, u.TaskID, u.Reason, u.Detail))
		}
		return us
	}

	// The card as planned: no drift for either form.
	stream()
	r.drained(t, 20*time.Second)
	out.CaughtUp(t)
	for _, task := range tasks {
		for _, d := range out.drifts(task) {
			t.Errorf("%s: card.drift before the card changed (action %s, %d findings), want none: one card, several forms:\n%s",
				task, d.Verdict.Action, len(d.Findings), describeFindings(d.Findings))
		}
	}
	if us := unreachable(); len(us) > 0 {
		t.Fatalf("card.unreachable for the SDK agent's card:\n  %s", strings.Join(us, "\n  "))
	}

	// Streaming off.
	before := map[string]int{}
	for _, task := range tasks {
		before[task] = len(out.drifts(task))
	}
	a.control(t, `{"streaming": false}`)
	stream()
	out.waitFor(t, "card.drift for both tasks after streaming was turned off", func(o *outbound) bool {
		return len(o.drifts(tasks[0])) > before[tasks[0]] && len(o.drifts(tasks[1])) > before[tasks[1]]
	})
	// Content findings only: a form difference adds none.
	allowed := map[string]bool{detector.RuleStreamingDisabled: true, detector.RuleContentChangedWithoutVersion: true}
	for _, task := range tasks {
		ds := out.drifts(task)
		d := ds[len(ds)-1]
		rules := rulesOf(d)
		if d.Verdict.Action != detector.Abort || !rules[detector.RuleStreamingDisabled] {
			t.Errorf("%s: card.drift %s with %v, want abort on %s", task, d.Verdict.Action, keys(rules), detector.RuleStreamingDisabled)
		}
		for rule := range rules {
			if !allowed[rule] {
				t.Errorf("%s: card.drift has %s, which the content change does not explain:\n%s", task, rule, describeFindings(d.Findings))
			}
		}
		t.Logf("%s: card.drift %s %v (%s)", task, d.Verdict.Action, keys(rules), d.Verdict.Reason)
	}
	if us := unreachable(); len(us) > 0 {
		t.Errorf("card.unreachable for the SDK agent's card:\n  %s", strings.Join(us, "\n  "))
	}
}

// a2aGoCard is a card as an a2a-go v0.3.3 agent declares it, on base.
func a2aGoCard(base string, streaming bool) *a2a.AgentCard {
	return &a2a.AgentCard{
		Name:               "Ledger Clerk",
		Description:        "Summarises and extracts line items from invoices and statements.",
		Version:            "1.4.0",
		ProtocolVersion:    "0.3.0",
		URL:                base + "/a2a",
		PreferredTransport: a2a.TransportProtocolJSONRPC,
		AdditionalInterfaces: []a2a.AgentInterface{
			{Transport: a2a.TransportProtocolJSONRPC, URL: base + "/a2a"},
		},
		Provider:           &a2a.AgentProvider{Org: "Carddrift Interop", URL: "https://example.com/carddrift-interop"},
		DocumentationURL:   "https://example.com/carddrift-interop/docs",
		Capabilities:       a2a.AgentCapabilities{Streaming: streaming},
		DefaultInputModes:  []string{"text/plain", "application/pdf"},
		DefaultOutputModes: []string{"text/plain", "application/json"},
		SecuritySchemes: a2a.NamedSecuritySchemes{
			"bearer": a2a.HTTPAuthSecurityScheme{Scheme: "Bearer", BearerFormat: "JWT", Description: "JWT from the tenant IdP"},
			"oauth": a2a.OAuth2SecurityScheme{Description: "Machine clients", Flows: a2a.OAuthFlows{
				ClientCredentials: &a2a.ClientCredentialsOAuthFlow{TokenURL: "https://auth.example.com/oauth/token",
					Scopes: map[string]string{"invoices:read": "Read invoices", "invoices:write": "Annotate invoices"}},
			}},
		},
		Security: []a2a.SecurityRequirements{{"bearer": {}}, {"oauth": {"invoices:read"}}},
		Skills: []a2a.AgentSkill{
			{ID: "summarize-invoice", Name: "Summarise invoice", Description: "A short summary of an invoice: supplier, totals, due date.",
				Tags: []string{"invoice", "summary"}, Examples: []string{"Summarise the attached invoice"},
				InputModes: []string{"application/pdf", "text/plain"}, OutputModes: []string{"text/plain", "text/markdown"}},
			{ID: "extract-line-items", Name: "Extract line items", Description: "Line items of an invoice or statement as JSON rows.",
				Tags: []string{"invoice", "extraction"}, InputModes: []string{"application/pdf", "image/png"}, OutputModes: []string{"application/json"},
				Security: []a2a.SecurityRequirements{{"oauth": {"invoices:read", "invoices:write"}}}},
		},
	}
}

// a2aGoHelloWorld is the card of a2a-go's own examples/helloworld server,
// which sets no protocolVersion (served as "").
func a2aGoHelloWorld(base string) *a2a.AgentCard {
	return &a2a.AgentCard{
		Name:               "Hello World Agent",
		Description:        "Just a hello world agent",
		URL:                base + "/invoke",
		PreferredTransport: a2a.TransportProtocolJSONRPC,
		DefaultInputModes:  []string{"text"},
		DefaultOutputModes: []string{"text"},
		Capabilities:       a2a.AgentCapabilities{Streaming: true},
		Skills: []a2a.AgentSkill{{ID: "hello_world", Name: "Hello, world!", Description: "Returns a 'Hello, world!'",
			Tags: []string{"hello world"}, Examples: []string{"hi", "hello"}}},
	}
}

type helloExecutor struct{}

func (helloExecutor) Execute(ctx context.Context, reqCtx *a2asrv.RequestContext, q eventqueue.Queue) error {
	return q.Write(ctx, a2a.NewMessage(a2a.MessageRoleAgent, a2a.TextPart{Text: "noted"}))
}

func (helloExecutor) Cancel(context.Context, *a2asrv.RequestContext, eventqueue.Queue) error {
	return nil
}

// a2aGoAgent is an a2a-go agent: JSON-RPC and a2asrv's own card handler,
// serving whatever card is stored.
type a2aGoAgent struct {
	base, cardURL string
	card          atomic.Pointer[a2a.AgentCard]
}

func startA2AGoAgent(t *testing.T) *a2aGoAgent {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	a := &a2aGoAgent{base: "http://" + ln.Addr().String()}
	a.cardURL = a.base + a2asrv.WellKnownAgentCardPath
	mux := http.NewServeMux()
	mux.Handle("/a2a", a2asrv.NewJSONRPCHandler(a2asrv.NewHandler(helloExecutor{})))
	mux.Handle(a2asrv.WellKnownAgentCardPath, a2asrv.NewAgentCardHandler(a2asrv.AgentCardProducerFn(
		func(context.Context) (*a2a.AgentCard, error) { return a.card.Load(), nil })))
	srv := &http.Server{Handler: mux}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return a
}

// a2aGoHeaders writes the response headers a2a-go sent (Date left out).
func a2aGoHeaders(version string, h http.Header) string {
	var b strings.Builder
	req := "A2A-Version: " + version
	if version == "" {
		req = "(no A2A-Version)"
	}
	fmt.Fprintf(&b, "\n== request header: %s\n", req)
	var names []string
	for k := range h {
		if k != "Date" {
			names = append(names, k)
		}
	}
	sort.Strings(names)
	for _, k := range names {
		fmt.Fprintf(&b, "%s: %s\n", k, strings.Join(h.Values(k), ", "))
	}
	return b.String()
}

// The a2a-go v0.3.3 agent: a2asrv serves its v0.3 card whatever A2A-Version
// says; carddrift pins it for both clients, and sees streaming turned off
// though a2a-go then drops the field (omitempty).
func TestInteropA2AGo(t *testing.T) {
	a := startA2AGoAgent(t)
	a.card.Store(a2aGoCard(a.base, true))

	headers := "# Headers a2a-go v0.3.3's a2asrv.NewAgentCardHandler sent (Date left out); it serves\n" +
		"# the same v0.3 body whatever A2A-Version says, with no caching headers and no ETag.\n"
	var bodies [][]byte
	for _, c := range []struct{ version, file string }{{"1.0", "a2ago-v1.0.json"}, {"", "a2ago-v0.3.json"}} {
		body, h := getCard(t, a.cardURL, c.version)
		checkServed(t, c.file, a.base, body)
		headers += a2aGoHeaders(c.version, h)
		bodies = append(bodies, body)
	}
	if !bytes.Equal(bodies[0], bodies[1]) {
		t.Errorf("a2a-go served different bodies by A2A-Version:\n%s\n%s", bodies[0], bodies[1])
	}
	if interopUpdate() {
		if err := os.WriteFile(filepath.Join(servedDir, "a2ago-headers.txt"), []byte(headers), 0o644); err != nil {
			t.Fatal(err)
		}
	}

	v1, ok1 := pinV1(t, a.cardURL)
	v03, ok03 := pinNoVersion(t, a.cardURL)
	if ok1 && ok03 {
		if v1.digest != v03.digest {
			t.Errorf("digests %s and %s for one body", v1.digest, v03.digest)
		}
		checkOneCard(t, v1, v03)
	}

	// Streaming off: a2a-go omits capabilities.streaming altogether.
	a.card.Store(a2aGoCard(a.base, false))
	live, ok := pinV1(t, a.cardURL)
	if bytes.Contains(live.raw, []byte(`"streaming"`)) {
		t.Errorf("a2a-go now serves capabilities.streaming when false: %s", live.raw)
	}
	if ok && ok1 {
		rules := map[string]bool{}
		for _, f := range detector.Diff(v1.card, live.card) {
			rules[f.Rule] = true
		}
		if !rules[detector.RuleStreamingDisabled] {
			t.Errorf("streaming turned off (field dropped): findings %v, want %s", keys(rules), detector.RuleStreamingDisabled)
		}
	}

	// a2a-go's helloworld example: protocolVersion "".
	a.card.Store(a2aGoHelloWorld(a.base))
	body, _ := getCard(t, a.cardURL, "")
	checkServed(t, "a2ago-helloworld.json", a.base, body)
	if f, ok := pinV1(t, a.cardURL); ok {
		t.Logf("a2a-go helloworld: digest %s, protocol versions %v", f.digest, f.card.ProtocolVersions())
	}
}

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

// bearerCreds presents "Authorization: token" to origin.
func bearerCreds(t *testing.T, origin, token string) *fetcher.Credentials {
	t.Helper()
	creds, err := fetcher.ParseCredentials(fmt.Appendf(nil, `{%q: {"headers": {"Authorization": %q}}}`, origin, token), nil)
	if err != nil {
		t.Fatal(err)
	}
	return creds
}

// bearerFetcher is the loopback fetcher with bearerCreds, closed when the
// test ends.
func bearerFetcher(t *testing.T, origin, token string) *fetcher.Fetcher {
	t.Helper()
	o := servicetest.LoopbackFetch()
	o.Credentials = bearerCreds(t, origin, token)
	f, err := fetcher.New(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = f.Close() })
	return f
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
				f := bearerFetcher(t, srv.URL, tc.token)
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
	creds := bearerCreds(t, srv.URL, interopToken)
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
		f := bearerFetcher(t, base, token)
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

// Signed cards end to end (issue 12): an agent on @a2a-js/sdk signs its card
// with the SDK's generateAgentCardSignature and publishes its keys at the
// jku its signatures name (test/interop/sdkagent.mjs). A real `carddrift
// serve` follows that jku (--jku any: the agent is on http loopback) and,
// for a task pinned just before each step, reports what the step changed:
//
//	the agent starts signing           signature-added     (info)     continue
//	the agent rotates to its next key  signer-changed      (warning)  continue
//	a field changed after signing      signature-invalid   (breaking) abort
//	the agent stops signing            signature-removed   (warning)  continue
//
// and `carddrift pin --json` shows the signer. Those keys come from the jku
// (source "jku"): the signer's claim. Under --require-signed-cards (a second
// serve on its own streams, trusting k1 and k2 for the agent with --trust)
// the unsigned card aborts a task, the verdict saying why, the card signed
// by k1 does not, and one signed by k3 — a key only its jku vouches for —
// aborts (signature-required).
func TestInteropSignedCards(t *testing.T) {
	node := signaturetest.SDKNode(t, interopDir)
	if testing.Short() {
		t.Skip("builds and runs the carddrift binary")
	}
	bin := buildCarddrift(t)
	a := startSDKAgent(t, node, 0) // no-cache: every transition revalidates
	// k2 is published from the start, as the next key of a rotation is.
	a.control(t, `{"addKey":{"kid":"k2"}}`)

	r := servicetest.Start(t, servicetest.Options{})
	out := r.Out()
	startServe(t, bin, r.URL(), "serve-signed", "--jku", "any")
	ctx := context.Background()

	submit := func(task string) events.Pinned {
		t.Helper()
		must(t, r.Emit.Submitted(ctx, events.Submitted{TaskID: task, AgentURL: a.base, SkillID: "summarize-invoice",
			Requires: events.Requires{Streaming: true}, Posture: detector.FailClosed}))
		out.WaitFor(t, task+" pinned", func(c *servicetest.Collector) bool { return len(c.Events(events.TypePinned, task)) == 1 })
		return out.Events(events.TypePinned, task)[0].Data.(events.Pinned)
	}
	stream := func(task string) events.Drift {
		t.Helper()
		must(t, r.Emit.Request(ctx, events.Request{TaskID: task, AgentURL: a.base, Method: "message/stream", Attempt: 1}))
		out.WaitFor(t, task+": card.drift", func(c *servicetest.Collector) bool { return len(c.Drifts(task)) == 1 })
		d := out.Drifts(task)[0]
		t.Logf("%s: card.drift %s %v (%s)", task, d.Verdict.Action, ruleList(d), d.Verdict.Reason)
		return d
	}
	check := func(d events.Drift, action detector.Action, rules ...string) {
		t.Helper()
		if got := ruleList(d); d.Verdict.Action != action || !slices.Equal(got, rules) {
			t.Errorf("%s: card.drift %s %v, want %s %v:\n%s", d.TaskID, d.Verdict.Action, got, action, rules, describeFindings(d.Findings))
		}
	}
	signer := func(what string, s *detector.Signature, kid string) {
		t.Helper()
		if s == nil || s.KeyID != kid || !s.Verified || s.Source != "jku" || s.Thumbprint == "" || s.JKU != a.base+"/jwks.json" {
			t.Errorf("%s: signer %+v, want %s verified by the key at %s/jwks.json", what, s, kid, a.base)
		}
	}

	// The agent starts signing.
	p := submit("unsigned-then-signed")
	if p.Signer != nil {
		t.Errorf("card.pinned of an unsigned card has signer %+v", p.Signer)
	}
	a.control(t, `{"sign":{"kid":"k1"}}`)
	d := stream("unsigned-then-signed")
	check(d, detector.Continue, detector.RuleSignatureAdded)
	signer("signature-added: live", d.Live.Signer, "k1")

	// pin --json shows the signer.
	pinOut, err := exec.Command(bin, "pin", "--json", "--jku", "any", a.base).Output()
	if err != nil {
		t.Fatalf("carddrift pin --json: %v", err)
	}
	var pinned struct {
		Signatures []detector.Signature `json:"signatures"`
	}
	if err := json.Unmarshal(pinOut, &pinned); err != nil || len(pinned.Signatures) != 1 {
		t.Fatalf("carddrift pin --json: signatures %+v, %v\n%s", pinned.Signatures, err, pinOut)
	}
	signer("carddrift pin --json", &pinned.Signatures[0], "k1")

	// The agent rotates to its next key: the content, and so the digest, is
	// the same.
	p = submit("rotated")
	signer("card.pinned", p.Signer, "k1")
	a.control(t, `{"sign":{"kid":"k2"}}`)
	d = stream("rotated")
	check(d, detector.Continue, detector.RuleSignerChanged)
	signer("signer-changed: pinned", d.Pinned.Signer, "k1")
	signer("signer-changed: live", d.Live.Signer, "k2")
	if d.Pinned.Digest != d.Live.Digest {
		t.Errorf("signer-changed: digests %s and %s, want one (signatures are not part of it)", d.Pinned.Digest, d.Live.Digest)
	}
	if d.Pinned.Signer != nil && d.Live.Signer != nil && d.Pinned.Signer.Thumbprint == d.Live.Signer.Thumbprint {
		t.Errorf("signer-changed with one thumbprint %s", d.Live.Signer.Thumbprint)
	}

	// A field changed after signing.
	signer("card.pinned", submit("tampered").Signer, "k2")
	a.control(t, `{"description":"Summarises invoices and pays them."}`)
	d = stream("tampered")
	check(d, detector.Abort, detector.RuleSignatureInvalid, detector.RuleDescriptiveTextChanged)
	if s := d.Live.Signer; s == nil || s.KeyID != "k2" || s.Verified || s.Reason != "invalid-signature" {
		t.Errorf("signature-invalid: live signer %+v, want k2, invalid-signature", s)
	}

	// The agent stops signing.
	a.control(t, `{"sign":{"kid":"k2"}}`) // the new description, signed
	signer("card.pinned", submit("stopped").Signer, "k2")
	a.control(t, `{"unsign":true}`)
	check(stream("stopped"), detector.Continue, detector.RuleSignatureRemoved)

	// Signed fleets: a deployment that requires signed cards, and trusts
	// the agent's keys k1 and k2 for it (--trust, keys inline). A key the
	// agent publishes later at its jku is its own claim until the operator
	// trusts it too.
	keyset, _ := getCard(t, a.base+"/jwks.json", "")
	trust, err := json.Marshal(map[string]json.RawMessage{a.base: keyset})
	if err != nil {
		t.Fatal(err)
	}
	trustFile := filepath.Join(t.TempDir(), "trust.json")
	must(t, os.WriteFile(trustFile, trust, 0o600))
	strict := servicetest.Start(t, servicetest.Options{})
	strictOut := strict.Out()
	startServe(t, bin, strict.URL(), "serve-strict", "--jku", "any", "--trust", trustFile, "--require-signed-cards")
	for _, step := range []struct {
		task, control, reason string
	}{
		{task: "strict-unsigned", reason: "signature-required (the live card is not signed, and signed cards are required)"},
		{task: "strict-signed", control: `{"sign":{"kid":"k1"}}`},
		{task: "strict-untrusted", control: `{"sign":{"kid":"k3"}}`,
			reason: `signature-required (no signature of the live card verifies with a key trusted for this agent (kid "k3"`},
	} {
		if step.control != "" {
			a.control(t, step.control)
		}
		must(t, strict.Emit.Submitted(ctx, events.Submitted{TaskID: step.task, AgentURL: a.base, SkillID: "summarize-invoice"}))
		strictOut.WaitFor(t, step.task+" pinned", func(c *servicetest.Collector) bool { return len(c.Events(events.TypePinned, step.task)) == 1 })
		must(t, strict.Emit.Request(ctx, events.Request{TaskID: step.task, AgentURL: a.base, Method: "message/stream", Attempt: 1}))
		if step.reason == "" {
			strict.Drained(t, 20*time.Second)
			strictOut.CaughtUp(t) // everything published collected: a drift would be seen
			if ds := strictOut.Drifts(step.task); len(ds) > 0 {
				t.Errorf("%s: card.drift %s (%s) for a card signed by a verified key", step.task, ds[0].Verdict.Action, ds[0].Verdict.Reason)
			}
			continue
		}
		strictOut.WaitFor(t, step.task+": card.drift", func(c *servicetest.Collector) bool { return len(c.Drifts(step.task)) == 1 })
		d := strictOut.Drifts(step.task)[0]
		t.Logf("%s: card.drift %s %v (%s)", step.task, d.Verdict.Action, ruleList(d), d.Verdict.Reason)
		if d.Verdict.Action != detector.Abort || !strings.Contains(d.Verdict.Reason, step.reason) {
			t.Errorf("%s: card.drift %s %q, want abort saying %q", step.task, d.Verdict.Action, d.Verdict.Reason, step.reason)
		}
	}
}

// ruleList is the rule ids of a card.drift's findings, in order.
func ruleList(d events.Drift) []string {
	var out []string
	for _, f := range d.Findings {
		out = append(out, f.Rule)
	}
	return out
}
