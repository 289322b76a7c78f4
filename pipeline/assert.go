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
	return &Assertion{Expr: a.Expr, Pos: a.Pos, Stage: stage, prog: prog, names: identifiers(prog.Node())}, nil
}

var cellColumns = sync.OnceValue(func() []string { return exprNames(results.Cell{}) })

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

// Judge evaluates the assertion on a row.
func (a *Assertion) Judge(c results.Cell) Verdict {
	v := Verdict{Assertion: a.Expr, Pos: a.Pos.String(), Stage: c.Stage, CellID: c.CellID, Cell: CellLabel(c), Values: columnValues(c, a.names)}
	out, err := expr.Run(a.prog, c)
	if err != nil {
		v.Error = err.Error()
		return v
	}
	v.Passed, _ = out.(bool)
	return v
}

// CellLabel names a cell for people: "sweep 128:128 c=4".
func CellLabel(c results.Cell) string {
	load := fmt.Sprintf("c=%d", c.Concurrency)
	if c.Rate > 0 {
		load = fmt.Sprintf("rate=%g", c.Rate)
	}
	return fmt.Sprintf("%s %d:%d %s", c.Stage, c.ISL, c.OSL, load)
}

// columnValues returns the named columns' values of c, formatted.
func columnValues(c results.Cell, names []string) map[string]string {
	out := map[string]string{}
	rv := reflect.ValueOf(c)
	rt := rv.Type()
	for i := 0; i < rt.NumField(); i++ {
		tag := rt.Field(i).Tag.Get("expr")
		for _, n := range names {
			if tag == n {
				out[n] = fmt.Sprintf("%v", rv.Field(i).Interface())
			}
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
