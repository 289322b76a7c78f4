package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/benchrun/benchrun/internal/rundir"
	"github.com/benchrun/benchrun/pipeline"
	"github.com/benchrun/benchrun/pipeline/engine"
	"github.com/benchrun/benchrun/schema"
)

// applyMetadata adds --metadata key=value stamps to the plan's metadata.
func applyMetadata(p *schema.Plan, kvs []string) error {
	for _, kv := range kvs {
		k, v, ok := strings.Cut(kv, "=")
		k = strings.TrimSpace(k)
		if !ok || k == "" {
			return fmt.Errorf("%q is not key=value (example: --metadata gpu=h100)", kv)
		}
		// Every row and every file carries it: text a Parquet reader
		// refuses (not UTF-8) or a terminal obeys would spoil them all.
		if !utf8.ValidString(kv) {
			return fmt.Errorf("--metadata %q is not valid UTF-8 (convert it, e.g. with iconv -f latin1 -t utf-8)", kv)
		}
		if strings.ContainsFunc(kv, unicode.IsControl) {
			return fmt.Errorf("--metadata %q holds a control character (a newline, an escape); give one line of text", kv)
		}
		if p.Metadata == nil {
			p.Metadata = map[string]string{}
		}
		p.Metadata[k] = v
	}
	return nil
}

// reportFlags declares `benchrun report`'s flags: it regenerates a run's
// report.md, report.html, charts and result.json from its Parquet files
// and manifest.json: after a run that was killed, or after benchrun
// learned a better report.
func reportFlags(fs *flag.FlagSet) runFunc {
	output := fs.String("output", "", "also write PREFIX.md, PREFIX.html and PREFIX.json")
	return func(_ context.Context, pos []string, stdout, stderr io.Writer) error {
		dir := pos[0]
		run, err := rundir.Open(dir)
		if err != nil {
			return fail(pipeline.ExitInvalid, err)
		}
		// A writer holding the run directory is still at it; with none, the
		// temporary files a killed one left go, and a run whose manifest still
		// says running crashed.
		state, err := rundir.Inspect(dir)
		if err != nil {
			return fail(pipeline.ExitInvalid, err)
		}
		switch {
		case state.Live:
			fmt.Fprintf(stderr, "benchrun report: the run is still being written (%s): the report shows it as it stands\n", state.Holder)
		case run.Status == pipeline.RunCrashed:
			fmt.Fprintln(stderr, "benchrun report: the run crashed: its manifest still says running and no benchrun holds the run directory")
		}
		if n := len(state.Removed); n > 0 {
			fmt.Fprintf(stderr, "benchrun report: removed %d temporary files a killed writer left (%s)\n", n, strings.Join(state.Removed, ", "))
		}
		var params map[string]any
		if *output != "" {
			params = map[string]any{"prefix": *output}
		}
		uses, err := engine.ReplaySinks(registry(), dir, params)
		if err != nil {
			return fail(pipeline.ExitInvalid, err)
		}
		// A replay: the run's sinks (but the Parquet tables they read from)
		// write their files again from the stored rows, as they did live.
		sum, err := engine.Replay(dir, uses, run.Status, stderr)
		if err != nil {
			return fail(pipeline.ExitInfra, err)
		}
		var names []string
		for _, u := range uses {
			names = append(names, u.Name())
		}
		fmt.Fprintf(stderr, "benchrun report: %d cells replayed into %s: %s, %s\n", sum.Cells, strings.Join(names, ", "),
			filepath.Join(dir, "report.html"), filepath.Join(dir, "report.md"))
		fmt.Fprintln(stdout, filepath.Join(dir, "report.html"))
		return nil
	}
}
