// Package schema loads plan files: CUE, unified with benchrun's embedded
// schema and each stage kind's definition, with -t tags, into typed Go
// values whose every problem carries file:line:col.
package schema

import (
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"cuelang.org/go/cue"
	"cuelang.org/go/cue/ast"
	"cuelang.org/go/cue/build"
	"cuelang.org/go/cue/cuecontext"
	cueerrors "cuelang.org/go/cue/errors"
	"cuelang.org/go/cue/load"
	"cuelang.org/go/cue/parser"
	"cuelang.org/go/cue/token"
)

//go:embed plan.cue
var planSchema string

// KindSchema is the CUE fragment a stage kind contributes: a definition
// (Def, such as "#Sweep") in package schema that embeds #StageBase.
type KindSchema struct {
	Kind   string
	Def    string
	Source string
}

// Options controls Load.
type Options struct {
	// Tags are -t key=value overrides for @tag() fields.
	Tags []string
	// Kinds are the known stage kinds with their schema fragments.
	Kinds []KindSchema
	// Sinks are the known sink kinds with their schema fragments; each
	// entry of the plan's `sinks` list is checked against its kind's.
	Sinks []KindSchema
}

// Plan is a loaded, schema-checked plan.
type Plan struct {
	Path        string
	Source      []byte
	Name        string
	Description string
	Model       Model
	Metadata    map[string]string
	SLO         SLO
	Assert      []Assertion
	Timeout     time.Duration
	// Inconclusive is what an inconclusive verdict does to the exit code:
	// "tolerate" (0 when nothing else failed) or "fail" (5).
	Inconclusive string
	// Baseline is the plan's regression check against history (nil: none).
	Baseline *Baseline
	// Shard is the plan's `shard` (nil: none; flags override it).
	Shard  *Shard
	Stages []*Stage // in source order
	// Sinks are the plan-level outputs (`sinks: [{kind: ...}]`), in order.
	Sinks []*Sink
	// Tags are the plan's @tag() fields, and Given the -t values applied.
	Tags  []TagField
	Given map[string]string
	// Value is the whole plan, unified with the schema and the stages' kind definitions.
	Value cue.Value
}

// Baseline is the plan's `baseline`.
type Baseline struct {
	Runs    string   `json:"runs"`
	Last    int      `json:"last"`
	MinRuns int      `json:"min_runs"`
	Metrics []string `json:"metrics"`
	// Confirm re-measures, while its server is still up, a cell whose
	// first measurement regressed against the history, and judges the
	// second; both rows are kept.
	Confirm bool `json:"confirm"`
	Pos     Pos  `json:"-"`
}

// Shard is the plan's `shard`: this process's part of a sharded run.
type Shard struct {
	Index       int    `json:"index"`
	Count       int    `json:"count"`
	StartAt     string `json:"start_at"`
	Coordinator string `json:"coordinator"`
	Coordinate  string `json:"coordinate"`
	Pos         Pos    `json:"-"`
}

// Model is the model under test.
type Model struct {
	Name        string `json:"name"`
	File        string `json:"file"`
	MaxModelLen int    `json:"max_model_len"`
}

// SLO holds latency objectives in milliseconds (0 = not set). Measuring
// code takes it as measure.SLO (the same fields), which judges a request.
type SLO struct {
	TTFTMs float64 `json:"ttft_ms"`
	TPOTMs float64 `json:"tpot_ms"`
	ITLMs  float64 `json:"itl_ms"`
	E2ELMs float64 `json:"e2el_ms"`
}

// Assertion is an expr-lang expression with where it was written, and
// its name and severity when the plan gives them.
type Assertion struct {
	Expr string
	Pos  Pos
	// Name names the check ("" when the plan gives the expression alone).
	Name string
	// Severity is "fail" (the default) or "warn".
	Severity string
}

// Retry is an infrastructure stage's retry policy.
type Retry struct {
	Attempts int
	Backoff  time.Duration
}

// Stage is one stage as written, with the fields every kind shares decoded
// and the rest left in Value for the kind to decode (Stage.Decode).
type Stage struct {
	Name        string
	Kind        string
	Needs       []string
	Target      string
	Description string
	When        string
	WhenPos     Pos
	Timeout     time.Duration
	Finally     bool
	Retry       *Retry
	Resources   []string
	Assert      []Assertion
	// Metadata is stamped on the stage's rows over the plan's (nil: none).
	Metadata map[string]string
	Pos      Pos
	Value    cue.Value
	// Invalid is set on a stage whose own fields did not check (the errors
	// are in Load's error). The graph is still linked through it, so that
	// vet reports edge and cycle problems in the same pass.
	Invalid bool

	raw      cue.Value // the stage as written, before the schema (for positions)
	planPath string
}

// Sink is one entry of the plan's `sinks` list.
type Sink struct {
	Kind  string
	Index int
	Pos   Pos
	Value cue.Value

	// Invalid is set on an entry whose own fields did not check (the
	// errors are reported by the loader; Build does not decode it).
	Invalid bool

	raw      cue.Value // the entry as written, before unification
	planPath string
}

// PosOf returns the position of a field of the entry (the entry's own
// position when the field is not written in the plan).
func (s *Sink) PosOf(path ...string) Pos {
	return fieldPos(s.Pos, s.planPath, path, s.raw, s.Value)
}

// Decode decodes the sink's configuration into v (a pointer to a struct
// with json tags). Errors carry positions.
func (s *Sink) Decode(v any) error {
	if err := s.Value.Decode(v); err != nil {
		return convertErr(err, "")
	}
	return nil
}

// Decode decodes the stage's full configuration into v (a pointer to a
// struct with json tags). Errors carry positions.
func (s *Stage) Decode(v any) error {
	if err := s.Value.Decode(v); err != nil {
		errs := convertErr(err, "")
		for i := range errs {
			// Some decode errors carry neither a path nor a position
			// ("value was rounded down"): they are the stage's.
			if errs[i].Pos.Line == 0 {
				errs[i].Pos = s.Pos
			}
			if !strings.HasPrefix(errs[i].Msg, "stages.") {
				errs[i].Msg = "stages." + s.Name + ": " + errs[i].Msg
			}
		}
		return errs
	}
	return nil
}

// PosOf returns the position of a field of the stage (for example
// "cells", or "needs", "1"), as written in the plan file, or the stage's
// own position when the plan does not write the field.
func (s *Stage) PosOf(path ...string) Pos {
	return fieldPos(s.Pos, s.planPath, path, s.raw, s.Value)
}

// fieldPos is where the field at path is written in the plan file: looked
// up in the value as written, then as unified (a default's position is the
// schema's, which is not the user's to fix), else fallback.
func fieldPos(fallback Pos, planPath string, path []string, values ...cue.Value) Pos {
	for _, v := range values {
		f := v.LookupPath(cue.MakePath(selectors(path)...))
		if !f.Exists() {
			continue
		}
		if p := posOf(f.Pos()); p.Line > 0 && !inSchema(p) {
			return fixPos(p, planPath)
		}
	}
	return fallback
}

// valuePos is the position of a field's value as written (a string
// literal's opening quote), where PosOf gives the field's label.
func (s *Stage) valuePos(field string) Pos {
	f := s.raw.LookupPath(cue.MakePath(cue.Str(field)))
	if f.Exists() {
		switch n := f.Source().(type) {
		case *ast.Field:
			if p := posOf(n.Value.Pos()); p.Line > 0 {
				return fixPos(p, s.planPath)
			}
		case ast.Expr:
			if p := posOf(n.Pos()); p.Line > 0 {
				return fixPos(p, s.planPath)
			}
		}
	}
	return s.PosOf(field)
}

func selectors(path []string) []cue.Selector {
	var sels []cue.Selector
	for _, p := range path {
		if i, err := strconv.Atoi(p); err == nil && i >= 0 {
			sels = append(sels, cue.Index(i))
			continue
		}
		sels = append(sels, cue.Str(p))
	}
	return sels
}

// inSchema reports whether a position is in benchrun's embedded schema
// rather than in the user's plan.
func inSchema(p Pos) bool { return strings.HasPrefix(p.File, "schema/") }

// Pos is a position in a plan file.
type Pos struct {
	File      string
	Line, Col int
}

func (p Pos) String() string {
	if p.Line == 0 {
		return p.File
	}
	return fmt.Sprintf("%s:%d:%d", p.File, p.Line, p.Col)
}

func posOf(p token.Pos) Pos {
	if !p.IsValid() {
		return Pos{}
	}
	return Pos{File: p.Filename(), Line: p.Line(), Col: p.Column()}
}

// Error is one problem in a plan, at a position.
type Error struct {
	Pos Pos
	Msg string
}

func (e Error) Error() string {
	if e.Pos.File == "" {
		return e.Msg
	}
	return e.Pos.String() + ": " + e.Msg
}

// Errors is every problem found, sorted by position; it is an error.
type Errors []Error

func (es Errors) Error() string {
	var b strings.Builder
	for i, e := range es {
		if i > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(e.Error())
	}
	return b.String()
}

// Sort orders errors by file, line and column, dropping exact duplicates.
func (es Errors) Sort() Errors {
	sort.SliceStable(es, func(i, j int) bool {
		a, b := es[i].Pos, es[j].Pos
		if a.File != b.File {
			return a.File < b.File
		}
		if a.Line != b.Line {
			return a.Line < b.Line
		}
		if a.Col != b.Col {
			return a.Col < b.Col
		}
		return es[i].Msg < es[j].Msg
	})
	return slices.Compact(es)
}

// Load reads, unifies and decodes the plan at path.
//
// On error it may also return a partial plan: every stage whose common
// fields decoded, with Invalid set on those whose own fields did not check,
// so that the caller can link the graph and report edge and cycle problems
// together with the schema's (vet reports every problem at once).
//
// A plan over MaxPlanBytes is refused before it is read.
func Load(path string, opts Options) (*Plan, error) {
	src, err := readPlan(path)
	if err != nil {
		return nil, err
	}
	return LoadSource(path, src, opts)
}

// LoadSource is Load on a plan already in memory; path names it in
// positions and anchors relative imports.
func LoadSource(path string, src []byte, opts Options) (p *Plan, err error) {
	if len(src) > MaxPlanBytes {
		return nil, tooBig(path, int64(len(src)))
	}
	defer func() {
		// The CUE evaluator is a large dependency; a panic inside it on a
		// strange plan must still come out as a plan error, not a crash.
		if r := recover(); r != nil {
			p, err = nil, Errors{{Pos: Pos{File: path}, Msg: fmt.Sprintf("internal error while evaluating the plan (please report it with the plan): %v", r)}}
		}
	}()
	return loadPlan(path, src, opts)
}

func loadPlan(path string, src []byte, opts Options) (*Plan, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, Errors{{Pos: Pos{File: path}, Msg: fmt.Sprintf("cannot resolve plan path: %v", err)}}
	}
	tagFields := scanTags(abs, path, src)
	given, tags, tagErr := checkTags(path, opts.Tags, tagFields)
	p, err := loadWithTags(path, abs, src, opts, tagFields, given, tags)
	if tagErr == nil {
		return p, err
	}
	// The command line's problems first (they have no position), then the
	// plan's, found with the tags that were fine.
	var all Errors
	errors.As(tagErr, &all)
	var es Errors
	if errors.As(err, &es) {
		all = append(all, es...)
	} else if err != nil {
		all = append(all, Error{Pos: Pos{File: path}, Msg: err.Error()})
	}
	return p, all // es is sorted; the tags stay in command-line order
}

// loadWithTags is loadPlan once the -t values are checked.
func loadWithTags(path, abs string, src []byte, opts Options, tagFields []TagField, given map[string]string, tags []string) (*Plan, error) {
	ctx := cuecontext.New()
	schemaVal, err := buildSchema(ctx, opts.Kinds, opts.Sinks)
	if err != nil {
		return nil, fmt.Errorf("benchrun's own schema does not compile (a bug): %w", err)
	}

	cfg := &load.Config{
		Tags:    tags,
		Dir:     filepath.Dir(abs),
		Overlay: map[string]load.Source{abs: load.FromBytes(src)},
	}
	insts := load.Instances([]string{abs}, cfg)
	if len(insts) != 1 {
		return nil, Errors{{Pos: Pos{File: path}, Msg: "expected one CUE instance"}}
	}
	if err := insts[0].Err; err != nil {
		terr := tagOrLoadErr(path, err, tagFields, given)
		m := injectionTagRE.FindStringSubmatch(err.Error())
		if m == nil {
			return nil, terr
		}
		if _, ok := given[m[1]]; !ok {
			return nil, terr
		}
		// A value of the wrong type stops cue/load; check the rest of the
		// plan without it, so that vet still reports every other problem.
		// Each retry drops one tag, so this ends.
		rest := map[string]string{}
		for k, v := range given {
			if k != m[1] {
				rest[k] = v
			}
		}
		var restTags []string
		for _, t := range tags {
			if k, _, _ := strings.Cut(t, "="); k != m[1] {
				restTags = append(restTags, t)
			}
		}
		p, err2 := loadWithTags(path, abs, src, opts, tagFields, rest, restTags)
		var all Errors
		errors.As(terr, &all)
		var es Errors
		if errors.As(err2, &es) {
			all = append(all, es...)
		}
		return p, all.Sort()
	}
	v := ctx.BuildInstance(insts[0])
	if err := v.Err(); err != nil {
		return nil, tagErrs(convertErrPaths(err, path), tagFields, given)
	}
	raw := v // the plan as written: where its fields are
	// Settle the plan's own defaults first: `requests: *8 | int @tag(n)`
	// unified with the schema's `requests: int | *0` would otherwise have
	// two defaults and no value at all.
	v = settleDefaults(v)
	v = v.Unify(schemaVal.LookupPath(cue.ParsePath("#Plan")))

	var errs Errors
	unknown := map[string]bool{}
	v, errs = unifyKinds(ctx, v, schemaVal, "stages", opts.Kinds, path, errs, unknown)
	v, errs = unifyKinds(ctx, v, schemaVal, "sinks", opts.Sinks, path, errs, nil)
	if err := v.Validate(cue.Concrete(true)); err != nil {
		pe := dropDefaultConflicts(convertErrPaths(err, path), defaultSpans(opts))
		errs = append(errs, tagErrs(fixErrors(pe, raw, v, path), tagFields, given)...)
	}
	// Numbers no Go value holds: reported here with their place, and
	// their stages left undecoded (decoding fails with no position).
	badNumbers := map[string]bool{}
	errs = append(errs, tagErrs(numberErrs(raw, path, badNumbers), tagFields, given)...)
	errs = append(errs, envelopeTypos(raw, schemaVal.LookupPath(cue.ParsePath("#Plan")), path)...)
	// model: allows fields of the user's own (quant, source) beside its
	// own: a misspelt name or file would be one of them, silently.
	if m := raw.LookupPath(cue.ParsePath("model")); m.Exists() {
		errs = append(errs, fieldTypos(m, schemaVal.LookupPath(cue.ParsePath("#Model")), "model.", "a model field", "fields of your own", path)...)
	}
	p, derrs := decodePlan(v, raw, path, len(errs) == 0)
	if p != nil {
		for _, s := range p.Stages {
			if unknown[s.Name] || badNumbers[s.Name] {
				s.Invalid = true // reported here; Build need not say it again
			}
		}
	}
	errs = append(errs, derrs...)
	if p != nil {
		errs = append(errs, sizeErrs(raw, len(p.Stages), path)...)
		errs = append(errs, nameErrs(p, raw, path)...)
		if len(p.Stages) == 0 && stagesDecoded(v) {
			errs = append(errs, noStagesErr(raw, path))
		}
	}
	if p != nil {
		p.Source = src
		p.Tags = tagFields
		p.Given = given
	}
	if len(errs) > 0 {
		return p, errs.Sort()
	}
	return p, nil
}

// unifyKinds unifies every entry of the stages struct (or the sinks list)
// with its kind's definition, so that defaults apply and unknown fields
// are refused with their position. Unknown kinds are errors listing the
// known ones.
func unifyKinds(ctx *cue.Context, v, schemaVal cue.Value, field string, kinds []KindSchema, planPath string, errs Errors, unknown map[string]bool) (cue.Value, Errors) {
	defs := map[string]string{}
	var known []string
	for _, k := range kinds {
		defs[k.Kind] = k.Def
		known = append(known, k.Kind)
	}
	sort.Strings(known)
	knownList := strings.Join(known, ", ")
	if knownList == "" {
		knownList = "none"
	}
	what := "stage"
	if field == "sinks" {
		what = "sink"
	}
	list := v.LookupPath(cue.ParsePath(field))
	if !list.Exists() {
		return v, errs
	}
	type entry struct {
		label string
		name  string
		sel   cue.Selector
		val   cue.Value
	}
	var entries []entry
	if field == "sinks" {
		it, err := list.List()
		if err != nil {
			return v, errs // reported by Validate
		}
		for i := 0; it.Next(); i++ {
			entries = append(entries, entry{fmt.Sprintf("sinks[%d]", i), "", cue.Index(i), it.Value()})
		}
	} else {
		it, err := list.Fields()
		if err != nil {
			return v, errs
		}
		for it.Next() {
			entries = append(entries, entry{"stages." + it.Selector().String(), it.Selector().Unquoted(), it.Selector(), it.Value()})
		}
	}
	// Every entry's definition, unified with the plan in one step: one
	// FillPath per stage re-evaluated the whole plan each time (a plan of
	// 400 stages took half a minute).
	var elts []ast.Expr
	var fields []any
	anyDef := false
	for _, e := range entries {
		var def ast.Expr = ast.NewIdent("_")
		kv := e.val.LookupPath(cue.ParsePath("kind"))
		kind, kerr := kv.String()
		if kerr == nil {
			d, ok := defs[kind]
			if ok {
				def, anyDef = ast.NewIdent(d), true
			} else {
				if unknown != nil {
					unknown[e.name] = true
				}
				errs = append(errs, Error{
					Pos: fixPos(posOf(kv.Pos()), planPath),
					Msg: fmt.Sprintf("%s.kind: unknown %s kind %q (known %s kinds: %s)", e.label, what, kind, what, knownList),
				})
			}
		} // else: a missing or non-string kind is reported by Validate
		if field == "sinks" {
			elts = append(elts, def)
		} else {
			fields = append(fields, &ast.Field{Label: ast.NewString(e.name), Value: def})
		}
	}
	if !anyDef {
		return v, errs
	}
	var expr ast.Expr
	if field == "sinks" {
		expr = ast.NewList(elts...)
	} else {
		expr = ast.NewStruct(fields...)
	}
	all := ctx.BuildExpr(expr, cue.Scope(schemaVal))
	if err := all.Err(); err != nil {
		// Cannot happen with the schema's own definitions; fall back to
		// one entry at a time rather than lose the checks.
		for _, e := range entries {
			if kind, err := e.val.LookupPath(cue.ParsePath("kind")).String(); err == nil {
				if d, ok := defs[kind]; ok {
					v = v.FillPath(cue.MakePath(cue.Str(field), e.sel), schemaVal.LookupPath(cue.ParsePath(d)))
				}
			}
		}
		return v, errs
	}
	return v.FillPath(cue.MakePath(cue.Str(field)), all), errs
}

func buildSchema(ctx *cue.Context, kinds, sinks []KindSchema) (cue.Value, error) {
	inst := build.NewContext().NewInstance("benchrun.schema", nil)
	add := func(name, src string) error {
		f, err := parser.ParseFile(name, src, parser.ParseComments)
		if err != nil {
			return err
		}
		return inst.AddSyntax(f)
	}
	if err := add("schema/plan.cue", planSchema); err != nil {
		return cue.Value{}, err
	}
	for _, k := range kinds {
		if err := add("schema/"+k.Kind+".cue", k.Source); err != nil {
			return cue.Value{}, err
		}
	}
	for _, k := range sinks {
		if err := add("schema/sink-"+k.Kind+".cue", k.Source); err != nil {
			return cue.Value{}, err
		}
	}
	v := ctx.BuildInstance(inst)
	return v, v.Err()
}

// pathError is an Error with the CUE path it is about (for matching tags).
type pathError struct {
	Error
	path string
	all  []Pos // every position CUE gave, to trace a value to a -t tag
}

// convertErr turns CUE errors into Errors, preferring positions inside the
// plan file (the user's) over positions in the embedded schema.
func convertErr(err error, planPath string) Errors {
	var out Errors
	for _, e := range convertErrPaths(err, planPath) {
		out = append(out, e.Error)
	}
	return out
}

func convertErrPaths(err error, planPath string) []pathError {
	var out []pathError
	for _, e := range cueerrors.Errors(err) {
		format, args := e.Msg()
		msg := fmt.Sprintf(format, args...)
		if strings.TrimSpace(msg) == "" || strings.Contains(msg, "%!") {
			msg = e.Error() // a wrapped error whose format lost its arguments
		}
		path := strings.Join(e.Path(), ".")
		if path != "" {
			msg = path + ": " + msg
		}
		var pos Pos
		positions := append([]token.Pos{e.Position()}, e.InputPositions()...)
		for _, tp := range positions {
			p := posOf(tp)
			if p.Line == 0 {
				continue
			}
			if pos.Line == 0 {
				pos = p
			}
			if !strings.HasPrefix(p.File, "schema/") {
				pos = p
				break
			}
		}
		if pos.File != "" && planPath != "" {
			if rel, ok := relTo(planPath, pos.File); ok {
				pos.File = rel
			}
		}
		if pos.File == "" {
			pos.File = planPath
		}
		var all []Pos
		for _, tp := range positions {
			if p := posOf(tp); p.Line > 0 {
				all = append(all, fixPos(p, planPath))
			}
		}
		out = append(out, pathError{Error{Pos: pos, Msg: msg}, path, all})
	}
	// "N errors in empty disjunction" heads the errors it summarises and
	// has no position: the errors under it say what is wrong.
	if len(out) > 1 {
		kept := out[:0]
		for _, e := range out {
			if e.Pos.Line == 0 && strings.Contains(e.Msg, "errors in empty disjunction") {
				continue
			}
			kept = append(kept, e)
		}
		out = kept
	}
	if len(out) == 0 {
		out = append(out, pathError{Error: Error{Pos: Pos{File: planPath}, Msg: err.Error()}})
	}
	return out
}

// relTo shows an absolute position in the plan file with the path the user typed.
func relTo(planPath, file string) (string, bool) {
	abs, err := filepath.Abs(planPath)
	if err != nil || abs != file {
		return "", false
	}
	return planPath, true
}

type retryBase struct {
	Attempts int    `json:"attempts"`
	Backoff  string `json:"backoff"`
}

// decodePlan decodes the envelope and every stage's common fields. With
// report false (the schema already failed) it decodes what it can and
// reports nothing new, so that each problem is reported once.
func decodePlan(v, raw cue.Value, path string, report bool) (*Plan, Errors) {
	p := &Plan{Path: path, Metadata: map[string]string{}, Value: v}
	d := &planDecoder{path: path, report: report}
	d.envelope(p, v, raw)
	p.Sinks = decodeSinks(v, raw, path)

	it, err := v.LookupPath(cue.ParsePath("stages")).Fields()
	if err != nil {
		d.reportErr(err)
		return nil, d.errs
	}
	for it.Next() {
		p.Stages = append(p.Stages, d.stage(it.Selector(), it.Value(), raw))
	}
	// Source order, so summaries and graphs read like the file.
	sort.SliceStable(p.Stages, func(i, j int) bool {
		a, b := p.Stages[i].Pos, p.Stages[j].Pos
		if a.Line != b.Line {
			return a.Line < b.Line
		}
		return a.Col < b.Col
	})
	return p, d.errs.Sort()
}

// planDecoder collects decoding errors for one plan; with report false
// it collects none (the schema's errors already cover them).
type planDecoder struct {
	path   string
	report bool
	errs   Errors
}

func (d *planDecoder) reportErr(err error) {
	if d.report {
		d.errs = append(d.errs, convertErr(err, d.path)...)
	}
}

// field decodes val's field name into dst, if present; false when it
// is present but does not decode.
func (d *planDecoder) field(val cue.Value, name string, dst any) bool {
	f := val.LookupPath(cue.MakePath(cue.Str(name)))
	if !f.Exists() {
		return true
	}
	if err := f.Decode(dst); err != nil {
		d.reportErr(err)
		return false
	}
	return true
}

// envelope decodes the plan's own fields (everything but sinks and stages).
func (d *planDecoder) envelope(p *Plan, v, raw cue.Value) {
	path := d.path
	d.field(v, "name", &p.Name)
	d.field(v, "description", &p.Description)
	d.field(v, "model", &p.Model)
	d.field(v, "slo", &p.SLO)
	var meta map[string]any
	if d.field(v, "metadata", &meta) {
		for k, val := range meta {
			p.Metadata[k] = fmt.Sprint(val)
		}
	}
	d.field(v, "inconclusive", &p.Inconclusive)
	var timeout string
	if d.field(v, "timeout", &timeout) && timeout != "" {
		dur, err := time.ParseDuration(timeout)
		if err != nil && d.report {
			d.errs = append(d.errs, Error{Pos: fixPos(posOf(v.LookupPath(cue.ParsePath("timeout")).Pos()), path), Msg: "timeout: " + err.Error()})
		}
		p.Timeout = dur
	}
	p.Assert = assertions(v.LookupPath(cue.ParsePath("assert")), path)
	var bl *Baseline
	if d.field(v, "baseline", &bl) && bl != nil {
		// Where the plan writes it: the unified value's position may be
		// the embedded schema's (a `baseline: {}` takes every field from it).
		bl.Pos = fixPos(posOf(v.LookupPath(cue.ParsePath("baseline")).Pos()), path)
		if p := posOf(raw.LookupPath(cue.ParsePath("baseline")).Pos()); p.Line > 0 && !inSchema(p) {
			bl.Pos = fixPos(p, path)
		}
		p.Baseline = bl
	}

	var sh *Shard
	if d.field(v, "shard", &sh) && sh != nil {
		sh.Pos = fixPos(posOf(v.LookupPath(cue.ParsePath("shard")).Pos()), path)
		p.Shard = sh
	}
}

// decodeSinks returns the sink entries as written: one that does not
// check is kept, marked Invalid (its errors are reported), so the others
// are still checked.
func decodeSinks(v, raw cue.Value, path string) []*Sink {
	it, err := raw.LookupPath(cue.ParsePath("sinks")).List()
	if err != nil {
		return nil
	}
	var sinks []*Sink
	for i := 0; it.Next(); i++ {
		sv := v.LookupPath(cue.MakePath(cue.Str("sinks"), cue.Index(i)))
		s := &Sink{Index: i, Value: sv, planPath: path}
		s.Invalid = sv.Err() != nil || sv.Validate(cue.Concrete(true)) != nil
		s.raw = raw.LookupPath(cue.MakePath(cue.Str("sinks"), cue.Index(i)))
		s.Pos = fixPos(posOf(sv.Pos()), path)
		if p := posOf(s.raw.Pos()); p.Line > 0 && !inSchema(p) {
			s.Pos = fixPos(p, path) // the entry as written, not the schema's list
		}
		s.Kind, _ = sv.LookupPath(cue.ParsePath("kind")).String()
		sinks = append(sinks, s)
	}
	return sinks
}

// stage decodes one stage's common fields; one that does not decode or
// is not concrete is marked Invalid.
func (d *planDecoder) stage(sel cue.Selector, sv, raw cue.Value) *Stage {
	path := d.path
	s := &Stage{Name: sel.Unquoted(), Value: sv, planPath: path}
	s.raw = raw.LookupPath(cue.MakePath(cue.Str("stages"), sel))
	s.Pos = fixPos(posOf(sv.Pos()), path)
	if rp := posOf(s.raw.Pos()); s.raw.Exists() && rp.Line > 0 {
		s.Pos = fixPos(rp, path)
	}
	ok := d.field(sv, "kind", &s.Kind)
	ok = d.field(sv, "needs", &s.Needs) && ok
	ok = d.field(sv, "target", &s.Target) && ok
	ok = d.field(sv, "description", &s.Description) && ok
	ok = d.field(sv, "when", &s.When) && ok
	ok = d.field(sv, "finally", &s.Finally) && ok
	ok = d.field(sv, "resources", &s.Resources) && ok
	s.WhenPos = s.valuePos("when")
	var timeout string
	if d.field(sv, "timeout", &timeout) && timeout != "" {
		s.Timeout, _ = time.ParseDuration(timeout) // the schema's #Duration pattern already checked it
	}
	var retry *retryBase
	if d.field(sv, "retry", &retry) && retry != nil {
		bo, _ := time.ParseDuration(retry.Backoff)
		s.Retry = &Retry{Attempts: retry.Attempts, Backoff: bo}
	}
	s.Assert = assertions(sv.LookupPath(cue.ParsePath("assert")), path)
	var smeta map[string]any
	if d.field(sv, "metadata", &smeta) && len(smeta) > 0 {
		s.Metadata = map[string]string{}
		for k, val := range smeta {
			s.Metadata[k] = fmt.Sprint(val)
		}
	}
	if !ok || sv.Validate(cue.Concrete(true)) != nil {
		s.Invalid = true
	}
	return s
}

func fixPos(p Pos, planPath string) Pos {
	if rel, ok := relTo(planPath, p.File); ok {
		p.File = rel
	}
	return p
}

func assertions(v cue.Value, path string) []Assertion {
	if !v.Exists() {
		return nil
	}
	it, err := v.List()
	if err != nil {
		return nil
	}
	var out []Assertion
	for it.Next() {
		v := it.Value()
		if s, err := v.String(); err == nil {
			out = append(out, Assertion{Expr: s, Pos: fixPos(posOf(v.Pos()), path), Severity: "fail"})
			continue
		}
		var named struct {
			Name     string `json:"name"`
			Expr     string `json:"expr"`
			Severity string `json:"severity"`
		}
		if v.Decode(&named) != nil || named.Expr == "" {
			continue // reported by the schema
		}
		ev := v.LookupPath(cue.ParsePath("expr"))
		if named.Severity == "" {
			named.Severity = "fail"
		}
		out = append(out, Assertion{Expr: named.Expr, Pos: fixPos(posOf(ev.Pos()), path), Name: named.Name, Severity: named.Severity})
	}
	return out
}

// JSON returns the plan as resolved (defaults applied, tags injected).
func (p *Plan) JSON() ([]byte, error) {
	var m any
	if err := p.Value.Decode(&m); err != nil {
		return nil, fmt.Errorf("resolving plan: %w", err)
	}
	return json.MarshalIndent(m, "", "  ")
}

// Stage returns the stage with the given name, or nil.
func (p *Plan) Stage(name string) *Stage {
	for _, s := range p.Stages {
		if s.Name == name {
			return s
		}
	}
	return nil
}

// settleDefaults fills every field of v that has a default but no single
// value with that default, keeping the original (and its positions) in the
// conjunction.
func settleDefaults(v cue.Value) cue.Value {
	var paths []cue.Path
	var vals []cue.Value
	var walk func(x cue.Value, path []cue.Selector, depth int)
	walk = func(x cue.Value, path []cue.Selector, depth int) {
		if depth > 64 {
			return
		}
		if d, ok := x.Default(); ok && d.IsConcrete() && d.Kind() != cue.StructKind && d.Kind() != cue.ListKind {
			paths = append(paths, cue.MakePath(path...))
			vals = append(vals, d)
		}
		switch x.IncompleteKind() {
		case cue.StructKind:
			it, err := x.Fields()
			if err != nil {
				return
			}
			for it.Next() {
				walk(it.Value(), append(slices.Clip(path), it.Selector()), depth+1)
			}
		case cue.ListKind:
			it, err := x.List()
			if err != nil {
				return
			}
			for it.Next() {
				walk(it.Value(), append(slices.Clip(path), it.Selector()), depth+1)
			}
		}
	}
	walk(v, nil, 0)
	for i, p := range paths {
		if len(p.Selectors()) == 0 {
			continue
		}
		v = v.FillPath(p, vals[i])
	}
	return v
}

// PosOf returns the position of a plan field ("model.file") as written
// in the plan file, or the plan file alone when the plan does not write it.
func (p *Plan) PosOf(path string) Pos {
	if pos, _ := rawPos(p.Value, path, p.Path); pos.Line > 0 {
		return pos
	}
	return Pos{File: p.Path}
}
