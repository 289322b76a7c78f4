package pipeline

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"sort"
	"time"

	"github.com/benchrun/benchrun/internal/results"
	"github.com/benchrun/benchrun/internal/rundir"
	"github.com/benchrun/benchrun/schema"
)

// Sink receives a run's rows as they are produced (Parquet, CSV,
// result.json, the reports, Arrow, ...). Its methods are called from one
// goroutine at a time: Start, then Cell for every finished cell (in the
// order the cells finished), then Stop. The same calls drive it from a
// run directory (Replay), so a sink never reads files another sink wrote:
// what it needs comes through these calls.
type Sink interface {
	Name() string
	Start(env *SinkEnv) error
	Cell(cell results.Cell, reqs results.Requests) error
	Stop(sum *Summary) error
}

// Optional Sink capabilities. A sink implements only what it needs; the
// runner checks with a type assertion, so adding a capability never
// breaks an existing sink (the pattern k6's output extensions use). Each
// sink states what it implements with compile-time guards.

// VerdictSink receives each cell's assertion verdict rows, right after
// the cell's Cell call (an empty slice when no assertion applies).
type VerdictSink interface {
	Verdicts(cell results.Cell, rows []results.Verdict) error
}

// SampleSink receives telemetry sample rows as they are collected.
type SampleSink interface {
	Samples(rows []results.Sample) error
}

// Rows are a run's table rows, every attempt's, in the order stored.
type Rows = rundir.Rows

// SinkEnv is what a sink sees when it starts.
type SinkEnv struct {
	Run *RunInfo
	// Stdout is the writer for data (the CSV table); nil when replaying.
	Stdout io.Writer
	// Progress is for human lines (stderr; never nil).
	Progress io.Writer
	// RateLadder is set when a measuring stage runs a request-rate ladder:
	// tables for people show the rate column.
	RateLadder bool
	// NamedTests is set when a stage's rows are a program's named tests
	// (TestNamer): tables for people show the bench_test column.
	NamedTests bool
	// Replay is set when the rows come from a run directory (benchrun
	// report, benchrun post, a post stage) rather than a live run: a sink
	// writes its files afresh.
	Replay bool
	// HistoryRoot is the folder earlier runs are filed under (the runs
	// folder of --out), for a sink that compares with them.
	HistoryRoot string
	// Prior returns the rows earlier attempts of a resumed run stored (the
	// durable sink's record, read once and shared): a sink that keeps
	// whole-run state seeds it from them. nil, nil for a new run and a
	// replay.
	Prior func() (*Rows, error)
}

// SinkKind describes one kind of sink. Registering a SinkKind is all it
// takes for plans (`sinks: [{kind: ...}]`), vet, `benchrun list`,
// `benchrun schema` and `benchrun report` to know it.
type SinkKind struct {
	Name string
	// Doc is one line for `benchrun list`.
	Doc string
	// Schema is the sink's CUE definition (embedding #SinkBase).
	Schema schema.KindSchema
	// Default sinks are part of every run; a plan entry of the kind
	// (without a name of its own) configures the default one.
	Default bool
	// DefaultWhen, when set, makes the kind part of every run while it
	// returns true (junit: when CI=true), as Default does.
	DefaultWhen func() bool
	// Durable sinks keep the run's record on disk for good (the Parquet
	// tables). Every row reaches them before any other sink, so a row on
	// stdout or in result.json is one already stored; a row they fail to
	// store reaches the others marked "not stored". A durable sink is the
	// source of a replay, never driven by one.
	Durable bool
	// Remote sinks send the results off this machine (a SiYuan notebook,
	// a webhook) instead of writing a file in the run directory. `benchrun
	// post RUN_DIR` drives them again from a run directory and `benchrun
	// report` never does; a plan entry that a `post` stage names is driven
	// by that stage (after the run is judged), not live.
	Remote bool
	// Writes names what the sink writes, for messages ("result.json").
	Writes string
	// Flags are the parameters command-line flags may set on the sink
	// (--columns sets "columns", --output sets "prefix").
	Flags []string
	// New decodes a sink's configuration. It must not perform I/O.
	New func(spec SinkSpec) (Sink, error)
}

func (k SinkKind) IsDefault() bool {
	return k.Default || (k.DefaultWhen != nil && k.DefaultWhen())
}

// SinkSpec is one sink's configuration: a plan entry's fields (without
// the ones every sink takes), with command-line parameters over them.
type SinkSpec struct {
	Kind string
	// Name is the entry's name, the kind's by default.
	Name   string
	Params map[string]any
	// Pos is the plan entry's position (zero for a default sink the plan
	// does not list); Index its place in `sinks`, -1 for none.
	Pos   schema.Pos
	Index int

	entry   *schema.Sink    // the plan entry, nil for a default sink
	flagSet map[string]bool // parameters a command-line flag set
}

// ErrorAt places a problem with one parameter: at the field in the plan
// entry that gave it (file:line:col), or as it is when a command-line flag
// or a default gave it.
func (s SinkSpec) ErrorAt(field string, err error) error {
	if err == nil || s.entry == nil || s.flagSet[field] {
		return err
	}
	return schema.Error{Pos: s.entry.PosOf(field), Msg: fmt.Sprintf("sinks[%d].%s: %v", s.Index, field, err)}
}

// Decode decodes the parameters into v (a pointer to a struct with json
// tags). A parameter v has no field for is an error naming it.
func (s SinkSpec) Decode(v any) error {
	if len(s.Params) == 0 {
		return nil
	}
	b, err := json.Marshal(s.Params)
	if err != nil {
		return fmt.Errorf("sink %s: %w", s.Name, err)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("sink %s: %w", s.Name, err)
	}
	return nil
}

// PrefixOnly decodes the parameters of a sink whose only one is
// `prefix` (also write PREFIX.<ext>; --output sets it).
func (s SinkSpec) PrefixOnly() (string, error) {
	var cfg struct {
		Prefix string `json:"prefix"`
	}
	err := s.Decode(&cfg)
	return cfg.Prefix, err
}

// SinkUse is a configured sink of a run with the policy the pipeline
// applies to its failures.
type SinkUse struct {
	Kind SinkKind
	Spec SinkSpec
	Sink Sink
	// Optional sinks that fail give a warning; a required one that fails
	// makes the run exit 3 and says what was not written.
	Optional bool
	// Attempts and Backoff bound the retries of a transient failure.
	Attempts int
	Backoff  time.Duration
	// PostedBy is the post stage that drives the sink ("": the sink gets
	// the rows live, as they are measured).
	PostedBy string
}

// Name is the sink's name in messages and the manifest.
func (u *SinkUse) Name() string {
	if u.Spec.Name != "" {
		return u.Spec.Name
	}
	if u.Sink != nil {
		return u.Sink.Name()
	}
	return u.Kind.Name
}

// Default sink retry policy: a transient failure (see Transient) is
// tried again twice, 200 ms and then 400 ms later. A sink a plan names
// gets it unless its entry says otherwise, as does one attached outside
// the registry (Options.Sinks).
const (
	DefaultSinkAttempts = 3
	DefaultSinkBackoff  = 200 * time.Millisecond
)

// AddSink registers a sink kind; registering a name twice is a programming error.
func (r *Registry) AddSink(k SinkKind) {
	if r.sinks == nil {
		r.sinks = map[string]SinkKind{}
	}
	if _, dup := r.sinks[k.Name]; dup {
		panic("pipeline: sink kind registered twice: " + k.Name)
	}
	r.sinks[k.Name] = k
	r.sinkOrder = append(r.sinkOrder, k.Name)
}

// Sink returns a registered sink kind.
func (r *Registry) Sink(name string) (SinkKind, bool) {
	k, ok := r.sinks[name]
	return k, ok
}

// Sinks returns every registered sink kind, sorted by name.
func (r *Registry) Sinks() []SinkKind {
	var out []SinkKind
	for _, k := range r.sinks {
		out = append(out, k)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// SinkSchemas returns the sink kinds' CUE fragments for schema.Load.
func (r *Registry) SinkSchemas() []schema.KindSchema {
	var out []schema.KindSchema
	for _, k := range r.Sinks() {
		s := k.Schema
		s.Kind = k.Name
		out = append(out, s)
	}
	return out
}

// sinkBaseFields are the #SinkBase fields the pipeline reads itself; a
// sink's New sees the others.
var sinkBaseFields = []string{"kind", "name", "optional", "retry"}

// sinkEntry is what the pipeline reads of a `sinks` entry.
type sinkEntry struct {
	Kind     string `json:"kind"`
	Name     string `json:"name"`
	Optional bool   `json:"optional"`
	Retry    *struct {
		Attempts int    `json:"attempts"`
		Backoff  string `json:"backoff"`
	} `json:"retry"`
}

// buildSinks decodes the run's sinks: every default kind (durable ones
// first, then in registration order), each configured by the plan entry
// of its kind when there is one, then the plan's other entries in order.
func buildSinks(p *schema.Plan, reg *Registry) ([]*SinkUse, schema.Errors) {
	var errs schema.Errors
	var uses []*SinkUse
	byName := map[string]*SinkUse{}
	for _, durable := range []bool{true, false} {
		for _, name := range reg.sinkOrder {
			k := reg.sinks[name]
			if !k.IsDefault() || k.Durable != durable {
				continue
			}
			u := &SinkUse{Kind: k, Spec: SinkSpec{Kind: k.Name, Name: k.Name, Index: -1}, Attempts: DefaultSinkAttempts, Backoff: DefaultSinkBackoff}
			uses = append(uses, u)
			byName[k.Name] = u
		}
	}
	for _, sk := range p.Sinks {
		k, ok := reg.Sink(sk.Kind)
		if !ok || sk.Invalid {
			continue // unknown kinds and bad fields are reported by the loader
		}
		var all map[string]any
		if err := sk.Value.Decode(&all); err != nil {
			errs = append(errs, schema.Error{Pos: sk.Pos, Msg: fmt.Sprintf("sinks[%d] (%s): %v", sk.Index, sk.Kind, err)})
			continue
		}
		var e sinkEntry
		if err := sk.Decode(&e); err != nil {
			errs = append(errs, asSinkErrors(err, sk)...)
			continue
		}
		name := e.Name
		if name == "" {
			name = k.Name
		}
		u := byName[name]
		switch {
		case u != nil && u.Kind.Name != k.Name:
			errs = append(errs, schema.Error{Pos: sk.PosOf("name"), Msg: fmt.Sprintf("sinks[%d].name: %q is the %s sink's name: choose another", sk.Index, name, u.Kind.Name)})
			continue
		case u != nil && u.Spec.Index >= 0:
			errs = append(errs, schema.Error{Pos: sk.Pos, Msg: fmt.Sprintf("sinks[%d]: a second sink named %q (the first is sinks[%d]): give each sink of kind %s its own name", sk.Index, name, u.Spec.Index, k.Name)})
			continue
		case u == nil:
			u = &SinkUse{Kind: k}
			uses = append(uses, u)
			byName[name] = u
		}
		if k.Durable && e.Optional {
			errs = append(errs, schema.Error{Pos: sk.PosOf("optional"), Msg: fmt.Sprintf("sinks[%d] (%s): the durable sink holds the run's record and cannot be optional", sk.Index, k.Name)})
		}
		params := maps.Clone(all)
		for _, f := range sinkBaseFields {
			delete(params, f)
		}
		u.Spec = SinkSpec{Kind: k.Name, Name: name, Params: params, Pos: sk.Pos, Index: sk.Index, entry: sk}
		u.Optional = e.Optional
		u.Attempts, u.Backoff = DefaultSinkAttempts, DefaultSinkBackoff
		if e.Retry != nil {
			if e.Retry.Attempts > 0 {
				u.Attempts = e.Retry.Attempts
			}
			if d, err := time.ParseDuration(e.Retry.Backoff); err == nil {
				u.Backoff = d
			}
		}
	}
	for _, u := range uses {
		if u.Kind.New == nil {
			continue
		}
		s, err := u.Kind.New(u.Spec)
		if err != nil {
			pos := u.Spec.Pos
			if pos.File == "" {
				pos = schema.Pos{File: p.Path}
			}
			var es schema.Errors
			if ok := asErrorsOf(err, &es); ok {
				errs = append(errs, es...)
			} else {
				errs = append(errs, schema.Error{Pos: pos, Msg: fmt.Sprintf("%s: %v", sinkWhere(u), err)})
			}
			continue
		}
		u.Sink = s
	}
	return uses, errs
}

func sinkWhere(u *SinkUse) string {
	if u.Spec.Index >= 0 {
		return fmt.Sprintf("sinks[%d] (%s)", u.Spec.Index, u.Kind.Name)
	}
	return "sink " + u.Kind.Name
}

func asSinkErrors(err error, sk *schema.Sink) schema.Errors {
	var es schema.Errors
	if asErrorsOf(err, &es) {
		return es
	}
	return schema.Errors{{Pos: sk.Pos, Msg: fmt.Sprintf("sinks[%d] (%s): %v", sk.Index, sk.Kind, err)}}
}

// SetSinkParam sets a command-line parameter (a flag) on every sink whose
// kind takes it (SinkKind.Flags), over what the plan says, and decodes
// those sinks again. A value a sink refuses is an error naming the sink.
func (g *Graph) SetSinkParam(flag string, value any) error {
	for _, u := range g.Sinks {
		if !slices.Contains(u.Kind.Flags, flag) || u.Kind.New == nil {
			continue
		}
		spec := u.Spec
		spec.Params = maps.Clone(spec.Params)
		if spec.Params == nil {
			spec.Params = map[string]any{}
		}
		spec.Params[flag] = value
		spec.flagSet = maps.Clone(spec.flagSet)
		if spec.flagSet == nil {
			spec.flagSet = map[string]bool{}
		}
		spec.flagSet[flag] = true
		s, err := u.Kind.New(spec)
		if err != nil {
			return fmt.Errorf("sink %s: %w", u.Name(), err)
		}
		u.Spec, u.Sink = spec, s
	}
	return nil
}

// DefaultSinkKinds returns the default sink kinds in the order they were
// registered: the sinks a replay of a run that records none drives.
func (r *Registry) DefaultSinkKinds() []SinkKind {
	var out []SinkKind
	for _, name := range r.sinkOrder {
		if k := r.sinks[name]; k.IsDefault() {
			out = append(out, k)
		}
	}
	return out
}
