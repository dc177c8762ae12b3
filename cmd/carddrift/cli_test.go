package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/carddrift/carddrift/store/fetcher"
)

// fixtures holds the real cards (the repository's one copy, shared with the
// detector's tests).
const fixtures = "../../detector/testdata/cards"

func fixture(name string) string { return filepath.Join(fixtures, name) }

// runCLI runs the CLI in-process and returns its exit status and output.
func runCLI(t *testing.T, stdin string, args ...string) (int, string, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code := run(context.Background(), args, strings.NewReader(stdin), &out, &errOut)
	return code, out.String(), errOut.String()
}

func writeCard(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "card.json")
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

const (
	cardT0  = `{"name":"B","version":"1.0.0","protocolVersion":"1.0.0","url":"https://b.example.com/a2a","capabilities":{"streaming":true},"defaultInputModes":["text/plain"],"defaultOutputModes":["text/plain"],"securitySchemes":{"bearer":{"type":"http","scheme":"bearer"}},"security":[{"bearer":[]}],"skills":[{"id":"summarize","name":"Summarize","description":"d","tags":[]}]}`
	cardT40 = `{"name":"B","version":"1.0.0","protocolVersion":"1.0.0","url":"https://b.example.com/a2a","capabilities":{"streaming":false},"defaultInputModes":["text/plain"],"defaultOutputModes":["text/plain"],"securitySchemes":{"oauth2":{"type":"oauth2","flows":{"clientCredentials":{"tokenUrl":"https://b.example.com/token","scopes":{"tasks":"t"}}}}},"security":[{"oauth2":["tasks"]}],"skills":[{"id":"summarize","name":"Summarize","description":"d","tags":[]},{"id":"translate","name":"Translate","description":"d","tags":[]}]}`
)

// TestHelp: every help file describes a command (its usage line, one-line
// help and long help), the root usage lists it, and `carddrift NAME -h`
// prints it.
func TestHelp(t *testing.T) {
	files, err := fs.Glob(helpFiles, "help/*.txt")
	if err != nil || len(files) == 0 {
		t.Fatalf("help files: %v, %v", files, err)
	}
	_, _, rootUsage := runCLI(t, "")
	for _, f := range files {
		name := strings.TrimSuffix(path.Base(f), ".txt")
		c := describe(name)
		if !strings.HasPrefix(c.ShortUsage, "carddrift "+name+" ") || c.ShortHelp == "" || c.LongHelp == "" {
			t.Errorf("%s: usage %q, help %q, long help %q: want carddrift %s …, a line, then a blank line and text", f, c.ShortUsage, c.ShortHelp, c.LongHelp, name)
		}
		if !strings.Contains(rootUsage, c.ShortHelp) {
			t.Errorf("carddrift usage does not list %s (%q):\n%s", name, c.ShortHelp, rootUsage)
		}
		code, _, stderr := runCLI(t, "", name, "-h")
		if code != exitUsage || !strings.Contains(stderr, c.ShortUsage) || !strings.Contains(stderr, c.LongHelp) {
			t.Errorf("carddrift %s -h = %d:\n%s\nwant %d with its usage and long help", name, code, stderr, exitUsage)
		}
	}
}

func TestDiffExitCodes(t *testing.T) {
	old, nu := writeCard(t, cardT0), writeCard(t, cardT40)
	tests := []struct {
		name string
		args []string
		want int
	}{
		{"no fail-on", []string{"diff", old, nu}, exitOK},
		{"fail-on breaking with breaking drift", []string{"diff", "--fail-on", "breaking", old, nu}, exitFindings},
		{"fail-on info", []string{"diff", "--fail-on=info", old, nu}, exitFindings},
		{"identical cards", []string{"diff", "--fail-on", "info", old, old}, exitOK},
		{"whitespace-only twins", []string{"diff", "--fail-on", "info", fixture("006-docs-v0.3.0-extensions-magic-8-ball.json"), fixture("007-docs-v1.0.1-extensions-magic-8-ball.json")}, exitOK},
		{"bad fail-on", []string{"diff", "--fail-on", "fatal", old, nu}, exitUsage},
		{"bad posture", []string{"diff", "--posture", "yolo", old, nu}, exitUsage},
		{"one argument", []string{"diff", old}, exitUsage},
		{"missing file", []string{"diff", old, filepath.Join(t.TempDir(), "nope.json")}, exitUsage},
		{"not a card (not JSON)", []string{"diff", old, writeCard(t, `{"name": `)}, exitUsage},
		{"not a card (an array)", []string{"diff", old, writeCard(t, `[{"name":"a"}]`)}, exitUsage},
		{"a sloppy card is a card", []string{"diff", old, fixture("011-a2a-cli-testdata-invalid-format.json")}, exitOK},
		{"unknown flag", []string{"diff", "--nope", old, nu}, exitUsage},
		{"flags after the cards", []string{"diff", old, nu, "--fail-on", "breaking"}, exitFindings},
		{"unknown flag after the cards", []string{"diff", old, nu, "--nope"}, exitUsage},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, _, stderr := runCLI(t, "", tt.args...)
			if code != tt.want {
				t.Fatalf("carddrift %v = %d, want %d (stderr %q)", tt.args, code, tt.want, stderr)
			}
		})
	}
}

// TestPinAcceptsEveryFixture: pin reads every real card in the repository
// and the forms the official SDKs serve; parts that follow no known schema
// are listed under conformance, never refused.
func TestPinAcceptsEveryFixture(t *testing.T) {
	var files []string
	for _, dir := range []string{fixtures, filepath.Join(fixtures, "..", "forms")} {
		m, err := filepath.Glob(filepath.Join(dir, "*.json"))
		if err != nil || len(m) == 0 {
			t.Fatalf("no cards under %s: %v", dir, err)
		}
		files = append(files, m...)
	}
	for _, f := range files {
		code, stdout, stderr := runCLI(t, "", "pin", "--json", f)
		if code != exitOK {
			t.Errorf("carddrift pin %s = %d, want 0 (stderr %q)", filepath.Base(f), code, stderr)
			continue
		}
		var out struct {
			Digest      string `json:"digest"`
			Conformance []struct {
				Path    string `json:"path"`
				Message string `json:"message"`
			} `json:"conformance"`
		}
		if err := json.Unmarshal([]byte(stdout), &out); err != nil || !strings.HasPrefix(out.Digest, "sha256:") || out.Conformance == nil {
			t.Errorf("pin --json %s = %s (%v), want a digest and a conformance list", filepath.Base(f), stdout, err)
		}
		if strings.Contains(f, "011-") && len(out.Conformance) == 0 {
			t.Errorf("pin --json of the invalid-format card lists no conformance problems")
		}
	}
}

func TestDiffJSONWithVerdict(t *testing.T) {
	old, nu := writeCard(t, cardT0), writeCard(t, cardT40)
	tests := []struct {
		name       string
		args       []string
		wantAction string
	}{
		{"fail-closed streaming task aborts", []string{"--skill", "summarize", "--requires-streaming"}, "abort"},
		{"degrade idempotent task re-plans", []string{"--skill", "summarize", "--posture", "degrade", "--idempotent"}, "replan"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			args := append(append([]string{"diff", "--json"}, tt.args...), old, nu)
			code, stdout, stderr := runCLI(t, "", args...)
			if code != exitOK {
				t.Fatalf("exit %d, stderr %q", code, stderr)
			}
			var out struct {
				Findings []struct {
					Rule     string `json:"rule"`
					Severity string `json:"severity"`
					Path     string `json:"path"`
					Message  string `json:"message"`
				} `json:"findings"`
				Verdict *struct {
					Action string `json:"action"`
					Reason string `json:"reason"`
				} `json:"verdict"`
			}
			if err := json.Unmarshal([]byte(stdout), &out); err != nil {
				t.Fatalf("output is not JSON: %v\n%s", err, stdout)
			}
			if out.Verdict == nil || out.Verdict.Action != tt.wantAction {
				t.Fatalf("verdict = %+v, want %s", out.Verdict, tt.wantAction)
			}
			rules := map[string]bool{}
			for _, f := range out.Findings {
				rules[f.Rule] = true
				if f.Severity == "" || f.Message == "" {
					t.Errorf("finding %+v lacks severity or message", f)
				}
			}
			for _, want := range []string{"streaming-disabled", "skill-added", "security-scheme-removed"} {
				if !rules[want] {
					t.Errorf("findings lack %s: %v", want, rules)
				}
			}
		})
	}
}

func TestDiffTextAndStdin(t *testing.T) {
	nu := writeCard(t, cardT40)
	code, stdout, stderr := runCLI(t, cardT0, "diff", "-", nu)
	if code != exitOK {
		t.Fatalf("exit %d, stderr %q", code, stderr)
	}
	for _, want := range []string{"breaking (", "streaming-disabled", "/capabilities/streaming", "info ("} {
		if !strings.Contains(stdout, want) {
			t.Errorf("text output lacks %q:\n%s", want, stdout)
		}
	}
	code, stdout, _ = runCLI(t, "", "diff", "--json", nu, nu)
	if code != exitOK || !strings.Contains(stdout, `"findings": []`) || !strings.Contains(stdout, `"verdict": null`) {
		t.Fatalf("identical diff --json = %d %s", code, stdout)
	}
}

// agentServer serves card at path with caching headers, and 404 elsewhere.
func agentServer(t *testing.T, path, card string) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != path {
			http.NotFound(w, r)
			return
		}
		if r.Header.Get("A2A-Version") != fetcher.DefaultA2AVersion || r.Header.Get("Accept") != fetcher.DefaultAccept ||
			r.Header.Get("User-Agent") != fetcher.DefaultUserAgent {
			t.Errorf("fetch without the workers' fixed headers: %v", r.Header)
		}
		w.Header().Set("ETag", `"v1"`)
		w.Header().Set("Cache-Control", "max-age=60")
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(card))
	}))
	t.Cleanup(srv.Close)
	return srv
}

func TestPin(t *testing.T) {
	for _, path := range []string{"/.well-known/agent-card.json", "/.well-known/agent.json"} {
		t.Run("base URL resolves "+path, func(t *testing.T) {
			srv := agentServer(t, path, cardT0)
			code, stdout, stderr := runCLI(t, "", "pin", "--json", srv.URL)
			if code != exitOK {
				t.Fatalf("exit %d, stderr %q", code, stderr)
			}
			var out map[string]any
			if err := json.Unmarshal([]byte(stdout), &out); err != nil {
				t.Fatalf("not JSON: %v", err)
			}
			for _, k := range []string{"digest", "fingerprint", "structuralDigest", "version", "protocolVersions"} {
				if _, ok := out[k]; !ok {
					t.Errorf("pin --json lacks %q: %s", k, stdout)
				}
			}
			if out["etag"] != `"v1"` || out["cacheControl"] != "max-age=60" || out["version"] != "1.0.0" {
				t.Errorf("pin --json = %s", stdout)
			}
			if !strings.HasSuffix(out["source"].(string), path) {
				t.Errorf("source = %v, want the resolved %s", out["source"], path)
			}
		})
	}
	t.Run("file, text output", func(t *testing.T) {
		code, stdout, _ := runCLI(t, "", "pin", fixture("027-a2a-go-json-test-georoute-planner.json"))
		if code != exitOK || !strings.Contains(stdout, "digest             sha256:") || !strings.Contains(stdout, "protocol versions  1.0") {
			t.Fatalf("pin file = %d\n%s", code, stdout)
		}
	})
	t.Run("same digest for whitespace twins", func(t *testing.T) {
		_, a, _ := runCLI(t, "", "pin", "--json", fixture("006-docs-v0.3.0-extensions-magic-8-ball.json"))
		_, b, _ := runCLI(t, "", "pin", "--json", fixture("007-docs-v1.0.1-extensions-magic-8-ball.json"))
		var x, y map[string]any
		json.Unmarshal([]byte(a), &x)
		json.Unmarshal([]byte(b), &y)
		if x["digest"] == nil || x["digest"] != y["digest"] {
			t.Fatalf("digests %v and %v differ", x["digest"], y["digest"])
		}
	})
	t.Run("not found", func(t *testing.T) {
		srv := agentServer(t, "/elsewhere", cardT0)
		code, _, stderr := runCLI(t, "", "pin", srv.URL)
		if code != exitUsage || !strings.Contains(stderr, "404") {
			t.Fatalf("pin of an agent without a card = %d %q", code, stderr)
		}
	})
	// What a worker sees: an agent URL with a path resolves under it, a
	// .json URL is the card's own, with the workers' headers and guard.
	t.Run("as a worker resolves it", func(t *testing.T) {
		srv := agentServer(t, "/agents/a"+fetcher.WellKnownPath, cardT0)
		for _, u := range []string{srv.URL + "/agents/a", srv.URL + "/agents/a/", srv.URL + "/agents/a" + fetcher.WellKnownPath} {
			code, stdout, stderr := runCLI(t, "", "pin", "--json", u)
			if code != exitOK || !strings.Contains(stdout, `"source": "`+srv.URL+"/agents/a"+fetcher.WellKnownPath+`"`) {
				t.Errorf("pin %s = %d %s %s", u, code, stdout, stderr)
			}
		}
		code, stdout, stderr := runCLI(t, "", "pin", "--fetch-allow", "127.0.0.0/8", srv.URL+"/agents/a")
		if code != exitOK || !strings.Contains(stdout, "etag               \"v1\"") {
			t.Errorf("pin --fetch-allow 127.0.0.0/8 = %d %s %s", code, stdout, stderr)
		}
		// With the workers' default guard a loopback agent is refused, as a
		// worker started without --fetch-allow would refuse it.
		code, _, stderr = runCLI(t, "", "pin", "--fetch-allow=", srv.URL+"/agents/a")
		if code != exitUsage || !strings.Contains(stderr, string(fetcher.ReasonRefusedAddress)) {
			t.Errorf("pin --fetch-allow= of a loopback agent = %d %q, want refused-address", code, stderr)
		}
		code, _, stderr = runCLI(t, "", "diff", "--fetch-allow=", srv.URL+"/agents/a", srv.URL+"/agents/a")
		if code != exitUsage || !strings.Contains(stderr, string(fetcher.ReasonRefusedAddress)) {
			t.Errorf("diff --fetch-allow= of a loopback agent = %d %q, want refused-address", code, stderr)
		}
	})
}

// TestDiffTaskVerdict: with a task, diff judges the second card as the
// worker would for a task pinned on the first (task.Decide): the breaking
// findings that touch the task make a fail-closed task abort; the same card
// twice is nothing to judge.
func TestDiffTaskVerdict(t *testing.T) {
	old, nu := writeCard(t, cardT0), writeCard(t, cardT40)
	type verdict struct {
		Findings []struct {
			Rule string `json:"rule"`
		} `json:"findings"`
		Verdict struct {
			Action    string `json:"action"`
			Impacting []struct {
				Rule string `json:"rule"`
			} `json:"impacting"`
		} `json:"verdict"`
	}
	tests := []struct {
		name          string
		a, b          string
		wantAction    string
		wantImpacting []string
		wantFindings  int
	}{
		{"streaming off and bearer swapped for OAuth2", old, nu, "abort",
			[]string{"security-requirements-changed", "security-scheme-removed", "streaming-disabled"}, 6},
		{"the same card", old, old, "continue", nil, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, stdout, stderr := runCLI(t, "", "diff", "--json", "--skill", "summarize", "--requires-streaming", "--security", "bearer", tc.a, tc.b)
			if code != exitOK {
				t.Fatalf("diff = %d: %s", code, stderr)
			}
			var v verdict
			if err := json.Unmarshal([]byte(stdout), &v); err != nil {
				t.Fatalf("diff --json: %v\n%s", err, stdout)
			}
			var impacting []string
			for _, f := range v.Verdict.Impacting {
				impacting = append(impacting, f.Rule)
			}
			if v.Verdict.Action != tc.wantAction || !slices.Equal(impacting, tc.wantImpacting) || len(v.Findings) != tc.wantFindings {
				t.Errorf("diff verdict = %s impacting %v with %d findings, want %s impacting %v with %d",
					v.Verdict.Action, impacting, len(v.Findings), tc.wantAction, tc.wantImpacting, tc.wantFindings)
			}
		})
	}
}
