package results

import (
	"fmt"
	"math"
)

// Some returns a pointer to v: a measured value of a nullable column.
func Some[T any](v T) *T { return &v }

// SomeIf is Some(v) when measured is true, else nil (not measured).
func SomeIf[T any](measured bool, v T) *T {
	if !measured {
		return nil
	}
	return &v
}

// ValueOr is *p, or def when p is nil (not measured).
func ValueOr[T any](p *T, def T) T {
	if p == nil {
		return def
	}
	return *p
}

// Finite is Some(v) for a finite v and nil for NaN or ±Inf, which no
// output can carry as a number.
func Finite(v float64) *float64 {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return nil
	}
	return &v
}

// WhyNull says in words why a null column of the cell row was not
// measured: "every request failed", "no c=1 row of this cell measured
// output throughput to compare with", ...
func WhyNull(c Cell, column string) string {
	if col, ok := Lookup(column); ok && col.why != nil {
		if why := col.why(&c, column); why != "" {
			return why
		}
	}
	if why := noneMeasured(&c); why != "" {
		return why
	}
	return "no sample"
}

// nullReason says why a column with a reason of its own was not
// measured; "" leaves it to the reasons every metric shares. Each
// column's is its catalogue entry's.
type nullReason func(c *Cell, column string) string

func whyNoTPOT(c *Cell, _ string) string {
	if why := noneMeasured(c); why != "" {
		return why
	}
	return "no completed request had more than one output token"
}

func whyNoGap(c *Cell, _ string) string {
	if why := noneMeasured(c); why != "" {
		return why
	}
	return "no completed request had two token events"
}

// whyNoAnswer: the answer columns are NULL when no completed request
// answered (every one's reasoning used up max_tokens, say).
func whyNoAnswer(c *Cell, _ string) string {
	if why := noneMeasured(c); why != "" {
		return why
	}
	return "no completed request produced an answer token (answered_pct says how many answered)"
}

// whyNoReasoning: the reasoning timings are NULL when no completed
// request showed reasoning.
func whyNoReasoning(c *Cell, _ string) string {
	if why := noneMeasured(c); why != "" {
		return why
	}
	return "no completed request streamed reasoning (a model that does not think, or a server that hides it)"
}

// whyNoTools: tool calls per request is NULL when the cell offered no
// tools.
func whyNoTools(c *Cell, _ string) string {
	if why := noneMeasured(c); why != "" {
		return why
	}
	return "the cell's requests offered no tools"
}

// whyNoToolCall: the arguments' rates are NULL without a call to check.
func whyNoToolCall(c *Cell, col string) string {
	if c.ToolCallsMean == nil {
		return whyNoTools(c, col)
	}
	return "no completed request made a tool call"
}

// whyNoFormat: the structured-output rate is NULL when the cell asked
// for none.
func whyNoFormat(c *Cell, _ string) string {
	if why := noneMeasured(c); why != "" {
		return why
	}
	return "the cell's requests asked for no structured output (response_format)"
}

// noneMeasured is why a cell measured nothing at all ("" when it did).
func noneMeasured(c *Cell) string {
	switch {
	case c.Requests == 0 && c.Status == StatusSkipped:
		return "the cell was skipped"
	case c.Requests == 0:
		return "no request was sent"
	case c.Completed == 0:
		return "every request failed"
	}
	return ""
}

// noneMeasuredInTime is noneMeasured for a column read over the cell's
// duration rather than from its requests: only a cell that did not run
// at all has no value for that reason.
func noneMeasuredInTime(c *Cell) string {
	if why := noneMeasured(c); why != "" && c.DurationS <= 0 {
		return why
	}
	return ""
}

func whyNoC1(c *Cell, _ string) string {
	if c.Rate > 0 {
		return "an open-loop point has no c=1 row to compare with"
	}
	if why := noneMeasured(c); why != "" {
		return why
	}
	return "no c=1 row of this cell measured output throughput to compare with"
}

func whyNoPrice(c *Cell, _ string) string {
	if why := noneMeasuredInTime(c); why != "" {
		return why
	}
	return "the plan gives no price (cost_per_hour)"
}

func whyNoContextLength(*Cell, string) string {
	return "the server did not say its context length and the plan gives no model.max_model_len"
}

func whyNoOwnCPU(c *Cell, _ string) string {
	if why := noneMeasuredInTime(c); why != "" {
		return why
	}
	return "benchrun's own CPU time could not be read"
}

func whyNotKernelStamped(c *Cell, _ string) string {
	if why := noneMeasured(c); why != "" {
		return why
	}
	return "the cell's token events were not kernel-stamped (stamp_source)"
}

func whyNoSchedstat(c *Cell, column string) string {
	if why := noneMeasuredInTime(c); why != "" {
		return why
	}
	if column == "server_cpu_wait_ms" {
		return "the server was not launched by this run, or the kernel keeps no scheduler statistics (/proc/PID/task/*/schedstat)"
	}
	return "the kernel keeps no scheduler statistics (/proc/self/task/*/schedstat)"
}

func whyNoMachineProbe(_ *Cell, column string) string {
	if column == "machine_cpu_pressure_pct" {
		return "the kernel does not report CPU pressure (/proc/pressure/cpu: Linux with PSI)"
	}
	return "the machine probe did not run during the cell (telemetry.machine off, or it could not start: see the notes)"
}

func whyNoFirstCall(c *Cell, _ string) string {
	if c.Requests == 0 {
		return noneMeasured(c)
	}
	return "the cell's first request failed"
}

func whyNoSendRate(c *Cell, _ string) string {
	if c.Requests < 2 {
		return "fewer than two requests were sent"
	}
	return ""
}

func whyNoTurn(c *Cell, column string) string {
	if c.Turns == nil {
		return "the cell is not a conversation (the sweep gives no turns)"
	}
	if why := noneMeasured(c); why != "" {
		return why
	}
	if column == "ttft_later_turns_p50_ms" {
		return "no turn after a session's first completed"
	}
	return "no first turn completed"
}

func whyNoAgent(c *Cell, column string) string {
	if c.MaxSteps == nil {
		return "the cell is not an agent cell (the sweep gives no agent)"
	}
	if why := noneMeasured(c); why != "" {
		return why
	}
	switch column {
	case ColFinalAnswerP50Ms, ColFinalAnswerP99Ms:
		return "no session reached a final answer"
	case ColTTFTLaterStepsP50Ms, ColCachedTokensLaterStepsMean:
		return "no step after a session's first completed (or reported cached tokens)"
	}
	return "no session completed"
}

func whyNoCache(c *Cell, column string) string {
	if why := noneMeasured(c); why != "" {
		return why
	}
	switch column {
	case "cached_tokens":
		return "no answer carried usage.prompt_tokens_details.cached_tokens (the server does not say)"
	case "server_prefix_cache_hit_rate":
		return "the server's metrics have no prefix-cache counters (or were not read)"
	}
	return "no answer carried usage.prompt_tokens_details.cached_tokens and the server's metrics have no prefix-cache counters"
}

// NullError is the error of an assertion that reads a null column.
type NullError struct {
	Column string
	Why    string
}

func (e *NullError) Error() string {
	return fmt.Sprintf("%s is null: not measured (%s)", e.Column, e.Why)
}
