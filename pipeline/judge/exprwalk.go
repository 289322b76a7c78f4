package judge

import (
	"sort"

	"github.com/expr-lang/expr/ast"
)

// What an assertion's expression reads, found by walking its tree.

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

type memberVisitor struct {
	of    string
	names map[string]bool
}

func (v *memberVisitor) Visit(node *ast.Node) {
	m, ok := (*node).(*ast.MemberNode)
	if !ok {
		return
	}
	id, ok := m.Node.(*ast.IdentifierNode)
	prop, isName := m.Property.(*ast.StringNode)
	if ok && isName && id.Value == v.of {
		v.names[prop.Value] = true
	}
}

// membersOf are the NAMEs of the `of.NAME` an expression reads, sorted.
func membersOf(n ast.Node, of string) []string {
	v := &memberVisitor{of: of, names: map[string]bool{}}
	ast.Walk(&n, v)
	out := make([]string, 0, len(v.names))
	for k := range v.names {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
