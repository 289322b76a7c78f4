package pipeline

import (
	"fmt"
	"net/url"
	"slices"
	"strings"

	"github.com/expr-lang/expr/vm"

	"github.com/benchrun/benchrun/schema"
)

// Node is one stage in the graph.
type Node struct {
	Spec  *schema.Stage
	Kind  Kind
	Stage Stage
	// Deps are the names of the stages this one waits for: its needs, the
	// stage its target names and the stages its `when` reads, in that order.
	Deps []string
	// Via says where each dependency comes from: "needs", "target" or "when".
	Via map[string]string

	when *vm.Program
}

// Graph is a plan's stages with their edges, checked for cycles.
type Graph struct {
	Plan   *schema.Plan
	Nodes  []*Node // in plan order
	byName map[string]*Node
	// Sinks are the plan-level outputs decoded from `sinks`.
	Sinks []Output
}

// Node returns the node with the given name.
func (g *Graph) Node(name string) *Node { return g.byName[name] }

// Dependents returns the nodes that depend on name, in plan order.
func (g *Graph) Dependents(name string) []*Node {
	var out []*Node
	for _, n := range g.Nodes {
		if slices.Contains(n.Deps, name) {
			out = append(out, n)
		}
	}
	return out
}

func isURL(s string) bool {
	u, err := url.Parse(s)
	return err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != ""
}

// Build decodes every stage with its kind and links the graph. It reports
// every problem it finds, not only the first: unknown kinds, unknown needs
// and targets, `when` expressions and assertions that do not compile,
// retry on measuring stages, cycles, configuration errors. It performs no
// I/O. Stages marked Invalid by the loader are linked but not decoded.
func Build(p *schema.Plan, reg *Registry) (*Graph, error) {
	g := &Graph{Plan: p, byName: map[string]*Node{}}
	var errs schema.Errors
	for _, s := range p.Stages {
		n := &Node{Spec: s, Via: map[string]string{}}
		g.Nodes = append(g.Nodes, n)
		g.byName[s.Name] = n
	}
	addDep := func(n *Node, d, via string) {
		if !slices.Contains(n.Deps, d) {
			n.Deps = append(n.Deps, d)
			n.Via[d] = via
		}
	}
	for _, n := range g.Nodes {
		s := n.Spec
		k, known := reg.Kind(s.Kind)
		switch {
		case !known && s.Kind != "" && !s.Invalid:
			errs = append(errs, schema.Error{Pos: s.PosOf("kind"), Msg: fmt.Sprintf("stages.%s.kind: unknown stage kind %q (known stage kinds: %s)", s.Name, s.Kind, strings.Join(reg.kindNames(), ", "))})
		case known:
			n.Kind = k
			if !s.Invalid {
				st, err := k.New(s)
				if err != nil {
					errs = append(errs, asErrors(err, s)...)
				} else {
					n.Stage = st
					if err := st.Validate(p); err != nil {
						errs = append(errs, asErrors(err, s)...)
					}
				}
			}
			if k.Measuring && s.Retry != nil {
				errs = append(errs, schema.Error{Pos: s.PosOf("retry"), Msg: fmt.Sprintf("stages.%s.retry: retry is not allowed on a measuring stage (kind %s): a retried measurement hides failures; put the retry on the launch or health stage instead", s.Name, s.Kind)})
			}
			for _, a := range assertionsFor(n, p) {
				if _, err := CompileAssertion(a, s.Name); err != nil {
					errs = append(errs, asErrors(err, s)...)
				}
			}
		}
		for i, d := range s.Needs {
			if d == s.Name {
				errs = append(errs, schema.Error{Pos: s.PosOf("needs", fmt.Sprint(i)), Msg: fmt.Sprintf("stages.%s.needs: a stage cannot need itself", s.Name)})
				continue
			}
			if _, ok := g.byName[d]; !ok {
				errs = append(errs, schema.Error{Pos: s.PosOf("needs", fmt.Sprint(i)), Msg: fmt.Sprintf("stages.%s.needs: unknown stage %q (stages: %s)", s.Name, d, strings.Join(g.names(), ", "))})
				continue
			}
			addDep(n, d, "needs")
		}
		if t := s.Target; t != "" {
			switch {
			case g.byName[t] != nil && t != s.Name:
				addDep(n, t, "target")
			case isURL(t):
			case t == s.Name:
				errs = append(errs, schema.Error{Pos: s.PosOf("target"), Msg: fmt.Sprintf("stages.%s.target: a stage cannot target itself", s.Name)})
			default:
				errs = append(errs, schema.Error{Pos: s.PosOf("target"), Msg: fmt.Sprintf("stages.%s.target: %q is neither a stage (stages: %s) nor an http(s) URL", s.Name, t, strings.Join(g.names(), ", "))})
			}
		}
		if s.When != "" {
			prog, refs, err := compileWhen(s)
			if err != nil {
				errs = append(errs, asErrors(err, s)...)
			}
			n.when = prog
			for _, d := range refs {
				switch {
				case d == s.Name:
					errs = append(errs, schema.Error{Pos: s.WhenPos, Msg: fmt.Sprintf("stages.%s.when: a stage's when cannot read its own status", s.Name)})
				case g.byName[d] == nil:
					errs = append(errs, schema.Error{Pos: s.WhenPos, Msg: fmt.Sprintf("stages.%s.when: unknown stage %q (stages: %s)", s.Name, d, strings.Join(g.names(), ", "))})
				default:
					addDep(n, d, "when")
				}
			}
		}
	}
	for _, sk := range p.Sinks {
		k, ok := reg.Sink(sk.Kind)
		if !ok || k.New == nil {
			continue // unknown sink kinds are reported by the loader
		}
		o, err := k.New(sk)
		if err != nil {
			if es, ok := err.(schema.Errors); ok {
				errs = append(errs, es...)
			} else {
				errs = append(errs, schema.Error{Pos: sk.Pos, Msg: fmt.Sprintf("sinks[%d] (%s): %v", sk.Index, sk.Kind, err)})
			}
			continue
		}
		g.Sinks = append(g.Sinks, o)
	}
	if cycle := g.findCycle(); cycle != nil {
		first := g.byName[cycle[0]]
		field := first.Via[cycle[1]]
		errs = append(errs, schema.Error{Pos: first.Spec.PosOf(field), Msg: "stages form a cycle: " + strings.Join(cycle, " -> ")})
	}
	if len(errs) > 0 {
		return g, errs.Sort()
	}
	return g, nil
}

// assertionsFor returns the assertions judged on a stage's rows: its own,
// and the plan's when it measures.
func assertionsFor(n *Node, p *schema.Plan) []schema.Assertion {
	all := slices.Clone(n.Spec.Assert)
	if n.Kind.Measuring {
		all = append(all, p.Assert...)
	}
	return all
}

func (r *Registry) kindNames() []string {
	var names []string
	for _, k := range r.Kinds() {
		names = append(names, k.Name)
	}
	return names
}

func asErrors(err error, s *schema.Stage) schema.Errors {
	if es, ok := err.(schema.Errors); ok {
		return es
	}
	if e, ok := err.(schema.Error); ok {
		return schema.Errors{e}
	}
	return schema.Errors{{Pos: s.Pos, Msg: fmt.Sprintf("stages.%s: %v", s.Name, err)}}
}

func (g *Graph) names() []string {
	var out []string
	for _, n := range g.Nodes {
		out = append(out, n.Spec.Name)
	}
	return out
}

// Only returns the graph cut down to the named stages and everything they
// need (transitively), for `--only`. Stages not selected do not run and do
// not appear in the summary; finally stages run only when selected.
func (g *Graph) Only(names []string) (*Graph, error) {
	keep := map[string]bool{}
	var errs schema.Errors
	var visit func(name string)
	visit = func(name string) {
		if keep[name] {
			return
		}
		keep[name] = true
		for _, d := range g.byName[name].Deps {
			visit(d)
		}
	}
	for _, name := range names {
		name = strings.TrimSpace(name)
		if name == "" {
			continue
		}
		if g.byName[name] == nil {
			errs = append(errs, schema.Error{Msg: fmt.Sprintf("--only %s: no such stage (stages: %s)", name, strings.Join(g.names(), ", "))})
			continue
		}
		visit(name)
	}
	if len(errs) > 0 {
		return nil, errs
	}
	out := &Graph{Plan: g.Plan, byName: map[string]*Node{}, Sinks: g.Sinks}
	for _, n := range g.Nodes {
		if keep[n.Spec.Name] {
			out.Nodes = append(out.Nodes, n)
			out.byName[n.Spec.Name] = n
		}
	}
	return out, nil
}

// Order returns the nodes in a topological order that keeps plan order
// wherever the edges allow (the order --dry-run prints).
func (g *Graph) Order() []*Node {
	placed := map[string]bool{}
	var out []*Node
	for len(out) < len(g.Nodes) {
		progress := false
		for _, n := range g.Nodes {
			if placed[n.Spec.Name] {
				continue
			}
			ready := true
			for _, d := range n.Deps {
				if !placed[d] {
					ready = false
					break
				}
			}
			if ready {
				placed[n.Spec.Name] = true
				out = append(out, n)
				progress = true
				break // restart from the top: earliest plan position first
			}
		}
		if !progress { // a cycle (Build refuses those); keep what is left in plan order
			for _, n := range g.Nodes {
				if !placed[n.Spec.Name] {
					placed[n.Spec.Name] = true
					out = append(out, n)
				}
			}
		}
	}
	return out
}

// findCycle returns one cycle as a path a -> b -> ... -> a, or nil.
func (g *Graph) findCycle() []string {
	const (
		white = iota
		grey
		black
	)
	color := map[string]int{}
	var stack []string
	var found []string
	var visit func(name string) bool
	visit = func(name string) bool {
		color[name] = grey
		stack = append(stack, name)
		for _, d := range g.byName[name].Deps {
			switch color[d] {
			case grey:
				i := slices.Index(stack, d)
				found = append(slices.Clone(stack[i:]), d)
				return true
			case white:
				if visit(d) {
					return true
				}
			}
		}
		stack = stack[:len(stack)-1]
		color[name] = black
		return false
	}
	for _, n := range g.Nodes {
		if color[n.Spec.Name] == white && visit(n.Spec.Name) {
			// Present the cycle in dependency order (a needs b needs ... a).
			return found
		}
	}
	return nil
}
