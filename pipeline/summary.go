package pipeline

import (
	"context"
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/benchrun/benchrun/internal/procrun"
	"github.com/benchrun/benchrun/internal/rundir"
	"github.com/benchrun/benchrun/pipeline/judge"
)

// StageResult is one stage's outcome, for the summary and the manifest:
// one type, so the manifest keeps every field the summary has.
type StageResult = rundir.StageRecord

// Summary is how a run ended.
type Summary struct {
	Run      *RunInfo
	Stages   []StageResult
	Cells    int
	Verdicts []Verdict
	Failed   []Verdict
	// Inconclusive are the checks that did not hold while the machine's
	// own lateness could explain it (docs/PLANS.md, "Inconclusive
	// verdicts"): they fail the run (exit 5) only under inconclusive:
	// "fail".
	Inconclusive []Verdict
	Interrupted  bool
	ExitCode     int
	// Reason says why the run did not end ok ("" when it did).
	Reason string
	// Sinks are the sinks' accounts (as the manifest records them).
	Sinks []SinkRecord
	// FinishedAt is when the run ended (the manifest's finished_at).
	FinishedAt time.Time
	// Status overrides the run status derived from the exit code (a
	// replay of a run that crashed); "" derives it.
	Status string
	// EarlierFailed counts the verdicts in Failed that earlier attempts
	// judged, on cells this resume did not measure again.
	EarlierFailed int
}

// OneLine is a reason in one line (see firstLine): for a row's reason,
// whose log holds the rest.
func OneLine(s string) string { return firstLine(s) }

// firstLine is a reason in one line, for the summary, the progress and
// the manifest's run reason: its first line, and, when what follows is a
// log's tail ("  | " lines: a server that exited before listening), the
// tail's last line that reads as an error ("… | error: bad flag -x"), or
// its last line that is neither JSON data nor benchrun's own note when
// none does: a program's stdout and stderr share the log in whatever
// order the pipes gave them, so its data ("[", a record) may follow its
// error, and benchrun's notes of how it stopped the program ("benchrun:
// program still running 100ms after SIGINT") follow its last words.
func firstLine(s string) string {
	i := strings.IndexByte(s, '\n')
	if i < 0 {
		return s
	}
	first := s[:i]
	var tail []string
	for _, l := range strings.Split(strings.TrimRight(s[i+1:], "\n"), "\n") {
		if l, ok := strings.CutPrefix(l, "  | "); ok && strings.TrimSpace(l) != "" {
			tail = append(tail, strings.TrimSpace(l))
		}
	}
	for j := len(tail) - 1; j >= 0; j-- {
		if procrun.IsErrorLine(tail[j]) {
			return first + " … | " + tail[j]
		}
	}
	for j := len(tail) - 1; j >= 0; j-- {
		l := tail[j]
		if strings.HasPrefix(l, "{") || strings.HasPrefix(l, "[") || strings.HasPrefix(l, "benchrun: ") {
			continue // a JSON record is data, benchrun's own note (a stop's escalation) is not the program's
		}
		return first + " … | " + l
	}
	if len(tail) > 0 {
		return first + " … | " + tail[0]
	}
	return first + " …"
}

func (r *runner) summary(ctx context.Context) *Summary {
	out := r.judge.Outcome()
	sum := &Summary{Run: r.ri, FinishedAt: time.Now(), Cells: out.Cells, Verdicts: out.Verdicts, Failed: out.Failed, Inconclusive: out.Inconclusive, EarlierFailed: len(r.ri.priorFailed)}
	sum.Interrupted = ctx.Err() != nil
	infra := r.emitErr != nil
	for _, n := range r.g.Nodes {
		st := r.states[n.Spec.Name]
		sum.Stages = append(sum.Stages, StageResult{
			Name: n.Spec.Name, Kind: n.Kind.Name, Status: st.status, Reason: st.reason,
			DurationS: st.duration.Seconds(), Attempts: st.attempts,
		})
		if st.status == StatusFailed || st.status == StatusError {
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
			if st := r.states[n.Spec.Name]; st.status == StatusSkipped {
				skipped = append(skipped, fmt.Sprintf("%s (%s)", n.Spec.Name, firstLine(st.reason)))
			}
		}
		if measuring > 0 && len(skipped) == measuring {
			nothing = "nothing was measured: every measuring stage was skipped: " + strings.Join(skipped, "; ")
			infra = true
		}
	}
	switch {
	case sum.Interrupted:
		sum.ExitCode = ExitInterrupted
		sum.Reason = fmt.Sprint(context.Cause(ctx))
	case infra:
		sum.ExitCode = ExitInfra
		// A required sink that failed is the first thing to say: what it
		// did not write (a stage that could not emit failed because of it).
		sum.Reason = r.sinks.failedReason()
		for _, s := range sum.Stages {
			if sum.Reason != "" {
				break
			}
			if s.Status == StatusFailed {
				sum.Reason = fmt.Sprintf("stage %s failed: %s", s.Name, firstLine(s.Reason))
				break
			}
		}
		for _, s := range sum.Stages {
			if s.Status == StatusError && sum.Reason == "" {
				sum.Reason = fmt.Sprintf("stage %s: %s", s.Name, firstLine(s.Reason))
			}
		}
		if sum.Reason == "" && r.emitErr != nil {
			sum.Reason = "rows not stored: " + firstLine(r.emitErr.Error())
		}
		if sum.Reason == "" {
			sum.Reason = nothing
		}
	case len(out.Failed) > 0:
		sum.ExitCode = ExitAssertion
		sum.Reason = fmt.Sprintf("%d assertion checks failed", len(out.Failed))
	case len(out.Inconclusive) > 0 && r.inconclusiveFails():
		sum.ExitCode = ExitInconclusive
		sum.Reason = fmt.Sprintf("%d checks inconclusive: the machine's own lateness could explain them (inconclusive: fail)", len(out.Inconclusive))
	default:
		sum.ExitCode = ExitOK
	}
	return sum
}

// PrintSummary writes the end-of-run summary for people.
func PrintSummary(w io.Writer, sum *Summary) {
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
			line += "  " + firstLine(s.Reason)
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
func verdictCounts(vs []Verdict) string {
	type key struct{ level, outcome string }
	counts := map[key]int{}
	var levels []string
	for _, v := range vs {
		lvl := v.Level
		if lvl == "" {
			lvl = LevelRow
		}
		out := "pass"
		switch {
		case v.Level == LevelRegression:
			out = v.Values["outcome"]
			if out == "" {
				out = map[bool]string{true: "ok", false: "regressed"}[v.Passed]
			}
		case v.Inconclusive:
			out = "inconclusive"
		case !v.Passed && v.Severity == SeverityWarn:
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
