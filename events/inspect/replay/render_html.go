package replay

import (
	_ "embed"
	"fmt"
	"html/template"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/carddrift/carddrift/detector"
	"github.com/carddrift/carddrift/events"
	"github.com/carddrift/carddrift/events/inspect/render"
)

// This file works out what replay.html.tmpl shows: the colours, the
// geometry of the timelines and the words of the tooltips.

//go:embed replay.html.tmpl
var replayTemplateText string

var replayTemplate = render.Page("replay", replayTemplateText, template.FuncMap{
	"when": render.Time, "short": render.ShortDigest, "orDash": render.OrDash, "join": strings.Join,
	"digests": entryDigests, "detail": entryDetail, "list": func(v ...int) []int { return v },
	"upper": func(a detector.Action) string { return strings.ToUpper(string(a)) },
})

var actionColor = map[detector.Action]string{
	detector.Abort: "#d62728", detector.Replan: "#ff7f0e", detector.Continue: "#2ca02c",
}

const unreachableColor = "#7f7f7f"

// Geometry of a timeline SVG.
const (
	svgW   = 1200
	labelW = 190
	padR   = 16
	axisH  = 26
	laneH  = 26
)

// coord is an SVG x coordinate, written with one decimal.
type coord float64

func (c coord) String() string { return strconv.FormatFloat(float64(c), 'f', 1, 64) }

type scale struct{ t0, t1 time.Time }

func (s scale) x(t time.Time) coord {
	span := s.t1.Sub(s.t0)
	if span <= 0 {
		return labelW
	}
	return coord(labelW + float64(t.Sub(s.t0))/float64(span)*float64(svgW-labelW-padR))
}

// The values the templates show.
type (
	// pageView is a whole page: a timeline or a card history.
	pageView struct {
		render.Frame
		Subtitle string
		// Capped, on a timeline page that draws only part of its answer,
		// says so and which command gives the rest.
		Capped string
		// Legend, on timeline pages, is the marks of the verdict actions.
		Legend           []legendMark
		UnreachableColor string
		Timeline         *timelineView
		Cards            *cardsView
	}
	legendMark struct{ Action, Color string }

	timelineView struct {
		Empty  bool
		Index  []indexRow // nil for one agent
		Agents []sectionView
	}
	indexRow struct {
		Anchor, URL, Search string
		Tasks, Versions     int
		Verdicts            VerdictCounts
		Unreachable         int
	}
	sectionView struct {
		Anchor, URL, Search string
		Versions            []digestView
		SVG                 svgView
		Tasks               []taskView
	}

	svgView struct {
		W, H  int
		Axis  axisView
		Ticks []tickView
		Lanes []laneView
	}
	axisView struct{ X1, X2, Y int }
	tickView struct {
		X             coord
		Y1, Y2, TextY int
		Anchor, Text  string
	}
	laneView struct {
		Search   string // a task lane's; "" for the live card
		Label    labelView
		Span     *spanView
		Bands    []bandView
		Marks    []markView // lifecycle ticks and unreachable crosses, in order
		Verdicts []verdictMark
	}
	labelView struct {
		Y           int
		Title, Text string
	}
	spanView struct {
		X1, X2 coord
		Y      int
	}
	bandView struct {
		X, W                  coord
		Y, H                  int
		Color, Opacity, Title string
	}
	// markView is a lifecycle tick (Target, X, Y1, Y2) or, with Cross set,
	// an unreachable cross (Path, Color).
	markView struct {
		Cross         bool
		Target, Title string
		X             coord
		Y1, Y2        int
		Path, Color   string
	}
	verdictMark struct{ Target, Title, Points, Color string }

	// taskView is the expandable account of one task: its story, entries
	// and verdicts.
	taskView struct {
		Anchor, Class, Search, Task, Summary string
		Story                                *Story
		PlannedAgainst, LiveThen             digestView
		Entries                              []*Entry
		Verdicts                             []verdictView
	}
	verdictView struct {
		Anchor       string
		Time         time.Time
		D            events.Drift
		Pinned, Live digestView
	}
	// digestView is a card digest with its colour; Digest "" is unknown.
	digestView struct{ Digest, Color, Note string }

	cardsView struct {
		AgentURL   string
		SVG        svgView
		TextY      int
		From, To   string
		Rows       []cardRow
		Changelogs []changelogView
	}
	cardRow struct {
		N      int
		Digest digestView
		V      *Version
	}
	changelogView struct {
		From, To int
		Change   *Change
	}
)

// colors assigns palette colours to card versions in order of first sight.
type colors map[string]string

func (c colors) of(d string) string {
	if col, ok := c[d]; ok {
		return col
	}
	col := render.Color(len(c))
	c[d] = col
	return col
}

func (c colors) digest(d, note string) digestView {
	if d == "" {
		return digestView{}
	}
	return digestView{Digest: d, Color: c.of(d), Note: note}
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

func changeTitle(c *Change) string {
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
	return "\nchanged from " + render.ShortDigest(c.From) + ":" + findingsTitle(c.Findings)
}

// agentGroup is the part of a timeline about one agent host.
type agentGroup struct {
	key, url string
	entries  []int // indexes into the timeline
}

func groupByAgent(tl *Timeline) []*agentGroup {
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

// WriteHTML writes the timeline as one self-contained page (carddrift replay
// --format html): per agent an SVG timeline of its live card and tasks, and
// each task's story, entries and verdicts. It returns the template's or w's
// error.
func (tl *Timeline) WriteHTML(w io.Writer) error {
	sub := fmt.Sprintf("%s — %d entries, %d task(s), %d agent(s)", describeQuery(tl.Query), len(tl.Entries), len(tl.Tasks()), len(tl.Agents()))
	if n := len(tl.Entries); n > 0 {
		sub += fmt.Sprintf("; %s to %s (UTC)", render.Time(tl.Entries[0].Time), render.Time(tl.Entries[n-1].Time))
	}
	p := &pageView{Frame: render.Frame{Title: "carddrift replay"}, Subtitle: sub, UnreachableColor: unreachableColor, Timeline: &timelineView{Empty: len(tl.Entries) == 0}}
	if tl.Omitted > 0 {
		p.Capped = fmt.Sprintf("This page draws the first %d entries of %d; %d more are left out.", len(tl.Entries), len(tl.Entries)+tl.Omitted, tl.Omitted)
		if tl.Rest != "" {
			p.Capped += " All of them: " + tl.Rest
		}
	}
	for _, a := range []detector.Action{detector.Abort, detector.Replan, detector.Continue} {
		p.Legend = append(p.Legend, legendMark{Action: string(a), Color: actionColor[a]})
	}
	stories := map[string]*Story{}
	for i := range tl.Stories {
		stories[tl.Stories[i].TaskID] = &tl.Stories[i]
	}
	groups := groupByAgent(tl)
	if len(groups) > 1 {
		p.Timeline.Index = agentIndex(tl, groups)
	}
	for gi, g := range groups {
		p.Timeline.Agents = append(p.Timeline.Agents, agentSection(tl, g, gi, stories))
	}
	return replayTemplate.Execute(w, p)
}

func agentAnchor(gi int) string { return "agent-" + strconv.Itoa(gi) }

// agentDigests returns the card versions an agent's entries name.
func agentDigests(tl *Timeline, g *agentGroup) []string {
	var digests []string
	for _, i := range g.entries {
		e := &tl.Entries[i]
		for _, d := range []string{e.Digests.Pinned, e.Digests.Live} {
			if d != "" && !slices.Contains(digests, d) {
				digests = append(digests, d)
			}
		}
	}
	return digests
}

// agentIndex lists the agents with their verdicts.
func agentIndex(tl *Timeline, groups []*agentGroup) []indexRow {
	var rows []indexRow
	for gi, g := range groups {
		var tasks []string
		row := indexRow{Anchor: agentAnchor(gi), URL: g.url, Search: strings.ToLower(g.url)}
		for _, i := range g.entries {
			e := &tl.Entries[i]
			if e.TaskID != "" && !slices.Contains(tasks, e.TaskID) {
				tasks = append(tasks, e.TaskID)
			}
			switch d := e.Data.(type) {
			case events.Drift:
				row.Verdicts.Add(d.Verdict.Action)
			case events.Unreachable:
				row.Unreachable++
			}
		}
		row.Tasks, row.Versions = len(tasks), len(agentDigests(tl, g))
		rows = append(rows, row)
	}
	return rows
}

// lane is one row of an agent's SVG: the live card, or one task.
type lane struct {
	task    string
	entries []int
}

func agentSection(tl *Timeline, g *agentGroup, gi int, stories map[string]*Story) sectionView {
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
	v := sectionView{Anchor: agentAnchor(gi), URL: g.url, Search: strings.ToLower(g.url)}
	for _, l := range tasks {
		v.Search += " " + strings.ToLower(l.task)
	}

	// Card versions of this agent, in order of first sight.
	col := colors{}
	for _, d := range agentDigests(tl, g) {
		v.Versions = append(v.Versions, col.digest(d, ""))
	}

	height := axisH + laneH*(1+len(tasks)) + 8
	v.SVG = svgView{W: svgW, H: height, Axis: axisView{X1: labelW, X2: svgW - padR, Y: axisH - 6}}
	// Five time ticks.
	for k := 0; k <= 4; k++ {
		t := sc.t0.Add(time.Duration(int64(sc.t1.Sub(sc.t0)) * int64(k) / 4))
		anchor := "middle"
		switch k {
		case 0:
			anchor = "start"
		case 4:
			anchor = "end"
		}
		v.SVG.Ticks = append(v.SVG.Ticks, tickView{X: sc.x(t), Y1: axisH - 10, Y2: height - 4, TextY: axisH - 12, Anchor: anchor, Text: t.UTC().Format("15:04:05.000")})
	}
	v.SVG.Lanes = append(v.SVG.Lanes, liveLane(tl, &live, sc, axisH, col))
	for li, l := range tasks {
		v.SVG.Lanes = append(v.SVG.Lanes, taskLane(tl, l, sc, axisH+laneH*(li+1), gi, col))
	}
	// Expansion: each task's story, entries and verdicts.
	for _, l := range tasks {
		v.Tasks = append(v.Tasks, taskDetails(tl, l, gi, stories[l.task], col))
	}
	return v
}

func laneLabel(y int, label, title string) labelView {
	short := label
	if len(short) > 28 {
		short = short[:27] + "…"
	}
	return labelView{Y: y + laneH/2 + 4, Title: title, Text: short}
}

// liveLane draws the agent's live card as bands between observations.
func liveLane(tl *Timeline, l *lane, sc scale, y int, col colors) laneView {
	v := laneView{Label: laneLabel(y, "live card", "the card the agent served, from card.observed")}
	var obs []int
	for _, i := range l.entries {
		if tl.Entries[i].Kind == KindObservation {
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
		v.Bands = append(v.Bands, bandView{X: x0, Y: y + 5, W: max(x1-x0, 1.5), H: laneH - 10, Color: col.of(e.Digests.Live),
			Title: fmt.Sprintf("live %s\n%s to %s\n%d observation(s)%s", e.Digests.Live, render.Time(e.Time), render.Time(end), j-k, changeTitle(e.Change))})
		k = j
	}
	for _, i := range l.entries {
		e := &tl.Entries[i]
		if e.Kind == KindUnreachable {
			v.Marks = append(v.Marks, cross(sc.x(e.Time), y+laneH/2, fmt.Sprintf("%s %s\n%s", e.Type, render.Time(e.Time), entryDetail(e))))
		}
	}
	return v
}

func cross(x coord, y int, title string) markView {
	return markView{Cross: true, Title: title, Color: unreachableColor,
		Path: fmt.Sprintf("M%v,%d L%v,%d M%v,%d L%v,%d", x-5, y-5, x+5, y+5, x+5, y-5, x-5, y+5)}
}

func verdictID(gi, i int) string { return fmt.Sprintf("v-%d-%d", gi, i) }
func taskID(gi int, task string) string {
	return fmt.Sprintf("t-%d-%s", gi, events.Token(task))
}

// taskLane draws a task: span, pinned cards, lifecycle, verdicts, failures.
func taskLane(tl *Timeline, l *lane, sc scale, y, gi int, col colors) laneView {
	es := tl.Entries
	first, last := es[l.entries[0]].Time, es[l.entries[len(l.entries)-1]].Time
	mid := y + laneH/2
	v := laneView{
		Search: strings.ToLower(l.task),
		Label:  laneLabel(y, l.task, "task "+l.task),
		Span:   &spanView{X1: sc.x(first), X2: max(sc.x(last), sc.x(first)+1), Y: mid},
	}
	// Pinned bands: from each pin to the next one (or the task's end).
	var pins []int
	for _, i := range l.entries {
		if es[i].Kind == KindPin {
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
		v.Bands = append(v.Bands, bandView{X: x0, Y: y + 7, W: max(x1-x0, 2), H: laneH - 14, Color: col.of(d.Digest), Opacity: "0.9",
			Title: fmt.Sprintf("pinned %s (%s)\n%s to %s%s", d.Digest, pinText(d.Source, d.Extended), render.Time(es[i].Time), render.Time(end), changeTitle(es[i].Change))})
	}
	target := taskID(gi, l.task)
	for _, i := range l.entries {
		e := &es[i]
		x := sc.x(e.Time)
		switch e.Kind {
		case KindLifecycle:
			v.Marks = append(v.Marks, markView{Target: target, Title: fmt.Sprintf("%s %s\n%s", e.Type, render.Time(e.Time), entryDetail(e)), X: x, Y1: y + 4, Y2: y + laneH - 4})
		case KindUnreachable:
			v.Marks = append(v.Marks, cross(x, mid, fmt.Sprintf("%s %s\n%s", e.Type, render.Time(e.Time), entryDetail(e))))
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
		v.Verdicts = append(v.Verdicts, verdictMark{
			Target: verdictID(gi, i),
			Title: fmt.Sprintf("%s %s\n%s%s\npinned %s → live %s%s", strings.ToUpper(string(d.Verdict.Action)),
				render.Time(e.Time), onto(d.Verdict), d.Verdict.Reason, render.ShortDigest(d.Pinned.Digest), render.ShortDigest(d.Live.Digest), findingsTitle(d.Findings)),
			Points: fmt.Sprintf("%v,%d %v,%d %v,%d %v,%d", x, mid-8, x+8, mid, x, mid+8, x-8, mid),
			Color:  actionColor[d.Verdict.Action],
		})
	}
	return v
}

// taskDetails is the expandable account of one task.
func taskDetails(tl *Timeline, l *lane, gi int, s *Story, col colors) taskView {
	v := taskView{Anchor: taskID(gi, l.task), Search: strings.ToLower(l.task), Task: l.task, Summary: "no verdict", Story: s}
	if s != nil {
		if s.Moment != nil {
			v.Summary, v.Class = s.Moment.What, string(s.Moment.Action)
		}
		v.PlannedAgainst = col.digest(s.Planned, fmt.Sprintf("%s, pinned %s", pinText(s.PinSource, s.PinExtended), render.Time(s.PinnedAt)))
		v.LiveThen = col.digest(s.Live, "fetched "+render.Time(s.LiveAt))
	}
	for _, i := range l.entries {
		e := &tl.Entries[i]
		v.Entries = append(v.Entries, e)
		if d, ok := e.Data.(events.Drift); ok {
			v.Verdicts = append(v.Verdicts, verdictView{Anchor: verdictID(gi, i), Time: e.Time, D: d,
				Pinned: col.digest(d.Pinned.Digest, ""), Live: col.digest(d.Live.Digest, "")})
		}
	}
	return v
}

// WriteHTML writes the card history as one self-contained page (carddrift
// replay --cards --format html). It returns the template's or w's error.
func (h *CardHistory) WriteHTML(w io.Writer) error {
	p := &pageView{
		Frame:    render.Frame{Title: "carddrift replay: card history"},
		Subtitle: fmt.Sprintf("agent %s — %d card version(s)", h.AgentURL, len(h.Versions)),
		Cards:    &cardsView{AgentURL: h.AgentURL},
	}
	if len(h.Versions) == 0 {
		return replayTemplate.Execute(w, p)
	}
	v, col := p.Cards, colors{}
	sc := scale{t0: h.Versions[0].FirstSeen}
	for _, ver := range h.Versions {
		if ver.LastSeen.After(sc.t1) {
			sc.t1 = ver.LastSeen
		}
	}
	if !sc.t1.After(sc.t0) {
		sc.t1 = sc.t0.Add(time.Second)
	}
	v.SVG = svgView{W: svgW, H: axisH + laneH*len(h.Versions) + 8, Axis: axisView{X1: labelW, X2: svgW - padR, Y: axisH - 6}}
	v.TextY, v.From, v.To = axisH-12, render.Time(sc.t0), render.Time(sc.t1)
	for i, ver := range h.Versions {
		y := axisH + laneH*i
		x0, x1 := sc.x(ver.FirstSeen), sc.x(ver.LastSeen)
		v.SVG.Lanes = append(v.SVG.Lanes, laneView{
			Label: laneLabel(y, fmt.Sprintf("%d  %s %s", i+1, render.ShortDigest(ver.Digest), ver.CardVersion), ver.Digest),
			Bands: []bandView{{X: x0, Y: y + 6, W: max(x1-x0, 3), H: laneH - 12, Color: col.of(ver.Digest),
				Title: fmt.Sprintf("%s\nfirst seen %s\nlast seen %s\nobserved %d, pinned %d, drift %d%s", ver.Digest, render.Time(ver.FirstSeen), render.Time(ver.LastSeen), ver.Observed, ver.Pinned, ver.Drift, changeTitle(ver.Change))}},
		})
		v.Rows = append(v.Rows, cardRow{N: i + 1, Digest: col.digest(ver.Digest, ""), V: &h.Versions[i]})
	}
	for i, ver := range h.Versions[1:] {
		v.Changelogs = append(v.Changelogs, changelogView{From: i + 1, To: i + 2, Change: ver.Change})
	}
	return replayTemplate.Execute(w, p)
}
