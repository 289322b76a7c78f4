// Package judge is how benchrun judges rows: an assertion compiled once
// against the typed environment of its level (a cell row, a stage's rows,
// every stage's), judged on rows in and verdicts out, and, when a check
// fails, whether the machine's own lateness during the cell could explain
// the miss (explain.go). A Judge (judge.go) is the component the runner
// feeds a run's rows to, as it feeds a sink: it keeps what the judging
// needs (each stage's current rows, the verdicts, the baseline history,
// the cells to confirm) and returns verdict rows; it runs nothing, and the
// runner decides when a stage or the run has ended.
package judge

import (
	"errors"
	"fmt"
	"math"
	"reflect"
	"slices"
	"sort"
	"strings"

	"github.com/expr-lang/expr"
	"github.com/expr-lang/expr/ast"
	"github.com/expr-lang/expr/parser"
	"github.com/expr-lang/expr/vm"

	"github.com/benchrun/benchrun/internal/machine"
	"github.com/benchrun/benchrun/internal/results"
	"github.com/benchrun/benchrun/internal/rundir"
	"github.com/benchrun/benchrun/internal/stats"
	"github.com/benchrun/benchrun/schema"
)

// Assertion levels: what one judging of the expression reads.
const (
	LevelRow   = "row"   // each cell row (its columns, `requests.COLUMN`)
	LevelStage = "stage" // a stage's rows together (`rows`), once the stage ends
	LevelRun   = "run"   // across stages (`stages.NAME.rows`), once every stage ended
)

// Severities.
const (
	SeverityFail = "fail"
	SeverityWarn = "warn" // printed and recorded; never changes the exit code
)

// Assertion is a compiled check over cell rows.
type Assertion struct {
	Expr string
	Name string
	// Severity is SeverityFail or SeverityWarn.
	Severity string
	// Level is LevelRow, LevelStage or LevelRun, from what the expression reads.
	Level string
	Pos   schema.Pos
	Stage string // "" for plan-level assertions (applied to every measuring stage)
	prog  *vm.Program
	names []string // the row columns the expression reads, for messages
	// nullAware: the expression tests for null itself (`x == nil`, `x ??
	// 0`), so a null column it reads is its own business.
	nullAware bool
	// stagesRead are the NAMEs of the `stages.NAME` a run-level assertion reads.
	stagesRead []string
	// ReadsBaseline: a row-level assertion that reads `baseline.COLUMN`.
	ReadsBaseline bool
	// baselineNames are the COLUMNs of the `baseline.COLUMN` it reads.
	baselineNames []string
	// sides are the two sides of a top-level comparison, compiled (nil
	// otherwise): by how much a failed check missed (explain.go).
	sides [2]*vm.Program
}

// Verdict is one assertion judged on one cell row (or on a stage's rows,
// or across stages). Its fields are the manifest's record of it, defined
// once in rundir, so a field cannot reach one and miss the other.
type Verdict rundir.VerdictRecord

// Fails reports whether the verdict fails the run (a failed or
// unevaluable check of severity fail that the machine does not explain).
func (v Verdict) Fails() bool { return !v.Passed && v.Severity != SeverityWarn && !v.Inconclusive }

// requestColumns are the request-row columns a row-level assertion reads
// as `requests.COLUMN`: the values of the cell's completed requests (a
// request that measured nothing for a column adds nothing to it), for
// `p(requests.ttft_ms, 99)`, `len(requests.e2el_ms)`, ...
type requestColumns struct {
	TTFTMs      []float64 `expr:"ttft_ms"`
	E2ELMs      []float64 `expr:"e2el_ms"`
	TTFTSchedMs []float64 `expr:"ttft_sched_ms"`
	E2ELSchedMs []float64 `expr:"e2el_sched_ms"`
	SendLagMs   []float64 `expr:"send_lag_ms"`
	// ITLMs pools every completed request's gaps between token-bearing events.
	ITLMs        []float64 `expr:"itl_ms"`
	InputTokens  []float64 `expr:"input_tokens"`
	OutputTokens []float64 `expr:"output_tokens"`
}

// requestColumnsOf reads the request columns of reqs: only for an
// assertion that reads them (a long cell's gaps are millions of values).
func (a *Assertion) requestColumnsOf(reqs results.Requests) requestColumns {
	var rc requestColumns
	if reqs == nil || !strings.Contains(a.Expr, "requests.") {
		return rc
	}
	for r := range reqs.All() {
		if r.Status != results.StatusOK {
			continue
		}
		for _, f := range []struct {
			dst *[]float64
			v   *float64
		}{{&rc.TTFTMs, r.TTFTMs}, {&rc.E2ELMs, r.E2ELMs}, {&rc.TTFTSchedMs, r.TTFTSchedMs}, {&rc.E2ELSchedMs, r.E2ELSchedMs}} {
			if f.v != nil {
				*f.dst = append(*f.dst, *f.v)
			}
		}
		rc.SendLagMs = append(rc.SendLagMs, r.SendLagMs)
		rc.ITLMs = append(rc.ITLMs, r.ChunkGapsMs...)
		rc.InputTokens = append(rc.InputTokens, float64(r.InputTokens))
		rc.OutputTokens = append(rc.OutputTokens, float64(r.OutputTokens))
	}
	return rc
}

// rowEnv is what a row-level assertion reads: the cell row's columns and
// its requests.
type rowEnv struct {
	results.Cell
	Requests requestColumns `expr:"requests"`
	// Baseline is the same cell (the regression key) in the newest ok run
	// of the plan's baseline history; nil when none matches.
	Baseline *results.Cell `expr:"baseline"`
}

// stageEnv is what a stage-level assertion reads: the stage's cell rows
// (the current row of each cell).
type stageEnv struct {
	Rows []results.Cell `expr:"rows"`
}

// stageRows is one stage as a run-level assertion reads it.
type stageRows struct {
	Rows []results.Cell `expr:"rows"`
}

// runEnv is what a run-level assertion reads: every measuring stage's rows.
type runEnv struct {
	Stages map[string]stageRows `expr:"stages"`
}

// aggregate is an expr builtin (max, min, sum, mean, median) over a list
// or its arguments that reads nullable columns: `max(map(rows,
// .decode_tok_s))` works on the pointers a nullable column holds, and a
// null among them is an error (nothing was measured), never a 0.
func aggregate(name string, f func([]float64) float64) expr.Option {
	return expr.Function(name, func(args ...any) (any, error) {
		var xs []float64
		add := func(v any) error {
			x, err := number(name, v)
			if err != nil {
				return err
			}
			xs = append(xs, x)
			return nil
		}
		for _, a := range args {
			rv := reflect.ValueOf(a)
			if rv.Kind() == reflect.Slice {
				for i := 0; i < rv.Len(); i++ {
					if err := add(rv.Index(i).Interface()); err != nil {
						return nil, err
					}
				}
				continue
			}
			if err := add(a); err != nil {
				return nil, err
			}
		}
		if len(xs) == 0 {
			return nil, fmt.Errorf("%s: no values (nothing was measured)", name)
		}
		return f(xs), nil
	})
}

// assertFuncs are the helpers every assertion may call.
var assertFuncs = []expr.Option{
	expr.DisableBuiltin("max"), aggregate("max", func(xs []float64) float64 { return slices.Max(xs) }),
	expr.DisableBuiltin("min"), aggregate("min", func(xs []float64) float64 { return slices.Min(xs) }),
	expr.DisableBuiltin("sum"), aggregate("sum", func(xs []float64) float64 {
		t := 0.0
		for _, x := range xs {
			t += x
		}
		return t
	}),
	expr.DisableBuiltin("mean"), aggregate("mean", stats.Mean),
	expr.DisableBuiltin("median"), aggregate("median", func(xs []float64) float64 { return stats.Percentile(xs, 50) }),
	// within(x, y, pct): x is within pct percent of y.
	expr.Function("within", func(args ...any) (any, error) {
		x, y, pct, err := threeNumbers("within", args)
		if err != nil {
			return nil, err
		}
		return math.Abs(x-y) <= pct/100*math.Abs(y), nil
	}, new(func(float64, float64, float64) bool)),
	// pct_change(old, new): the change from old to new, in percent.
	expr.Function("pct_change", func(args ...any) (any, error) {
		if len(args) != 2 {
			return nil, errors.New("pct_change(old, new) takes two numbers")
		}
		old, err := number("pct_change", args[0])
		if err != nil {
			return nil, err
		}
		nw, err := number("pct_change", args[1])
		if err != nil {
			return nil, err
		}
		if old == 0 {
			return nil, errors.New("pct_change: the old value is 0, so no change in percent exists")
		}
		return (nw - old) / math.Abs(old) * 100, nil
	}, new(func(float64, float64) float64)),
	// p(xs, q): the q-th percentile (0..100) of xs, as the cell columns
	// are computed (sort, linear interpolation); no samples is an error.
	expr.Function("p", func(args ...any) (any, error) {
		if len(args) != 2 {
			return nil, errors.New("p(values, q) takes a list and a percentile")
		}
		xs, ok := args[0].([]float64)
		if !ok {
			return nil, fmt.Errorf("p: want a list of numbers such as requests.ttft_ms, got %T", args[0])
		}
		q, err := number("p", args[1])
		if err != nil {
			return nil, err
		}
		if q < 0 || q > 100 {
			return nil, fmt.Errorf("p: the percentile %g is not within 0..100", q)
		}
		if len(xs) == 0 {
			return nil, errors.New("p: no samples (nothing was measured)")
		}
		return stats.Percentile(xs, q), nil
	}, new(func([]float64, float64) float64)),
}

func threeNumbers(fn string, args []any) (a, b, c float64, err error) {
	if len(args) != 3 {
		return 0, 0, 0, fmt.Errorf("%s takes three numbers", fn)
	}
	var out [3]float64
	for i, v := range args {
		if out[i], err = number(fn, v); err != nil {
			return 0, 0, 0, err
		}
	}
	return out[0], out[1], out[2], nil
}

// number reads a helper's argument: a number, or a nullable column's
// value (a null one is an error: nothing was measured).
func number(fn string, v any) (float64, error) {
	rv := reflect.ValueOf(v)
	if rv.Kind() == reflect.Pointer {
		if rv.IsNil() {
			return 0, fmt.Errorf("%s: a value is null (not measured)", fn)
		}
		rv = rv.Elem()
	}
	switch {
	case rv.CanFloat():
		return rv.Float(), nil
	case rv.CanInt():
		return float64(rv.Int()), nil
	}
	return 0, fmt.Errorf("%s: %v is not a number", fn, v)
}

// LevelOf says what the expression reads: `rows` makes it a stage-level
// assertion, `stages` a run-level one, anything else a row-level one;
// reading both levels at once is an error. It also returns the NAMEs of
// `stages.NAME`.
func LevelOf(src string) (level string, stagesRead []string, err error) {
	tree, perr := parser.Parse(src)
	if perr != nil {
		return LevelRow, nil, nil // the compile reports it, with its position
	}
	v := &levelVisitor{ids: map[string]bool{}}
	ast.Walk(&tree.Node, v)
	switch {
	case v.ids["rows"] && v.ids["stages"]:
		return "", nil, errors.New("reads both `rows` (this stage's rows) and `stages` (every stage's): use stages.NAME.rows for each")
	case v.ids["stages"]:
		slices.Sort(v.stages)
		return LevelRun, slices.Compact(v.stages), nil
	case v.ids["rows"]:
		return LevelStage, nil, nil
	}
	return LevelRow, nil, nil
}

type levelVisitor struct {
	ids    map[string]bool
	stages []string
}

func (v *levelVisitor) Visit(node *ast.Node) {
	switch n := (*node).(type) {
	case *ast.IdentifierNode:
		v.ids[n.Value] = true
	case *ast.MemberNode:
		if id, ok := n.Node.(*ast.IdentifierNode); ok && id.Value == "stages" {
			if s, ok := n.Property.(*ast.StringNode); ok {
				v.stages = append(v.stages, s.Value)
			}
		}
	}
}

// CompileAssertion compiles an expression against the typed environment
// of its level, so a misspelt column is an error at vet time, with the
// assertion's position.
func CompileAssertion(a schema.Assertion, stage string) (*Assertion, error) {
	level, stagesRead, err := LevelOf(a.Expr)
	if err != nil {
		return nil, schema.Error{Pos: a.Pos, Msg: fmt.Sprintf("assertion %q: %v", a.Expr, err)}
	}
	var env any
	names := cellColumns()
	switch level {
	case LevelStage:
		env = stageEnv{}
	case LevelRun:
		env = runEnv{}
	default:
		env = rowEnv{}
		names = append(slices.Clone(names), "requests")
	}
	opts := append([]expr.Option{expr.Env(env), expr.AsBool()}, assertFuncs...)
	prog, err := expr.Compile(a.Expr, opts...)
	if err != nil {
		msg, at := ExprProblem(err, a.Expr, a.Pos, names)
		if strings.Contains(msg, "unknown name") {
			msg += " (columns: `benchrun schema columns`)"
		}
		return nil, schema.Error{Pos: at, Msg: fmt.Sprintf("assertion %q: %s", a.Expr, msg)}
	}
	severity := a.Severity
	if severity == "" {
		severity = SeverityFail
	}
	ids := identifiers(prog.Node())
	out := &Assertion{Expr: a.Expr, Name: a.Name, Severity: severity, Level: level, Pos: a.Pos, Stage: stage, prog: prog,
		names: ids, nullAware: testsNull(prog.Node()), stagesRead: stagesRead, ReadsBaseline: level == LevelRow && slices.Contains(ids, "baseline")}
	if out.ReadsBaseline {
		out.baselineNames = membersOf(prog.Node(), "baseline")
	}
	if level == LevelRow {
		out.sides = comparisonSides(prog.Node(), append([]expr.Option{expr.Env(env)}, assertFuncs...))
	}
	return out, nil
}

// cellColumns lists the expr names of a cell row's columns, sorted (for a
// did-you-mean).
func cellColumns() []string {
	var out []string
	for _, c := range results.Columns() {
		if c.Expr != "" {
			out = append(out, c.Expr)
		}
	}
	sort.Strings(out)
	return out
}

// Judge evaluates the assertion on a row. An assertion that reads a null
// (not measured) column is an error naming it, never a pass: `ttft_p99_ms
// < 500` on a cell whose every request failed has nothing to compare,
// and expr would read the null as false in `==` or `in` (so `!=` or `not
// in` as true). An expression that tests for null itself (`x == nil ||
// x < 500`, `(x ?? 0) < 500`) is evaluated as written.
func (a *Assertion) Judge(c results.Cell) Verdict { return a.JudgeRow(c, nil, nil) }

// JudgeRow is Judge with the cell's request rows, which `requests.COLUMN`
// reads, and the baseline's matching cell, which `baseline.COLUMN` reads
// (nil: none matched, and an assertion reading it is an error verdict).
func (a *Assertion) JudgeRow(c results.Cell, reqs results.Requests, base *results.Cell) Verdict {
	v := a.verdict(c.Stage, c.CellID, CellLabel(c))
	v.Values = columnValues(c, a.names)
	if a.ReadsBaseline {
		if base == nil && !a.nullAware {
			v.Error = "no cell of the baseline's runs matches this one (same plan, stage, cell id, endpoint, model digest, engine and version, hardware, metadata): nothing to compare with"
			return v
		}
		if base != nil {
			v.Values["baseline"] = base.RunID
		}
	}
	null := a.nullColumn(c)
	if null != nil && !a.nullAware {
		v.Error = null.Error()
		return v
	}
	rc := a.requestColumnsOf(reqs)
	out, err := expr.Run(a.prog, rowEnv{Cell: c, Requests: rc, Baseline: base})
	if err != nil {
		v.Error = err.Error()
		if null != nil {
			v.Error = null.Error() + ": " + v.Error
		}
		return v
	}
	v.Passed, _ = out.(bool)
	if why, need, ok := a.unresolved(c, rc, base, v.Passed); ok {
		v.Passed, v.Inconclusive, v.TooFewSamples, v.NeedsRequests, v.Explained = false, true, true, need, why
		return v
	}
	if !v.Passed {
		if why, ok := a.explain(c, rc, base); ok {
			v.Inconclusive, v.Explained = true, why
			v.Values[results.ColMachineLateP99Ms] = fmt.Sprintf("%.3g", machine.Late(&c))
		}
	}
	return v
}

func (a *Assertion) verdict(stage, cellID, cell string) Verdict {
	return Verdict{Assertion: a.Expr, Name: a.Name, Severity: a.Severity, Level: a.Level, Pos: a.Pos.String(), Stage: stage, CellID: cellID, Cell: cell}
}

// JudgeStage evaluates a stage-level assertion on the stage's rows (the
// current row of each cell). A stage with no rows measured nothing: the
// verdict is an error, never a pass (`all(rows, ...)` holds on none).
func (a *Assertion) JudgeStage(stage string, rows []results.Cell) Verdict {
	v := a.verdict(stage, "", "stage "+stage)
	v.Values = map[string]string{"rows": fmt.Sprint(len(rows))}
	if len(rows) == 0 {
		v.Error = "the stage has no rows: nothing was measured"
		return v
	}
	a.run(&v, stageEnv{Rows: rows})
	return v
}

// JudgeRun evaluates a run-level assertion on the rows of every measuring
// stage. A stage it reads with no rows makes it an error.
func (a *Assertion) JudgeRun(byStage map[string][]results.Cell) Verdict {
	v := a.verdict(a.Stage, "", "run")
	v.Values = map[string]string{}
	env := runEnv{Stages: map[string]stageRows{}}
	for name, rows := range byStage {
		env.Stages[name] = stageRows{Rows: rows}
	}
	for _, name := range a.stagesRead {
		n := len(byStage[name])
		v.Values["stages."+name+".rows"] = fmt.Sprint(n)
		if n == 0 && v.Error == "" {
			v.Error = fmt.Sprintf("stage %s has no rows: nothing was measured", name)
		}
	}
	if v.Error != "" {
		return v
	}
	a.run(&v, env)
	return v
}

func (a *Assertion) run(v *Verdict, env any) {
	out, err := expr.Run(a.prog, env)
	if err != nil {
		v.Error = oneLine(err.Error())
		return
	}
	v.Passed, _ = out.(bool)
}

// nullColumn is the first column the expression reads that is null on c.
func (a *Assertion) nullColumn(c results.Cell) *results.NullError {
	for _, n := range a.names {
		if col, ok := results.LookupExpr(n); ok && col.IsNull(&c) {
			return &results.NullError{Column: n, Why: results.WhyNull(c, n)}
		}
	}
	return nil
}

// CellLabel names a cell for people: "sweep 128:128 c=4"; a row of no
// load shape (a launch stage's start-up) by its cell id.
func CellLabel(c results.Cell) string {
	if c.ISL == 0 && c.OSL == 0 && c.Concurrency == 0 && c.Rate == 0 && c.CellID != "" {
		return c.CellID
	}
	load := fmt.Sprintf("c=%d", c.Concurrency)
	if c.Rate > 0 {
		load = fmt.Sprintf("rate=%g", c.Rate)
	}
	return fmt.Sprintf("%s %d:%d %s", c.Stage, c.ISL, c.OSL, load)
}

// columnValues returns the named columns' values of c, formatted; a null
// column reads "null".
func columnValues(c results.Cell, names []string) map[string]string {
	out := map[string]string{}
	for _, n := range names {
		col, known := results.LookupExpr(n)
		if !known {
			continue
		}
		if v := col.Value(&c); v != nil {
			out[n] = fmt.Sprintf("%v", v)
		} else {
			out[n] = "null"
		}
	}
	return out
}

// FormatValues renders verdict values as "a=1 b=2".
func (v Verdict) FormatValues() string {
	var keys []string
	for k := range v.Values {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var parts []string
	for _, k := range keys {
		parts = append(parts, k+"="+v.Values[k])
	}
	return strings.Join(parts, " ")
}
