package main

import (
	"fmt"
	"html/template"
	"io"
	"strings"
	"time"

	"github.com/carddrift/carddrift/detector"
	"github.com/carddrift/carddrift/events/inspect/census"
)

// The fleet page is one self-contained document, like the replay page (its
// CSS and script, no external asset) and XHTML-compatible, made with
// html/template: every value read from a card (names, skill ids) is
// escaped as text. serve shows it at /fleet with a refresh.

const fleetCSS = `
.state-ok{color:#2c7a2c}
.state-bad{color:#b3151f;font-weight:600}
.summary span{margin-right:18px}
svg.bar{vertical-align:middle;margin-right:6px}
td.num{text-align:right}
`

var fleetPage = template.Must(template.New("fleet").Funcs(template.FuncMap{
	"short": shortDigest,
	"clock": fmtClock,
	"when":  func(t time.Time) string { return fmtTime(t) },
	"value": valueText,
}).Parse(`<!DOCTYPE html>
<html xmlns="http://www.w3.org/1999/xhtml" lang="en">
<head>
<meta charset="utf-8"/>
<meta name="viewport" content="width=device-width, initial-scale=1"/>
{{- if .Refresh}}
<meta http-equiv="refresh" content="{{.Refresh}}"/>
{{- end}}
<title>carddrift fleet</title>
<style>{{.CSS}}</style>
</head>
<body>
<header>
<h1>carddrift fleet</h1>
<p class="summary"><span>{{len .F.Agents}} agent(s)</span><span>{{.F.SplitBrains}} in split brain</span><span>{{.Unreachable}} unreachable</span><span>{{len .F.Skills}} shared skill(s), {{.F.InconsistentSkills}} inconsistent</span></p>
<p>taken {{when .F.Taken}} (UTC), consistency window {{.F.Window}}{{if .Refresh}}; this page refreshes every {{.Refresh}}s{{end}}</p>
<div class="tools"><input id="filter" type="search" placeholder="filter by agent or skill"/><button id="expand" type="button">expand all</button><button id="collapse" type="button">collapse all</button>
<span class="legend">bars: tasks pinned per card version, the live card first</span></div>
</header>
<main>
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
</main>
<script>{{.JS}}</script>
</body>
</html>
`))

// fleetView is what the page template reads.
type fleetView struct {
	F           *census.Fleet
	Agents      []agentView
	Skills      []skillView
	Unreachable int
	Refresh     int
	CSS         template.CSS
	JS          template.JS
}

type agentView struct {
	A      census.Agent
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

type skillView struct {
	S      detector.SharedSkill
	Search string
	Rows   [][]string
}

// writeFleetHTML renders the fleet page; refresh > 0 makes it reload
// itself every refresh seconds (serve's /fleet).
func writeFleetHTML(w io.Writer, fl *census.Fleet, refresh int) error {
	v := fleetView{F: fl, Refresh: refresh, CSS: template.CSS(replayCSS + fleetCSS), JS: template.JS(replayJS)}
	for _, a := range fl.Agents {
		av := agentView{A: a, Tasks: tasksText(a), State: agentState(a), OK: a.SplitBrain == nil && a.UnreachableSince == nil}
		av.Search = strings.ToLower(a.AgentURL + " " + a.Name + " " + strings.Join(a.Skills, " "))
		if a.UnreachableSince != nil {
			v.Unreachable++
		}
		total := a.Pins()
		x := 0
		for i, t := range a.Tasks {
			w := max(2, t.Count*120/max(total, 1))
			label := "live card"
			if !t.Live {
				label = "card " + orDash(t.Version) + " " + shortDigest(t.Digest)
				if t.Digest == "" {
					label = "no card yet (first fetch failed)"
				}
			}
			av.Bars = append(av.Bars, bar{X: x, W: w, Color: palette[i%len(palette)], Title: fmt.Sprintf("%d task(s) on %s", t.Count, label)})
			x += w
		}
		av.Width = max(x, 1)
		v.Agents = append(v.Agents, av)
	}
	for _, s := range fl.Skills {
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
