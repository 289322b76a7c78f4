package pipeline

import (
	"fmt"
	"slices"

	"github.com/expr-lang/expr"
	"github.com/expr-lang/expr/ast"
	"github.com/expr-lang/expr/vm"

	"github.com/benchrun/benchrun/pipeline/judge"
	"github.com/benchrun/benchrun/schema"
)

// StageView is what a `when` expression sees of a stage it depends on:
// `stages.health.status == "ok"`, `stages.probe.outputs.gpus > 1`.
type StageView struct {
	Status    string         `expr:"status"`
	Reason    string         `expr:"reason"`
	DurationS float64        `expr:"duration_s"`
	Attempts  int            `expr:"attempts"`
	URL       string         `expr:"url"`
	Model     string         `expr:"model"`
	Outputs   map[string]any `expr:"outputs"`
}

// WhenEnv is the environment of `when` expressions. It is a struct so that
// a misspelt name is a compile error at vet time.
type WhenEnv struct {
	Stages   map[string]StageView `expr:"stages"`
	Metadata map[string]string    `expr:"metadata"`
	// Tags are the -t values given on the command line.
	Tags map[string]string `expr:"tags"`
}

// compileWhen compiles a stage's `when` and returns the stages it names
// (stages.NAME or stages["NAME"]), which become its dependencies, and the
// tags it reads (tags.NAME), which vet checks against the plan's @tag
// fields: an undeclared one is always "" at run time, a silent typo.
func compileWhen(s *schema.Stage) (*vm.Program, []string, []string, error) {
	prog, err := expr.Compile(s.When, expr.Env(WhenEnv{}), expr.AsBool())
	if err != nil {
		msg, at := judge.ExprProblem(err, s.When, s.WhenPos, []string{"stages", "metadata", "tags"})
		return nil, nil, nil, schema.Error{Pos: at, Msg: fmt.Sprintf("stages.%s.when: %q: %s (it reads stages.NAME.status|reason|duration_s|attempts|url|model|outputs, metadata, tags)", s.Name, s.When, msg)}
	}
	v := &stageRefs{}
	node := prog.Node()
	ast.Walk(&node, v)
	if v.dynamic {
		return nil, nil, nil, schema.Error{Pos: s.WhenPos, Msg: fmt.Sprintf("stages.%s.when: %q: name stages literally (stages.NAME or stages[\"NAME\"]), so that they become dependencies", s.Name, s.When)}
	}
	return prog, v.names, v.tags, nil
}

type stageRefs struct {
	names, tags []string
	// dynamic: stages[expr] with a computed name, which cannot become a
	// dependency (it would read a stage that has not run as "").
	dynamic bool
}

func (v *stageRefs) Visit(node *ast.Node) {
	m, ok := (*node).(*ast.MemberNode)
	if !ok {
		return
	}
	id, ok := m.Node.(*ast.IdentifierNode)
	if !ok {
		return
	}
	s, ok := m.Property.(*ast.StringNode)
	if !ok {
		if id.Value == "stages" {
			v.dynamic = true
		}
		return
	}
	switch id.Value {
	case "stages":
		if !slices.Contains(v.names, s.Value) {
			v.names = append(v.names, s.Value)
		}
	case "tags":
		if !slices.Contains(v.tags, s.Value) {
			v.tags = append(v.tags, s.Value)
		}
	}
}

// HasWhen says the stage runs only when its `when` holds.
func (n *Node) HasWhen() bool { return n.when != nil }

// WhenReads says the stage's `when` reads the stage named stage (a
// skipped one among them does not skip it).
func (n *Node) WhenReads(stage string) bool { return slices.Contains(n.whenReads, stage) }

// EvalWhen runs the stage's compiled `when` against env, the states of
// the run so far.
func (n *Node) EvalWhen(env WhenEnv) (bool, error) {
	out, err := expr.Run(n.when, env)
	if err != nil {
		return false, fmt.Errorf("when %q could not be evaluated: %w", n.Spec.When, err)
	}
	ok, _ := out.(bool)
	return ok, nil
}
