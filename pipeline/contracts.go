package pipeline

import (
	"fmt"
	"slices"
	"strings"

	"github.com/benchrun/benchrun/internal/results"
	"github.com/benchrun/benchrun/schema"
)

// Kinds learn from each other only through the small interfaces in this
// file, which the compiler checks: a kind that renames a field of its
// configuration cannot silently change what another kind reads, as it
// could when kinds read each other's raw CUE by path. A kind implements
// the contracts it offers (with interface guards beside its Kind) and
// finds its peers' through Check (vet) and Env (run time).

// TestNamer is implemented by stages whose rows are a program's named
// tests (llama-bench's pp512, tg128@d4096) rather than load points:
// tables for people then show the test's name, since isl, osl and
// concurrency alone repeat across depths and repetitions.
type TestNamer interface {
	NamesTests() bool
}

// LoadShaper is implemented by stages that apply a known load to a
// server (sweeps): a warm-up in front of one matches its shape, and a
// launch stage restarted per cell starts with its first cell's server
// variables.
type LoadShaper interface {
	LoadShape() LoadShape
}

// LoadShape is the load a stage applies, as its configuration gives it
// (defaults filled): nothing in it is learned by running.
type LoadShape struct {
	// Endpoint is the API it sends to: "completions", "chat" or "embeddings".
	Endpoint string
	// Concurrency is the closed-loop ladder (parallel sessions per point);
	// it is unused when Rates is set.
	Concurrency []int
	// Rates is the open-loop ladder in requests per second; when it is not
	// empty the stage runs an open loop.
	Rates []float64
	// Arrival is the open loop's arrival process ("poisson", "constant",
	// "gamma").
	Arrival string
	// Cells are the input:output shapes in the order they are measured.
	Cells []ShapeCell
	// Calibrate is how prompts are sized to isl tokens ("auto",
	// "tokenize", "probe", "off"), so that a warm-up sizes them alike.
	Calibrate string
	// Seed seeds the prompts.
	Seed int64
	// Requests is how many timed requests each cell × ladder point sends
	// when the plan fixes their number (requests × iterations); 0 when a
	// duration decides. Vet warns from it when a check's percentile cannot
	// be bounded on so few (sampleWarnings).
	Requests int
}

// ShapeCell is one input:output shape of a LoadShape.
type ShapeCell struct {
	ISL, OSL int
	// Server are the cell's server variables (${cell.KEY} of a target
	// restarted per cell); nil when the cell gives none.
	Server map[string]string
}

// CellRestarter is implemented by stages that serve a measuring stage
// and can restart their server before each of its cells (launch): the
// measuring stage checks its cells' server variables against it at vet
// time, and calls Outputs.Restart at run time.
type CellRestarter interface {
	// RestartsPerCell reports whether the server is restarted before
	// every measured cell (restart: per_cell); server variables reach
	// the server only then.
	RestartsPerCell() bool
	// CellVars lists, sorted, the KEY of every ${cell.KEY} the server's
	// command and environment take: every cell must give each of them.
	CellVars() []string
}

// EngineNamer is implemented by stages that start a server of a known
// engine (launch with an engine preset): a stage that targets it checks
// at vet time what the engine's endpoints allow (engines.Lookup).
type EngineNamer interface {
	EngineName() string
}

// ReadinessGate is implemented by stages that wait until another stage's
// server is ready to serve (health): a stage that needs one sends to a
// ready server. A launch stage warns about stages that send to it
// without one.
type ReadinessGate interface {
	// ReadinessOf names the stage (or URL) whose server this one waits for.
	ReadinessOf() string
}

// SinkPoster is implemented by stages that drive sinks of the plan
// themselves, after the run is judged (post): the `sinks` entries they
// name are not driven live; Env.Post drives them from the run directory.
type SinkPoster interface {
	// PostsTo names the plan's sinks the stage posts to.
	PostsTo() []string
}

// RowWriter is implemented by stages of a kind that is not measuring but
// may write cell rows of its own (a launch stage with startup: {...}
// writes a row per start): a stage whose WritesRows is true has rows, so
// its stage-level assertions may read `rows` and run-level ones
// `stages.NAME.rows`, as a measuring stage's do. (The plan's assertions
// still apply to measuring stages only.)
type RowWriter interface {
	WritesRows() bool
}

// hasRows reports whether a stage writes cell rows: a measuring one, or
// a RowWriter that says so.
func (n *Node) hasRows() bool {
	if n.Kind.Measuring {
		return true
	}
	w, ok := n.Stage.(RowWriter)
	return ok && w.WritesRows()
}

// SSHProvider is implemented by stage kinds whose outputs give a machine
// that other stages run on (on: "<stage>"): a provision stage with an
// ssh: block. A stage with on: checks its peer against it at vet time, and
// reads the machine from the peer's Outputs.SSH at run time.
type SSHProvider interface {
	// ProvidesSSH reports whether the stage's outputs will carry
	// Outputs.SSH.
	ProvidesSSH() bool
}

// MachineProblem checks a stage's on: against the plan, for every kind
// that runs something on a provided machine (launch, exec): the stage
// exists, provides a machine (SSHProvider), and is in the checking
// stage's needs so that it is up first. what names what runs there ("the
// server", "the program"). It returns what is wrong, "" when nothing is
// (or when the named stage did not decode: vet reports that itself).
func (c *Check) MachineProblem(on, what string) string {
	if c.Plan.Stage(on) == nil {
		var names []string
		for _, st := range c.Plan.Stages {
			names = append(names, st.Name)
		}
		return fmt.Sprintf("unknown stage %q (stages: %s)", on, strings.Join(names, ", "))
	}
	peer, ok := c.Peer(on)
	if !ok {
		return ""
	}
	if p, provider := peer.(SSHProvider); !provider || !p.ProvidesSSH() {
		return fmt.Sprintf("stages.%s gives no machine to run on: on: names a provision stage with an ssh: block (ssh: {key_env: \"BENCHRUN_SSH_KEY\"})", on)
	}
	if c.Self == nil || !slices.Contains(c.Self.Needs, on) {
		return fmt.Sprintf("%s runs on stages.%s's machine, which must be up first: add needs: [%q]", what, on, on)
	}
	return ""
}

// Peer is another stage of the plan as a stage sees it at vet or run
// time: its spec and, when it decoded, the kind's Stage, which a caller
// asks for contracts by type assertion.
type Peer struct {
	Spec *schema.Stage
	// Stage is nil when the stage did not decode (an unknown kind, a
	// configuration error: vet reports those on their own).
	Stage Stage
}

// Check is what Validate and Warnings see: the plan, the stage being
// checked and every other decoded stage of the plan, so that a stage can
// check itself against the contracts of the stages it works with.
type Check struct {
	Plan *schema.Plan
	// Self is the stage being checked.
	Self *schema.Stage
	g    *Graph
}

// Check returns what the named stage's Validate and Warnings see; the
// peers are the whole plan's, also on a graph cut down by Only.
func (g *Graph) Check(name string) *Check {
	n := g.byName[name]
	if n == nil {
		return &Check{Plan: g.Plan, Self: g.Plan.Stage(name), g: g}
	}
	return &Check{Plan: g.Plan, Self: n.Spec, g: n.full(g)}
}

// Peer returns the decoded stage named name; false when the plan has no
// such stage or it did not decode.
func (c *Check) Peer(name string) (Stage, bool) { return c.g.peer(name) }

// Sink returns the kind of the plan's sink named name (a `sinks` entry's
// name, or a default sink's kind); false when the plan has none so named.
func (c *Check) Sink(name string) (SinkKind, bool) {
	for _, u := range c.g.Sinks {
		if u.Name() == name {
			return u.Kind, true
		}
	}
	return SinkKind{}, false
}

// SinkNames lists the plan's sinks by name, in the order rows reach them.
func (c *Check) SinkNames() []string {
	var out []string
	for _, u := range c.g.Sinks {
		out = append(out, u.Name())
	}
	return out
}

// Dependents returns the stages that depend on this one (through needs,
// target or when), in plan order.
func (c *Check) Dependents() []Peer {
	if c.Self == nil {
		return nil
	}
	return c.g.dependents(c.Self.Name)
}

// Peer returns the decoded stage named name, as Check.Peer does at vet time.
func (e *Env) Peer(name string) (Stage, bool) { return e.graph().peer(name) }

// Dependents returns the stages that depend on this one, in plan order,
// as Check.Dependents does at vet time (a warm-up finds the stage it
// prepares among them).
func (e *Env) Dependents() []Peer {
	if e == nil || e.Stage == nil {
		return nil
	}
	return e.graph().dependents(e.Stage.Name)
}

// StageRows returns the current row of each cell the named stage has
// emitted in this run so far (the latest measurement of each cell, the
// rows its stage-level assertions read; a resumed run's earlier attempts'
// rows included), in the order they were first emitted. A stage that
// compares itself with another's measurement (validate: real documents
// against a sweep's synthetic cell) reads it here, measured in this run,
// instead of re-measuring it or reading the run directory. Nil outside a
// run or when the stage emitted nothing; the rows are copies.
func (e *Env) StageRows(name string) []results.Cell {
	if e == nil || e.Runtime == nil {
		return nil
	}
	return e.Runtime.StageRows(name)
}

// graph is the whole plan's graph: Env.Graph's (the graph being run, maybe
// cut down by Only, whose nodes know the graph they were built in).
func (e *Env) graph() *Graph {
	if e == nil || e.Stage == nil {
		return nil
	}
	if e.Graph != nil {
		if n := e.Graph.byName[e.Stage.Name]; n != nil {
			return n.full(e.Graph)
		}
		return e.Graph
	}
	return nil
}

// Graph is the graph the check is made in (for a test that runs one
// stage by hand: its Env.Graph).
func (c *Check) Graph() *Graph { return c.g }

// full is the graph the node was built in (Only's graphs share nodes).
func (n *Node) full(fallback *Graph) *Graph {
	if n.graph != nil {
		return n.graph
	}
	return fallback
}

func (g *Graph) peer(name string) (Stage, bool) {
	if g == nil {
		return nil, false
	}
	n := g.byName[name]
	if n == nil || n.Stage == nil {
		return nil, false
	}
	return n.Stage, true
}

func (g *Graph) dependents(name string) []Peer {
	if g == nil {
		return nil
	}
	var out []Peer
	for _, n := range g.Dependents(name) {
		out = append(out, Peer{Spec: n.Spec, Stage: n.Stage})
	}
	return out
}
