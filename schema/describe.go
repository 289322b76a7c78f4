package schema

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"cuelang.org/go/cue"
	"cuelang.org/go/cue/ast"
	"cuelang.org/go/cue/cuecontext"
	"cuelang.org/go/cue/format"
	"cuelang.org/go/cue/token"
)

// FieldDoc describes one field of a definition, for `benchrun schema`.
type FieldDoc struct {
	Name     string
	Type     string // the CUE constraint without its default, on one line
	Default  string // JSON, "" when the field has none
	Optional bool
	// Common marks the fields every stage kind shares (#StageBase), or
	// every sink kind (#SinkBase).
	Common bool
	Doc    string
}

// DefDoc describes a definition: a stage kind's, a sink's or the envelope.
type DefDoc struct {
	Def    string
	Doc    string
	Fields []FieldDoc
}

// Describe documents the definition def ("#Plan", "#Sweep", ...) from the
// embedded schema and the kinds' fragments: every field with its type,
// default and doc comment, in declaration order.
func Describe(kinds, sinks []KindSchema, def string) (DefDoc, error) {
	ctx := cuecontext.New()
	sv, err := buildSchema(ctx, kinds, sinks)
	if err != nil {
		return DefDoc{}, fmt.Errorf("benchrun's own schema does not compile (a bug): %w", err)
	}
	d := sv.LookupPath(cue.ParsePath(def))
	if !d.Exists() {
		return DefDoc{}, fmt.Errorf("no definition %s in the schema", def)
	}
	common := map[string]bool{}
	for _, baseDef := range []string{"#StageBase", "#SinkBase"} {
		if def == baseDef {
			continue
		}
		if base := sv.LookupPath(cue.ParsePath(baseDef)); base.Exists() && strings.Contains(sourceOf(kinds, sinks, def), baseDef) {
			it, _ := base.Fields(cue.Optional(true))
			for it != nil && it.Next() {
				common[it.Selector().Unquoted()] = true
			}
		}
	}
	out := DefDoc{Def: def, Doc: docText(d.Doc())}
	it, err := d.Fields(cue.Optional(true))
	if err != nil {
		return DefDoc{}, fmt.Errorf("%s: %w", def, err)
	}
	for it.Next() {
		f := it.Value()
		name := it.Selector().Unquoted()
		fd := FieldDoc{Name: name, Optional: it.IsOptional(), Common: common[name] && name != "kind", Doc: docText(f.Doc())}
		fd.Type, fd.Default = typeAndDefault(f)
		out.Fields = append(out.Fields, fd)
	}
	// A definition's own fields first, then those of the shared fragments
	// it embeds (#Client, #Requests), which CUE lists first.
	shared := embeddedFields(sv, sourceOf(kinds, sinks, def), def)
	slices.SortStableFunc(out.Fields, func(a, b FieldDoc) int {
		return cmp.Compare(b2i(shared[a.Name]), b2i(shared[b.Name]))
	})
	return out, nil
}

// embeddedFields are the fields of the definitions other than the bases
// and def itself that src embeds on a line of their own ("\t#Requests").
func embeddedFields(sv cue.Value, src, def string) map[string]bool {
	out := map[string]bool{}
	for _, line := range strings.Split(src, "\n") {
		name := strings.TrimSpace(line)
		if !strings.HasPrefix(name, "#") || strings.ContainsAny(name, " :{") || name == def || name == "#StageBase" || name == "#SinkBase" {
			continue
		}
		if v := sv.LookupPath(cue.ParsePath(name)); v.Exists() {
			it, _ := v.Fields(cue.Optional(true))
			for it != nil && it.Next() {
				out[it.Selector().Unquoted()] = true
			}
		}
	}
	return out
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

func sourceOf(kinds, sinks []KindSchema, def string) string {
	for _, k := range append(append([]KindSchema{}, kinds...), sinks...) {
		if k.Def == def {
			return k.Source
		}
	}
	return ""
}

// docText joins a doc comment into one paragraph.
func docText(groups []*ast.CommentGroup) string {
	var parts []string
	for _, g := range groups {
		if t := strings.TrimSpace(g.Text()); t != "" {
			parts = append(parts, strings.Join(strings.Fields(t), " "))
		}
	}
	return strings.Join(parts, " ")
}

// typeAndDefault renders a field's constraint without its default marker,
// and the default as JSON.
func typeAndDefault(f cue.Value) (typ, def string) {
	expr, _ := f.Syntax(cue.Raw()).(ast.Expr)
	var hasDefault bool
	if expr != nil {
		var alts []ast.Expr
		allLits := true
		for _, a := range disjuncts(expr) {
			if _, lit := a.(*ast.BasicLit); !lit {
				if u, ok := a.(*ast.UnaryExpr); !ok || u.Op != token.MUL {
					allLits = false
				}
			}
		}
		for _, a := range disjuncts(expr) {
			if u, ok := a.(*ast.UnaryExpr); ok && u.Op == token.MUL {
				hasDefault = true
				// A default among a list of literals stays in the type
				// ("completions" | "chat"); otherwise the type says it.
				if _, lit := u.X.(*ast.BasicLit); !lit || !allLits {
					continue
				}
				a = u.X
			}
			alts = append(alts, a)
		}
		var parts []string
		for _, a := range alts {
			b, err := format.Node(a)
			if err == nil {
				parts = append(parts, oneLine(string(b)))
			}
		}
		typ = strings.Join(parts, " | ")
		if typ == "" { // only a default: its type is the default's kind
			typ = f.IncompleteKind().String()
		}
	}
	if d, ok := f.Default(); ok && hasDefault {
		if b, err := d.MarshalJSON(); err == nil {
			def = string(b)
		}
	}
	if typ == "" {
		typ = f.IncompleteKind().String()
	}
	return typ, def
}

func disjuncts(e ast.Expr) []ast.Expr {
	if b, ok := e.(*ast.BinaryExpr); ok && b.Op == token.OR {
		return append(disjuncts(b.X), disjuncts(b.Y)...)
	}
	return []ast.Expr{e}
}

func oneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	s = strings.ReplaceAll(s, "{ ", "{")
	return strings.ReplaceAll(s, " }", "}")
}
