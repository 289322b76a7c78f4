package pipeline

import (
	"strings"
	"time"

	"github.com/benchrun/benchrun/internal/procrun"
	"github.com/benchrun/benchrun/internal/rundir"
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
