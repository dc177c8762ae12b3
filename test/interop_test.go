package test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
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

	"github.com/carddrift/carddrift/detector"
	"github.com/carddrift/carddrift/detector/signature/signaturetest"
	"github.com/carddrift/carddrift/events"
	"github.com/carddrift/carddrift/events/service/servicetest"
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
