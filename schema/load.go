// Package schema loads plan files: CUE, unified with benchrun's embedded
// schema and each stage kind's definition, with -t tags, into typed Go
// values whose every problem carries file:line:col.
package schema

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"cuelang.org/go/cue"
	"cuelang.org/go/cue/build"
	"cuelang.org/go/cue/cuecontext"
	cueerrors "cuelang.org/go/cue/errors"
	"cuelang.org/go/cue/load"
	"cuelang.org/go/cue/token"
)

//go:embed plan.cue
var planSchema string

// PlanSchema is the envelope schema's CUE source (for `benchrun schema`).
func PlanSchema() string { return planSchema }

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
	Stages      []*Stage // in source order
	// Value is the whole plan, unified with the schema and the stages' kind definitions.
	Value cue.Value
}

// Model is the model under test.
type Model struct {
	Name        string `json:"name"`
	File        string `json:"file"`
	MaxModelLen int    `json:"max_model_len"`
}

// SLO holds latency objectives in milliseconds (0 = not set).
type SLO struct {
	TTFTMs float64 `json:"ttft_ms"`
	TPOTMs float64 `json:"tpot_ms"`
	ITLMs  float64 `json:"itl_ms"`
	E2ELMs float64 `json:"e2el_ms"`
}

// Assertion is an expr-lang expression with where it was written.
type Assertion struct {
	Expr string
	Pos  Pos
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
	Pos         Pos
	Value       cue.Value
}

// Decode decodes the stage's full configuration into v (a pointer to a
// struct with json tags). Errors carry positions.
func (s *Stage) Decode(v any) error {
	if err := s.Value.Decode(v); err != nil {
		return convertErr(err, "")
	}
	return nil
}

// PosOf returns the position of a field of the stage (for example "cells"),
// or the stage's own position when the field is absent.
func (s *Stage) PosOf(path ...string) Pos {
	v := s.Value.LookupPath(cue.MakePath(selectors(path)...))
	if v.Exists() {
		if p := posOf(v.Pos()); p.Line > 0 {
			return p
		}
	}
	return s.Pos
}

func selectors(path []string) []cue.Selector {
	var sels []cue.Selector
	for _, p := range path {
		sels = append(sels, cue.Str(p))
	}
	return sels
}

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
		return a.Col < b.Col
	})
	return slices.Compact(es)
}

// Load reads, unifies and decodes the plan at path.
func Load(path string, opts Options) (*Plan, error) {
	src, err := os.ReadFile(path)
	if err != nil {
		return nil, Errors{{Pos: Pos{File: path}, Msg: fmt.Sprintf("cannot read plan: %v", err)}}
	}
	tags, err := checkTags(path, opts.Tags)
	if err != nil {
		return nil, err
	}
	ctx := cuecontext.New()
	schemaVal, err := buildSchema(ctx, opts.Kinds)
	if err != nil {
		return nil, fmt.Errorf("benchrun's own schema does not compile (a bug): %w", err)
	}

	abs, _ := filepath.Abs(path)
	insts := load.Instances([]string{abs}, &load.Config{Tags: tags, Dir: filepath.Dir(abs)})
	if len(insts) != 1 {
		return nil, Errors{{Pos: Pos{File: path}, Msg: "expected one CUE instance"}}
	}
	if err := insts[0].Err; err != nil {
		return nil, tagOrLoadErr(path, err)
	}
	v := ctx.BuildInstance(insts[0])
	if err := v.Err(); err != nil {
		return nil, convertErr(err, path)
	}
	// Settle the plan's own defaults first: `requests: *8 | int @tag(n)`
	// unified with the schema's `requests: int | *0` would otherwise have
	// two defaults and no value at all.
	v = settleDefaults(v)
	v = v.Unify(schemaVal.LookupPath(cue.ParsePath("#Plan")))

	defs := map[string]string{}
	var known []string
	for _, k := range opts.Kinds {
		defs[k.Kind] = k.Def
		known = append(known, k.Kind)
	}
	sort.Strings(known)

	// Unify each stage with its kind's definition, so defaults apply and
	// unknown fields are refused with their position.
	var errs Errors
	stagesVal := v.LookupPath(cue.ParsePath("stages"))
	if stagesVal.Exists() {
		it, err := stagesVal.Fields()
		if err == nil {
			for it.Next() {
				name := it.Selector().Unquoted()
				sv := it.Value()
				kind, kerr := sv.LookupPath(cue.ParsePath("kind")).String()
				if kerr != nil {
					continue // reported by Validate below
				}
				def, ok := defs[kind]
				if !ok {
					errs = append(errs, Error{
						Pos: posOf(sv.LookupPath(cue.ParsePath("kind")).Pos()),
						Msg: fmt.Sprintf("stages.%s.kind: unknown stage kind %q (known kinds: %s)", name, kind, strings.Join(known, ", ")),
					})
					continue
				}
				v = v.FillPath(cue.MakePath(cue.Str("stages"), cue.Str(name)), schemaVal.LookupPath(cue.ParsePath(def)))
			}
		}
	}
	if err := v.Validate(cue.Concrete(true)); err != nil {
		errs = append(errs, convertErr(err, path)...)
	}
	if len(errs) > 0 {
		return nil, errs.Sort()
	}
	p, err := decodePlan(v, path)
	if err != nil {
		return nil, err
	}
	p.Source = src
	return p, nil
}

// checkTags refuses a tag given twice with different values (CUE would
// report a conflict far from the command line) and normalises the list.
func checkTags(path string, tags []string) ([]string, error) {
	seen := map[string]string{}
	var out []string
	var errs Errors
	for _, t := range tags {
		k, val, ok := strings.Cut(t, "=")
		if !ok || k == "" {
			errs = append(errs, Error{Msg: fmt.Sprintf("-t %s: a tag is key=value", t)})
			continue
		}
		if prev, dup := seen[k]; dup {
			if prev != val {
				errs = append(errs, Error{Msg: fmt.Sprintf("-t %s: tag %q given twice with different values (%q and %q)", t, k, prev, val)})
			}
			continue
		}
		seen[k] = val
		out = append(out, t)
	}
	if len(errs) > 0 {
		return nil, errs
	}
	return out, nil
}

func tagOrLoadErr(path string, err error) error {
	msg := err.Error()
	if strings.HasPrefix(msg, "no tag for ") {
		name := strings.TrimPrefix(msg, "no tag for ")
		return Errors{{Pos: Pos{File: path}, Msg: fmt.Sprintf("-t %s: unknown tag: the plan has no field marked @tag(%s)", strings.Trim(name, `"`), strings.Trim(name, `"`))}}
	}
	if strings.Contains(msg, "injection tag") {
		return Errors{{Pos: Pos{File: path}, Msg: "-t: " + msg}}
	}
	return convertErr(err, path)
}

func buildSchema(ctx *cue.Context, kinds []KindSchema) (cue.Value, error) {
	inst := build.NewContext().NewInstance("benchrun.schema", nil)
	if err := inst.AddFile("schema/plan.cue", planSchema); err != nil {
		return cue.Value{}, err
	}
	for _, k := range kinds {
		if err := inst.AddFile("schema/"+k.Kind+".cue", k.Source); err != nil {
			return cue.Value{}, err
		}
	}
	v := ctx.BuildInstance(inst)
	return v, v.Err()
}

// convertErr turns CUE errors into Errors, preferring positions inside the
// plan file (the user's) over positions in the embedded schema.
func convertErr(err error, planPath string) Errors {
	var out Errors
	for _, e := range cueerrors.Errors(err) {
		format, args := e.Msg()
		msg := fmt.Sprintf(format, args...)
		if p := strings.Join(e.Path(), "."); p != "" {
			msg = p + ": " + msg
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
		out = append(out, Error{Pos: pos, Msg: msg})
	}
	if len(out) == 0 {
		out = append(out, Error{Pos: Pos{File: planPath}, Msg: err.Error()})
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

// envelope mirrors the plan fields decoded into Plan.
type envelope struct {
	Name        string         `json:"name"`
	Description string         `json:"description"`
	Model       Model          `json:"model"`
	Metadata    map[string]any `json:"metadata"`
	SLO         SLO            `json:"slo"`
	Timeout     string         `json:"timeout"`
}

type stageBase struct {
	Kind        string   `json:"kind"`
	Needs       []string `json:"needs"`
	Target      string   `json:"target"`
	Description string   `json:"description"`
	When        string   `json:"when"`
	Timeout     string   `json:"timeout"`
	Finally     bool     `json:"finally"`
	Retry       *struct {
		Attempts int    `json:"attempts"`
		Backoff  string `json:"backoff"`
	} `json:"retry"`
	Resources []string `json:"resources"`
}

func decodePlan(v cue.Value, path string) (*Plan, error) {
	var env envelope
	if err := v.Decode(&env); err != nil {
		return nil, convertErr(err, path)
	}
	p := &Plan{
		Path:        path,
		Name:        env.Name,
		Description: env.Description,
		Model:       env.Model,
		SLO:         env.SLO,
		Metadata:    map[string]string{},
		Value:       v,
	}
	for k, val := range env.Metadata {
		p.Metadata[k] = fmt.Sprint(val)
	}
	var errs Errors
	if env.Timeout != "" {
		d, err := time.ParseDuration(env.Timeout)
		if err != nil {
			errs = append(errs, Error{Pos: posOf(v.LookupPath(cue.ParsePath("timeout")).Pos()), Msg: "timeout: " + err.Error()})
		}
		p.Timeout = d
	}
	p.Assert = assertions(v.LookupPath(cue.ParsePath("assert")), path)

	it, err := v.LookupPath(cue.ParsePath("stages")).Fields()
	if err != nil {
		return nil, convertErr(err, path)
	}
	for it.Next() {
		sv := it.Value()
		s := &Stage{Name: it.Selector().Unquoted(), Value: sv, Pos: fixPos(posOf(sv.Pos()), path)}
		var b stageBase
		if err := sv.Decode(&b); err != nil {
			errs = append(errs, convertErr(err, path)...)
			continue
		}
		s.Kind, s.Needs, s.Target, s.Description = b.Kind, b.Needs, b.Target, b.Description
		s.When, s.Finally, s.Resources = b.When, b.Finally, b.Resources
		s.WhenPos = fixPos(posOf(sv.LookupPath(cue.ParsePath("when")).Pos()), path)
		if b.Timeout != "" {
			s.Timeout, _ = time.ParseDuration(b.Timeout) // the schema's #Duration pattern already checked it
		}
		if b.Retry != nil {
			bo, _ := time.ParseDuration(b.Retry.Backoff)
			s.Retry = &Retry{Attempts: b.Retry.Attempts, Backoff: bo}
		}
		s.Assert = assertions(sv.LookupPath(cue.ParsePath("assert")), path)
		p.Stages = append(p.Stages, s)
	}
	if len(errs) > 0 {
		return nil, errs.Sort()
	}
	// Source order, so summaries and graphs read like the file.
	sort.SliceStable(p.Stages, func(i, j int) bool {
		a, b := p.Stages[i].Pos, p.Stages[j].Pos
		if a.Line != b.Line {
			return a.Line < b.Line
		}
		return a.Col < b.Col
	})
	return p, nil
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
		s, err := it.Value().String()
		if err != nil {
			continue
		}
		out = append(out, Assertion{Expr: s, Pos: fixPos(posOf(it.Value().Pos()), path)})
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
