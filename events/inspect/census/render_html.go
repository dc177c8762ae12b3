package census

import (
	"fmt"
	"html/template"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/carddrift/carddrift/events"
	"github.com/carddrift/carddrift/events/inspect/render"
)

// The fleet page (carddrift fleet --format html, serve's /fleet) is
// package render's frame around the fleet's tables (html/template: every
// value read from a card is escaped).

const fleetCSS = `
.state-ok{color:#2c7a2c}
.state-bad{color:#b3151f;font-weight:600}
.summary span{margin-right:18px}
svg.bar{vertical-align:middle;margin-right:6px}
td.num{text-align:right}
`

var fleetPage = render.Page("fleet", `{{define "header" -}}
<p class="summary"><span>{{len .F.Agents}} agent(s)</span><span>{{.F.SplitBrains}} in split brain</span><span>{{.F.Unreachable}} unreachable</span><span>{{len .F.Skills}} shared skill(s), {{.F.InconsistentSkills}} inconsistent</span></p>
<p>taken {{when .F.Taken}} (UTC), consistency window {{.F.Window}}{{if .Refresh}}; this page refreshes every {{.Refresh}}s{{end}}</p>
<div class="tools"><input id="filter" type="search" placeholder="filter by agent or skill"/><button id="expand" type="button">expand all</button><button id="collapse" type="button">collapse all</button>
<span class="legend">bars: tasks pinned per card version, the live card first</span></div>
{{end}}

{{- define "main" -}}
<section class="agent">
<h2>agents</h2>
{{- if not .F.Agents}}
<p class="empty">carddrift knows no agent yet.</p>
{{- else}}
<table>
<tr><th>agent</th><th>name</th><th>version</th><th>protocol</th><th>live card</th><th>changed</th><th>tasks per card version</th><th>state</th></tr>
{{- range .F.Agents}}
<tr data-search="{{search .}}"><td><code>{{.AgentURL}}</code></td><td>{{.Name}}</td><td>{{.Version}}</td><td>{{range $i, $v := .ProtocolVersions}}{{if $i}}, {{end}}{{$v}}{{end}}</td>
<td><code title="{{.Digest}}">{{short .Digest}}</code></td><td>{{clock .LastChange}}</td>
<td>{{with bars .}}<svg class="bar" xmlns="http://www.w3.org/2000/svg" width="{{.Width}}" height="14" viewBox="0 0 {{.Width}} 14">{{range .Bars}}<rect x="{{.X}}" y="1" width="{{.W}}" height="12" fill="{{.Color}}"><title>{{.Title}}</title></rect>{{end}}</svg>{{end}}{{tasks .}}</td>
<td class="{{if ok .}}state-ok{{else}}state-bad{{end}}">{{state .}}</td></tr>
{{- end}}
</table>
{{- end}}
{{- range .F.Agents}}{{if .SplitBrain}}
<details class="abort" open="open" data-search="{{search .}}"><summary><b>split brain</b> — {{.AgentURL}}: replicas serve {{len .SplitBrain.Digests}} cards since {{when .SplitBrain.Since}}</summary>
<table><tr><th>digest</th><th>fetches</th><th>first seen</th><th>last seen</th></tr>
{{- range .SplitBrain.Digests}}
<tr><td><code>{{.Digest}}</code></td><td class="num">{{.Count}}</td><td><code>{{when .FirstSeen}}</code></td><td><code>{{when .LastSeen}}</code></td></tr>
{{- end}}
</table></details>
{{- end}}{{end}}
</section>
{{- if .Extended}}
<section class="agent">
<h2>authenticated extended cards</h2>
<table>
<tr><th>agent</th><th>extended version</th><th>live extended card</th><th>tasks pinned on it</th><th>unavailable (on the public card)</th><th>extended cards pinned</th><th>state</th></tr>
{{- range .Extended}}{{$e := or .Extended extendedNone}}{{$state := extendedState .Extended}}
<tr data-search="{{search .}}"><td><code>{{.AgentURL}}</code></td><td>{{$e.Version}}</td><td><code title="{{$e.Digest}}">{{short $e.Digest}}</code></td>
{{$n := extendedTasks .}}<td class="num">{{index $n 0}}</td><td class="num">{{index $n 1}}</td>
<td>{{range $i, $t := extendedCards .}}{{if $i}}, {{end}}{{$t.Count}} on {{if $t.Live}}live{{else}}{{$t.Version}} <code title="{{$t.Digest}}">{{short $t.Digest}}</code>{{end}}{{end}}</td>
<td class="{{if eq $state "ok"}}state-ok{{else}}state-bad{{end}}">{{$state}}</td></tr>
{{- end}}
</table>
</section>
{{- end}}
<section class="agent">
<h2>skills offered by more than one agent</h2>
{{- if not .F.Skills}}
<p class="empty">No skill id is offered by more than one agent.</p>
{{- end}}
{{- range .F.Skills}}{{$s := .}}
<details class="{{if .Consistent}}continue{{else}}abort{{end}}" data-search="{{lower .ID}} {{lower (join .Agents " ")}}"{{if not .Consistent}} open="open"{{end}}><summary><code>{{.ID}}</code> — {{len .Agents}} agents, {{if .Consistent}}one contract{{else}}<b>contracts differ</b>: {{range $i, $d := .Differences}}{{if $i}}, {{end}}{{$d.Field}}{{end}}{{end}}</summary>
<table><tr><th>agent</th>{{range .Differences}}<th>{{.Field}}</th>{{end}}</tr>
{{- range $a := .Agents}}
<tr><td><code>{{$a}}</code></td>{{range $s.Differences}}<td>{{value (index .Values $a)}}</td>{{end}}</tr>
{{- end}}
</table>
</details>
{{- end}}
</section>
{{end}}`, template.FuncMap{
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

// WriteHTML writes the fleet view as one self-contained page: the agents
// (a bar of their tasks per card version, their state), every split brain,
// and the shared skills. A refresh of a second or more makes the page
// reload itself that often; 0 never. It returns the template's or w's
// error.
func (f *Fleet) WriteHTML(w io.Writer, refresh time.Duration) error {
	return fleetPage.Execute(w, fleetView{F: f, Extended: f.extendedAgents(),
		Frame: render.Frame{Title: "carddrift fleet", Refresh: int(refresh / time.Second), Style: fleetCSS}})
}

// agentSearch is what the page's filter matches an agent's rows by.
func agentSearch(a Agent) string {
	return strings.ToLower(a.AgentURL + " " + a.Name + " " + strings.Join(a.Skills, " "))
}
