package report

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"

	"github.com/benchrun/benchrun/internal/results"
	"github.com/benchrun/benchrun/sinks/internal/runview"
)

// The variant-vs-variant tables: when the run's cells differ by a metadata
// key (quant: Q4_K_M on one sweep, Q8_0 on another), the report puts the
// matching cells of each value side by side.
//
//   - A key varies when the cells carry at least two distinct non-empty
//     values of it. Each such key gets its own section, "Variants by
//     <key>", in key order; a cell without the key (or with "") is not in
//     that key's section.
//   - Variants are the key's values in the plan's order of first
//     appearance: the order of the stages in the plan (the run record),
//     then the order of the rows. The first is the baseline.
//   - A row is one matching cell: the same isl:osl, load point (concurrency
//     or rate, and repeat) and values of every other varying key (shown as
//     columns). A cell present in only some variants is still a row, with
//     – for the variants that lack it. Two cells of one row and variant
//     (two stages with the same metadata) are paired by run order: the
//     second of each makes a row of its own, its load marked #2.
//   - Each variant's group holds the key metrics; every variant after the
//     first shows its change from the baseline as a percentage. A metric
//     that was not measured (null) is –, never 0, and has no change.

// variantMetrics are the columns of each variant's group.
var variantMetrics = []struct {
	head    string
	latency bool // not measured in a row without a completed request
	get     func(results.Cell) *float64
}{
	{results.LabelOf(results.ColTTFTP50Ms), true, func(c results.Cell) *float64 { return c.TTFTP50Ms }},
	{results.LabelOf(results.ColTTFTP99Ms), true, func(c results.Cell) *float64 { return c.TTFTP99Ms }},
	{results.LabelOf(results.ColITLP50Ms), true, func(c results.Cell) *float64 { return c.ITLP50Ms }},
	{results.LabelOf(results.ColITLP99Ms), true, func(c results.Cell) *float64 { return c.ITLP99Ms }},
	{results.LabelOf(results.ColOutputTokS), false, func(c results.Cell) *float64 { return c.OutputTokS }},
	{results.LabelOf(results.ColReqS), false, func(c results.Cell) *float64 { return c.ReqS }},
}

// variantSection is one "Variants by <key>" table.
type variantSection struct {
	Key     string
	Values  []string // the variants, baseline first
	Others  []string // the other varying keys, one column each
	Metrics []string // the metric heads of each variant's group
	Rows    []variantRow
	// Paired is set when some row is a second cell of its kind (#2).
	Paired bool
}

type variantRow struct {
	Shape  string   // isl:osl
	Load   string   // c=N or R req/s, its repeat, and #n for a paired cell
	Others []string // the other varying keys' values (– when absent)
	Groups [][]string
}

// variantSections builds one section per varying metadata key of cells;
// stages is the run's stages in plan order.
func variantSections(cells []results.Cell, stages []results.StageOutcome) []variantSection {
	ordered := planOrder(cells, stages)
	values := map[string][]string{}
	for _, c := range ordered {
		for k, v := range c.Metadata {
			if v != "" && !slices.Contains(values[k], v) {
				values[k] = append(values[k], v)
			}
		}
	}
	var keys []string
	for k, vs := range values {
		if len(vs) > 1 {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	var out []variantSection
	for _, k := range keys {
		var others []string
		for _, o := range keys {
			if o != k {
				others = append(others, o)
			}
		}
		out = append(out, variantTable(ordered, k, values[k], others))
	}
	return out
}

// planOrder is cells ordered by their stage's place in the plan (stages
// the run record does not list last), keeping the row order within.
func planOrder(cells []results.Cell, stages []results.StageOutcome) []results.Cell {
	rank := map[string]int{}
	for i, s := range stages {
		if _, ok := rank[s.Name]; !ok {
			rank[s.Name] = i
		}
	}
	r := func(c results.Cell) int {
		if i, ok := rank[c.Stage]; ok {
			return i
		}
		return len(stages)
	}
	out := slices.Clone(cells)
	slices.SortStableFunc(out, func(a, b results.Cell) int { return r(a) - r(b) })
	return out
}

func variantTable(cells []results.Cell, key string, vals, others []string) variantSection {
	sec := variantSection{Key: key, Values: vals, Others: others}
	for _, m := range variantMetrics {
		sec.Metrics = append(sec.Metrics, m.head)
	}
	type row struct {
		shape, load string
		others      []string
		cells       map[string]results.Cell // by variant value
	}
	var order []string
	rows := map[string]*row{}
	seen := map[string]int{} // cells of one row identity and variant so far
	for _, c := range cells {
		v := c.Metadata[key]
		if v == "" {
			continue
		}
		ov := make([]string, len(others))
		for i, o := range others {
			ov[i] = orDash(c.Metadata[o])
		}
		id := fmt.Sprintf("%d:%d\x00%d\x00%g\x00%d\x00%s", c.ISL, c.OSL, c.Concurrency, c.Rate, c.Repeat, strings.Join(ov, "\x00"))
		n := seen[id+"\x00"+v]
		seen[id+"\x00"+v] = n + 1
		id += fmt.Sprintf("\x00#%d", n)
		rw := rows[id]
		if rw == nil {
			load := runview.LoadLabel(c)
			if n > 0 {
				load += fmt.Sprintf(" #%d", n+1)
				sec.Paired = true
			}
			rw = &row{shape: fmt.Sprintf("%d:%d", c.ISL, c.OSL), load: load, others: ov, cells: map[string]results.Cell{}}
			rows[id] = rw
			order = append(order, id)
		}
		rw.cells[v] = c
	}
	for _, id := range order {
		rw := rows[id]
		out := variantRow{Shape: rw.shape, Load: rw.load, Others: rw.others}
		base, hasBase := rw.cells[vals[0]]
		for _, v := range vals {
			c, ok := rw.cells[v]
			group := make([]string, len(variantMetrics))
			for i, m := range variantMetrics {
				x, measured := variantValue(c, ok, m.latency, m.get)
				if !measured {
					group[i] = "–"
					continue
				}
				group[i] = num(x, true)
				if v == vals[0] || !hasBase {
					continue
				}
				if b, bok := variantValue(base, true, m.latency, m.get); bok && b != 0 {
					group[i] += " (" + pctChange(x, b) + ")"
				}
			}
			out.Groups = append(out.Groups, group)
		}
		sec.Rows = append(sec.Rows, out)
	}
	return sec
}

// variantValue is a metric of a cell, and whether it was measured: the
// cell exists, the value is not null (nor NaN) and, for a latency, some
// request completed (the cells table's rule).
func variantValue(c results.Cell, ok, latency bool, get func(results.Cell) *float64) (float64, bool) {
	if !ok {
		return 0, false
	}
	p := get(c)
	if p == nil || math.IsNaN(*p) || latency && c.Completed == 0 {
		return 0, false
	}
	return *p, true
}

// pctChange is v's change from base, signed, one decimal.
func pctChange(v, base float64) string {
	p := 100 * (v - base) / base
	if math.Abs(p) < 0.05 {
		return "±0.0%"
	}
	return fmt.Sprintf("%+.1f%%", p)
}

// variantIntro is the sentence above a variant table, in plain text.
func variantIntro(s variantSection) string {
	by := "isl:osl and load point"
	if len(s.Others) > 0 {
		by = "isl:osl, load point and " + strings.Join(s.Others, ", ")
	}
	return fmt.Sprintf("The cells that differ only by %s, side by side: one row per %s, one group of columns per %s (%s). "+
		"Each variant after %s shows its change from %s. Latencies in ms, lower is better; output tok/s and req/s, higher is better. "+
		"– : not measured (null), or no such cell in that variant.",
		s.Key, by, s.Key, strings.Join(s.Values, ", "), s.Values[0], s.Values[0])
}

// pairedNote explains the #n of a paired row.
const pairedNote = "A load marked #2 (#3, …) is another cell of the same shape and load with the same metadata (from another stage), paired with the other variants' by run order."
