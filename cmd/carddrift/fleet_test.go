package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/carddrift/carddrift/events"
	"github.com/carddrift/carddrift/events/inspect/census"
	"github.com/carddrift/carddrift/events/inspect/render/rendertest"
	"github.com/carddrift/carddrift/events/service/servicetest"
)

// fleetRig runs a worker over agents that make every part of the fleet
// view show: one whose card is named "<script>" and whose replicas come to
// disagree, one offering the same skill under another contract, one down.
func fleetRig(t *testing.T) *servicetest.Rig {
	t.Helper()
	r := servicetest.Start(t, servicetest.Options{Workers: []string{"w1"}})
	ctx := context.Background()
	hostile := strings.Replace(servicetest.WriteupT0, `"name":"Vendor B"`, `"name":"<script>document.title='owned'</script>"`, 1)
	hostile2 := strings.Replace(servicetest.WriteupT40, `"name":"Vendor B"`, `"name":"<script>document.title='owned'</script>"`, 1)
	a, b, c := servicetest.NewAgent(t, hostile), servicetest.NewAgent(t, servicetest.WriteupT40), servicetest.NewAgent(t, servicetest.WriteupT0)
	c.SetStatus(503)
	for i, ag := range []*servicetest.Agent{a, a, b, c} {
		must(t, r.Emit.Submitted(ctx, events.Submitted{TaskID: "t" + string(rune('0'+i)), AgentURL: ag.URL(), SkillID: "summarize"}))
	}
	r.Drained(t, servicetest.WaitTimeout)
	for _, card := range []string{hostile2, hostile, hostile2, hostile} {
		a.Set(card)
		n := a.Requests()
		must(t, r.Emit.Request(ctx, events.Request{TaskID: "t0", AgentURL: a.URL(), Method: "message/stream", Attempt: 1}))
		r.Eventually("the fetch", func() bool { return a.Requests() > n })
		r.Drained(t, servicetest.WaitTimeout)
	}
	return r
}

func TestFleetCommand(t *testing.T) {
	r := fleetRig(t)
	code, stdout, stderr := runCLI(t, "", "fleet", "--nats-url", r.URL(), "--json")
	if code != exitOK {
		t.Fatalf("fleet --json exit %d: %s", code, stderr)
	}
	var fl census.Fleet
	must(t, json.Unmarshal([]byte(stdout), &fl))
	split, down := 0, 0
	for _, a := range fl.Agents {
		if a.SplitBrain != nil {
			split++
		}
		if a.UnreachableSince != nil {
			down++
		}
	}
	if len(fl.Agents) != 3 || split != 1 || down != 1 || len(fl.Skills) != 1 || fl.Skills[0].Consistent {
		t.Errorf("fleet --json = %s", stdout)
	}

	code, stdout, _ = runCLI(t, "", "fleet", "--nats-url", r.URL())
	for _, want := range []string{"3 agent(s), 1 in split brain, 1 unreachable", "split brain since", "unreachable since", "summarize", "INCONSISTENT", "streaming"} {
		if code != exitOK || !strings.Contains(stdout, want) {
			t.Errorf("fleet text has no %q:\n%s", want, stdout)
		}
	}

	page := filepath.Join(t.TempDir(), "fleet.html")
	if code, _, stderr := runCLI(t, "", "fleet", "--nats-url", r.URL(), "--format", "html", "--out", page); code != exitOK {
		t.Fatalf("fleet --format html exit %d: %s", code, stderr)
	}
	rendertest.CheckPage(t, page, 1)
	checkFleetPage(t, page)
}

// checkFleetPage: the card's "<script>" name is text, not markup — escaped
// in the source, one script element (the page's own), and in headless
// Chromium the title stays the page's and the name shows as text; the
// screenshot has the abort red of the split-brain agent's details.
func checkFleetPage(t *testing.T, page string) {
	t.Helper()
	b, err := os.ReadFile(page)
	must(t, err)
	src := string(b)
	if strings.Count(src, "<script") != 1 || !strings.Contains(src, "&lt;script&gt;document.title=") {
		t.Errorf("the card name is not escaped:\n%s", src)
	}
	rendertest.RenderHostile(t, page, "fleet")
}
