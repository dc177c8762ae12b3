package census

import (
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/carddrift/carddrift/events"
	"github.com/carddrift/carddrift/events/inspect/render"
)

// WriteJSON writes fleet --json's object, indented by two spaces.
func (f *Fleet) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(f)
}

// WriteText writes the fleet view as carddrift fleet prints it: a summary
// line, the agents' table and the shared skills. It returns w's error.
func (f *Fleet) WriteText(w io.Writer) error {
	return render.Buffered(w, func(w io.Writer) { writeFleetText(w, f) })
}

// Unreachable counts the agents whose last fetch failed.
func (f *Fleet) Unreachable() int {
	return sum(f.Agents, func(a Agent) int { return b2i(a.UnreachableSince != nil) })
}

// agentState says what is wrong with an agent, for people: "ok",
// "unreachable since …", "split brain since … (N cards)".
func agentState(a Agent) string {
	var parts []string
	if a.SplitBrain != nil {
		parts = append(parts, fmt.Sprintf("split brain since %s (%d cards)", render.Clock(a.SplitBrain.Since), len(a.SplitBrain.Digests)))
	}
	if a.UnreachableSince != nil {
		parts = append(parts, fmt.Sprintf("unreachable since %s (%s)", render.Clock(*a.UnreachableSince), a.Unreachable))
	}
	if len(parts) == 0 {
		return "ok"
	}
	return strings.Join(parts, "; ")
}

// tasksText is an agent's pins per card version: "3 live, 2 on 1.0.0 (ab12…)".
func tasksText(a Agent) string {
	if len(a.Tasks) == 0 {
		return "-"
	}
	var parts []string
	for _, t := range a.Tasks {
		parts = append(parts, fmt.Sprintf("%d %s", t.Count, cardTasksText(t)))
	}
	return strings.Join(parts, ", ")
}

// cardTasksText says which card a group of tasks is pinned on: "on live",
// "pending", "on 1.0.0 (ab12…)", "on live extended", "extended
// unavailable, on live", ….
func cardTasksText(t CardTasks) string {
	var on string
	switch {
	case t.Digest == "":
		on = "pending"
	case t.Live && t.Extended == events.ExtendedPinned:
		on = "on live extended"
	case t.Live:
		on = "on live"
	case t.Extended == events.ExtendedPinned:
		on = fmt.Sprintf("on extended %s (%s)", render.OrDash(t.Version), render.ShortDigest(t.Digest))
	default:
		on = fmt.Sprintf("on %s (%s)", render.OrDash(t.Version), render.ShortDigest(t.Digest))
	}
	if t.Extended == events.ExtendedUnavailable {
		return "extended unavailable, " + on
	}
	return on
}

// extendedState says how an agent's extended card fares, for people: "ok",
// "unreachable since … (unauthorized)", "never fetched".
func extendedState(e *Extended) string {
	switch {
	case e == nil:
		return "never fetched"
	case e.UnreachableSince != nil:
		return fmt.Sprintf("unreachable since %s (%s)", render.Clock(*e.UnreachableSince), e.Unreachable)
	case e.Digest == "":
		return "never fetched"
	}
	return "ok"
}

// extendedAgents are the agents with an extended card or tasks that use
// one.
func (f *Fleet) extendedAgents() []Agent {
	var out []Agent
	for _, a := range f.Agents {
		if p, u := a.ExtendedTasks(); a.Extended != nil || p+u > 0 {
			out = append(out, a)
		}
	}
	return out
}

// writeExtendedText writes the table of the extendedAgents, if any.
func writeExtendedText(w io.Writer, fl *Fleet) {
	agents := fl.extendedAgents()
	if len(agents) == 0 {
		return
	}
	fmt.Fprintln(w, "\nauthenticated extended cards")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "  AGENT\tVERSION\tLIVE\tPINNED ON IT\tUNAVAILABLE (ON THE PUBLIC CARD)\tSTATE")
	for _, a := range agents {
		e := a.Extended
		if e == nil {
			e = &Extended{}
		}
		pinned, unavailable := a.ExtendedTasks()
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%d\t%d\t%s\n", a.AgentURL, render.OrDash(e.Version), render.ShortDigest(e.Digest),
			pinned, unavailable, extendedState(a.Extended))
	}
	tw.Flush()
}

func writeFleetText(w io.Writer, fl *Fleet) {
	fmt.Fprintf(w, "fleet at %s: %d agent(s), %d in split brain, %d unreachable; %d shared skill(s), %d inconsistent (window %s)\n\n",
		fl.Taken.UTC().Format(time.RFC3339), len(fl.Agents), fl.SplitBrains(), fl.Unreachable(), len(fl.Skills), fl.InconsistentSkills(), fl.Window)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "  AGENT\tVERSION\tPROTOCOL\tLIVE\tCHANGED\tTASKS PER CARD VERSION\tSTATE")
	for _, a := range fl.Agents {
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\t%s\t%s\n", a.AgentURL, render.OrDash(a.Version), render.OrDash(strings.Join(a.ProtocolVersions, ",")),
			render.ShortDigest(a.Digest), render.Clock(a.LastChange), tasksText(a), agentState(a))
	}
	tw.Flush()
	writeExtendedText(w, fl)
	if len(fl.Skills) == 0 {
		fmt.Fprintln(w, "\n  no skill id is offered by more than one agent")
		return
	}
	fmt.Fprintln(w, "\nskills offered by more than one agent")
	for _, s := range fl.Skills {
		state := "consistent"
		if !s.Consistent {
			state = "INCONSISTENT"
		}
		fmt.Fprintf(w, "  %-28s %2d agents  %s\n", s.ID, len(s.Agents), state)
		for _, d := range s.Differences {
			var vals []string
			for _, a := range s.Agents {
				vals = append(vals, fmt.Sprintf("%s %s", a, valueText(d.Values[a])))
			}
			sort.Strings(vals)
			fmt.Fprintf(w, "      %-18s %s\n", d.Field, strings.Join(vals, "; "))
		}
	}
}

// valueText renders a contract value: a list as [a b], a bool as on/off.
func valueText(v any) string {
	switch v := v.(type) {
	case []string:
		return "[" + strings.Join(v, " ") + "]"
	case bool:
		if v {
			return "on"
		}
		return "off"
	case nil:
		return "-"
	}
	return fmt.Sprint(v)
}
