package rundir_test

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/benchrun/benchrun/internal/results"
	"github.com/benchrun/benchrun/internal/rundir"
)

// findRoot builds a folder of runs folders: top/runs (two plans, every
// status a reader can find) and top/other/runs (a third plan).
func findRoot(t *testing.T) string {
	top := t.TempDir()
	add := func(runs, plan, id, status string, code int) string {
		start, err := time.Parse("20060102T150405Z", strings.SplitN(id, "-", 2)[0])
		if err != nil {
			t.Fatal(err)
		}
		dir := filepath.Join(top, runs, "plan="+plan, "date="+start.Format(time.DateOnly), "run="+id)
		mkdir(t, dir)
		if status != "" {
			writeManifest(t, dir, manifest(id, plan, start, status, code))
		}
		return dir
	}
	add("runs", "a", "20261101T080000Z-000001", rundir.RunOK, 0)
	add("runs", "a", "20261102T080000Z-000002", rundir.RunFailed, 1)
	killed := add("runs", "b", "20261101T090000Z-000003", rundir.RunRunning, 0)
	writeFile(t, filepath.Join(killed, rundir.LockFile), []byte(`{"pid":999999,"hostname":"gone"}`))
	late := add("runs", "b", "20261130T235959Z-000004", rundir.RunOK, 0)
	// Find reads manifests only: a broken part file is no concern of it.
	writeFile(t, filepath.Join(late, "cells", "part-001-00001.parquet"), []byte("not parquet"))
	early := add("runs", "a", "20261201T000000Z-000005", "", 0) // killed before its manifest
	writePart(t, early, results.TableCells, "part-001-00001.parquet", []results.Cell{okCell("sweep/a", 1)})
	broken := add("runs", "b", "20261202T000000Z-000006", "", 0)
	writeFile(t, filepath.Join(broken, "manifest.json"), []byte("{not json"))
	add(filepath.Join("other", "runs"), "c", "20261115T120000Z-000007", rundir.RunInterrupted, 130)
	// Neither runs nor folders of runs: left alone.
	writeFile(t, filepath.Join(top, "runs", "README.md"), []byte("runs"))
	mkdir(t, filepath.Join(top, "runs", ".cache", "plan=a", "date=2026-11-01", "run=hidden"))
	return top
}

func ids(es []rundir.Entry) []string {
	var out []string
	for _, e := range es {
		out = append(out, e.RunID[len(e.RunID)-1:])
	}
	return out
}

func mustTime(t *testing.T, parse func(string) (time.Time, error), s string) time.Time {
	t.Helper()
	v, err := parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// Find lists the runs under a folder, oldest first, by plan, by start
// time (a day inclusively), by status, from any level of the layout.
func TestFind(t *testing.T) {
	top := findRoot(t)
	runs := filepath.Join(top, "runs")
	cases := []struct {
		name string
		root string
		f    rundir.Filter
		want []string // the last digit of each run id, in order
	}{
		{"a folder of runs folders", top, rundir.Filter{}, []string{"1", "3", "2", "7", "4", "5", "6"}},
		{"a runs folder", runs, rundir.Filter{}, []string{"1", "3", "2", "4", "5", "6"}},
		{"a plan's folder", filepath.Join(runs, "plan=b"), rundir.Filter{}, []string{"3", "4", "6"}},
		{"a date's folder", filepath.Join(runs, "plan=a", "date=2026-11-02"), rundir.Filter{}, []string{"2"}},
		{"a run directory", filepath.Join(runs, "plan=a", "date=2026-11-01", "run=20261101T080000Z-000001"), rundir.Filter{}, []string{"1"}},
		{"by plan", top, rundir.Filter{Plan: "a"}, []string{"1", "2", "5"}},
		{"by plan, nested", top, rundir.Filter{Plan: "c"}, []string{"7"}},
		{"by plan, none", top, rundir.Filter{Plan: "zzz"}, nil},
		{"November, days inclusive", top, rundir.Filter{From: mustTime(t, rundir.ParseFrom, "2026-11-01"), To: mustTime(t, rundir.ParseTo, "2026-11-30")}, []string{"1", "3", "2", "7", "4"}},
		{"one day", top, rundir.Filter{From: mustTime(t, rundir.ParseFrom, "2026-11-01"), To: mustTime(t, rundir.ParseTo, "2026-11-01")}, []string{"1", "3"}},
		{"from an instant", top, rundir.Filter{From: mustTime(t, rundir.ParseFrom, "2026-11-01T08:30:00Z")}, []string{"3", "2", "7", "4", "5", "6"}},
		{"to an instant with an offset", top, rundir.Filter{To: mustTime(t, rundir.ParseTo, "2026-11-01T10:00:00+01:00")}, []string{"1", "3"}},
		{"from December", top, rundir.Filter{From: mustTime(t, rundir.ParseFrom, "2026-12-01")}, []string{"5", "6"}},
		{"crashed", top, rundir.Filter{Status: []string{rundir.RunCrashed}}, []string{"3"}},
		{"incomplete", top, rundir.Filter{Status: []string{rundir.RunIncomplete}}, []string{"5", "6"}},
		{"ok or failed of plan a", top, rundir.Filter{Plan: "a", Status: []string{rundir.RunOK, rundir.RunFailed}}, []string{"1", "2"}},
		{"plan b in November, ok", runs, rundir.Filter{Plan: "b", From: mustTime(t, rundir.ParseFrom, "2026-11-01"), To: mustTime(t, rundir.ParseTo, "2026-11-30"), Status: []string{rundir.RunOK}}, []string{"4"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := rundir.Find(tc.root, tc.f)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(ids(got), tc.want) {
				t.Errorf("Find = %v, want %v", ids(got), tc.want)
			}
		})
	}
}

// An entry says what the manifest says; a run without a readable one is
// still listed, incomplete, with its start from its id and, when its
// manifest is broken, why.
func TestFindEntries(t *testing.T) {
	top := findRoot(t)
	es, err := rundir.Find(top, rundir.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	by := map[string]rundir.Entry{}
	for _, e := range es {
		by[e.RunID[len(e.RunID)-1:]] = e
	}
	if e := by["2"]; e.Plan != "a" || e.Status != rundir.RunFailed || e.ExitCode == nil || *e.ExitCode != 1 || e.FinishedAt == nil || e.Attempts != 1 ||
		!e.StartedAt.Equal(time.Date(2026, 11, 2, 8, 0, 0, 0, time.UTC)) || e.Err != nil || !strings.HasSuffix(e.Dir, "run=20261102T080000Z-000002") {
		t.Errorf("entry of a failed run: %+v", e)
	}
	if e := by["3"]; e.Status != rundir.RunCrashed || e.ExitCode != nil || e.FinishedAt != nil {
		t.Errorf("entry of a killed run: %+v", e)
	}
	if e := by["5"]; e.Status != rundir.RunIncomplete || e.Err != nil || e.Plan != "a" || !e.StartedAt.Equal(time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)) {
		t.Errorf("entry of a run without its manifest: %+v", e)
	}
	if e := by["6"]; e.Status != rundir.RunIncomplete || e.Err == nil || !strings.Contains(e.Err.Error(), "manifest.json") || e.Plan != "b" {
		t.Errorf("entry of a run with a broken manifest: %+v", e)
	}
}

// A manifest written before attempts were recorded counts one attempt per
// start (Manifest.AttemptRecords), as the skeleton's does.
func TestFindCountsAttemptsOfOldManifests(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "run=old")
	m := manifest("old", "p", t0, rundir.RunOK, 0)
	m.Attempts, m.ResumedAt = nil, []time.Time{t0.Add(time.Hour), t0.Add(2 * time.Hour)}
	writeManifest(t, dir, m)
	copyDir(t, skeletonRun, filepath.Join(root, "run=skeleton"))
	es, err := rundir.Find(root, rundir.Filter{})
	if err != nil || len(es) != 2 {
		t.Fatalf("Find: %+v, %v", es, err)
	}
	for _, e := range es {
		r, err := rundir.Open(e.Dir)
		if err != nil {
			t.Fatal(err)
		}
		if want := len(r.Manifest.AttemptRecords()); e.Attempts != want || e.Status != r.Status || !e.StartedAt.Equal(r.Manifest.StartedAt) {
			t.Errorf("%s: entry says %d attempts, %s, %v; Open says %d, %s, %v", e.RunID, e.Attempts, e.Status, e.StartedAt, want, r.Status, r.Manifest.StartedAt)
		}
	}
	if es[0].RunID != "old" || es[0].Attempts != 3 || es[1].Attempts != 1 {
		t.Errorf("attempts %d and %d, want 3 (two resumes) and 1", es[0].Attempts, es[1].Attempts)
	}
}

func TestFindRefusesWhatIsNoFolder(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "f"), []byte("x"))
	for _, root := range []string{filepath.Join(dir, "f"), filepath.Join(dir, "nowhere")} {
		if es, err := rundir.Find(root, rundir.Filter{}); err == nil || !strings.Contains(err.Error(), root) {
			t.Errorf("Find(%s) = %v, %v; want an error naming it", root, es, err)
		}
	}
}

func TestParseBounds(t *testing.T) {
	for _, tc := range []struct {
		s        string
		from, to string // RFC3339Nano, UTC; "" for an error
	}{
		{"2026-11-01", "2026-11-01T00:00:00Z", "2026-11-01T23:59:59.999999999Z"},
		{" 2026-02-28 ", "2026-02-28T00:00:00Z", "2026-02-28T23:59:59.999999999Z"},
		{"2026-11-01T08:30:00Z", "2026-11-01T08:30:00Z", "2026-11-01T08:30:00Z"},
		{"2026-11-01T08:30:00+02:00", "2026-11-01T06:30:00Z", "2026-11-01T06:30:00Z"},
		{"2026-11-01T08:30:00.5Z", "2026-11-01T08:30:00.5Z", "2026-11-01T08:30:00.5Z"},
		{"yesterday", "", ""},
		{"2026-13-01", "", ""},
		{"", "", ""},
	} {
		from, ferr := rundir.ParseFrom(tc.s)
		to, terr := rundir.ParseTo(tc.s)
		if tc.from == "" {
			if ferr == nil || terr == nil || !strings.Contains(ferr.Error(), "YYYY-MM-DD") {
				t.Errorf("%q: %v, %v; want errors saying what to give", tc.s, ferr, terr)
			}
			continue
		}
		if ferr != nil || terr != nil {
			t.Errorf("%q: %v, %v", tc.s, ferr, terr)
			continue
		}
		if got := from.UTC().Format(time.RFC3339Nano); got != tc.from {
			t.Errorf("ParseFrom(%q) = %s, want %s", tc.s, got, tc.from)
		}
		if got := to.UTC().Format(time.RFC3339Nano); got != tc.to {
			t.Errorf("ParseTo(%q) = %s, want %s", tc.s, got, tc.to)
		}
	}
}

// BenchmarkFind lists 1,000 runs (5 plans × 20 days × 10 runs), each
// with a realistic manifest and a cells table Find must not read.
func BenchmarkFind(b *testing.B) {
	root := b.TempDir()
	n := 0
	for p := range 5 {
		for d := range 20 {
			day := time.Date(2026, 11, 1+d, 0, 0, 0, 0, time.UTC)
			for r := range 10 {
				start := day.Add(time.Duration(r) * time.Hour)
				id := fmt.Sprintf("%s-%06x", start.Format("20060102T150405Z"), n)
				dir := filepath.Join(root, fmt.Sprintf("plan=p%d", p), "date="+day.Format(time.DateOnly), "run="+id)
				m := manifest(id, fmt.Sprintf("p%d", p), start, rundir.RunOK, 0)
				m.Metadata = map[string]string{"quant": "Q4_K_M", "gpu": "h200"}
				for s := range 5 {
					m.Stages = append(m.Stages, rundir.StageRecord{Name: fmt.Sprintf("stage%d", s), Kind: "sweep", Status: "ok", DurationS: 12.5})
				}
				writeManifest(b, dir, m)
				writeFile(b, filepath.Join(dir, "cells", "part-001-00001.parquet"), []byte("not read"))
				n++
			}
		}
	}
	if err := os.WriteFile(filepath.Join(root, "README"), nil, 0o644); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for b.Loop() {
		es, err := rundir.Find(root, rundir.Filter{})
		if err != nil || len(es) != 1000 {
			b.Fatalf("Find: %d entries, %v", len(es), err)
		}
	}
}
