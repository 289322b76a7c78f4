package judge

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/expr-lang/expr"
	"github.com/expr-lang/expr/ast"
	"github.com/expr-lang/expr/vm"

	"github.com/benchrun/benchrun/internal/machine"
	"github.com/benchrun/benchrun/internal/results"
)

// A check that fails while the machine's own lateness could explain it is
// inconclusive, not failed (docs/PLANS.md, "Inconclusive verdicts"): the
// row's machine_late_p99_ms, and for a latency its longest stall as far as
// that reaches the column's statistic (machine.LateOn), bound how far each
// latency it reads may lie from the truth (machine.Allowance), and if the
// check holds anywhere in that box it is the machine, not the server, that
// cannot be ruled out.

// maxExplainDims bounds the corners tried (2^dims): an expression reading
// more latency columns than this is judged on its first ones.
const maxExplainDims = 8

// explainDim is one column an expression reads that the machine could
// have moved, with how far.
type explainDim struct {
	name  string
	col   *results.Column // the cell column; nil for the requests' columns
	base  bool            // a column of the baseline's cell (`baseline.NAME`)
	b     machine.Bound
	value float64
}

// requestBounds are the bounds of the request columns (`requests.X`) as
// the cell columns of the same measure have them.
var requestColumnsBound = []struct {
	column string // the cell column whose bound applies
	get    func(*requestColumns) *[]float64
}{
	{results.ColTTFTMs, func(r *requestColumns) *[]float64 { return &r.TTFTMs }},
	{results.ColE2ELMs, func(r *requestColumns) *[]float64 { return &r.E2ELMs }},
	{results.ColTTFTSchedMs, func(r *requestColumns) *[]float64 { return &r.TTFTSchedMs }},
	{results.ColE2ELSchedMs, func(r *requestColumns) *[]float64 { return &r.E2ELSchedMs }},
	{results.ColSendLagMs, func(r *requestColumns) *[]float64 { return &r.SendLagMs }},
	{results.ColITLMs, func(r *requestColumns) *[]float64 { return &r.ITLMs }},
}

// explain says whether the machine's lateness during the cell could
// explain a row-level check that failed on c, and why in numbers. A
// baseline's columns (`baseline.NAME`) were measured in the baseline's
// run: they move by what its machine's lateness, measured there, allows.
// A check whose failure the machine cannot explain (a column it reads that
// no lateness moves, a lateness not measured, a miss larger than the
// lateness) returns "", false.
func (a *Assertion) explain(c results.Cell, rc requestColumns, base *results.Cell) (string, bool) {
	if a.Level != LevelRow {
		return "", false
	}
	dims := a.explainDims(c, base)
	if len(dims) == 0 {
		return "", false
	}
	dims = dims[:min(len(dims), maxExplainDims)]
	late := machine.Late(&c)
	for mask := 0; mask < 1<<len(dims); mask++ {
		cc := c
		crc := rc
		var cb *results.Cell
		if base != nil {
			copied := *base
			cb = &copied
		}
		moved := map[string]float64{}
		for k, d := range dims {
			up := mask&(1<<k) != 0
			delta := -d.b.Down
			if up {
				delta = d.b.Up
			}
			if d.col == nil {
				crc = shiftRequests(rc, &c, late, up)
				continue
			}
			if delta == 0 {
				continue
			}
			x := max(d.value+delta, 0)
			moved[d.name] = x
			row := &cc
			if d.base {
				row = cb
			}
			d.col.SetNumber(row, x)
		}
		out, err := expr.Run(a.prog, rowEnv{Cell: cc, Requests: crc, Baseline: cb})
		if err != nil {
			continue
		}
		if ok, _ := out.(bool); ok {
			return a.explanation(c, base, dims, moved, rowEnv{Cell: c, Requests: rc, Baseline: base}), true
		}
	}
	return "", false
}

// explainDims are the columns the check reads that the machine could
// have moved: the row's by the lateness during the cell, the baseline's
// by the lateness during the baseline's cell.
func (a *Assertion) explainDims(c results.Cell, base *results.Cell) []explainDim {
	var dims []explainDim
	add := func(row *results.Cell, names []string, isBase bool) {
		late := machine.Late(row)
		if late <= 0 && machine.ServerWait(row) <= 0 {
			return
		}
		for _, n := range names {
			col, ok := results.LookupExpr(n)
			if !ok {
				continue
			}
			value, ok := col.Number(row)
			if !ok {
				continue
			}
			// The probe's lateness, and a local server's own wait for
			// a CPU (its threads starved beside CPU-bound neighbours
			// while the probe, a sleeper, was woken promptly).
			if b := machine.JudgeBound(n, row); !b.Zero() {
				name := n
				if isBase {
					name = "baseline." + n
				}
				dims = append(dims, explainDim{name: name, col: &col, base: isBase, b: b, value: value})
			}
		}
		if !isBase && late > 0 && slices.Contains(names, "requests") {
			dims = append(dims, explainDim{name: "requests", b: machine.Bound{Down: late, Up: late}})
		}
	}
	add(&c, a.names, false)
	if base != nil {
		add(base, a.baselineNames, true)
	}
	return dims
}

// shiftRequests moves every latency of the requests' columns by its
// column's bound, down or up.
func shiftRequests(rc requestColumns, c *results.Cell, late float64, up bool) requestColumns {
	out := rc
	for _, col := range requestColumnsBound {
		b := machine.Allowance(col.column, c, late)
		delta := -b.Down
		if up {
			delta = b.Up
		}
		src := *col.get(&rc)
		if delta == 0 || len(src) == 0 {
			continue
		}
		moved := make([]float64, len(src))
		for i, x := range src {
			moved[i] = max(x+delta, 0)
		}
		*col.get(&out) = moved
	}
	return out
}

// explanation is the reason of an inconclusive verdict: by how much the
// check failed (for a comparison), how late the machine was (in the
// baseline's run too, when a baseline column moved), and the values with
// which it would hold.
func (a *Assertion) explanation(c results.Cell, base *results.Cell, dims []explainDim, moved map[string]float64, env rowEnv) string {
	var b strings.Builder
	if m, ok := a.margin(env); ok {
		fmt.Fprintf(&b, "the check failed by %.3g; ", m)
	}
	b.WriteString(machine.Describe(&c))
	for _, d := range dims {
		if _, ok := moved[d.name]; ok && !d.base {
			if stall := machine.DescribeStall(d.name, &c); stall != "" {
				b.WriteString(stall)
				break
			}
		}
	}
	for _, d := range dims {
		if _, ok := moved[d.name]; ok && !d.base {
			if srv := machine.DescribeServer(d.name, &c); srv != "" {
				b.WriteString(srv)
				break
			}
		}
	}
	var with []string
	movedBase := false
	for _, d := range dims {
		x, ok := moved[d.name]
		if !ok {
			continue
		}
		movedBase = movedBase || d.base
		if math.IsInf(x, 1) {
			row := &c
			if d.base {
				row = base
			}
			with = append(with, fmt.Sprintf("%s any value above %.4g (%.0f%% of its token events came joined in one socket read: the percentile fell among gaps those reads made 0)",
				d.name, d.value, *row.EventsJoinedPct))
			continue
		}
		with = append(with, fmt.Sprintf("%s %.4g instead of %.4g", d.name, x, d.value))
	}
	if movedBase {
		b.WriteString("; in the baseline's run " + strings.TrimPrefix(machine.Describe(base), "the machine's lateness "))
	}
	if len(with) > 0 {
		fmt.Fprintf(&b, ", and with %s (what that lateness could account for) it holds", strings.Join(with, ", "))
	} else {
		b.WriteString(", and with the requests' latencies moved by what that lateness could account for it holds")
	}
	return b.String()
}

// margin is by how much a comparison (`x < y`, `x >= y`, ...) failed on
// env: |x − y|; false for any other expression.
func (a *Assertion) margin(env rowEnv) (float64, bool) {
	if a.sides[0] == nil {
		return 0, false
	}
	var xs [2]float64
	for i, p := range a.sides {
		out, err := expr.Run(p, env)
		if err != nil {
			return 0, false
		}
		x, err := number("", out)
		if err != nil || math.IsNaN(x) {
			return 0, false
		}
		xs[i] = x
	}
	return math.Abs(xs[0] - xs[1]), true
}

// comparisonSides compiles the two sides of a top-level comparison, so
// that a failed check can say by how much it failed; nil otherwise.
func comparisonSides(node ast.Node, opts []expr.Option) [2]*vm.Program {
	bin, ok := node.(*ast.BinaryNode)
	if !ok || !slices.Contains([]string{"<", "<=", ">", ">="}, bin.Operator) {
		return [2]*vm.Program{}
	}
	var out [2]*vm.Program
	for i, side := range []ast.Node{bin.Left, bin.Right} {
		p, err := expr.Compile(side.String(), opts...)
		if err != nil {
			return [2]*vm.Program{}
		}
		out[i] = p
	}
	return out
}
