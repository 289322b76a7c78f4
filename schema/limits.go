package schema

import (
	"fmt"
	"io"
	"os"
	"runtime/metrics"
	"strings"
	"unicode/utf8"

	"cuelang.org/go/cue"
	"cuelang.org/go/cue/ast"
	"cuelang.org/go/cue/parser"
	"cuelang.org/go/cue/token"
)

// MaxPlanBytes is the largest plan file benchrun loads: 1 MiB. CUE's
// evaluation grows faster than the file (quadratically for a long list: a
// 1 MiB list of numbers takes about 30 s on two cores, 4 MiB about nine
// minutes), and a plan that size is a generated table, not a plan: the
// example plans are a few KiB, and comprehensions generate stages from a
// short list. (A loading plan still stops on the first SIGINT or SIGTERM.)
const MaxPlanBytes = 1 << 20

// MaxNameLen is the longest plan or stage name. Names become file and
// directory names (runs/plan=NAME/, NAME.log) and parts of every cell id,
// and a file name longer than 255 bytes fails only at run time.
const MaxNameLen = 64

// What one plan may ask the loader to hold. A few hundred bytes of CUE
// can generate far more than a person writes (a string doubled 24 times,
// a comprehension over list.Range): past these, vet refuses the plan at
// the field, with the count.
const (
	// MaxStages is the most stages one plan has: a matrix of models,
	// quantizations and engines is tens to hundreds, and vet's time and
	// memory grow with every stage.
	MaxStages = 1000
	// MaxStringBytes is the longest string value: no longer than a plan
	// file could write literally. Prompts and documents longer than that
	// belong in a dataset file.
	MaxStringBytes = MaxPlanBytes
	// MaxListLen is the most elements of one list (a ladder, a cell list,
	// a sink list).
	MaxListLen = 10_000
	// MaxEvalHeapBytes bounds the memory CUE may take evaluating a plan
	// (docs/PLANS.md, "Limits", has what plans take). Evaluation cannot
	// be interrupted, so the caller watches the heap (EvalHeapBytes) and
	// gives the load up past it.
	MaxEvalHeapBytes = 512 << 20
)

// readPlan reads a plan file, refusing one over MaxPlanBytes before
// reading it.
func readPlan(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, Errors{{Pos: Pos{File: path}, Msg: fmt.Sprintf("cannot read plan: %v", err)}}
	}
	defer f.Close()
	if fi, err := f.Stat(); err == nil && fi.Mode().IsRegular() && fi.Size() > MaxPlanBytes {
		return nil, tooBig(path, fi.Size())
	}
	src, err := io.ReadAll(io.LimitReader(f, MaxPlanBytes+1))
	if err != nil {
		return nil, Errors{{Pos: Pos{File: path}, Msg: fmt.Sprintf("cannot read plan: %v", err)}}
	}
	if len(src) > MaxPlanBytes {
		return nil, tooBig(path, -1)
	}
	return src, nil
}

// tooBig is the error for a plan over MaxPlanBytes (size -1: unknown,
// read from a pipe).
func tooBig(path string, size int64) error {
	is := "over " + byteSize(MaxPlanBytes)
	if size >= 0 {
		is = byteSize(size)
	}
	return Errors{{Pos: Pos{File: path}, Msg: fmt.Sprintf("the plan is %s; benchrun loads plans of at most %s (%d bytes): generate repeated stages with a comprehension (docs/PLANS.md) instead of writing them out", is, byteSize(MaxPlanBytes), MaxPlanBytes)}}
}

func byteSize(n int64) string {
	switch {
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d bytes", n)
}

// nameErrs refuses plan and stage names longer than MaxNameLen.
func nameErrs(p *Plan, v cue.Value, path string) Errors {
	var errs Errors
	if n := utf8.RuneCountInString(p.Name); n > MaxNameLen {
		errs = append(errs, Error{Pos: valuePosOf(v, "name", path), Msg: fmt.Sprintf("name: %s has %d characters; a plan name is at most %d (it names the run directory, runs/plan=NAME/)", shortName(p.Name), n, MaxNameLen)})
	}
	for _, s := range p.Stages {
		if n := utf8.RuneCountInString(s.Name); n > MaxNameLen {
			errs = append(errs, Error{Pos: s.Pos, Msg: fmt.Sprintf("stages.%s: the stage name has %d characters; a stage name is at most %d (it names the stage's log file, NAME.log, and its cell ids)", shortName(s.Name), n, MaxNameLen)})
		}
	}
	return errs
}

// sizeErrs refuses a plan with more than MaxStages stages, and any string
// over MaxStringBytes or list over MaxListLen among the plan's regular
// fields (hidden helpers are reported where a field uses them), each at
// the field with its size.
func sizeErrs(raw cue.Value, stages int, path string) Errors {
	var errs Errors
	at := func(x cue.Value, sels []string) Pos {
		if p, _ := rawPos(raw, strings.Join(sels, "."), path); p.Line > 0 {
			return p
		}
		if p := posOf(x.Pos()); p.Line > 0 && !inSchema(p) {
			return fixPos(p, path)
		}
		return Pos{File: path, Line: 1, Col: 1}
	}
	if stages > MaxStages {
		errs = append(errs, Error{Pos: valuePosOf(raw, "stages", path), Msg: fmt.Sprintf("stages: the plan has %d stages; a plan has at most %d (split it into plans, or narrow the comprehension that generates them)", stages, MaxStages)})
	}
	walkPlan(raw, false, func(x cue.Value, sels []string) bool {
		if len(errs) > 20 {
			return false
		}
		switch x.IncompleteKind() {
		case cue.ListKind:
			if n, err := x.Len().Int64(); err == nil && n > MaxListLen {
				errs = append(errs, Error{Pos: at(x, sels), Msg: fmt.Sprintf("%s: the list has %d elements; a list has at most %d (a ladder, cells or documents that long belong in a dataset file, or in several stages)", strings.Join(sels, "."), n, MaxListLen)})
				return false
			}
		case cue.StringKind:
			if str, err := x.String(); err == nil && len(str) > MaxStringBytes {
				errs = append(errs, Error{Pos: at(x, sels), Msg: fmt.Sprintf("%s: the string is %s; a string in a plan is at most %s, what a plan file can hold (a longer prompt or document belongs in a dataset file)", strings.Join(sels, "."), byteSize(int64(len(str))), byteSize(MaxStringBytes))})
			}
		}
		return true
	})
	return errs
}

// walkPlan calls visit on v and, while visit says so, on every field
// (hidden ones and definitions too, with hidden) and list element below
// it, with its path as selectors ("stages", "sweep", "cells", "0"), down
// to a depth of 64.
func walkPlan(v cue.Value, hidden bool, visit func(x cue.Value, sels []string) bool) {
	var walk func(x cue.Value, sels []string, depth int)
	walk = func(x cue.Value, sels []string, depth int) {
		if depth > 64 || !visit(x, sels) {
			return
		}
		switch x.IncompleteKind() {
		case cue.StructKind:
			opts := []cue.Option{}
			if hidden {
				opts = append(opts, cue.Hidden(true), cue.Definitions(true))
			}
			it, err := x.Fields(opts...)
			if err != nil {
				return
			}
			for it.Next() {
				sel := it.Selector()
				name := sel.String()
				if sel.LabelType() == cue.StringLabel {
					name = sel.Unquoted()
				}
				walk(it.Value(), append(sels[:len(sels):len(sels)], name), depth+1)
			}
		case cue.ListKind:
			it, err := x.List()
			if err != nil {
				return
			}
			for i := 0; it.Next(); i++ {
				walk(it.Value(), append(sels[:len(sels):len(sels)], fmt.Sprint(i)), depth+1)
			}
		}
	}
	walk(v, nil, 0)
}

// EvalHeapBytes is the Go heap's size now (live and not yet collected
// objects), cheap enough to poll while a plan loads.
func EvalHeapBytes() uint64 {
	s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return s[0].Value.Uint64()
}

// shortName quotes a long name by its start.
func shortName(s string) string {
	if utf8.RuneCountInString(s) <= 24 {
		return fmt.Sprintf("%q", s)
	}
	r := []rune(s)
	return fmt.Sprintf("%q", string(r[:20])+"…")
}

// valuePosOf is where the plan writes a top-level field's value (the
// field when the value has no position of its own).
func valuePosOf(v cue.Value, field, path string) Pos {
	f := v.LookupPath(cue.MakePath(cue.Str(field)))
	if n, ok := f.Source().(*ast.Field); ok {
		if p := posOf(n.Value.Pos()); p.Line > 0 {
			return fixPos(p, path)
		}
	}
	if p := posOf(f.Pos()); p.Line > 0 && !inSchema(p) {
		return fixPos(p, path)
	}
	return Pos{File: path, Line: 1, Col: 1}
}

// noStagesErr is the error for a plan whose stages struct is empty:
// `stages: {}`, or a comprehension over an empty list. Such a plan would
// run nothing and exit 0.
func noStagesErr(raw cue.Value, path string) Error {
	msg := "stages: the plan has no stages: it would run nothing"
	f := raw.LookupPath(cue.ParsePath("stages"))
	if !f.Exists() {
		return Error{Pos: Pos{File: path, Line: 1, Col: 1}, Msg: msg + " (write stages: {NAME: {kind: ...}, ...})"}
	}
	if n, ok := f.Source().(*ast.Field); ok {
		if st, ok := n.Value.(*ast.StructLit); ok {
			for _, e := range st.Elts {
				if _, ok := e.(*ast.Comprehension); ok {
					msg += " (its comprehension produced none: is the list it ranges over empty?)"
					break
				}
			}
		}
	}
	return Error{Pos: valuePosOf(raw, "stages", path), Msg: msg}
}

// numberErrs reports the plan's numbers that no Go value holds: an
// integer beyond int64 (9223372036854775808), a number beyond float64
// (1e400) or so small it would become 0 (1e-400). CUE's numbers are
// arbitrary precision, so the schema accepts them; decoding them later
// fails with no position ("value was rounded down"). A number written in
// one field and used in others through a reference is reported where it
// is written. bad receives the stage of every such value, reported or not,
// so that the stage is not decoded again.
func numberErrs(raw cue.Value, path string, bad map[string]bool) []pathError {
	var out []pathError
	walkPlan(raw, true, func(x cue.Value, sels []string) bool {
		if k := x.IncompleteKind(); k == cue.StructKind || k == cue.ListKind {
			return true
		}
		var why string
		switch x.Kind() {
		case cue.IntKind:
			if _, err := x.Int64(); err != nil {
				why = "is beyond the integers benchrun holds (-9223372036854775808 to 9223372036854775807)"
			}
		case cue.FloatKind:
			if _, err := x.Float64(); err != nil {
				why = "is beyond the numbers benchrun holds (magnitudes up to about 1.8e308)"
				if f, _ := x.Float64(); f == 0 {
					why = "is too small to hold: it would be 0 (numbers other than 0 are at least about 5e-324 in magnitude)"
				}
			}
		}
		if why == "" {
			return false
		}
		if len(sels) >= 2 && sels[0] == "stages" {
			bad[sels[1]] = true
		}
		if ref, _ := x.ReferencePath(); ref.Exists() {
			return false // reported where it is written
		}
		p := strings.Join(sels, ".")
		pos := Pos{File: path, Line: 1, Col: 1}
		if rp, _ := rawPos(raw, p, path); rp.Line > 0 {
			pos = rp
		}
		switch n := x.Source().(type) {
		case *ast.Field:
			if vp := posOf(n.Value.Pos()); vp.Line > 0 {
				pos = fixPos(vp, path)
			}
		case ast.Expr:
			if vp := posOf(n.Pos()); vp.Line > 0 {
				pos = fixPos(vp, path)
			}
		}
		out = append(out, pathError{Error: Error{Pos: pos, Msg: fmt.Sprintf("%s: %s %s", p, numberText(x), why)}, path: p, all: []Pos{pos}})
		return false
	})
	return out
}

// numberText is a number as the plan writes it (CUE prints 1e400 as 1E+400).
func numberText(x cue.Value) string {
	if n, ok := x.Source().(*ast.BasicLit); ok {
		return n.Value
	}
	if f, ok := x.Source().(*ast.Field); ok {
		if n, ok := f.Value.(*ast.BasicLit); ok {
			return n.Value
		}
	}
	return fmt.Sprint(x)
}

// defaultSpan is where a default (`*value`) is written in benchrun's own
// schema.
type defaultSpan struct {
	file       string
	start, end token.Pos
}

// defaultSpans lists the defaults of the embedded schema files.
func defaultSpans(opts Options) []defaultSpan {
	var out []defaultSpan
	add := func(name, src string) {
		f, err := parser.ParseFile(name, src)
		if err != nil {
			return
		}
		ast.Walk(f, func(n ast.Node) bool {
			if u, ok := n.(*ast.UnaryExpr); ok && u.Op == token.MUL {
				out = append(out, defaultSpan{name, u.Pos(), u.End()})
			}
			return true
		}, nil)
	}
	add("schema/plan.cue", planSchema)
	for _, k := range opts.Kinds {
		add("schema/"+k.Kind+".cue", k.Source)
	}
	for _, k := range opts.Sinks {
		add("schema/sink-"+k.Kind+".cue", k.Source)
	}
	return out
}

// inDefault reports whether p lies inside one of the schema's defaults.
func inDefault(p Pos, spans []defaultSpan) bool {
	for _, s := range spans {
		if s.file != p.File {
			continue
		}
		after := p.Line > s.start.Line() || p.Line == s.start.Line() && p.Col >= s.start.Column()
		before := p.Line < s.end.Line() || p.Line == s.end.Line() && p.Col < s.end.Column()
		if after && before {
			return true
		}
	}
	return false
}

// dropDefaultConflicts removes the errors a plan's value gets from a
// schema default it replaces: `cells: [{isl: 8, osl: 0}]` fails both
// alternatives of `[...#Cell] | *[{isl: 128, osl: 128}, ...]`, and CUE
// reports "isl: conflicting values 128 and 8" from the default beside the
// real problem (osl: 0). A value that replaces a default never has to
// equal it, so such a conflict is never the problem while another error
// remains.
func dropDefaultConflicts(errs []pathError, spans []defaultSpan) []pathError {
	fromDefault := func(e pathError) bool {
		if !strings.Contains(e.Msg, ": conflicting values ") {
			return false
		}
		for _, p := range e.all {
			if inSchema(p) && inDefault(p, spans) {
				return true
			}
		}
		return false
	}
	paths := map[string]int{}
	for _, e := range errs {
		paths[e.path]++
	}
	var kept []pathError
	for _, e := range errs {
		// Beside other errors at the same path (an enum's alternatives,
		// the default among them), the conflict is part of what collapse
		// says ("want a | b | c"); alone at its path, it is noise.
		if fromDefault(e) && paths[e.path] == 1 {
			continue
		}
		kept = append(kept, e)
	}
	if len(kept) == 0 {
		return errs
	}
	return kept
}

// stagesDecoded reports whether the plan's stages field is a struct (an
// empty one included): a list or another value is the schema's error.
func stagesDecoded(v cue.Value) bool {
	st := v.LookupPath(cue.ParsePath("stages"))
	_, err := st.Fields()
	return err == nil
}
