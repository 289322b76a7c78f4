package pipeline

import (
	"fmt"
	"net/url"
	"regexp"
	"slices"
	"strings"

	"github.com/benchrun/benchrun/internal/suggest"

	"github.com/expr-lang/expr/vm"

	"github.com/benchrun/benchrun/internal/regress"
	"github.com/benchrun/benchrun/pipeline/judge"
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
	// whenReads are the stages the `when` reads: a skipped one among them
	// does not skip this stage (the `when` decides); any other does.
	whenReads []string
	// graph is the graph Build made the node in: a stage's peers are the
	// whole plan's, also when Only cuts the graph down.
	graph *Graph
	// asserts are the row- and stage-level assertions judged on this
	// stage's rows (its own, then the plan's when it measures); runAsserts
	// are its own run-level ones. Build compiles each assertion once.
	asserts, runAsserts []*Assertion
}

// Graph is a plan's stages with their edges, checked for cycles.
type Graph struct {
	Plan   *schema.Plan
	Nodes  []*Node // in plan order
	byName map[string]*Node
	// Sinks are the run's sinks: the registry's default ones, configured
	// by the plan's `sinks` entries of their kind, then the plan's others,
	// in the order rows reach them (durable first).
	Sinks []*SinkUse
	// Warnings are problems vet reports without failing the plan (each
	// with its position): what may still work, or may not, at run time.
	Warnings schema.Errors
	// planRunAsserts are the plan's run-level assertions, judged once
	// every stage ended (a stage's own are on its node).
	planRunAsserts []*Assertion
}

// Warner is implemented by stages with vet warnings: problems that do
// not make the plan invalid (a missing health check, say). It sees the
// plan and the decoded peers as Validate does.
type Warner interface {
	Warnings(c *Check) []schema.Error
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

// stageNameRE is what a stage name may be (the plan name's rule).
var stageNameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*$`)

func isURL(s string) bool {
	u, err := url.Parse(s)
	return err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != ""
}

// Build decodes every stage with its kind and links the graph. It reports
// every problem it finds, not only the first: unknown kinds, unknown needs
// and targets, `when` expressions and assertions that do not compile,
// retry on measuring stages, cycles, configuration errors. It performs no
// I/O. Stages marked Invalid by the loader are linked but not decoded.
// Every stage is decoded and linked before any is validated, so that
// Validate sees its peers (Check.Peer, Check.Dependents) decoded.
func Build(p *schema.Plan, reg *Registry) (*Graph, error) {
	g := &Graph{Plan: p, byName: map[string]*Node{}}
	plan, errs := g.compilePlanAssertions()
	for _, s := range p.Stages {
		n := &Node{Spec: s, Via: map[string]string{}, graph: g}
		g.Nodes = append(g.Nodes, n)
		g.byName[s.Name] = n
	}
	for _, n := range g.Nodes {
		errs = append(errs, g.link(n, reg)...)
	}
	// The sinks before the stages' Validate: a post stage checks the
	// names it posts to.
	sinks, serrs := buildSinks(p, reg)
	g.Sinks = sinks
	errs = append(errs, serrs...)
	// Validated once every stage is decoded and linked: a stage checks
	// itself against its peers' contracts.
	for _, n := range g.Nodes {
		if n.Stage == nil {
			continue
		}
		if err := n.Stage.Validate(g.Check(n.Spec.Name)); err != nil {
			errs = append(errs, asErrors(err, n.Spec)...)
		}
	}
	// Compiled once every stage validated: a kind may add assertions of
	// its own to its spec there (validate's band).
	for _, n := range g.Nodes {
		if n.Kind.Name != "" {
			errs = append(errs, n.attachAssertions(plan, p.Baseline != nil)...)
		}
	}
	if b := p.Baseline; b != nil && len(b.Metrics) > 0 {
		if _, err := regress.SelectMetrics(b.Metrics); err != nil {
			errs = append(errs, schema.Error{Pos: p.PosOf("baseline.metrics"), Msg: "baseline.metrics: " + err.Error()})
		}
	}
	errs = append(errs, g.checkRunAssertions()...)
	errs = append(errs, g.linkPosters()...)
	// Every cycle, not the first only: vet reports all problems at once.
	for _, cycle := range g.findCycles() {
		first := g.byName[cycle[0]]
		field := first.Via[cycle[1]]
		errs = append(errs, schema.Error{Pos: first.Spec.PosOf(field), Msg: "stages form a cycle: " + strings.Join(cycle, " -> ")})
	}
	if len(errs) > 0 {
		return g, errs.Sort()
	}
	for _, n := range g.Nodes {
		if w, ok := n.Stage.(Warner); ok {
			g.Warnings = append(g.Warnings, w.Warnings(g.Check(n.Spec.Name))...)
		}
	}
	g.Warnings = append(g.Warnings, modelFileWarnings(g)...)
	g.Warnings = append(g.Warnings, sampleWarnings(g)...)
	if len(g.Warnings) > 0 {
		g.Warnings = g.Warnings.Sort()
	}
	return g, nil
}

// link decodes a stage with its kind and adds its edges (needs, target,
// the stages its `when` reads), with every problem it finds.
func (g *Graph) link(n *Node, reg *Registry) schema.Errors {
	var errs schema.Errors
	p := g.Plan
	s := n.Spec
	if !stageNameRE.MatchString(s.Name) {
		// The name becomes a file name (NAME.log) and part of every
		// cell id (NAME/isl:osl/cN): "../x" or "a/b" would escape the
		// run directory or break the ids.
		errs = append(errs, schema.Error{Pos: s.Pos, Msg: fmt.Sprintf("stages.%q: a stage name is letters, digits, '.', '_' and '-', starting with a letter or digit (it names the stage's log file and its cell ids)", s.Name)})
	}
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
			}
		}
		if k.Measuring && s.Retry != nil {
			errs = append(errs, schema.Error{Pos: s.PosOf("retry"), Msg: fmt.Sprintf("stages.%s.retry: retry is not allowed on a measuring stage (kind %s): a retried measurement hides failures; put the retry on the launch or health stage instead", s.Name, s.Kind)})
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
		n.addDep(d, "needs")
	}
	if t := s.Target; t != "" {
		switch {
		case g.byName[t] != nil && t != s.Name:
			n.addDep(t, "target")
		case isURL(t):
		case t == s.Name:
			errs = append(errs, schema.Error{Pos: s.PosOf("target"), Msg: fmt.Sprintf("stages.%s.target: a stage cannot target itself", s.Name)})
		default:
			errs = append(errs, schema.Error{Pos: s.PosOf("target"), Msg: fmt.Sprintf("stages.%s.target: %q is neither a stage (stages: %s) nor an http(s) URL", s.Name, t, strings.Join(g.names(), ", "))})
		}
	}
	if s.When != "" {
		prog, refs, tagRefs, err := compileWhen(s)
		if err != nil {
			errs = append(errs, asErrors(err, s)...)
		}
		n.when = prog
		n.whenReads = refs
		for _, t := range tagRefs {
			if !slices.ContainsFunc(p.Tags, func(f schema.TagField) bool { return f.Name == t }) {
				errs = append(errs, schema.Error{Pos: s.WhenPos, Msg: fmt.Sprintf("stages.%s.when: tags.%s: the plan marks no field @tag(%s), so it is always \"\" (declare it: x: *\"\" | string @tag(%s))", s.Name, t, t, t)})
			}
		}
		for _, d := range refs {
			switch {
			case d == s.Name:
				errs = append(errs, schema.Error{Pos: s.WhenPos, Msg: fmt.Sprintf("stages.%s.when: a stage's when cannot read its own status", s.Name)})
			case g.byName[d] == nil:
				errs = append(errs, schema.Error{Pos: s.WhenPos, Msg: fmt.Sprintf("stages.%s.when: unknown stage %q (stages: %s)", s.Name, d, strings.Join(g.names(), ", "))})
			default:
				n.addDep(d, "when")
			}
		}
	}
	return errs
}

// addDep makes the node wait for stage d, which via names.
func (n *Node) addDep(d, via string) {
	if !slices.Contains(n.Deps, d) {
		n.Deps = append(n.Deps, d)
		n.Via[d] = via
	}
}

// compilePlanAssertions compiles the plan's own assertions once each:
// the run-level ones are kept on the graph, the others returned for the
// measuring stages to judge (nil where one did not compile).
func (g *Graph) compilePlanAssertions() ([]*Assertion, schema.Errors) {
	var errs schema.Errors
	var rows []*Assertion
	for _, a := range g.Plan.Assert {
		ca, err := CompileAssertion(a, "")
		if err != nil {
			var es schema.Errors
			if !asErrorsOf(err, &es) {
				es = schema.Errors{{Pos: a.Pos, Msg: fmt.Sprintf("assertion %q: %v", a.Expr, err)}}
			}
			errs = append(errs, es...)
			continue
		}
		if ca.Level == LevelRun {
			g.planRunAsserts = append(g.planRunAsserts, ca)
			continue
		}
		rows = append(rows, ca)
	}
	return rows, errs
}

// attachAssertions compiles the stage's own assertions and gives it the
// plan's row- and stage-level ones when it measures, with the problems an
// assertion has on this stage: it reads a baseline the plan does not
// have, or `rows` the stage does not produce.
func (n *Node) attachAssertions(plan []*Assertion, haveBaseline bool) schema.Errors {
	var errs schema.Errors
	var judged []*Assertion
	for _, a := range n.Spec.Assert {
		ca, err := CompileAssertion(a, n.Spec.Name)
		if err != nil {
			errs = append(errs, asErrors(err, n.Spec)...)
			continue
		}
		judged = append(judged, ca)
	}
	if n.Kind.Measuring {
		judged = append(judged, plan...)
	}
	for _, ca := range judged {
		if ca.ReadsBaseline && !haveBaseline {
			errs = append(errs, schema.Error{Pos: ca.Pos, Msg: fmt.Sprintf("assertion %q: reads baseline, but the plan has no baseline: add baseline: {} (the earlier runs of this plan under the runs folder; baseline.runs names another)", ca.Expr)})
		}
		if ca.Level == LevelStage && !n.hasRows() {
			errs = append(errs, schema.Error{Pos: ca.Pos, Msg: fmt.Sprintf("assertion %q: reads `rows`, but stage %s (kind %s) measures nothing, so it has no rows", ca.Expr, n.Spec.Name, n.Kind.Name)})
		}
		if ca.Level == LevelRun {
			n.runAsserts = append(n.runAsserts, ca)
			continue
		}
		n.asserts = append(n.asserts, ca)
	}
	return errs
}

// Assertions returns the graph's compiled assertions: by the stage whose
// rows they judge, and the run-level ones (the stages' own in plan order,
// then the plan's).
func (g *Graph) Assertions() (map[string][]*Assertion, []*Assertion) {
	byStage := map[string][]*Assertion{}
	var run []*Assertion
	for _, n := range g.Nodes {
		if len(n.asserts) > 0 {
			byStage[n.Spec.Name] = n.asserts
		}
		run = append(run, n.runAsserts...)
	}
	return byStage, append(run, g.planRunAsserts...)
}

func (r *Registry) kindNames() []string {
	var names []string
	for _, k := range r.Kinds() {
		names = append(names, k.Name)
	}
	return names
}

// asErrorsOf reports whether err is a plan problem with positions,
// storing it in es.
func asErrorsOf(err error, es *schema.Errors) bool {
	switch e := err.(type) {
	case schema.Errors:
		*es = e
		return true
	case schema.Error:
		*es = schema.Errors{e}
		return true
	}
	return false
}

func asErrors(err error, s *schema.Stage) schema.Errors {
	var es schema.Errors
	if asErrorsOf(err, &es) {
		return es
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
	if len(keep) == 0 && len(errs) == 0 {
		// `--only ,` would run nothing and exit 0: a job whose stage
		// list came out empty must not pass silently.
		errs = append(errs, schema.Error{Msg: fmt.Sprintf("--only names no stage (stages: %s)", strings.Join(g.names(), ", "))})
	}
	if len(errs) > 0 {
		return nil, errs
	}
	out := &Graph{Plan: g.Plan, byName: map[string]*Node{}, Sinks: g.Sinks, planRunAsserts: g.planRunAsserts}
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

// findCycles returns one cycle per strongly connected component that
// holds one, each as a path a -> b -> ... -> a in dependency order (a needs
// b). One per component keeps a dense knot to one message while two
// separate mistakes give two.
func (g *Graph) findCycles() [][]string {
	// Tarjan's algorithm (recursive: plans have tens of stages).
	index := map[string]int{}
	low := map[string]int{}
	onStack := map[string]bool{}
	var stack []string
	var comps [][]string
	next := 0
	var strong func(name string)
	strong = func(name string) {
		index[name], low[name] = next, next
		next++
		stack = append(stack, name)
		onStack[name] = true
		for _, d := range g.byName[name].Deps {
			if _, seen := index[d]; !seen {
				strong(d)
				low[name] = min(low[name], low[d])
			} else if onStack[d] {
				low[name] = min(low[name], index[d])
			}
		}
		if low[name] != index[name] {
			return
		}
		var comp []string
		for {
			top := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			onStack[top] = false
			comp = append(comp, top)
			if top == name {
				break
			}
		}
		if len(comp) > 1 { // self-edges are refused before they become edges
			comps = append(comps, comp)
		}
	}
	for _, n := range g.Nodes {
		if _, seen := index[n.Spec.Name]; !seen {
			strong(n.Spec.Name)
		}
	}
	var cycles [][]string
	for _, comp := range comps {
		in := map[string]bool{}
		for _, name := range comp {
			in[name] = true
		}
		// Start at the component's first stage in plan order, so the
		// message is stable, and walk dependencies inside the component
		// until a stage repeats.
		start := ""
		for _, n := range g.Nodes {
			if in[n.Spec.Name] {
				start = n.Spec.Name
				break
			}
		}
		cycles = append(cycles, cycleFrom(g, start, in))
	}
	return cycles
}

// cycleFrom walks from start along dependencies that stay inside the
// strongly connected component in (every stage there has one) and returns
// the first closed path, starting and ending at the stage that repeats.
func cycleFrom(g *Graph, start string, in map[string]bool) []string {
	var path []string
	at := map[string]int{}
	for cur := start; ; {
		if i, ok := at[cur]; ok {
			return append(path[i:], cur)
		}
		at[cur] = len(path)
		path = append(path, cur)
		for _, d := range g.byName[cur].Deps {
			if in[d] {
				cur = d
				break
			}
		}
	}
}

// RateLadder reports whether a measuring stage runs a request-rate
// ladder (tables for people then show the rate column).
func (g *Graph) RateLadder() bool {
	for _, n := range g.Nodes {
		if ls, ok := n.Stage.(LoadShaper); ok && len(ls.LoadShape().Rates) > 0 {
			return true
		}
	}
	return false
}

// NamedTests reports whether a stage's rows are a program's named tests
// (tables for people then show bench_test).
func (g *Graph) NamedTests() bool {
	for _, n := range g.Nodes {
		if tn, ok := n.Stage.(TestNamer); ok && tn.NamesTests() {
			return true
		}
	}
	return false
}

// checkRunAssertions checks that every `stages.NAME` a run-level
// assertion reads names a measuring stage of the plan (the compile cannot:
// stages is a map), with the assertion's position.
func (g *Graph) checkRunAssertions() schema.Errors {
	var errs schema.Errors
	var measuring []string // the stages with rows
	for _, n := range g.Nodes {
		if n.hasRows() {
			measuring = append(measuring, n.Spec.Name)
		}
	}
	all := slices.Clone(g.Plan.Assert)
	for _, n := range g.Nodes {
		all = append(all, n.Spec.Assert...)
	}
	for _, a := range all {
		lvl, read, err := judge.LevelOf(a.Expr)
		if err != nil || lvl != LevelRun {
			continue
		}
		for _, name := range read {
			if slices.Contains(measuring, name) {
				continue
			}
			why := "no stage of the plan has that name"
			if n := g.byName[name]; n != nil {
				why = fmt.Sprintf("stage %s (kind %s) measures nothing", name, n.Kind.Name)
			}
			hint := ""
			if s := suggest.Closest(name, measuring); s != "" {
				hint = fmt.Sprintf(" (did you mean stages.%s?)", s)
			}
			errs = append(errs, schema.Error{Pos: a.Pos, Msg: fmt.Sprintf("assertion %q: stages.%s: %s, so it has no rows%s; measuring stages: %s", a.Expr, name, why, hint, strings.Join(measuring, ", "))})
		}
	}
	return errs
}

// linkPosters marks the sinks that post stages name as theirs (driven by
// the stage, not live) and checks that no other stage waits for a stage
// that runs after the run is judged.
func (g *Graph) linkPosters() schema.Errors {
	var errs schema.Errors
	for _, n := range g.Nodes {
		if p, ok := n.Stage.(SinkPoster); ok {
			for i, name := range p.PostsTo() {
				for _, u := range g.Sinks {
					switch {
					case u.Name() != name:
					case u.PostedBy == "":
						u.PostedBy = n.Spec.Name
					case u.PostedBy != n.Spec.Name:
						errs = append(errs, schema.Error{Pos: n.Spec.PosOf("sinks", fmt.Sprint(i)), Msg: fmt.Sprintf("stages.%s.sinks[%d]: stage %s posts to %q already; one post stage per sink", n.Spec.Name, i, u.PostedBy, name)})
					}
				}
			}
		}
		if n.Kind.AfterRun {
			continue
		}
		for _, d := range n.Deps {
			if dn := g.byName[d]; dn != nil && dn.Kind.AfterRun {
				errs = append(errs, schema.Error{Pos: n.Spec.PosOf(n.Via[d]), Msg: fmt.Sprintf("stages.%s.%s: %s (kind %s) runs after every other stage, once the run is judged, so no stage can wait for it", n.Spec.Name, n.Via[d], d, dn.Kind.Name)})
			}
		}
	}
	return errs
}

// LiveSinks are the sinks rows reach as they are measured: every sink
// but those a post stage drives.
func (g *Graph) LiveSinks() []*SinkUse {
	var out []*SinkUse
	for _, u := range g.Sinks {
		if u.PostedBy == "" {
			out = append(out, u)
		}
	}
	return out
}
