package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/benchrun/benchrun/internal/rundir"
	"github.com/benchrun/benchrun/pipeline"
)

const compactUsage = `usage: benchrun compact RUNS_OR_RUN_DIR... [--dry-run]

Rewrites the many small Parquet part files of each run under the folders
(one per finished cell and table) into one part file per table, so that
queries over many runs open few files. Every query reads the same rows
before and after; a reader never sees both sets nor neither (the new table
folder is swapped in with one rename). Runs being written (locked), runs
whose manifest says running (crashed: resume them first) and tables of
another schema version are skipped; compacting again changes nothing. One
line per run: "compacted N parts into M" or "skipped: WHY".
Exit 0 when every run was compacted or skipped, 2 on bad arguments, 3 when
a run could not be compacted (an I/O error: compact again to finish it).
`

// compactFlags declares `benchrun compact`'s flags.
func compactFlags(fs *flag.FlagSet) runFunc {
	dryRun := fs.Bool("dry-run", false, "say what would be compacted, and change nothing")
	return func(_ context.Context, pos []string, stdout, stderr io.Writer) error {
		var runs []rundir.Entry
		for _, root := range pos {
			found, err := rundir.Find(root, rundir.Filter{})
			if err != nil {
				return fail(pipeline.ExitInvalid, err)
			}
			if len(found) == 0 {
				return failf(pipeline.ExitInvalid, "no runs under %s", root)
			}
			runs = append(runs, found...)
		}
		code := pipeline.ExitOK
		for _, e := range runs {
			res, err := rundir.Compact(e.Dir, rundir.CompactOptions{DryRun: *dryRun})
			if err != nil {
				fmt.Fprintf(stderr, "benchrun compact: %s: %v\n", e.Dir, err)
				code = pipeline.ExitInfra
				continue
			}
			fmt.Fprintf(stdout, "%s: %s\n", e.Dir, compactSummary(res, *dryRun))
		}
		return exitWith(code)
	}
}

// compactSummary says in one line what Compact did with a run: how many
// parts it rewrote into how many, or why it left the run alone, with why
// it left any table alone for another reason than its being compact.
func compactSummary(res rundir.CompactResult, dryRun bool) string {
	if res.Skipped != "" {
		return "skipped: " + res.Skipped
	}
	parts, into := 0, 0
	var skipped []string
	for _, t := range res.Tables {
		switch {
		case t.Into != "":
			parts += t.Parts
			into++
		case t.Skipped != rundir.AlreadyCompact:
			skipped = append(skipped, t.Table+": "+t.Skipped)
		}
	}
	var b strings.Builder
	switch {
	case into > 0 && dryRun:
		fmt.Fprintf(&b, "would compact %d parts into %d", parts, into)
	case into > 0:
		fmt.Fprintf(&b, "compacted %d parts into %d", parts, into)
	case len(skipped) > 0:
		b.WriteString("skipped")
	default:
		b.WriteString("skipped: " + rundir.AlreadyCompact)
	}
	for i, s := range skipped {
		if i == 0 && into == 0 {
			b.WriteString(": ")
		} else {
			b.WriteString("; ")
		}
		b.WriteString(s)
	}
	b.WriteString(leftoversNote(res))
	return b.String()
}

// leftoversNote says what an interrupted compaction had left that this
// one removed or moved back first ("" when nothing).
func leftoversNote(res rundir.CompactResult) string {
	var did []string
	if len(res.Removed) > 0 {
		did = append(did, "removed "+strings.Join(res.Removed, ", "))
	}
	if len(res.Restored) > 0 {
		did = append(did, "moved back "+strings.Join(res.Restored, ", "))
	}
	if len(did) == 0 {
		return ""
	}
	return " (an interrupted compaction's leftovers first: " + strings.Join(did, "; ") + ")"
}
