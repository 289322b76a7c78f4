package stages_test

import (
	"slices"
	"strconv"
	"testing"

	"cuelang.org/go/cue/ast"
	"cuelang.org/go/cue/parser"
	"cuelang.org/go/cue/token"

	"github.com/benchrun/benchrun/internal/engines"
	"github.com/benchrun/benchrun/pipeline"
	"github.com/benchrun/benchrun/schema"
	"github.com/benchrun/benchrun/stages"
)

// The engines a plan may name are written twice: as the `engine` field's
// enum in the kinds' CUE schemas and as the Go presets. An engine added to
// one and not the other would pass vet and run with the custom preset's
// paths, or have a preset no plan can name.
func TestEngineEnumsInTheSchemasAreTheGoPresets(t *testing.T) {
	reg := pipeline.NewRegistry()
	stages.Builtin(reg)
	want := slices.Sorted(slices.Values(engines.Names()))
	checked := map[string]bool{}
	for _, k := range reg.Schemas() {
		doc, err := schema.Describe(reg.Schemas(), reg.SinkSchemas(), k.Def)
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range doc.Fields {
			if f.Name != "engine" {
				continue
			}
			checked[k.Kind] = true
			got, err := stringEnum(f.Type)
			if err != nil {
				t.Errorf("%s (%s) engine: %q is not an enum of strings: %v", k.Kind, k.Def, f.Type, err)
				continue
			}
			slices.Sort(got)
			if !slices.Equal(got, want) {
				t.Errorf("%s (%s) engine allows %q; internal/engines has descriptors %q", k.Kind, k.Def, got, want)
			}
		}
	}
	// The launch stage is where a plan names its engine; if the field
	// moved, this test must follow it, not pass silently.
	if !checked["launch"] {
		t.Errorf("the launch kind's schema has no engine field (kinds with one: %v)", checked)
	}
}

// stringEnum returns the string literals of a disjunction of them
// (`"a" | "b"`), as `benchrun schema` renders a field's type.
func stringEnum(typ string) ([]string, error) {
	expr, err := parser.ParseExpr("engine", typ)
	if err != nil {
		return nil, err
	}
	var out []string
	var walk func(ast.Expr) error
	walk = func(e ast.Expr) error {
		switch e := e.(type) {
		case *ast.BinaryExpr:
			if e.Op != token.OR {
				return strconv.ErrSyntax
			}
			if err := walk(e.X); err != nil {
				return err
			}
			return walk(e.Y)
		case *ast.UnaryExpr: // a default, *"custom"
			if e.Op != token.MUL {
				return strconv.ErrSyntax
			}
			return walk(e.X)
		case *ast.BasicLit:
			if e.Kind != token.STRING {
				return strconv.ErrSyntax
			}
			s, err := strconv.Unquote(e.Value)
			if err != nil {
				return err
			}
			out = append(out, s)
			return nil
		default:
			return strconv.ErrSyntax
		}
	}
	return out, walk(expr)
}
