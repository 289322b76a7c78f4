package webhook

import (
	"fmt"
	"strings"
	"time"

	"github.com/benchrun/benchrun/internal/results"
	"github.com/benchrun/benchrun/pipeline"
	"github.com/benchrun/benchrun/sinks/internal/resultdoc"
)

// Summary is the "summary" payload: what a person reading a chat message
// or a CI hook needs to know about the run, and where its files are.
type Summary struct {
	// Text is the outcome on one line: Slack's incoming webhooks (and
	// Discord's Slack-compatible /slack URL, Mattermost's) show it as
	// the message, so the payload needs no template to be readable there.
	Text       string     `json:"text"`
	RunID      string     `json:"run_id"`
	Plan       string     `json:"plan"`
	Status     string     `json:"status"`
	ExitCode   *int       `json:"exit_code"`
	Reason     string     `json:"reason,omitempty"`
	StartedAt  time.Time  `json:"started_at"`
	FinishedAt *time.Time `json:"finished_at"`
	Cells      int        `json:"cells"`
	// Verdicts counts the verdicts by outcome (pass, fail, error, warn,
	// and the regression checks' own).
	Verdicts map[string]int  `json:"verdicts"`
	Failed   []FailedVerdict `json:"failed"`
	RunDir   string          `json:"run_dir"`
}

// FailedVerdict is a check that did not hold (a warn is counted, not
// listed: it does not fail the run).
type FailedVerdict struct {
	Assertion string            `json:"assertion"`
	Name      string            `json:"name,omitempty"`
	Outcome   string            `json:"outcome"`
	Stage     string            `json:"stage"`
	Cell      string            `json:"cell"`
	CellID    string            `json:"cell_id"`
	Pos       string            `json:"pos"`
	Values    map[string]string `json:"values,omitempty"`
	Error     string            `json:"error,omitempty"`
}

// NewSummary builds the summary payload from the result document the
// "result" payload would send (so the two agree) and the run's summary.
func NewSummary(res resultdoc.Result, sum *pipeline.Summary, ri *pipeline.RunInfo) Summary {
	s := Summary{
		RunID: res.RunID, Plan: res.Plan, Status: res.Status, ExitCode: res.ExitCode,
		StartedAt: res.StartedAt, FinishedAt: res.FinishedAt, Cells: len(res.Cells),
		Verdicts: map[string]int{}, Failed: []FailedVerdict{},
	}
	if sum != nil {
		s.Reason = sum.Reason
	}
	if ri != nil {
		s.RunDir = ri.Dir
	}
	for _, v := range res.Assertions.Verdicts {
		s.Verdicts[v.Outcome]++
		if v.Passed || v.Outcome == results.OutcomeWarn {
			continue
		}
		s.Failed = append(s.Failed, FailedVerdict{
			Assertion: v.Assertion, Name: v.Name, Outcome: v.Outcome, Stage: v.Stage, Cell: v.Cell, CellID: v.CellID,
			Pos: v.Pos, Values: v.Values, Error: v.Error,
		})
	}
	s.Text = s.line()
	return s
}

// line is Text: "benchrun fixture 20261201T040000Z-a1b2c3: failed (exit
// 1), 6 cells, 1 of 12 checks failed: itl_p99_ms < 15 on sweep 256:32 c=16".
func (s Summary) line() string {
	var b strings.Builder
	fmt.Fprintf(&b, "benchrun %s %s: %s", s.Plan, s.RunID, s.Status)
	if s.ExitCode != nil {
		fmt.Fprintf(&b, " (exit %d)", *s.ExitCode)
	}
	checks := 0
	for _, n := range s.Verdicts {
		checks += n
	}
	fmt.Fprintf(&b, ", %d cells, %d of %d checks failed", s.Cells, len(s.Failed), checks)
	if len(s.Failed) > 0 {
		f := s.Failed[0]
		fmt.Fprintf(&b, ": %s on %s", f.Assertion, f.Cell)
		if len(s.Failed) > 1 {
			fmt.Fprintf(&b, " and %d more", len(s.Failed)-1)
		}
	}
	if s.Reason != "" {
		fmt.Fprintf(&b, "; %s", strings.SplitN(s.Reason, "\n", 2)[0])
	}
	return b.String()
}
