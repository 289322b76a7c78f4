package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/benchrun/benchrun/internal/results"
	"github.com/benchrun/benchrun/pipeline"
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
		if p.Metadata == nil {
			p.Metadata = map[string]string{}
		}
		p.Metadata[k] = v
	}
	return nil
}

// runReport regenerates a run's report.md, report.html, charts and
// result.json from its Parquet files and manifest.json: after a run that was
// killed, or after benchrun learned a better report.
func runReport(_ context.Context, args []string, stdout, stderr io.Writer) int {
	fset := flag.NewFlagSet("report", flag.ContinueOnError)
	fset.SetOutput(stderr)
	output := fset.String("output", "", "also write PREFIX.md, PREFIX.html and PREFIX.json")
	fset.Usage = func() {
		fmt.Fprintln(stderr, "usage: benchrun report RUN_DIR [--output PREFIX]")
		fset.PrintDefaults()
	}
	var dir string
	var rest []string
	for i := 0; i < len(args); i++ {
		switch a := args[i]; {
		case strings.HasPrefix(a, "-"):
			rest = append(rest, a)
			if !strings.Contains(a, "=") && i+1 < len(args) && a != "-h" && a != "--help" && a != "-help" {
				rest = append(rest, args[i+1])
				i++
			}
		case dir == "":
			dir = a
		default:
			rest = append(rest, a)
		}
	}
	if err := fset.Parse(rest); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return pipeline.ExitOK
		}
		return pipeline.ExitInvalid
	}
	if dir == "" || fset.NArg() > 0 {
		fset.Usage()
		return pipeline.ExitInvalid
	}
	run, err := readRunRecord(dir)
	if err != nil {
		fmt.Fprintln(stderr, "benchrun report:", err)
		return pipeline.ExitInvalid
	}
	// A writer holding the run directory is still at it; with none, the
	// temporary files a killed one left go, and a run whose manifest still
	// says running crashed.
	state, _ := pipeline.InspectRunDir(dir)
	switch {
	case state.Live:
		fmt.Fprintf(stderr, "benchrun report: the run is still being written (%s): the report shows it as it stands\n", state.Holder)
	case run.Status == pipeline.RunRunning:
		run.Status = pipeline.RunCrashed
		fmt.Fprintln(stderr, "benchrun report: the run crashed: its manifest still says running and no benchrun holds the run directory")
	}
	if n := len(state.Removed); n > 0 {
		fmt.Fprintf(stderr, "benchrun report: removed %d temporary files a killed writer left (%s)\n", n, strings.Join(state.Removed, ", "))
	}
	var params map[string]any
	if *output != "" {
		params = map[string]any{"prefix": *output}
	}
	reg := registry()
	uses, err := pipeline.ReplaySinks(reg, dir, params)
	if err != nil {
		fmt.Fprintln(stderr, "benchrun report:", err)
		return pipeline.ExitInvalid
	}
	// A replay: the run's sinks (but the Parquet tables they read from)
	// write their files again from the stored rows, as they did live.
	sum, err := pipeline.Replay(dir, uses, run.Status, stderr)
	if err != nil {
		fmt.Fprintln(stderr, "benchrun report:", err)
		return pipeline.ExitInfra
	}
	var names []string
	for _, u := range uses {
		names = append(names, u.Name())
	}
	fmt.Fprintf(stderr, "benchrun report: %d cells replayed into %s: %s, %s\n", sum.Cells, strings.Join(names, ", "),
		filepath.Join(dir, "report.html"), filepath.Join(dir, "report.md"))
	fmt.Fprintln(stdout, filepath.Join(dir, "report.html"))
	return pipeline.ExitOK
}

// readRunRecord reads what manifest.json (and plan.json) say about a run.
func readRunRecord(dir string) (results.Run, error) {
	var run results.Run
	if st, err := os.Stat(dir); err == nil && !st.IsDir() {
		return run, fmt.Errorf("%s is a file, not a run directory; give one like runs/plan=NAME/date=YYYY-MM-DD/run=ID", dir)
	}
	b, err := os.ReadFile(filepath.Join(dir, "manifest.json"))
	if errors.Is(err, fs.ErrNotExist) {
		if _, cerr := os.Stat(filepath.Join(dir, results.TableCells)); cerr != nil {
			return run, fmt.Errorf("%s is not a run directory (it has neither manifest.json nor cells/); give one like runs/plan=NAME/date=YYYY-MM-DD/run=ID%s", dir, runsBelow(dir))
		}
		run.Status = "incomplete"
		return run, nil
	}
	if err != nil {
		return run, fmt.Errorf("reading manifest: %w", err)
	}
	var m pipeline.Manifest
	if err := json.Unmarshal(b, &m); err != nil {
		return run, fmt.Errorf("%s: %w", filepath.Join(dir, "manifest.json"), err)
	}
	run = results.Run{
		RunID: m.RunID, Plan: m.Plan, StartedAt: m.StartedAt, FinishedAt: m.FinishedAt, Status: m.Status, ExitCode: m.ExitCode,
		Metadata: m.Metadata, Tags: m.Tags, Hostname: m.Host.Hostname, BenchrunVersion: m.Benchrun,
	}
	for _, s := range m.Stages {
		run.Stages = append(run.Stages, results.StageOutcome{Name: s.Name, Kind: s.Kind, Status: s.Status, Reason: s.Reason, DurationS: s.DurationS})
	}
	var plan struct {
		Description string `json:"description"`
		Model       struct {
			Name string `json:"name"`
		} `json:"model"`
	}
	if pb, err := os.ReadFile(filepath.Join(dir, "plan.json")); err == nil && json.Unmarshal(pb, &plan) == nil {
		run.Description, run.Model = plan.Description, plan.Model.Name
	}
	return run, nil
}

// runsBelow names the newest run directory under dir, for a user who gave
// the runs folder or a plan's folder instead of one run ("" when none).
func runsBelow(dir string) string {
	var found []string
	for _, pat := range []string{"run=*", "*/run=*", "*/*/run=*"} {
		m, _ := filepath.Glob(filepath.Join(dir, pat))
		found = append(found, m...)
	}
	if len(found) == 0 {
		return ""
	}
	// Dates and run ids both start with the UTC time, so the newest run
	// sorts last by its date and run keys, whatever plan it belongs to.
	newest := slices.MaxFunc(found, func(a, b string) int {
		return strings.Compare(filepath.Base(filepath.Dir(a))+filepath.Base(a), filepath.Base(filepath.Dir(b))+filepath.Base(b))
	})
	if len(found) == 1 {
		return fmt.Sprintf(" (one is under it: %s)", newest)
	}
	return fmt.Sprintf(" (%d run directories are under it; the newest is %s)", len(found), newest)
}
