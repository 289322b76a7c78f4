package pipeline

import (
	"fmt"
	"net/url"
	"slices"
	"strings"

	"github.com/benchrun/benchrun/schema"
)

// Node is one stage in the graph.
type Node struct {
	Spec  *schema.Stage
	Kind  Kind
	Stage Stage
	// Deps are the names of the stages this one waits for: its needs plus
	// the stage its target names.
	Deps []string
}

// Graph is a plan's stages with their edges, checked for cycles.
type Graph struct {
	Plan   *schema.Plan
	Nodes  []*Node // in plan order
	byName map[string]*Node
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
// and targets, cycles, configuration errors. It performs no I/O.
func Build(p *schema.Plan, reg *Registry) (*Graph, error) {
	g := &Graph{Plan: p, byName: map[string]*Node{}}
	var errs schema.Errors
	for _, s := range p.Stages {
		n := &Node{Spec: s}
		g.Nodes = append(g.Nodes, n)
		g.byName[s.Name] = n
	}
	for _, n := range g.Nodes {
		s := n.Spec
		k, ok := reg.Kind(s.Kind)
		if !ok {
			var names []string
			for _, k := range reg.Kinds() {
				names = append(names, k.Name)
			}
			errs = append(errs, schema.Error{Pos: s.PosOf("kind"), Msg: fmt.Sprintf("stages.%s: unknown kind %q (known kinds: %s)", s.Name, s.Kind, strings.Join(names, ", "))})
			continue
		}
		n.Kind = k
		st, err := k.New(s)
		if err != nil {
			errs = append(errs, asErrors(err, s)...)
			continue
		}
		n.Stage = st
		if err := st.Validate(p); err != nil {
			errs = append(errs, asErrors(err, s)...)
		}
		if k.Measuring && s.Retry != nil {
			errs = append(errs, schema.Error{Pos: s.PosOf("retry"), Msg: fmt.Sprintf("stages.%s: retry is not allowed on a measuring stage (%s): a retried measurement hides failures; retry the server or health stage instead", s.Name, s.Kind)})
		}
		for i, d := range s.Needs {
			if d == s.Name {
				errs = append(errs, schema.Error{Pos: s.PosOf("needs", fmt.Sprint(i)), Msg: fmt.Sprintf("stages.%s: a stage cannot need itself", s.Name)})
				continue
			}
			if _, ok := g.byName[d]; !ok {
				errs = append(errs, schema.Error{Pos: s.PosOf("needs"), Msg: fmt.Sprintf("stages.%s.needs: unknown stage %q (stages: %s)", s.Name, d, strings.Join(g.names(), ", "))})
				continue
			}
			if !slices.Contains(n.Deps, d) {
				n.Deps = append(n.Deps, d)
			}
		}
		if t := s.Target; t != "" {
			switch {
			case g.byName[t] != nil && t != s.Name:
				if !slices.Contains(n.Deps, t) {
					n.Deps = append(n.Deps, t)
				}
			case isURL(t):
			default:
				errs = append(errs, schema.Error{Pos: s.PosOf("target"), Msg: fmt.Sprintf("stages.%s.target: %q is neither a stage (stages: %s) nor an http(s) URL", s.Name, t, strings.Join(g.names(), ", "))})
			}
		}
	}
	if cycle := g.findCycle(); cycle != nil {
		first := g.byName[cycle[0]].Spec
		errs = append(errs, schema.Error{Pos: first.PosOf("needs"), Msg: "stages form a cycle: " + strings.Join(cycle, " -> ")})
	}
	if len(errs) > 0 {
		return g, errs.Sort()
	}
	return g, nil
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
