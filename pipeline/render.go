package pipeline

import (
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"
	"time"
)

// WriteMermaid writes the graph as a Mermaid flowchart (GitHub and SiYuan
// render it). Edges point from a stage to the stages that wait for it;
// dotted edges come from `when`; finally stages have a dashed border.
func (g *Graph) WriteMermaid(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "%%%% plan %s\n", g.Plan.Name)
	b.WriteString("flowchart TD\n")
	ids := map[string]string{}
	for i, n := range g.Nodes {
		ids[n.Spec.Name] = fmt.Sprintf("s%d", i+1)
	}
	for _, n := range g.Nodes {
		fmt.Fprintf(&b, "  %s[\"%s<br/><small>%s</small>\"]\n", ids[n.Spec.Name], mermaidText(n.Spec.Name), mermaidText(nodeNote(n)))
	}
	for _, n := range g.Nodes {
		for _, d := range n.Deps {
			arrow := "-->"
			if n.Via[d] == "when" {
				arrow = "-.->"
			}
			fmt.Fprintf(&b, "  %s %s %s\n", ids[d], arrow, ids[n.Spec.Name])
		}
	}
	var finally []string
	for _, n := range g.Nodes {
		if n.Spec.Finally {
			finally = append(finally, ids[n.Spec.Name])
		}
	}
	if len(finally) > 0 {
		b.WriteString("  classDef finally stroke-dasharray: 5 5\n")
		fmt.Fprintf(&b, "  class %s finally\n", strings.Join(finally, ","))
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// WriteDot writes the graph in Graphviz DOT.
func (g *Graph) WriteDot(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "digraph %s {\n", dotQuote(g.Plan.Name))
	b.WriteString("  rankdir=TB;\n  node [shape=box];\n")
	for _, n := range g.Nodes {
		attrs := fmt.Sprintf("label=%s", dotQuote(n.Spec.Name+"\n"+nodeNote(n)))
		if n.Spec.Finally {
			attrs += ", style=dashed"
		}
		fmt.Fprintf(&b, "  %s [%s];\n", dotQuote(n.Spec.Name), attrs)
	}
	for _, n := range g.Nodes {
		for _, d := range n.Deps {
			attrs := ""
			if v := n.Via[d]; v == "when" {
				attrs = " [style=dotted, label=when]"
			} else if v == "target" {
				attrs = " [label=target]"
			}
			fmt.Fprintf(&b, "  %s -> %s%s;\n", dotQuote(d), dotQuote(n.Spec.Name), attrs)
		}
	}
	b.WriteString("}\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// nodeNote is the second line of a node: kind, and what changes how it runs.
func nodeNote(n *Node) string {
	parts := []string{n.Spec.Kind}
	if n.Spec.Finally {
		parts = append(parts, "finally")
	}
	if n.Spec.When != "" {
		parts = append(parts, "when "+n.Spec.When)
	}
	if res := locksOf(n); len(res) > 0 {
		parts = append(parts, "locks "+strings.Join(res, ","))
	}
	return strings.Join(parts, " · ")
}

// locksOf is the stage's resource locks, as the runner takes them.
func locksOf(n *Node) []string {
	res := slices.Clone(n.Spec.Resources)
	if len(res) == 0 && n.Kind.Measuring {
		res = []string{"gpu"}
	}
	sort.Strings(res)
	return slices.Compact(res)
}

func mermaidText(s string) string {
	r := strings.NewReplacer(`"`, "#quot;", "<", "#lt;", ">", "#gt;", "\n", " ")
	return r.Replace(s)
}

func dotQuote(s string) string {
	r := strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`)
	return `"` + r.Replace(s) + `"`
}

// WriteDryRun prints what a run would do, in order, without doing any of
// it: the stages in the order they can start, with their edges and locks,
// every planned step of the stages that can list theirs (a sweep's cells ×
// ladder points, marked when --resume would skip them) and an estimate of
// the run's duration. done may be nil.
func (g *Graph) WriteDryRun(w io.Writer, done func(cellID string) bool) error {
	var b strings.Builder
	fmt.Fprintf(&b, "plan %s: %d stages", g.Plan.Name, len(g.Nodes))
	if g.Plan.Timeout > 0 {
		fmt.Fprintf(&b, ", timeout %s", g.Plan.Timeout)
	}
	b.WriteString("\n")
	var total time.Duration
	var unknown []string
	steps := 0
	for i, n := range g.Order() {
		s := n.Spec
		fmt.Fprintf(&b, "%2d. %s (%s)", i+1, s.Name, s.Kind)
		var notes []string
		if len(n.Deps) > 0 {
			notes = append(notes, "after "+strings.Join(n.Deps, ", "))
		}
		if s.When != "" {
			notes = append(notes, fmt.Sprintf("when %s", s.When))
		}
		if s.Finally {
			notes = append(notes, "finally")
		}
		if res := locksOf(n); len(res) > 0 {
			notes = append(notes, "locks "+strings.Join(res, ","))
		}
		if s.Timeout > 0 {
			notes = append(notes, "timeout "+s.Timeout.String())
		}
		if s.Retry != nil {
			notes = append(notes, fmt.Sprintf("retry %d× backoff %s", s.Retry.Attempts, s.Retry.Backoff))
		}
		if len(notes) > 0 {
			b.WriteString(": " + strings.Join(notes, "; "))
		}
		b.WriteString("\n")
		pl, ok := n.Stage.(Planner)
		if !ok {
			unknown = append(unknown, s.Name)
			continue
		}
		planned := pl.Plan()
		if hp, ok := n.Stage.(HintedPlanner); ok {
			if speed, ok := g.targetSpeed(n); ok {
				planned = hp.PlanWith(speed)
			}
		}
		var stageTotal time.Duration
		for j, st := range planned {
			steps++
			mark := ""
			if done != nil && done(st.ID) {
				mark = "  (done: skipped by --resume)"
			} else {
				stageTotal += st.Estimate
			}
			if st.Estimate == 0 && st.Requests == 0 {
				// A step the stage cannot size (a trace replay: its length
				// is in the trace file, which the dry run does not read).
				fmt.Fprintf(&b, "      %3d  %-22s %-28s     ? requests  no estimate%s\n", j+1, st.Label, st.ID, mark)
				unknown = append(unknown, s.Name+" "+st.Label)
				continue
			}
			fmt.Fprintf(&b, "      %3d  %-22s %-28s %5d requests  ~%s%s\n", j+1, st.Label, st.ID, st.Requests, roundEstimate(st.Estimate), mark)
		}
		total += stageTotal
	}
	fmt.Fprintf(&b, "%d measured steps; estimated duration ~%s (rough: docs/PLANS.md says how it is guessed)", steps, roundEstimate(total))
	if len(unknown) > 0 {
		fmt.Fprintf(&b, " plus %s (no estimate)", strings.Join(unknown, ", "))
	}
	b.WriteString("\nnothing was run (--dry-run)\n")
	_, err := io.WriteString(w, b.String())
	return err
}

func roundEstimate(d time.Duration) time.Duration {
	switch {
	case d >= time.Minute:
		return d.Round(time.Second)
	case d >= time.Second:
		return d.Round(100 * time.Millisecond)
	default:
		return d.Round(time.Millisecond)
	}
}

// targetSpeed is the speed n's target stage knows of its server before it
// runs (SpeedHinter); false when n has no target stage or it does not know.
func (g *Graph) targetSpeed(n *Node) (ServerSpeed, bool) {
	for _, d := range n.Deps {
		if n.Via[d] != "target" {
			continue
		}
		if t := g.Node(d); t != nil {
			if h, ok := t.Stage.(SpeedHinter); ok {
				return h.ServerSpeed()
			}
		}
	}
	return ServerSpeed{}, false
}
