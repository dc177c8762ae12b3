package replay

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/carddrift/carddrift/events/inspect/render"
)

// Column widths of the streamed table: fixed, since the rows are written
// before the rest is read (a longer value widens its own row only).
const (
	streamTaskW   = 24
	streamAgentW  = 24
	streamDigestW = 29
)

// StreamWriter writes a streamed timeline as carddrift replay prints it:
// a text table (each task's story after its entries, then a summary line)
// or an Entry's JSON per line. Write is Reader.Stream's emit; Close writes
// what is left.
type StreamWriter struct {
	w     *bufio.Writer
	q     Query
	json  *json.Encoder // nil: text
	rows  int
	shown map[[2]string]bool // changes already listed in full
}

// NewStreamWriter returns a StreamWriter of q's timeline to w.
func NewStreamWriter(w io.Writer, q Query, asJSON bool) *StreamWriter {
	s := &StreamWriter{w: bufio.NewWriterSize(w, 64<<10), q: q, shown: map[[2]string]bool{}}
	if asJSON {
		s.json = json.NewEncoder(s.w)
	} else {
		fmt.Fprintf(s.w, "carddrift replay: %s\n", describeQuery(q))
		if q.AgentURL != "" {
			fmt.Fprintf(s.w, "agent %s\n", q.AgentURL)
		}
	}
	return s
}

// Write writes one item; it returns the writer's error.
func (s *StreamWriter) Write(it Item) error {
	switch {
	case s.json != nil && it.Entry != nil:
		if err := s.json.Encode(it.Entry); err != nil {
			return err
		}
	case s.json != nil:
	case it.Entry != nil:
		s.row(it.Entry)
	case it.Story != nil:
		fmt.Fprintln(s.w)
		writeStory(s.w, it.Story)
	}
	_, err := s.w.Write(nil) // the writer's first error, if any
	return err
}

func (s *StreamWriter) cells(t, kind, typ, task, agent, dig, detail string) {
	fmt.Fprintf(s.w, "%-24s  %-11s  %-18s  %-*s  ", t, kind, typ, streamTaskW, task)
	if s.q.AgentURL == "" {
		fmt.Fprintf(s.w, "%-*s  ", streamAgentW, agent)
	}
	fmt.Fprintf(s.w, "%-*s  %s\n", streamDigestW, dig, detail)
}

func (s *StreamWriter) row(e *Entry) {
	if s.rows == 0 {
		fmt.Fprintln(s.w)
		s.cells("TIME", "KIND", "TYPE", "TASK", "AGENT", "DIGESTS", "DETAIL")
	}
	s.rows++
	s.cells(render.Time(e.Time), string(e.Kind), e.Type, render.OrDash(e.TaskID), e.AgentURL, entryDigests(e), entryDetail(e))
	c := e.Change
	if c == nil {
		return
	}
	key := [2]string{c.From, c.To}
	if s.shown[key] {
		fmt.Fprintf(s.w, "%24s  changed %s → %s: as listed above (%d finding(s))\n", "", render.ShortDigest(c.From), render.ShortDigest(c.To), len(c.Findings))
		return
	}
	s.shown[key] = true
	fmt.Fprintf(s.w, "%24s  changed %s → %s:\n", "", render.ShortDigest(c.From), render.ShortDigest(c.To))
	writeChange(s.w, strings.Repeat(" ", 28), c)
}

// SummaryLine says what a streamed query answered and read.
func SummaryLine(sum *Summary) string {
	line := fmt.Sprintf("carddrift replay: %s: %d entries, %d task(s), %d agent(s); read %d message(s) for %d in the answer",
		describeQuery(sum.Query), sum.Entries, sum.Tasks, sum.Agents, sum.Read, sum.Entries)
	if sum.Late > 0 {
		line += fmt.Sprintf("; %d came after their task's story", sum.Late)
	}
	return line
}

// Close writes the summary line (text) and flushes; it returns w's error.
func (s *StreamWriter) Close(sum *Summary) error {
	if s.json == nil && sum != nil {
		fmt.Fprintf(s.w, "\n%s\n", SummaryLine(sum))
	}
	return s.w.Flush()
}
