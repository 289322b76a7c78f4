package pipeline

import (
	"fmt"
	"reflect"
	"sort"
	"strings"
	"sync"

	"github.com/expr-lang/expr"
	"github.com/expr-lang/expr/ast"
	"github.com/expr-lang/expr/vm"

	"github.com/benchrun/benchrun/internal/results"
	"github.com/benchrun/benchrun/schema"
)

// Assertion is a compiled check over cell rows.
type Assertion struct {
	Expr  string
	Pos   schema.Pos
	Stage string // "" for plan-level assertions (applied to every measuring stage)
	prog  *vm.Program
	names []string // the row columns the expression reads, for messages
	// nullAware: the expression tests for null itself (`x == nil`, `x ??
	// 0`), so a null column it reads is its own business.
	nullAware bool
}

// Verdict is one assertion judged on one cell row.
type Verdict struct {
	Assertion string            `json:"assertion"`
	Pos       string            `json:"pos"`
	Stage     string            `json:"stage"`
	CellID    string            `json:"cell_id"`
	Cell      string            `json:"cell"`
	Passed    bool              `json:"passed"`
	Values    map[string]string `json:"values"`
	Error     string            `json:"error,omitempty"`
}

// CompileAssertion compiles an expression against the typed cell row, so a
// misspelt column is an error at vet time, with the assertion's position.
func CompileAssertion(a schema.Assertion, stage string) (*Assertion, error) {
	prog, err := expr.Compile(a.Expr, expr.Env(results.Cell{}), expr.AsBool())
	if err != nil {
		msg, at := exprProblem(err, a.Expr, a.Pos, cellColumns())
		if strings.Contains(msg, "unknown name") {
			msg += " (columns: `benchrun schema columns`)"
		}
		return nil, schema.Error{Pos: at, Msg: fmt.Sprintf("assertion %q: %s", a.Expr, msg)}
	}
	return &Assertion{Expr: a.Expr, Pos: a.Pos, Stage: stage, prog: prog, names: identifiers(prog.Node()), nullAware: testsNull(prog.Node())}, nil
}

var cellColumns = sync.OnceValue(func() []string { return exprNames(results.Cell{}) })

// cellField maps each expr name of a cell row to its field index.
var cellField = sync.OnceValue(func() map[string]int {
	out := map[string]int{}
	t := reflect.TypeOf(results.Cell{})
	for i := 0; i < t.NumField(); i++ {
		out[t.Field(i).Tag.Get("expr")] = i
	}
	return out
})

// nullVisitor finds a test for null: a nil literal or the ?? operator.
type nullVisitor struct{ found bool }

func (v *nullVisitor) Visit(node *ast.Node) {
	switch n := (*node).(type) {
	case *ast.NilNode:
		v.found = true
	case *ast.BinaryNode:
		if n.Operator == "??" {
			v.found = true
		}
	}
}

func testsNull(n ast.Node) bool {
	v := &nullVisitor{}
	ast.Walk(&n, v)
	return v.found
}

type identVisitor struct{ names map[string]bool }

func (v *identVisitor) Visit(node *ast.Node) {
	if id, ok := (*node).(*ast.IdentifierNode); ok {
		v.names[id.Value] = true
	}
}

func identifiers(n ast.Node) []string {
	v := &identVisitor{names: map[string]bool{}}
	ast.Walk(&n, v)
	var out []string
	for k := range v.names {
		out = append(out, k)
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
func (a *Assertion) Judge(c results.Cell) Verdict {
	v := Verdict{Assertion: a.Expr, Pos: a.Pos.String(), Stage: c.Stage, CellID: c.CellID, Cell: CellLabel(c), Values: columnValues(c, a.names)}
	null := a.nullColumn(c)
	if null != nil && !a.nullAware {
		v.Error = null.Error()
		return v
	}
	out, err := expr.Run(a.prog, c)
	if err != nil {
		v.Error = err.Error()
		if null != nil {
			v.Error = null.Error() + ": " + v.Error
		}
		return v
	}
	v.Passed, _ = out.(bool)
	return v
}

// nullColumn is the first column the expression reads that is null on c.
func (a *Assertion) nullColumn(c results.Cell) *results.NullError {
	rv := reflect.ValueOf(c)
	for _, n := range a.names {
		i, ok := cellField()[n]
		if !ok {
			continue
		}
		if f := rv.Field(i); f.Kind() == reflect.Pointer && f.IsNil() {
			return &results.NullError{Column: n, Why: results.WhyNull(c, n)}
		}
	}
	return nil
}

// CellLabel names a cell for people: "sweep 128:128 c=4".
func CellLabel(c results.Cell) string {
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
	rv := reflect.ValueOf(c)
	for _, n := range names {
		i, ok := cellField()[n]
		if !ok {
			continue
		}
		f := rv.Field(i)
		if f.Kind() == reflect.Pointer {
			if f.IsNil() {
				out[n] = "null"
				continue
			}
			f = f.Elem()
		}
		out[n] = fmt.Sprintf("%v", f.Interface())
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
