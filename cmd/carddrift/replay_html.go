package main

import (
	"fmt"
	"html"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/carddrift/carddrift/detector"
	"github.com/carddrift/carddrift/events"
	"github.com/carddrift/carddrift/events/replay"
)

// The HTML page is one self-contained document — inline CSS, SVG and a few
// lines of JavaScript, no external asset — and XHTML-compatible (every
// element closed, attributes quoted, only XML's predefined entities), so an
// XML parser reads it as well as a browser does. The script uses neither '<'
// nor '&', so it needs no escaping either way.

const replayCSS = `
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:0;background:#f6f7f9;color:#1d2330}
header{background:#1d2330;color:#fff;padding:14px 24px}
header h1{margin:0 0 4px;font-size:20px}
header p{margin:2px 0;color:#c9d1e0}
.tools{margin-top:8px}
.tools input{padding:4px 8px;width:260px;border-radius:4px;border:0}
.tools button{margin-left:6px;padding:4px 10px;border-radius:4px;border:0;cursor:pointer}
.legend{display:inline-block;margin-left:18px;color:#c9d1e0}
.legend svg{vertical-align:middle}
main{padding:12px 24px}
section.agent{background:#fff;border:1px solid #dde2ea;border-radius:6px;margin:0 0 18px;padding:10px 14px}
section.agent h2{font-size:16px;margin:4px 0 8px;word-break:break-all}
svg.timeline{width:100%;height:auto;display:block;background:#fbfcfd;border:1px solid #eef0f4}
svg text{font:11px system-ui,sans-serif;fill:#38414f}
svg .axis{stroke:#c3c9d3;stroke-width:1}
svg .span{stroke:#9aa3b2;stroke-width:1.5}
svg .tick{stroke:#56606f;stroke-width:1.2}
svg .band{stroke:#fff;stroke-width:.5}
svg .mark{cursor:pointer}
svg .mark:hover{opacity:.75}
.swatch{display:inline-block;width:12px;height:12px;border-radius:2px;vertical-align:-2px;margin-right:4px;border:1px solid #0002}
.cards{margin:8px 0;font-size:12px;color:#4a5363}
.cards span{margin-right:14px;white-space:nowrap}
details{margin:6px 0;border-left:3px solid #dde2ea;padding-left:10px}
details summary{cursor:pointer}
details.abort{border-left-color:#d62728}
details.replan{border-left-color:#ff7f0e}
details.continue{border-left-color:#2ca02c}
table{border-collapse:collapse;font-size:12px;margin:6px 0}
td:first-child{white-space:nowrap}
td,th{padding:2px 8px;border-bottom:1px solid #eef0f4;text-align:left;vertical-align:top}
th{color:#5b6474;font-weight:600}
code{font:12px ui-monospace,SFMono-Regular,Menlo,monospace}
.sev-breaking{color:#b3151f;font-weight:600}
.sev-warning{color:#a85b00}
.sev-info{color:#5b6474}
dl{display:grid;grid-template-columns:max-content auto;gap:2px 12px;margin:6px 0}
dt{color:#5b6474}
dd{margin:0}
.empty{color:#5b6474;font-style:italic}
`

const replayJS = `
(function () {
  var q = document.getElementById('filter');
  if (q) {
    q.addEventListener('input', function () {
      var v = q.value.toLowerCase();
      document.querySelectorAll('[data-search]').forEach(function (el) {
        el.style.display = el.getAttribute('data-search').indexOf(v) === -1 ? 'none' : '';
      });
    });
  }
  function all(open) {
    document.querySelectorAll('details').forEach(function (d) { d.open = open; });
  }
  var ex = document.getElementById('expand');
  if (ex) { ex.addEventListener('click', function () { all(true); }); }
  var co = document.getElementById('collapse');
  if (co) { co.addEventListener('click', function () { all(false); }); }
  document.querySelectorAll('[data-target]').forEach(function (m) {
    m.addEventListener('click', function () {
      var d = document.getElementById(m.getAttribute('data-target'));
      if (!d) { return; }
      for (var p = d; p; p = p.parentElement) {
        if (p.tagName === 'DETAILS') { p.open = true; }
      }
      d.scrollIntoView({behavior: 'smooth', block: 'center'});
    });
  });
})();
`

// Colours of verdict actions and unreachable fetches.
var actionColor = map[detector.Action]string{
	detector.Abort: "#d62728", detector.Replan: "#ff7f0e", detector.Continue: "#2ca02c",
}

const unreachableColor = "#7f7f7f"

func esc(s string) string { return html.EscapeString(s) }

// palette colours card versions in order of first sight within a section,
// so that consecutive versions of one agent never look alike.
var palette = []string{
	"#8ecae6", "#ffb703", "#90be6d", "#f28482", "#b497d6",
	"#f9c74f", "#43aa8b", "#e76f51", "#a3c4f3", "#cdb4db",
}

// page accumulates the document.
type page struct {
	b      strings.Builder
	colors map[string]string // digest → colour, per section
}

// resetColors starts a section's colours: digests in order of first sight.
func (p *page) resetColors(digests []string) {
	p.colors = map[string]string{}
	for _, d := range digests {
		p.color(d)
	}
}

// color returns the colour of a card version in the current section.
func (p *page) color(d string) string {
	if c, ok := p.colors[d]; ok {
		return c
	}
	if p.colors == nil {
		p.colors = map[string]string{}
	}
	c := palette[len(p.colors)%len(palette)]
	p.colors[d] = c
	return c
}

func (p *page) f(format string, args ...any) { fmt.Fprintf(&p.b, format, args...) }
func (p *page) s(s string)                   { p.b.WriteString(s) }

func (p *page) open(title, subtitle string, tools bool) {
	p.s("<!DOCTYPE html>\n<html xmlns=\"http://www.w3.org/1999/xhtml\" lang=\"en\">\n<head>\n<meta charset=\"utf-8\"/>\n")
	p.s("<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\"/>\n")
	p.f("<title>%s</title>\n<style>%s</style>\n</head>\n<body>\n<header>\n<h1>%s</h1>\n<p>%s</p>\n", esc(title), replayCSS, esc(title), esc(subtitle))
	if tools {
		p.s(`<div class="tools"><input id="filter" type="search" placeholder="filter by task or agent"/>`)
		p.s(`<button id="expand" type="button">expand all</button><button id="collapse" type="button">collapse all</button>`)
		p.s(`<span class="legend">`)
		for _, a := range []detector.Action{detector.Abort, detector.Replan, detector.Continue} {
			p.f(`<svg width="14" height="14" viewBox="0 0 14 14"><polygon points="7,1 13,7 7,13 1,7" fill="%s"/></svg> %s `, actionColor[a], a)
		}
		p.f(`<svg width="14" height="14" viewBox="0 0 14 14"><path d="M2,2 L12,12 M12,2 L2,12" stroke="%s" stroke-width="2.5"/></svg> unreachable `, unreachableColor)
		p.s(`<svg width="14" height="14" viewBox="0 0 14 14"><line x1="7" y1="1" x2="7" y2="13" stroke="#56606f" stroke-width="1.5"/></svg> lifecycle event; bands: card versions (pinned per task, live per agent)</span></div>`)
	}
	p.s("</header>\n<main>\n")
}

func (p *page) close() {
	p.f("</main>\n<script>%s</script>\n</body>\n</html>\n", replayJS)
}

// findingsTable renders findings as a table.
func (p *page) findingsTable(fs []detector.Finding) {
	if len(fs) == 0 {
		p.s(`<p class="empty">no findings</p>`)
		return
	}
	p.s("<table><tr><th>severity</th><th>rule</th><th>path</th><th>message</th></tr>")
	for _, f := range fs {
		p.f(`<tr><td class="sev-%s">%s</td><td><code>%s</code></td><td><code>%s</code></td><td>%s</td></tr>`,
			f.Severity, f.Severity, esc(f.Rule), esc(orDash(f.Path)), esc(f.Message))
	}
	p.s("</table>\n")
}

func (p *page) change(c *replay.Change) {
	switch {
	case c == nil:
	case len(c.Missing) > 0:
		p.f(`<p class="empty">no diff: carddrift never stored the body of %s</p>`, esc(strings.Join(c.Missing, ", ")))
	case c.Error != "":
		p.f(`<p class="empty">no diff: %s</p>`, esc(c.Error))
	default:
		p.findingsTable(c.Findings)
	}
}

// findingsTitle renders findings for a tooltip.
func findingsTitle(fs []detector.Finding) string {
	var b strings.Builder
	for i, f := range fs {
		if i == 12 {
			fmt.Fprintf(&b, "\n… %d more", len(fs)-i)
			break
		}
		fmt.Fprintf(&b, "\n%s %s %s", f.Severity, f.Rule, f.Path)
	}
	return b.String()
}

func changeTitle(c *replay.Change) string {
	switch {
	case c == nil:
		return ""
	case len(c.Missing) > 0:
		return "\nno diff: body not recorded"
	case c.Error != "":
		return "\nno diff: " + c.Error
	case len(c.Findings) == 0:
		return "\nno findings"
	}
	return "\nchanged from " + shortDigest(c.From) + ":" + findingsTitle(c.Findings)
}

// agentGroup is the part of a timeline about one agent host.
type agentGroup struct {
	key, url string
	entries  []int // indexes into the timeline
}

func groupByAgent(tl *replay.Timeline) []*agentGroup {
	byKey := map[string]*agentGroup{}
	var groups []*agentGroup
	for i, e := range tl.Entries {
		key, err := events.AgentKey(e.AgentURL)
		if err != nil {
			key = e.AgentURL
		}
		g := byKey[key]
		if g == nil {
			g = &agentGroup{key: key, url: e.AgentURL}
			byKey[key] = g
			groups = append(groups, g)
		}
		if e.AgentURL < g.url {
			g.url = e.AgentURL
		}
		g.entries = append(g.entries, i)
	}
	slices.SortFunc(groups, func(a, b *agentGroup) int { return strings.Compare(a.url, b.url) })
	return groups
}

// Geometry of a timeline SVG.
const (
	svgW   = 1200
	labelW = 190
	padR   = 16
	axisH  = 26
	laneH  = 26
)

type scale struct{ t0, t1 time.Time }

func (s scale) x(t time.Time) float64 {
	span := s.t1.Sub(s.t0)
	if span <= 0 {
		return labelW
	}
	return labelW + float64(t.Sub(s.t0))/float64(span)*float64(svgW-labelW-padR)
}

func writeTimelineHTML(w io.Writer, tl *replay.Timeline) error {
	var p page
	sub := fmt.Sprintf("%s — %d entries, %d task(s), %d agent(s)", describeQuery(tl.Query), len(tl.Entries), len(tl.Tasks()), len(tl.Agents()))
	if n := len(tl.Entries); n > 0 {
		sub += fmt.Sprintf("; %s to %s (UTC)", fmtTime(tl.Entries[0].Time), fmtTime(tl.Entries[n-1].Time))
	}
	p.open("carddrift replay", sub, true)
	if len(tl.Entries) == 0 {
		p.s(`<p class="empty">The history holds nothing for this query.</p>`)
	}
	stories := map[string]*replay.Story{}
	for i := range tl.Stories {
		stories[tl.Stories[i].TaskID] = &tl.Stories[i]
	}
	groups := groupByAgent(tl)
	if len(groups) > 1 {
		p.agentIndex(tl, groups)
	}
	for gi, g := range groups {
		p.agentSection(tl, g, gi, stories)
	}
	p.close()
	_, err := io.WriteString(w, p.b.String())
	return err
}

// agentIndex lists the agents with their verdicts, linking to their
// sections.
func (p *page) agentIndex(tl *replay.Timeline, groups []*agentGroup) {
	p.s(`<section class="agent"><h2>agents</h2><table><tr><th>agent</th><th>tasks</th><th>card versions</th><th>abort</th><th>replan</th><th>continue</th><th>unreachable</th></tr>`)
	for gi, g := range groups {
		var tasks, digests []string
		counts := map[string]int{}
		for _, i := range g.entries {
			e := &tl.Entries[i]
			if e.TaskID != "" && !slices.Contains(tasks, e.TaskID) {
				tasks = append(tasks, e.TaskID)
			}
			for _, d := range []string{e.Digests.Pinned, e.Digests.Live} {
				if d != "" && !slices.Contains(digests, d) {
					digests = append(digests, d)
				}
			}
			switch d := e.Data.(type) {
			case events.Drift:
				counts[string(d.Verdict.Action)]++
			case events.Unreachable:
				counts["unreachable"]++
			}
		}
		p.f(`<tr data-search="%s"><td><a href="#agent-%d">%s</a></td><td>%d</td><td>%d</td>`, esc(strings.ToLower(g.url)), gi, esc(g.url), len(tasks), len(digests))
		for _, k := range []string{"abort", "replan", "continue", "unreachable"} {
			if counts[k] == 0 {
				p.s("<td></td>")
			} else {
				p.f("<td>%d</td>", counts[k])
			}
		}
		p.s("</tr>")
	}
	p.s("</table></section>\n")
}

// lane is one row of an agent's SVG: the live card, or one task.
type lane struct {
	task    string
	entries []int
}

func (p *page) agentSection(tl *replay.Timeline, g *agentGroup, gi int, stories map[string]*replay.Story) {
	es := tl.Entries
	sc := scale{t0: es[g.entries[0]].Time, t1: es[g.entries[len(g.entries)-1]].Time}
	if !sc.t1.After(sc.t0) {
		sc.t1 = sc.t0.Add(time.Second)
	}
	// Lanes: the agent's live card, then each task by its first entry.
	live := lane{}
	var tasks []*lane
	byTask := map[string]*lane{}
	for _, i := range g.entries {
		e := &es[i]
		if e.TaskID == "" {
			live.entries = append(live.entries, i)
			continue
		}
		l := byTask[e.TaskID]
		if l == nil {
			l = &lane{task: e.TaskID}
			byTask[e.TaskID] = l
			tasks = append(tasks, l)
		}
		l.entries = append(l.entries, i)
	}
	search := strings.ToLower(g.url)
	for _, l := range tasks {
		search += " " + strings.ToLower(l.task)
	}
	p.f("<section class=\"agent\" id=\"agent-%d\" data-search=\"%s\">\n<h2>agent %s</h2>\n", gi, esc(search), esc(g.url))

	// Card versions of this agent, in order of first sight.
	var digests []string
	for _, i := range g.entries {
		for _, d := range []string{es[i].Digests.Pinned, es[i].Digests.Live} {
			if d != "" && !slices.Contains(digests, d) {
				digests = append(digests, d)
			}
		}
	}
	p.resetColors(digests)
	if len(digests) > 0 {
		p.s(`<div class="cards">card versions: `)
		for _, d := range digests {
			p.f(`<span title="%s"><span class="swatch" style="background:%s"></span><code>%s</code></span>`, esc(d), p.color(d), shortDigest(d))
		}
		p.s("</div>\n")
	}

	height := axisH + laneH*(1+len(tasks)) + 8
	p.f(`<svg class="timeline" xmlns="http://www.w3.org/2000/svg" viewBox="0 0 %d %d" width="%d" height="%d" role="img" aria-label="timeline of %s">`,
		svgW, height, svgW, height, esc(g.url))
	p.s("\n")
	// Axis with five time ticks.
	p.f(`<line class="axis" x1="%d" y1="%d" x2="%d" y2="%d"/>`, labelW, axisH-6, svgW-padR, axisH-6)
	for k := 0; k <= 4; k++ {
		t := sc.t0.Add(time.Duration(int64(sc.t1.Sub(sc.t0)) * int64(k) / 4))
		x := sc.x(t)
		anchor := "middle"
		switch k {
		case 0:
			anchor = "start"
		case 4:
			anchor = "end"
		}
		p.f(`<line class="axis" x1="%.1f" y1="%d" x2="%.1f" y2="%d"/><text x="%.1f" y="%d" text-anchor="%s">%s</text>`,
			x, axisH-10, x, height-4, x, axisH-12, anchor, t.UTC().Format("15:04:05.000"))
	}
	p.s("\n")
	p.liveLane(tl, &live, sc, axisH)
	for li, l := range tasks {
		p.taskLane(tl, l, sc, axisH+laneH*(li+1), gi)
	}
	p.s("</svg>\n")

	// Expansion: each task's story, entries and verdicts.
	for _, l := range tasks {
		p.taskDetails(tl, l, gi, stories[l.task])
	}
	p.s("</section>\n")
}

func (p *page) laneLabel(y int, label, title string) {
	short := label
	if len(short) > 28 {
		short = short[:27] + "…"
	}
	p.f(`<text x="6" y="%d"><title>%s</title>%s</text>`, y+laneH/2+4, esc(title), esc(short))
}

// liveLane draws the agent's live card as bands between observations.
func (p *page) liveLane(tl *replay.Timeline, l *lane, sc scale, y int) {
	p.f(`<g class="lane live">`)
	p.laneLabel(y, "live card", "the card the agent served, from card.observed")
	var obs []int
	for _, i := range l.entries {
		if tl.Entries[i].Kind == replay.KindObservation {
			obs = append(obs, i)
		}
	}
	for k := 0; k < len(obs); {
		e := &tl.Entries[obs[k]]
		j := k + 1
		for j < len(obs) && tl.Entries[obs[j]].Digests.Live == e.Digests.Live {
			j++
		}
		end := sc.t1
		if j < len(obs) {
			end = tl.Entries[obs[j]].Time
		}
		x0, x1 := sc.x(e.Time), sc.x(end)
		p.f(`<rect class="band" x="%.1f" y="%d" width="%.1f" height="%d" fill="%s"><title>%s</title></rect>`,
			x0, y+5, max(x1-x0, 1.5), laneH-10, p.color(e.Digests.Live),
			esc(fmt.Sprintf("live %s\n%s to %s\n%d observation(s)%s", e.Digests.Live, fmtTime(e.Time), fmtTime(end), j-k, changeTitle(e.Change))))
		k = j
	}
	for _, i := range l.entries {
		e := &tl.Entries[i]
		if e.Kind == replay.KindUnreachable {
			p.cross(sc.x(e.Time), y+laneH/2, fmt.Sprintf("%s %s\n%s", e.Type, fmtTime(e.Time), entryDetail(e)))
		}
	}
	p.s("</g>\n")
}

func (p *page) cross(x float64, y int, title string) {
	p.f(`<g class="mark"><title>%s</title><path d="M%.1f,%d L%.1f,%d M%.1f,%d L%.1f,%d" stroke="%s" stroke-width="2.5"/></g>`,
		esc(title), x-5, y-5, x+5, y+5, x+5, y-5, x-5, y+5, unreachableColor)
}

func verdictID(gi, i int) string { return fmt.Sprintf("v-%d-%d", gi, i) }
func taskID(gi int, task string) string {
	return fmt.Sprintf("t-%d-%s", gi, events.Token(task))
}

// taskLane draws a task: its span, pinned card bands, lifecycle ticks,
// verdicts and unreachable fetches.
func (p *page) taskLane(tl *replay.Timeline, l *lane, sc scale, y, gi int) {
	es := tl.Entries
	first, last := es[l.entries[0]].Time, es[l.entries[len(l.entries)-1]].Time
	p.f(`<g class="lane" data-search="%s">`, esc(strings.ToLower(l.task)))
	p.laneLabel(y, l.task, "task "+l.task)
	mid := y + laneH/2
	p.f(`<line class="span" x1="%.1f" y1="%d" x2="%.1f" y2="%d"/>`, sc.x(first), mid, max(sc.x(last), sc.x(first)+1), mid)
	// Pinned bands: from each pin to the next one (or the task's end).
	var pins []int
	for _, i := range l.entries {
		if es[i].Kind == replay.KindPin {
			pins = append(pins, i)
		}
	}
	for k, i := range pins {
		end := last
		if k+1 < len(pins) {
			end = es[pins[k+1]].Time
		}
		d := es[i].Data.(events.Pinned)
		x0, x1 := sc.x(es[i].Time), sc.x(end)
		p.f(`<rect class="band" x="%.1f" y="%d" width="%.1f" height="%d" fill="%s" opacity="0.9"><title>%s</title></rect>`,
			x0, y+7, max(x1-x0, 2), laneH-14, p.color(d.Digest),
			esc(fmt.Sprintf("pinned %s (%s)\n%s to %s%s", d.Digest, d.Source, fmtTime(es[i].Time), fmtTime(end), changeTitle(es[i].Change))))
	}
	target := taskID(gi, l.task)
	for _, i := range l.entries {
		e := &es[i]
		x := sc.x(e.Time)
		switch e.Kind {
		case replay.KindLifecycle:
			p.f(`<g class="mark" data-target="%s"><title>%s</title><line class="tick" x1="%.1f" y1="%d" x2="%.1f" y2="%d"/></g>`,
				target, esc(fmt.Sprintf("%s %s\n%s", e.Type, fmtTime(e.Time), entryDetail(e))), x, y+4, x, y+laneH-4)
		case replay.KindUnreachable:
			p.cross(x, mid, fmt.Sprintf("%s %s\n%s", e.Type, fmtTime(e.Time), entryDetail(e)))
		}
	}
	// Verdicts last, on top.
	for _, i := range l.entries {
		e := &es[i]
		d, ok := e.Data.(events.Drift)
		if !ok {
			continue
		}
		x := sc.x(e.Time)
		title := fmt.Sprintf("%s %s\n%s\npinned %s → live %s%s", strings.ToUpper(string(d.Verdict.Action)),
			fmtTime(e.Time), d.Verdict.Reason, shortDigest(d.Pinned.Digest), shortDigest(d.Live.Digest), findingsTitle(d.Findings))
		p.f(`<g class="mark verdict" data-target="%s"><title>%s</title><polygon points="%.1f,%d %.1f,%d %.1f,%d %.1f,%d" fill="%s" stroke="#1d2330" stroke-width="0.8"/></g>`,
			verdictID(gi, i), esc(title), x, mid-8, x+8, mid, x, mid+8, x-8, mid, actionColor[d.Verdict.Action])
	}
	p.s("</g>\n")
}

// taskDetails is the expandable account of one task.
func (p *page) taskDetails(tl *replay.Timeline, l *lane, gi int, s *replay.Story) {
	es := tl.Entries
	class, summary := "", "no verdict"
	if s != nil && s.Moment != nil {
		summary = s.Moment.What
		class = string(s.Moment.Action)
	}
	p.f(`<details id="%s" class="%s" data-search="%s"><summary><b>task %s</b> — %s</summary>`,
		taskID(gi, l.task), class, esc(strings.ToLower(l.task)), esc(l.task), esc(summary))
	if s != nil {
		p.s("<dl>")
		if s.Requirements != nil {
			r := s.Requirements
			p.f("<dt>planned</dt><dd>skill <code>%s</code>, %s, idempotent %v, streaming %v, push %v</dd>",
				esc(orDash(r.SkillID)), esc(string(r.Posture)), r.Idempotent, r.Streaming, r.PushNotifications)
		}
		p.f(`<dt>planned against</dt><dd>%s</dd>`, p.digestHTML(s.Planned, fmt.Sprintf("%s, pinned %s", orDash(s.PinSource), fmtTime(s.PinnedAt))))
		if s.Moment != nil {
			p.f(`<dt>decisive event</dt><dd>%s <code>%s</code>: %s</dd>`, esc(fmtTime(s.Moment.Time)), esc(s.Moment.Type), esc(s.Moment.What))
		}
		p.f(`<dt>live then</dt><dd>%s</dd>`, p.digestHTML(s.Live, "fetched "+fmtTime(s.LiveAt)))
		p.f(`<dt>verdicts</dt><dd>abort %d, replan %d, continue %d; last state %s</dd>`, s.Verdicts.Abort, s.Verdicts.Replan, s.Verdicts.Continue, esc(orDash(s.State)))
		p.s("</dl>")
		if s.Change != nil {
			p.s("<p><b>what changed</b></p>")
			p.change(s.Change)
		}
	}
	p.s("<table><tr><th>time</th><th>kind</th><th>type</th><th>digests</th><th>detail</th></tr>")
	for _, i := range l.entries {
		e := &es[i]
		p.f(`<tr><td><code>%s</code></td><td>%s</td><td><code>%s</code></td><td><code>%s</code></td><td>%s</td></tr>`,
			esc(fmtTime(e.Time)), e.Kind, esc(e.Type), esc(entryDigests(e)), esc(entryDetail(e)))
	}
	p.s("</table>\n")
	for _, i := range l.entries {
		e := &es[i]
		d, ok := e.Data.(events.Drift)
		if !ok {
			continue
		}
		p.f(`<details id="%s" class="%s"><summary>%s %s: %s</summary>`, verdictID(gi, i), d.Verdict.Action,
			esc(fmtTime(e.Time)), strings.ToUpper(string(d.Verdict.Action)), esc(d.Verdict.Reason))
		p.f(`<p>pinned %s → live %s; trigger <code>%s</code> <code>%s</code></p>`, p.digestHTML(d.Pinned.Digest, ""), p.digestHTML(d.Live.Digest, ""),
			esc(d.Trigger.Type), esc(d.Trigger.EventID))
		p.s("<p>recorded findings</p>")
		p.findingsTable(d.Findings)
		p.s("</details>\n")
	}
	p.s("</details>\n")
}

func (p *page) digestHTML(d, note string) string {
	if d == "" {
		return `<span class="empty">unknown</span>`
	}
	s := fmt.Sprintf(`<span class="swatch" style="background:%s"></span><code>%s</code>`, p.color(d), esc(d))
	if note != "" {
		s += " (" + esc(note) + ")"
	}
	return s
}

func writeCardsHTML(w io.Writer, h *replay.CardHistory) error {
	var p page
	p.open("carddrift replay: card history", fmt.Sprintf("agent %s — %d card version(s)", h.AgentURL, len(h.Versions)), false)
	p.f("<section class=\"agent\">\n<h2>agent %s</h2>\n", esc(h.AgentURL))
	if len(h.Versions) == 0 {
		p.s(`<p class="empty">No card of this agent was recorded.</p>`)
	} else {
		var digests []string
		for _, v := range h.Versions {
			digests = append(digests, v.Digest)
		}
		p.resetColors(digests)
		sc := scale{t0: h.Versions[0].FirstSeen}
		for _, v := range h.Versions {
			if v.LastSeen.After(sc.t1) {
				sc.t1 = v.LastSeen
			}
		}
		if !sc.t1.After(sc.t0) {
			sc.t1 = sc.t0.Add(time.Second)
		}
		height := axisH + laneH*len(h.Versions) + 8
		p.f(`<svg class="timeline" xmlns="http://www.w3.org/2000/svg" viewBox="0 0 %d %d" width="%d" height="%d" role="img" aria-label="card versions">`, svgW, height, svgW, height)
		p.f(`<line class="axis" x1="%d" y1="%d" x2="%d" y2="%d"/>`, labelW, axisH-6, svgW-padR, axisH-6)
		p.f(`<text x="%d" y="%d">%s</text><text x="%d" y="%d" text-anchor="end">%s</text>`, labelW, axisH-12, fmtTime(sc.t0), svgW-padR, axisH-12, fmtTime(sc.t1))
		for i, v := range h.Versions {
			y := axisH + laneH*i
			p.laneLabel(y, fmt.Sprintf("%d  %s %s", i+1, shortDigest(v.Digest), v.CardVersion), v.Digest)
			x0, x1 := sc.x(v.FirstSeen), sc.x(v.LastSeen)
			p.f(`<rect class="band" x="%.1f" y="%d" width="%.1f" height="%d" fill="%s"><title>%s</title></rect>`, x0, y+6, max(x1-x0, 3), laneH-12, p.color(v.Digest),
				esc(fmt.Sprintf("%s\nfirst seen %s\nlast seen %s\nobserved %d, pinned %d, drift %d%s", v.Digest, fmtTime(v.FirstSeen), fmtTime(v.LastSeen), v.Observed, v.Pinned, v.Drift, changeTitle(v.Change))))
		}
		p.s("</svg>\n")
		p.s("<table><tr><th>#</th><th>digest</th><th>version</th><th>first seen</th><th>last seen</th><th>observed</th><th>pinned</th><th>drift</th></tr>")
		for i, v := range h.Versions {
			p.f(`<tr><td>%d</td><td>%s</td><td>%s</td><td><code>%s</code></td><td><code>%s</code></td><td>%d</td><td>%d</td><td>%d</td></tr>`,
				i+1, p.digestHTML(v.Digest, ""), esc(orDash(v.CardVersion)), fmtTime(v.FirstSeen), fmtTime(v.LastSeen), v.Observed, v.Pinned, v.Drift)
		}
		p.s("</table>\n")
		for i, v := range h.Versions[1:] {
			p.f(`<details open="open"><summary>changelog %d → %d</summary>`, i+1, i+2)
			p.change(v.Change)
			p.s("</details>\n")
		}
	}
	p.s("</section>\n")
	p.close()
	_, err := io.WriteString(w, p.b.String())
	return err
}
