package census

import (
	_ "embed"
	"fmt"
	"html/template"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/carddrift/carddrift/events"
	"github.com/carddrift/carddrift/events/inspect/render"
)

// What fleet.html.tmpl computes, and the fleet page's own style.

const fleetCSS = `
.state-ok{color:#2c7a2c}
.state-bad{color:#b3151f;font-weight:600}
.summary span{margin-right:18px}
svg.bar{vertical-align:middle;margin-right:6px}
td.num{text-align:right}
`

//go:embed fleet.html.tmpl
var fleetTemplate string

var fleetPage = render.Page("fleet", fleetTemplate, template.FuncMap{
	"short": render.ShortDigest, "clock": render.Clock, "when": render.Time, "value": valueText,
	"lower": strings.ToLower, "join": strings.Join,
	"search": agentSearch, "tasks": tasksText, "state": agentState, "bars": pinBars, "extendedState": extendedState,
	"ok":            func(a Agent) bool { return a.SplitBrain == nil && a.UnreachableSince == nil },
	"extendedNone":  func() *Extended { return &Extended{} },
	"extendedTasks": func(a Agent) [2]int { p, u := a.ExtendedTasks(); return [2]int{p, u} },
	"extendedCards": func(a Agent) []CardTasks {
		return slices.DeleteFunc(slices.Clone(a.Tasks), func(t CardTasks) bool { return t.Extended != events.ExtendedPinned })
	},
})

// fleetView is what the page template reads.
type fleetView struct {
	render.Frame
	F        *Fleet
	Extended []Agent
}

// bars are an agent's tasks per card version as a bar chart, the live card
// first.
type bars struct {
	Width int
	Bars  []bar
}

type bar struct {
	X, W  int
	Color string
	Title string
}

func pinBars(a Agent) *bars {
	if len(a.Tasks) == 0 {
		return nil
	}
	b := &bars{}
	total, x := a.Pins(), 0
	for i, t := range a.Tasks {
		w := max(2, t.Count*120/max(total, 1))
		label := "on live card"
		switch {
		case t.Digest == "":
			label = "on no card yet (first fetch failed)"
		case t.Extended != "":
			label = cardTasksText(t)
		case !t.Live:
			label = "on card " + render.OrDash(t.Version) + " " + render.ShortDigest(t.Digest)
		}
		b.Bars = append(b.Bars, bar{X: x, W: w, Color: render.Color(i), Title: fmt.Sprintf("%d task(s) %s", t.Count, label)})
		x += w
	}
	b.Width = max(x, 1)
	return b
}

// WriteHTML writes the fleet view as one self-contained page that reloads
// itself every refresh (0: never). It returns the template's or w's error.
func (f *Fleet) WriteHTML(w io.Writer, refresh time.Duration) error {
	return fleetPage.Execute(w, fleetView{F: f, Extended: f.extendedAgents(),
		Frame: render.Frame{Title: "carddrift fleet", Refresh: int(refresh / time.Second), Style: fleetCSS}})
}

// agentSearch is what the page's filter matches an agent's rows by.
func agentSearch(a Agent) string {
	return strings.ToLower(a.AgentURL + " " + a.Name + " " + strings.Join(a.Skills, " "))
}
