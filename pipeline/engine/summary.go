package engine

import (
	"context"
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/benchrun/benchrun/pipeline"
	"github.com/benchrun/benchrun/pipeline/judge"
)

func (r *runner) summary(ctx context.Context) *pipeline.Summary {
	out := r.judge.Outcome()
	sum := &pipeline.Summary{Run: r.ri, FinishedAt: time.Now(), Cells: out.Cells, Verdicts: out.Verdicts, Failed: out.Failed, Inconclusive: out.Inconclusive, EarlierFailed: len(stateOf(r.ri).priorFailed)}
	sum.Interrupted = ctx.Err() != nil
	infra := r.emitErr != nil
	for _, n := range r.g.Nodes {
		st := r.states[n.Spec.Name]
		sum.Stages = append(sum.Stages, pipeline.StageResult{
			Name: n.Spec.Name, Kind: n.Kind.Name, Status: st.status, Reason: st.reason,
			DurationS: st.duration.Seconds(), Attempts: st.attempts,
		})
		if st.status == pipeline.StatusFailed || st.status == pipeline.StatusError {
			infra = true // an error cell measured nothing valid: never exit 0
		}
	}
	// A plan that measures, whose every measuring stage was skipped (a
	// `when` that never held: a mistyped tag), measured nothing: never
	// green. (A resume with nothing left keeps its earlier rows.)
	nothing := ""
	if out.Cells == 0 && !r.ri.Resumed {
		var skipped []string
		measuring := 0
		for _, n := range r.g.Nodes {
			if !n.Kind.Measuring {
				continue
			}
			measuring++
			if st := r.states[n.Spec.Name]; st.status == pipeline.StatusSkipped {
				skipped = append(skipped, fmt.Sprintf("%s (%s)", n.Spec.Name, pipeline.OneLine(st.reason)))
			}
		}
		if measuring > 0 && len(skipped) == measuring {
			nothing = "nothing was measured: every measuring stage was skipped: " + strings.Join(skipped, "; ")
			infra = true
		}
	}
	switch {
	case sum.Interrupted:
		sum.ExitCode = pipeline.ExitInterrupted
		sum.Reason = fmt.Sprint(context.Cause(ctx))
	case infra:
		sum.ExitCode = pipeline.ExitInfra
		// A required sink that failed is the first thing to say: what it
		// did not write (a stage that could not emit failed because of it).
		sum.Reason = r.sinks.failedReason()
		for _, s := range sum.Stages {
			if sum.Reason != "" {
				break
			}
			if s.Status == pipeline.StatusFailed {
				sum.Reason = fmt.Sprintf("stage %s failed: %s", s.Name, pipeline.OneLine(s.Reason))
				break
			}
		}
		for _, s := range sum.Stages {
			if s.Status == pipeline.StatusError && sum.Reason == "" {
				sum.Reason = fmt.Sprintf("stage %s: %s", s.Name, pipeline.OneLine(s.Reason))
			}
		}
		if sum.Reason == "" && r.emitErr != nil {
			sum.Reason = "rows not stored: " + pipeline.OneLine(r.emitErr.Error())
		}
		if sum.Reason == "" {
			sum.Reason = nothing
		}
	case len(out.Failed) > 0:
		sum.ExitCode = pipeline.ExitAssertion
		sum.Reason = fmt.Sprintf("%d assertion checks failed", len(out.Failed))
	case len(out.Inconclusive) > 0 && r.inconclusiveFails():
		sum.ExitCode = pipeline.ExitInconclusive
		sum.Reason = fmt.Sprintf("%d checks inconclusive: the machine's own lateness or too few samples could explain them (inconclusive: fail)", len(out.Inconclusive))
	default:
		sum.ExitCode = pipeline.ExitOK
	}
	return sum
}

// PrintSummary writes the end-of-run summary for people.
func PrintSummary(w io.Writer, sum *pipeline.Summary) {
	earlier := ""
	if sum.EarlierFailed > 0 {
		earlier = fmt.Sprintf(" (%d of them judged by earlier attempts, on cells already done)", sum.EarlierFailed)
	}
	inconclusive := ""
	if n := len(sum.Inconclusive); n > 0 {
		inconclusive = fmt.Sprintf(", %d inconclusive", n)
	}
	fmt.Fprintf(w, "\nrun %s: %d cell rows, %d assertion checks, %d failed%s%s\n", sum.Run.ID, sum.Cells, len(sum.Verdicts), len(sum.Failed), inconclusive, earlier)
	for _, s := range sum.Stages {
		line := fmt.Sprintf("  %-14s %-9s %-8s %6.1fs", s.Name, s.Kind, s.Status, s.DurationS)
		if s.Attempts > 1 {
			line += fmt.Sprintf("  (%d attempts)", s.Attempts)
		}
		if s.Reason != "" {
			line += "  " + pipeline.OneLine(s.Reason)
		}
		fmt.Fprintln(w, line)
	}
	if line := verdictCounts(sum.Verdicts); line != "" {
		fmt.Fprintf(w, "  verdicts: %s\n", line)
	}
	// One screen: the first failures, then how many more and where.
	const shown = 10
	for i, v := range sum.Failed {
		if i == shown {
			fmt.Fprintf(w, "  … and %d more failed checks (report.md, junit.xml, the assertions table)\n", len(sum.Failed)-shown)
			break
		}
		what := judge.What(v)
		fmt.Fprintf(w, "  FAIL %s: %s on %s (%s)\n", v.Pos, what, v.Cell, v.FormatValues())
	}
	for i, v := range sum.Inconclusive {
		if i == shown {
			fmt.Fprintf(w, "  … and %d more inconclusive checks (report.md, junit.xml, the assertions table)\n", len(sum.Inconclusive)-shown)
			break
		}
		fmt.Fprintf(w, "  INCONCLUSIVE %s: %s on %s: %s\n", v.Pos, judge.What(v), v.Cell, v.Explained)
	}
	fmt.Fprintf(w, "  results: %s\n", sum.Run.Dir)
}

// inconclusiveFails says whether an inconclusive verdict fails the run:
// --inconclusive, else the plan's inconclusive.
func (r *runner) inconclusiveFails() bool {
	policy := r.opts.Inconclusive
	if policy == "" && r.g != nil && r.g.Plan != nil {
		policy = r.g.Plan.Inconclusive
	}
	return policy == InconclusiveFail
}

// verdictCounts sums the verdicts up by level and outcome in one line:
// "row 8 pass 1 fail · stage 2 pass · regression 4 same 1 regressed".
func verdictCounts(vs []pipeline.Verdict) string {
	type key struct{ level, outcome string }
	counts := map[key]int{}
	var levels []string
	for _, v := range vs {
		lvl := v.Level
		if lvl == "" {
			lvl = pipeline.LevelRow
		}
		out := "pass"
		switch {
		case v.Level == pipeline.LevelRegression:
			out = v.Values["outcome"]
			if out == "" {
				out = map[bool]string{true: "ok", false: "regressed"}[v.Passed]
			}
		case v.Inconclusive:
			out = "inconclusive"
		case !v.Passed && v.Severity == pipeline.SeverityWarn:
			out = "warn"
		case v.Error != "":
			out = "error"
		case !v.Passed:
			out = "fail"
		}
		if !slices.Contains(levels, lvl) {
			levels = append(levels, lvl)
		}
		counts[key{lvl, out}]++
	}
	var parts []string
	for _, lvl := range levels {
		var outs []string
		for k, n := range counts {
			if k.level == lvl {
				outs = append(outs, fmt.Sprintf("%d %s", n, k.outcome))
			}
		}
		sort.Strings(outs)
		parts = append(parts, lvl+" "+strings.Join(outs, " "))
	}
	return strings.Join(parts, " · ")
}
