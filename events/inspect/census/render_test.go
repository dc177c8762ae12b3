package census_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/carddrift/carddrift/detector"
	"github.com/carddrift/carddrift/events/inspect/census"
	"github.com/carddrift/carddrift/events/inspect/render/rendertest"
)

// hostileFleet is a census that makes every part of the fleet view show:
// an agent whose card is named rendertest.HostileName, whose URL holds
// markup and whose replicas disagree, with tasks on its live card, on an
// older one and pending; an agent down; one never fetched; a skill two of
// them offer under different contracts (a list, a flag, a missing value)
// and one they agree on.
func hostileFleet(t testing.TB) *census.Fleet {
	t.Helper()
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	down := t0.Add(time.Minute)
	a, b := "https://a.example/<x>", "https://b.example"
	// The split brain as fleet --json shows it: two fetches of one digest.
	var split census.SplitBrain
	if err := json.Unmarshal([]byte(`{"since":"2026-03-01T12:00:00Z","digests":[`+
		`{"digest":"sha256:aa","count":2,"firstSeen":"2026-03-01T12:00:00Z","lastSeen":"2026-03-01T12:01:00Z"}]}`), &split); err != nil {
		t.Fatal(err)
	}
	return &census.Fleet{Taken: t0.Add(time.Hour), Window: 5 * time.Minute,
		Agents: []census.Agent{
			{AgentURL: a, Digest: "sha256:0123456789abcdef0123", Version: "1.0", ProtocolVersions: []string{"0.3", "1.0"}, Name: rendertest.HostileName,
				Tasks:      []census.CardTasks{{Digest: "sha256:0123456789abcdef0123", Version: "1.0", Count: 3, Live: true}, {Digest: "sha256:fedcba", Version: "0.9", Count: 2}, {Count: 1}},
				SplitBrain: &split,
				LastChange: t0, Skills: []string{"s1"}},
			{AgentURL: b, UnreachableSince: &down, Unreachable: "timeout", Skills: []string{"s1"}},
			{AgentURL: "https://c.example", Version: "2", Digest: "sha256:cc"},
		},
		Skills: []detector.SharedSkill{
			{ID: "s1", Agents: []string{a, b}, Differences: []detector.SkillDifference{
				{Field: "outputModes", Values: map[string]any{a: []string{"a", "b"}, b: []string{"c"}}},
				{Field: "streaming", Values: map[string]any{a: true, b: false}},
				{Field: "name", Values: map[string]any{a: "x"}},
			}},
			{ID: "s2", Agents: []string{"a", "b"}, Consistent: true},
		}}
}

// TestRenderGolden: the fleet view's text, JSON and page are, byte for
// byte, what carddrift fleet printed before the renderers moved out of the
// command (testdata/render; the page's own part, rendertest.GoldenPage).
// With serve's refresh the page is the same but for the refresh: the meta
// element (TestRenderHTMLEscapes) and a sentence.
func TestRenderGolden(t *testing.T) {
	fl, empty := hostileFleet(t), &census.Fleet{}
	page := func(refresh time.Duration) []byte {
		var b bytes.Buffer
		if err := fl.WriteHTML(&b, refresh); err != nil {
			t.Fatal(err)
		}
		return b.Bytes()
	}
	for _, c := range []struct {
		file  string
		write func(io.Writer) error
	}{
		{"fleet.txt", fl.WriteText},
		{"fleet.json", fl.WriteJSON},
		{"fleet-empty.txt", empty.WriteText},
	} {
		t.Run(c.file, func(t *testing.T) {
			var b bytes.Buffer
			if err := c.write(&b); err != nil {
				t.Fatal(err)
			}
			rendertest.Golden(t, filepath.Join("testdata", "render", c.file), b.Bytes())
		})
	}
	rendertest.GoldenPage(t, filepath.Join("testdata", "render", "fleet.html"), page(0))
	refreshing := strings.Replace(string(page(10*time.Second)), `<meta http-equiv="refresh" content="10"/>`+"\n", "", 1)
	refreshing = strings.Replace(refreshing, "; this page refreshes every 10s</p>", "</p>", 1)
	if refreshing != string(page(0)) {
		t.Errorf("the page with a 10s refresh differs from the page without in more than the refresh:\n%s", refreshing)
	}
}

// TestRenderHTMLEscapes: on the fleet page the card's name is text, never
// an element (one script element, the page's own), in the page source, in
// an XML parser and in headless Chromium; the page is one self-contained
// document; it refreshes itself only when asked to.
func TestRenderHTMLEscapes(t *testing.T) {
	fl := hostileFleet(t)
	for _, refresh := range []time.Duration{0, 10 * time.Second} {
		var b bytes.Buffer
		if err := fl.WriteHTML(&b, refresh); err != nil {
			t.Fatal(err)
		}
		page := filepath.Join(t.TempDir(), "fleet.html")
		if err := os.WriteFile(page, b.Bytes(), 0o600); err != nil {
			t.Fatal(err)
		}
		rendertest.CheckPage(t, page, 1)
		text, elements := rendertest.PageText(t, b.Bytes())
		if scripts := elements["script"]; scripts != 1 || elements["x"] != 0 {
			t.Errorf("refresh %v: %d <script> and %d <x> elements, want the page's own script only", refresh, scripts, elements["x"])
		}
		if !strings.Contains(text, rendertest.HostileName) || !strings.Contains(text, "https://a.example/<x>") {
			t.Errorf("refresh %v: the page text does not show the card name and the agent URL", refresh)
		}
		if got, want := strings.Contains(b.String(), `http-equiv="refresh" content="10"`), refresh > 0; got != want {
			t.Errorf("refresh %v: the page refreshes itself: %v, want %v", refresh, got, want)
		}
		if refresh == 0 {
			rendertest.RenderHostile(t, page, "fleet")
		}
	}
}

// TestRenderWriteError: the renderers return the writer's error.
func TestRenderWriteError(t *testing.T) {
	fl := hostileFleet(t)
	for name, write := range map[string]func(io.Writer) error{
		"WriteText": fl.WriteText, "WriteJSON": fl.WriteJSON,
		"WriteHTML": func(w io.Writer) error { return fl.WriteHTML(w, 0) },
	} {
		if err := write(rendertest.FailingWriter{}); !errors.Is(err, rendertest.ErrWrite) {
			t.Errorf("%s(a failing writer) = %v, want %v", name, err, rendertest.ErrWrite)
		}
	}
}
