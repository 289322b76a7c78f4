package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/benchrun/benchrun/internal/results"
	"github.com/benchrun/benchrun/pipeline"
	"github.com/benchrun/benchrun/schema"
)

// writeList is `benchrun list`: it prints every stage kind and sink kind
// with its one-line doc and its fields, from the registry and the CUE
// schema (nothing hand-written).
func writeList(_ context.Context, _ []string, stdout, _ io.Writer) error {
	reg := registry()
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "stage kinds:")
	for _, k := range reg.Kinds() {
		doc, err := schema.Describe(reg.Schemas(), reg.SinkSchemas(), k.Schema.Def)
		if err != nil {
			return err
		}
		note := ""
		if k.Measuring {
			note = " (measuring)"
		}
		fmt.Fprintf(tw, "  %s\t%s%s\n", k.Name, k.Doc, note)
		fmt.Fprintf(tw, "  \tfields: %s\n", strings.Join(ownFields(doc), ", "))
	}
	// Sinks: the default ones are part of every run.
	fmt.Fprintln(tw, "sink kinds (plan `sinks`; * = part of every run, + = when its doc says):")
	for _, k := range reg.Sinks() {
		mark := " "
		if k.Default {
			mark = "*"
		} else if k.DefaultWhen != nil {
			mark = "+" // part of every run under a condition its doc names
		}
		fmt.Fprintf(tw, "  %s %s\t%s\n", mark, k.Name, k.Doc)
		if doc, err := schema.Describe(reg.Schemas(), reg.SinkSchemas(), k.Schema.Def); err == nil {
			if f := ownFields(doc); len(f) > 0 {
				fmt.Fprintf(tw, "  \tfields: %s\n", strings.Join(f, ", "))
			}
		}
	}
	if err := tw.Flush(); err != nil {
		return exitWith(pipeline.ExitInfra)
	}
	stageBase, err := commonFields(reg, "#StageBase")
	if err != nil {
		return err
	}
	sinkBase, err := commonFields(reg, "#SinkBase")
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "\nevery stage also takes: %s (`benchrun schema`)\n", strings.Join(stageBase, ", "))
	fmt.Fprintf(stdout, "every sink also takes: %s (`benchrun schema`)\n", strings.Join(sinkBase, ", "))
	return nil
}

// commonFields lists the fields of a base definition every kind embeds
// (#StageBase, #SinkBase) but kind, which each kind sets, in the schema's
// order: what "also takes" says, from the schema rather than by hand.
func commonFields(reg *pipeline.Registry, def string) ([]string, error) {
	d, err := schema.Describe(reg.Schemas(), reg.SinkSchemas(), def)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, f := range d.Fields {
		if f.Name != "kind" {
			out = append(out, f.Name)
		}
	}
	return out, nil
}

// ownFields lists a kind's fields without the common ones, "?" marking
// the optional ones.
func ownFields(d schema.DefDoc) []string {
	var out []string
	for _, f := range d.Fields {
		if f.Common || f.Name == "kind" {
			continue
		}
		name := f.Name
		if f.Optional {
			name += "?"
		}
		out = append(out, name)
	}
	return out
}

// writeSchema is `benchrun schema`: it prints one kind's fields (type,
// default, doc), the envelope with the fields every stage shares (no
// argument), or the row columns assertions can read (`benchrun schema
// columns`).
func writeSchema(_ context.Context, args []string, stdout, _ io.Writer) error {
	reg := registry()
	kinds, sinks := reg.Schemas(), reg.SinkSchemas()
	what := "plan"
	if len(args) == 1 {
		what = args[0]
	}
	switch what {
	case "plan":
		for _, def := range []string{"#Plan", "#StageBase", "#SinkBase"} {
			d, err := schema.Describe(kinds, sinks, def)
			if err != nil {
				return err
			}
			title := "plan (the envelope of every plan file)"
			switch def {
			case "#StageBase":
				title = "\nfields every stage takes"
			case "#SinkBase":
				title = "\nfields every sink takes (an entry of `sinks`)"
			}
			fmt.Fprintln(stdout, title)
			writeFields(stdout, d, true)
		}
		return nil
	case "columns":
		return exitWith(writeColumns(stdout))
	}
	if k, ok := reg.Kind(what); ok {
		d, err := schema.Describe(kinds, sinks, k.Schema.Def)
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "%s: %s\n", k.Name, k.Doc)
		if k.Measuring {
			fmt.Fprintln(stdout, "measuring: locks \"gpu\" unless resources names locks; retry is refused")
		}
		if d.Doc != "" {
			fmt.Fprintln(stdout, wrap(d.Doc, 88))
		}
		fmt.Fprintln(stdout)
		writeFields(stdout, d, false)
		common, err := commonFields(reg, "#StageBase")
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "\nplus the fields every stage takes: %s (`benchrun schema`)\n", strings.Join(common, ", "))
		return nil
	}
	if k, ok := reg.Sink(what); ok {
		d, err := schema.Describe(kinds, sinks, k.Schema.Def)
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "sink %s: %s\n\n", k.Name, k.Doc)
		writeFields(stdout, d, true)
		return nil
	}
	var names []string
	for _, k := range reg.Kinds() {
		names = append(names, k.Name)
	}
	for _, k := range reg.Sinks() {
		names = append(names, k.Name)
	}
	return failf(pipeline.ExitInvalid, "unknown kind %q (known: %s; also plan, columns)", what, strings.Join(names, ", "))
}

// writeFields lists a kind's fields in a table; a type or default too long
// for its column (a nested struct, a long list) is written whole below
// the table, under the field's name, never cut.
func writeFields(w io.Writer, d schema.DefDoc, withCommon bool) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "  FIELD\tTYPE\tDEFAULT\tDOC")
	var whole []string
	for _, f := range d.Fields {
		if f.Common && !withCommon {
			continue
		}
		name := f.Name
		if f.Optional {
			name += "?"
		}
		typ, def := f.Type, f.Default
		if len(typ) > 48 || len(def) > 40 {
			whole = append(whole, fmt.Sprintf("  %s\n    type:    %s", name, typ))
			if def != "" {
				whole[len(whole)-1] += "\n    default: " + def
			}
			if len(typ) > 48 {
				typ = "(below)"
			}
			if len(def) > 40 {
				def = "(below)"
			}
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\n", name, typ, def, f.Doc)
	}
	tw.Flush()
	if len(whole) > 0 {
		fmt.Fprintf(w, "\n  in full:\n%s\n", strings.Join(whole, "\n"))
	}
}

// better is a column's direction as `schema columns` shows it.
func better(d results.Direction) string {
	if d == results.LowerBetter || d == results.HigherBetter {
		return d.Arrow() + " " + d.String()
	}
	return "–"
}

// writeColumns lists the cell-row columns assertions and `when` read,
// with their unit and direction (the results catalogue's).
func writeColumns(w io.Writer) int {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "cell row columns (assertions read these; see docs/RESULTS.md):")
	for _, c := range results.Columns() {
		if c.Expr == "" {
			continue
		}
		typ := c.Type.String()
		if c.Nullable {
			// A metric that can be not measured: null in every output,
			// and an assertion reading it is an error verdict.
			typ = c.Type.Elem().String() + " or null"
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\n", c.Expr, typ, c.Unit, better(c.Better))
	}
	fmt.Fprintln(tw, "null: not measured (an assertion that reads a null is an error, unless it tests `x == nil` or `x ?? d` itself)")
	tw.Flush()
	return pipeline.ExitOK
}

func wrap(s string, width int) string {
	var b strings.Builder
	n := 0
	for _, word := range strings.Fields(s) {
		if n > 0 && n+1+len(word) > width {
			b.WriteByte('\n')
			n = 0
		} else if n > 0 {
			b.WriteByte(' ')
			n++
		}
		b.WriteString(word)
		n += len(word)
	}
	return b.String()
}
