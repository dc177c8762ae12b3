package replay

import (
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/carddrift/carddrift/detector"
	"github.com/carddrift/carddrift/events"
	"github.com/carddrift/carddrift/events/inspect/render"
)

// WriteText writes the card history as carddrift replay --cards prints it.
// It returns w's error.
func (h *CardHistory) WriteText(w io.Writer) error {
	return render.Buffered(w, func(w io.Writer) { writeCardsText(w, h) })
}

// WriteJSON writes each version as a JSON line, with the agentUrl.
func (h *CardHistory) WriteJSON(w io.Writer) error {
	type line struct {
		AgentURL string `json:"agentUrl"`
		Version
	}
	lines := make([]line, len(h.Versions))
	for i, v := range h.Versions {
		lines[i] = line{h.AgentURL, v}
	}
	return jsonLines(w, lines)
}

// WriteText writes the re-evaluation as carddrift replay --reevaluate
// prints it. It returns w's error.
func (r *Report) WriteText(w io.Writer) error {
	return render.Buffered(w, func(w io.Writer) { writeReevalText(w, r) })
}

// WriteJSON writes each difference as a JSON line.
func (r *Report) WriteJSON(w io.Writer) error { return jsonLines(w, r.Differences) }

func describeQuery(q Query) string {
	var parts []string
	if q.TaskID != "" {
		parts = append(parts, "task "+q.TaskID)
	}
	if q.AgentURL != "" {
		parts = append(parts, "agent "+q.AgentURL)
	}
	if !q.Since.IsZero() {
		parts = append(parts, "since "+render.Time(q.Since))
	}
	if !q.Until.IsZero() {
		parts = append(parts, "until "+render.Time(q.Until))
	}
	if len(parts) == 0 {
		return "all history"
	}
	return strings.Join(parts, ", ")
}

// entryDigests renders an entry's digests: pinned → live for a verdict.
func entryDigests(e *Entry) string {
	switch {
	case e.Digests.Pinned != "" && e.Digests.Live != "":
		return render.ShortDigest(e.Digests.Pinned) + " → " + render.ShortDigest(e.Digests.Live)
	case e.Digests.Pinned != "":
		return "pin " + render.ShortDigest(e.Digests.Pinned)
	case e.Digests.Live != "":
		return "live " + render.ShortDigest(e.Digests.Live)
	}
	return ""
}

// pinText says how a pin was made and, for a task on the extended card,
// which card it is: "first-fetch, the extended card".
func pinText(source, extended string) string {
	source = render.OrDash(source)
	switch extended {
	case events.ExtendedPinned:
		return source + ", the extended card"
	case events.ExtendedUnavailable:
		return source + ", extended card unavailable: the public card"
	}
	return source
}

// entryDetail renders an entry's data in one line.
func entryDetail(e *Entry) string {
	switch d := e.Data.(type) {
	case events.Submitted:
		var b strings.Builder
		fmt.Fprintf(&b, "skill %s, %s", render.OrDash(d.SkillID), d.Posture)
		if d.Idempotent {
			b.WriteString(", idempotent")
		}
		var needs []string
		if d.Requires.Streaming {
			needs = append(needs, "streaming")
		}
		if d.Requires.PushNotifications {
			needs = append(needs, "push")
		}
		if len(d.Requires.Security) > 0 {
			needs = append(needs, "security "+strings.Join(d.Requires.Security, "+"))
		}
		if len(d.Requires.OutputModes) > 0 {
			needs = append(needs, "output "+strings.Join(d.Requires.OutputModes, "|"))
		}
		if len(needs) > 0 {
			b.WriteString("; needs " + strings.Join(needs, ", "))
		}
		switch {
		case len(d.Card) > 0:
			b.WriteString("; planned against the card it sent")
		case d.CardDigest != "":
			b.WriteString("; planned against a card digest")
		default:
			b.WriteString("; no card: carddrift pins its first fetch")
		}
		return b.String()
	case events.Request:
		return fmt.Sprintf("%s, attempt %d", d.Method, d.Attempt)
	case events.Status:
		if d.SkillID != "" {
			return fmt.Sprintf("state %s (skill %s)", d.State, d.SkillID)
		}
		return "state " + d.State
	case events.Artifact:
		return fmt.Sprintf("artifact %s: %s", d.ArtifactID, strings.Join(d.MediaTypes, ", "))
	case events.Error:
		name := detector.ErrorName(d.Code)
		if name != "" {
			name = " " + name
		}
		return fmt.Sprintf("%s: %d%s %s", d.Method, d.Code, name, d.Message)
	case events.Pinned:
		return "pinned (" + pinText(d.Source, d.Extended) + ")"
	case events.Observed:
		s := fmt.Sprintf("fetched %d", d.Status)
		if d.ETag != "" {
			s += ", etag " + d.ETag
		}
		return fmt.Sprintf("%s, %d ms", s, d.LatencyMs)
	case events.Drift:
		return verdictText(d.Verdict, true)
	case events.Unreachable:
		s := d.Reason
		if d.Detail != "" {
			s += ": " + d.Detail
		}
		return s
	}
	return ""
}

// verdictText is a verdict's action (capitals when upper), the skill a
// replan goes onto if another, and the reason.
func verdictText(v detector.Verdict, upper bool) string {
	a := string(v.Action)
	if upper {
		a = strings.ToUpper(a)
	}
	if v.ReplanSkill != "" {
		a += " onto " + strconv.Quote(v.ReplanSkill)
	}
	return a + ": " + v.Reason
}

// onto is `onto "skill": ` for a re-plan onto another skill, else "".
func onto(v detector.Verdict) string {
	if v.ReplanSkill == "" {
		return ""
	}
	return "onto " + strconv.Quote(v.ReplanSkill) + ": "
}

func writeFindings(w io.Writer, indent string, fs []detector.Finding) {
	rw, pw := 0, 0
	for _, f := range fs {
		rw, pw = max(rw, len(f.Rule)), max(pw, len(render.OrDash(f.Path)))
	}
	for _, f := range fs {
		fmt.Fprintf(w, "%s%-8s  %-*s  %-*s  %s\n", indent, f.Severity, rw, f.Rule, pw, render.OrDash(f.Path), f.Message)
	}
}

func writeChange(w io.Writer, indent string, c *Change) {
	switch {
	case c == nil:
		return
	case len(c.Missing) > 0:
		fmt.Fprintf(w, "%sno diff: carddrift never stored the body of %s\n", indent, strings.Join(c.Missing, ", "))
	case c.Error != "":
		fmt.Fprintf(w, "%sno diff: %s\n", indent, c.Error)
	case len(c.Findings) == 0:
		fmt.Fprintf(w, "%sno findings (the cards differ only in form)\n", indent)
	default:
		writeFindings(w, indent, c.Findings)
	}
}

// writeStory answers, for one task: which card was it planned against,
// which card was live when it failed, what changed.
func writeStory(w io.Writer, s *Story) {
	fmt.Fprintf(w, "task %s  (agent %s)\n", s.TaskID, render.OrDash(s.AgentURL))
	if s.Requirements != nil {
		r := s.Requirements
		fmt.Fprintf(w, "  planned           skill %s, %s, idempotent %v, streaming %v, push %v\n",
			render.OrDash(r.SkillID), r.Posture, r.Idempotent, r.Streaming, r.PushNotifications)
	}
	if s.Planned != "" {
		fmt.Fprintf(w, "  planned against   %s  (%s, pinned %s)\n", s.Planned, pinText(s.PinSource, s.PinExtended), render.Time(s.PinnedAt))
	} else {
		fmt.Fprintln(w, "  planned against   unknown: no pin recorded")
	}
	label := "live at the end   "
	if s.Moment != nil {
		fmt.Fprintf(w, "  decisive event    %s  %s: %s\n", render.Time(s.Moment.Time), s.Moment.Type, s.Moment.What)
		label = "live then         "
		if s.Moment.Action == "" || s.Moment.Action == detector.Abort {
			label = "live when failed  "
		}
	}
	if s.Live != "" {
		fmt.Fprintf(w, "  %s%s  (fetched %s)\n", label, s.Live, render.Time(s.LiveAt))
	} else {
		fmt.Fprintf(w, "  %sunknown: no observation recorded\n", label)
	}
	switch {
	case s.Change != nil:
		fmt.Fprintln(w, "  what changed")
		writeChange(w, "    ", s.Change)
	case s.Planned != "" && s.Planned == s.Live:
		fmt.Fprintln(w, "  what changed      nothing: the live card is the pinned card")
	}
	fmt.Fprintf(w, "  verdicts          abort %d, replan %d, continue %d; last state %s\n",
		s.Verdicts.Abort, s.Verdicts.Replan, s.Verdicts.Continue, render.OrDash(s.State))
}

func jsonLines[T any](w io.Writer, vs []T) error {
	enc := json.NewEncoder(w)
	for i := range vs {
		if err := enc.Encode(&vs[i]); err != nil {
			return err
		}
	}
	return nil
}

func writeCardsText(w io.Writer, h *CardHistory) {
	fmt.Fprintf(w, "agent %s: %d card version(s)\n\n", h.AgentURL, len(h.Versions))
	if len(h.Versions) == 0 {
		return
	}
	vw := len("VERSION")
	for _, v := range h.Versions {
		vw = max(vw, len(v.CardVersion))
	}
	fmt.Fprintf(w, "  %3s  %-12s  %-*s  %-24s  %-24s  %8s  %6s  %5s\n", "#", "DIGEST", vw, "VERSION", "FIRST SEEN", "LAST SEEN", "OBSERVED", "PINNED", "DRIFT")
	for i, v := range h.Versions {
		cv := v.CardVersion
		if !v.Recorded {
			cv = "(no body)"
		}
		fmt.Fprintf(w, "  %3d  %-12s  %-*s  %-24s  %-24s  %8d  %6d  %5d\n", i+1, render.ShortDigest(v.Digest), vw, render.OrDash(cv),
			render.Time(v.FirstSeen), render.Time(v.LastSeen), v.Observed, v.Pinned, v.Drift)
	}
	if len(h.Versions) < 2 {
		return
	}
	fmt.Fprintf(w, "\nchangelog\n")
	for i, v := range h.Versions[1:] {
		fmt.Fprintf(w, "\n  %d → %d  %s → %s\n", i+1, i+2, h.Versions[i].Digest, v.Digest)
		writeChange(w, "    ", v.Change)
	}
}

func describeRules(r *detector.RuleSet) string {
	if r == nil {
		return "the detector's rules"
	}
	var parts []string
	if len(r.Disable) > 0 {
		parts = append(parts, "disabled "+strings.Join(r.Disable, ", "))
	}
	for _, id := range sortedRuleIDs(r.Severity) {
		parts = append(parts, fmt.Sprintf("%s as %s", id, r.Severity[id]))
	}
	if len(parts) == 0 {
		return "the detector's rules"
	}
	return "the detector's rules with " + strings.Join(parts, "; ")
}

func sortedRuleIDs(m map[string]detector.Severity) []string {
	var out []string
	for _, r := range detector.Rules() {
		if _, ok := m[r.ID]; ok {
			out = append(out, r.ID)
		}
	}
	return out
}

func writeReevalText(w io.Writer, rep *Report) {
	posture := "each task's own posture"
	if rep.Posture != "" {
		posture = "posture " + string(rep.Posture) + " for every task"
	}
	fmt.Fprintf(w, "carddrift replay --reevaluate: %s: %d recorded verdict(s) re-evaluated under %s and %s\n",
		describeQuery(rep.Query), rep.Evaluated, posture, describeRules(rep.Rules))
	fmt.Fprintf(w, "%d would differ\n", len(rep.Differences))
	for _, s := range rep.Skipped {
		fmt.Fprintf(w, "  not re-evaluated: %s task %s (event %s): %s\n", render.Time(s.Time), s.TaskID, s.EventID, s.Reason)
	}
	if len(rep.Differences) == 0 {
		return
	}
	taskW := len("TASK")
	for _, d := range rep.Differences {
		taskW = max(taskW, len(d.TaskID))
	}
	fmt.Fprintf(w, "\n%-24s  %-*s  %-36s  %-20s  %s\n", "TIME", taskW, "TASK", "TRIGGER", "OLD → NEW", "REASON")
	for _, d := range rep.Differences {
		trigger := strings.TrimPrefix(d.Trigger.Type, "a2a.task.") + " " + d.Trigger.EventID
		fmt.Fprintf(w, "%-24s  %-*s  %-36s  %-20s  %s\n", render.Time(d.Time), taskW, d.TaskID, trigger,
			string(d.Old.Action)+" → "+string(d.New.Action), onto(d.New)+d.New.Reason)
	}
}
