package results

import (
	"fmt"
	"math"
	"reflect"
	"strings"
	"sync"
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

// Column is one column of the cells table, as every output names it.
type Column struct {
	Name     string       // Parquet, CSV and JSON name
	Expr     string       // its name in assertions ("" when expressions cannot read it)
	Index    int          // the Cell field's index (reflect)
	Type     reflect.Type // the field's Go type
	Nullable bool         // a metric a cell can fail to measure (a pointer field)
}

// floatMetric is the type of a metric column: a float a cell can fail to
// measure.
var floatMetric = reflect.TypeFor[*float64]()

// IsMetric says whether the column is a nullable float: a metric, which
// assertions, baselines and searches read.
func (c Column) IsMetric() bool { return c.Type == floatMetric }

// Columns lists the cells table's columns in column order: the one walk
// over Cell's tags that sinks, kinds and assertions share.
var Columns = sync.OnceValue(func() []Column {
	t := reflect.TypeOf(Cell{})
	out := make([]Column, 0, t.NumField())
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("parquet"), ",")
		expr := f.Tag.Get("expr")
		if expr == "-" {
			expr = ""
		}
		out = append(out, Column{Name: name, Expr: expr, Index: i, Type: f.Type, Nullable: f.Type.Kind() == reflect.Pointer})
	}
	return out
})

// ColumnNames lists the cells table's column names in column order.
var ColumnNames = sync.OnceValue(func() []string {
	out := make([]string, 0, len(Columns()))
	for _, c := range Columns() {
		out = append(out, c.Name)
	}
	return out
})

// WhyNull says in words why a null column of the cell row was not
// measured: "every request failed", "no c=1 row of this cell measured
// output throughput to compare with", ...
func WhyNull(c Cell, column string) string {
	if why := ownNullReason(&c, column); why != "" {
		return why
	}
	if why := noneMeasured(&c); why != "" {
		return why
	}
	switch {
	case strings.HasPrefix(column, "tpot"):
		return "no completed request had more than one output token"
	case strings.HasPrefix(column, "itl"):
		return "no completed request had two token events"
	}
	return "no sample"
}

// nullReason says why a column with a reason of its own was not
// measured; "" leaves it to the reasons every metric shares.
type nullReason func(c *Cell, column string) string

// nullReasons are the columns with reasons of their own, by name.
var nullReasons = map[string]nullReason{
	"speedup_vs_c1":                whyNoC1,
	"batching_efficiency":          whyNoC1,
	"cost_usd":                     whyNoPrice,
	"tokens_per_dollar":            whyNoPrice,
	"max_model_len":                whyNoContextLength,
	"client_cpu_util":              whyNoOwnCPU,
	"events_joined_pct":            whyNotKernelStamped,
	"client_cpu_wait_ms":           whyNoSchedstat,
	"server_cpu_wait_ms":           whyNoSchedstat,
	"first_call_ms":                whyNoFirstCall,
	"sent_req_s":                   whyNoSendRate,
	"turns":                        whyNoTurn,
	"think_time_ms":                whyNoTurn,
	"ttft_turn1_p50_ms":            whyNoTurn,
	"ttft_later_turns_p50_ms":      whyNoTurn,
	"cached_tokens":                whyNoCache,
	"prefix_cache_hit_rate":        whyNoCache,
	"server_prefix_cache_hit_rate": whyNoCache,
}

// ownNullReason is column's reason of its own ("" for none): by name,
// or the machine probe's for its machine_ columns.
func ownNullReason(c *Cell, column string) string {
	if why := nullReasons[column]; why != nil {
		return why(c, column)
	}
	if strings.HasPrefix(column, "machine_") {
		return whyNoMachineProbe(c, column)
	}
	return ""
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
