package report

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/benchrun/benchrun/internal/results"
	"github.com/benchrun/benchrun/sinks/internal/runview"
)

// The "Memory, utilisation and energy" section: per stage, one row per
// cell row with the telemetry columns (GPU through NVML, the server's own
// metrics, the server's process tree, benchrun's own CPU). The columns
// come in groups by source, because a source is measured or not as a
// whole (no NVML, no metrics endpoint, a server benchrun did not launch):
// a group whose every value in the stage is NULL is left out of the table
// and said in one line instead, with the reason the rows' notes give, so
// a run on a machine without a GPU does not show a wall of dashes. A
// single NULL inside a measured group is "–" with a legend line, never 0.

// telemColumn is one column of the telemetry table: its value formatted,
// and whether it was measured (false: NULL).
type telemColumn struct {
	Head  string
	value func(results.Cell) (string, bool)
}

// telemSource is one group of columns that one probe fills.
type telemSource struct {
	name string
	// src names the source in the rows' notes (results.TelemetryWhy);
	// nil for the client's CPU, which has no probe.
	src  *results.TelemetrySource
	cols []telemColumn
}

// telemDash explains the "–" of the telemetry tables.
const telemDash = "– not measured (null: the source gave no reading of this value for the row)"

const gib = 1 << 30

func fPtr(f func(results.Cell) *float64, format func(float64) string) func(results.Cell) (string, bool) {
	return func(c results.Cell) (string, bool) {
		p := f(c)
		if p == nil || !finite(*p) {
			return "–", false
		}
		return format(*p), true
	}
}

func bytesGiB(f func(results.Cell) *int64) func(results.Cell) (string, bool) {
	return func(c results.Cell) (string, bool) {
		p := f(c)
		if p == nil {
			return "–", false
		}
		return fmt.Sprintf("%.2f", float64(*p)/gib), true
	}
}

// telemNum is num for telemetry values, which span from joules per token
// (0.004) to joules per cell (120000): below 0.1 three significant digits,
// so a small value never prints as 0.00, which would read as a measured
// zero.
func telemNum(v float64) string {
	if v != 0 && math.Abs(v) < 0.1 {
		return fmt.Sprintf("%.3g", v)
	}
	return num(v, true)
}

// wholeNum prints counts and peaks of counts (requests, preemptions).
func wholeNum(v float64) string {
	if v == math.Trunc(v) && math.Abs(v) < 1e15 {
		return fmt.Sprintf("%.0f", v)
	}
	return telemNum(v)
}

func pct(v float64) string { return fmt.Sprintf("%.0f", 100*v) }

var telemSources = []telemSource{
	{"GPU telemetry", &results.GPUTelemetry, []telemColumn{
		{"GPU util mean %", fPtr(func(c results.Cell) *float64 { return c.GPUUtilMean }, telemNum)},
		{"GPU util p95 %", fPtr(func(c results.Cell) *float64 { return c.GPUUtilP95 }, telemNum)},
		{"GPU mem peak GiB", bytesGiB(func(c results.Cell) *int64 { return c.GPUMemPeakBytes })},
		{"GPU mem reserved GiB", bytesGiB(func(c results.Cell) *int64 { return c.GPUMemReservedBytes })},
		{"power mean W", fPtr(func(c results.Cell) *float64 { return c.PowerWMean }, telemNum)},
		{"power max W", fPtr(func(c results.Cell) *float64 { return c.PowerWMax }, telemNum)},
		{"energy J", fPtr(func(c results.Cell) *float64 { return c.EnergyJ }, telemNum)},
		{"tok/J", fPtr(func(c results.Cell) *float64 { return c.TokensPerJoule }, telemNum)},
		{"J/tok", fPtr(func(c results.Cell) *float64 { return c.EnergyJPerToken }, telemNum)},
		{"SM clock MHz", fPtr(func(c results.Cell) *float64 { return c.SMClockMHzMean }, telemNum)},
		{"temp max °C", fPtr(func(c results.Cell) *float64 { return c.GPUTempCMax }, telemNum)},
		// "" is both "no throttling seen" and "not measured"; a NULL
		// gpu_util_mean tells them apart (docs/RESULTS.md).
		{"throttle", func(c results.Cell) (string, bool) {
			if c.GPUUtilMean == nil {
				return "–", false
			}
			if c.ThrottleReasons == "" {
				return "none", true
			}
			return strings.ReplaceAll(c.ThrottleReasons, ",", ", "), true
		}},
	}},
	{"server metrics", &results.ServerMetrics, []telemColumn{
		{"running peak", fPtr(func(c results.Cell) *float64 { return c.ServerRunningPeak }, wholeNum)},
		{"waiting peak", fPtr(func(c results.Cell) *float64 { return c.ServerWaitingPeak }, wholeNum)},
		{results.ColServerParkWaits, fPtr(func(c results.Cell) *float64 { return c.ServerParkWaits }, wholeNum)},
		{"KV cache peak %", fPtr(func(c results.Cell) *float64 { return c.KVCacheUsagePeak }, pct)},
		{"preemptions", fPtr(func(c results.Cell) *float64 { return c.ServerPreemptions }, wholeNum)},
	}},
	{"server CPU and memory", &results.ServerProcess, []telemColumn{
		{"server CPU cores", fPtr(func(c results.Cell) *float64 { return c.ServerCPUUtil }, telemNum)},
		{"server RSS peak GiB", bytesGiB(func(c results.Cell) *int64 { return c.ServerRSSPeakBytes })},
	}},
	{"benchrun client CPU", nil, []telemColumn{
		{"client CPU cores", fPtr(func(c results.Cell) *float64 { return c.ClientCPUUtil }, telemNum)},
	}},
}

// telemTable is one stage's section.
type telemTable struct {
	Stage string
	// Unmeasured are the lines of the sources left out: "GPU telemetry:
	// not measured (no NVML on this machine)".
	Unmeasured []string
	Heads      []string
	Rows       []telemRow
	// Dash is telemDash when a value of the table is NULL.
	Dash   string
	Charts []htmlChart // the stage's cells' usage charts (HTML only)
}

type telemRow struct {
	Shape, Load string
	Values      []string
}

// telemetryTables builds the section, stage by stage in the order the
// stages' first rows came.
func telemetryTables(cells []results.Cell) []telemTable {
	var stages []string
	for _, c := range cells {
		if !slices.Contains(stages, c.Stage) {
			stages = append(stages, c.Stage)
		}
	}
	var out []telemTable
	for _, st := range stages {
		var rows []results.Cell
		for _, c := range cells {
			if c.Stage == st {
				rows = append(rows, c)
			}
		}
		t := telemTable{Stage: st}
		var cols []telemColumn
		for _, src := range telemSources {
			measured := slices.ContainsFunc(rows, func(c results.Cell) bool {
				return slices.ContainsFunc(src.cols, func(col telemColumn) bool { _, ok := col.value(c); return ok })
			})
			if measured {
				cols = append(cols, src.cols...)
				continue
			}
			line := src.name + ": not measured"
			if why := unmeasuredWhy(rows, src); why != "" {
				line += " (" + why + ")"
			}
			t.Unmeasured = append(t.Unmeasured, line)
		}
		if len(cols) == 0 && !slices.ContainsFunc(rows, func(c results.Cell) bool { return c.Program == "" }) {
			// A program's stage that measured none of it: no client, no
			// load, nothing to say.
			continue
		}
		if len(cols) > 0 {
			for _, col := range cols {
				t.Heads = append(t.Heads, col.Head)
			}
			for _, c := range rows {
				r := telemRow{Shape: fmt.Sprintf("%d:%d", c.ISL, c.OSL), Load: runview.LoadLabel(c)}
				for _, col := range cols {
					v, ok := col.value(c)
					if !ok {
						t.Dash = telemDash
					}
					r.Values = append(r.Values, v)
				}
				t.Rows = append(t.Rows, r)
			}
		}
		out = append(out, t)
	}
	return out
}

// unmeasuredWhy is the reason the first row that gives one has in its
// notes for src not being measured; "" when none says. The client CPU has
// no probe note: results.WhyNull says why.
func unmeasuredWhy(rows []results.Cell, src telemSource) string {
	if src.src == nil {
		for _, c := range rows {
			if c.Status == results.StatusOK {
				return results.WhyNull(c, results.ColClientCPUUtil)
			}
		}
		return ""
	}
	return runview.TelemetryWhy(rows, *src.src)
}

// measuredTPJ says whether some row measured tokens per joule: the cells
// table then shows it beside the throughput.
func measuredTPJ(cells []results.Cell) bool {
	return slices.ContainsFunc(cells, func(c results.Cell) bool { return c.TokensPerJoule != nil })
}

// finite says a value can be shown: not NaN or ±Inf.
func finite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }
