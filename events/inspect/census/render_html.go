package census

import (
	"cmp"
	"fmt"
	"html/template"
	"io"
	"strings"
	"time"

	"github.com/carddrift/carddrift/detector"
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
<p class="summary"><span>{{len .F.Agents}} agent(s)</span><span>{{.F.SplitBrains}} in split brain</span><span>{{.Unreachable}} unreachable</span><span>{{len .F.Skills}} shared skill(s), {{.F.InconsistentSkills}} inconsistent</span></p>
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
{{- range .Agents}}
<tr data-search="{{.Search}}"><td><code>{{.A.AgentURL}}</code></td><td>{{.A.Name}}</td><td>{{.A.Version}}</td><td>{{range $i, $v := .A.ProtocolVersions}}{{if $i}}, {{end}}{{$v}}{{end}}</td>
<td><code title="{{.A.Digest}}">{{short .A.Digest}}</code></td><td>{{clock .A.LastChange}}</td>
<td>{{if .Bars}}<svg class="bar" xmlns="http://www.w3.org/2000/svg" width="{{.Width}}" height="14" viewBox="0 0 {{.Width}} 14">{{range .Bars}}<rect x="{{.X}}" y="1" width="{{.W}}" height="12" fill="{{.Color}}"><title>{{.Title}}</title></rect>{{end}}</svg>{{end}}{{.Tasks}}</td>
<td class="{{if .OK}}state-ok{{else}}state-bad{{end}}">{{.State}}</td></tr>
{{- end}}
</table>
{{- end}}
{{- range .Agents}}{{if .A.SplitBrain}}
<details class="abort" open="open" data-search="{{.Search}}"><summary><b>split brain</b> — {{.A.AgentURL}}: replicas serve {{len .A.SplitBrain.Digests}} cards since {{when .A.SplitBrain.Since}}</summary>
<table><tr><th>digest</th><th>fetches</th><th>first seen</th><th>last seen</th></tr>
{{- range .A.SplitBrain.Digests}}
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
{{- range .Extended}}
<tr data-search="{{.Search}}"><td><code>{{.A.AgentURL}}</code></td><td>{{.E.Version}}</td><td><code title="{{.E.Digest}}">{{short .E.Digest}}</code></td>
<td class="num">{{.Pinned}}</td><td class="num">{{.Unavailable}}</td>
<td>{{range $i, $t := .Versions}}{{if $i}}, {{end}}{{$t.Count}} on {{if $t.Live}}live{{else}}{{$t.Version}} <code title="{{$t.Digest}}">{{short $t.Digest}}</code>{{end}}{{end}}</td>
<td class="{{if .OK}}state-ok{{else}}state-bad{{end}}">{{.State}}</td></tr>
{{- end}}
</table>
</section>
{{- end}}
<section class="agent">
<h2>skills offered by more than one agent</h2>
{{- if not .F.Skills}}
<p class="empty">No skill id is offered by more than one agent.</p>
{{- end}}
{{- range .Skills}}
<details class="{{if .S.Consistent}}continue{{else}}abort{{end}}" data-search="{{.Search}}"{{if not .S.Consistent}} open="open"{{end}}><summary><code>{{.S.ID}}</code> — {{len .S.Agents}} agents, {{if .S.Consistent}}one contract{{else}}<b>contracts differ</b>: {{range $i, $d := .S.Differences}}{{if $i}}, {{end}}{{$d.Field}}{{end}}{{end}}</summary>
<table><tr><th>agent</th>{{range .S.Differences}}<th>{{.Field}}</th>{{end}}</tr>
{{- range .Rows}}
<tr>{{range $i, $c := .}}<td>{{if $i}}{{$c}}{{else}}<code>{{$c}}</code>{{end}}</td>{{end}}</tr>
{{- end}}
</table>
</details>
{{- end}}
</section>
{{end}}`, template.FuncMap{
	"short": render.ShortDigest,
	"clock": render.Clock,
	"when":  render.Time,
	"value": valueText,
})

// fleetView is what the page template reads.
type fleetView struct {
	render.Frame
	F           *Fleet
	Agents      []agentView
	Skills      []skillView
	Extended    []extendedView
	Unreachable int
}

type agentView struct {
	A      Agent
	Search string
	Tasks  string
	State  string
	OK     bool
	Bars   []bar
	Width  int
}

type bar struct {
	X, W  int
	Color string
	Title string
}

// extendedView is a row of the extended cards' table.
type extendedView struct {
	A           Agent
	E           *Extended
	State       string
	OK          bool
	Pinned      int
	Unavailable int
	Versions    []CardTasks // the extended cards tasks are pinned on
	Search      string
}

type skillView struct {
	S      detector.SharedSkill
	Search string
	Rows   [][]string
}

// WriteHTML writes the fleet view as one self-contained page: the agents
// (a bar of their tasks per card version, their state), every split brain,
// and the shared skills. A refresh of a second or more makes the page
// reload itself that often; 0 never. It returns the template's or w's
// error.
func (f *Fleet) WriteHTML(w io.Writer, refresh time.Duration) error {
	v := fleetView{F: f, Unreachable: f.unreachable(),
		Frame: render.Frame{Title: "carddrift fleet", Refresh: int(refresh / time.Second), Style: fleetCSS}}
	for _, a := range f.Agents {
		av := agentView{A: a, Tasks: tasksText(a), State: agentState(a), OK: a.SplitBrain == nil && a.UnreachableSince == nil,
			Search: agentSearch(a)}
		total := a.Pins()
		x := 0
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
			av.Bars = append(av.Bars, bar{X: x, W: w, Color: render.Color(i), Title: fmt.Sprintf("%d task(s) %s", t.Count, label)})
			x += w
		}
		av.Width = max(x, 1)
		v.Agents = append(v.Agents, av)
	}
	for _, a := range f.extendedAgents() {
		ev := extendedView{A: a, E: cmp.Or(a.Extended, &Extended{}), State: extendedState(a.Extended)}
		ev.OK = ev.State == "ok"
		ev.Pinned, ev.Unavailable = a.ExtendedTasks()
		for _, t := range a.Tasks {
			if t.Extended == events.ExtendedPinned {
				ev.Versions = append(ev.Versions, t)
			}
		}
		ev.Search = agentSearch(a)
		v.Extended = append(v.Extended, ev)
	}
	for _, s := range f.Skills {
		sv := skillView{S: s, Search: strings.ToLower(s.ID + " " + strings.Join(s.Agents, " "))}
		for _, a := range s.Agents {
			row := []string{a}
			for _, d := range s.Differences {
				row = append(row, valueText(d.Values[a]))
			}
			sv.Rows = append(sv.Rows, row)
		}
		v.Skills = append(v.Skills, sv)
	}
	return fleetPage.Execute(w, v)
}

// agentSearch is what the page's filter matches an agent's rows by.
func agentSearch(a Agent) string {
	return strings.ToLower(a.AgentURL + " " + a.Name + " " + strings.Join(a.Skills, " "))
}
