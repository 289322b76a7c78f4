package rundir_test

import (
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/benchrun/benchrun/internal/results"
	"github.com/benchrun/benchrun/internal/rundir"
	pqs "github.com/benchrun/benchrun/sinks/parquet"
)

// The fixtures of sinks/parquet: what earlier benchruns wrote.
const (
	skeletonRun = "../../sinks/parquet/testdata/skeleton/plan=quickstart/date=2026-12-01/run=20261201T052532Z-d8734b"
	v1Dir       = "../../sinks/parquet/testdata/v1"
)

func ptr[T any](v T) *T { return &v }

func mkdir(t testing.TB, dir string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
}

func writeFile(t testing.TB, path string, b []byte) {
	t.Helper()
	mkdir(t, filepath.Dir(path))
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// writeManifest writes m as manifest.json, as a writer would (indented).
func writeManifest(t testing.TB, dir string, m *rundir.Manifest) {
	t.Helper()
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(dir, rundir.ManifestFile), b)
}

// writePart writes rows as dir/table/name through the Parquet sink's own
// writer, so the files are what a run writes.
func writePart[T any](t testing.TB, dir, table, name string, rows []T) {
	t.Helper()
	mkdir(t, filepath.Join(dir, table))
	if err := pqs.WriteFile(filepath.Join(dir, table, name), rows); err != nil {
		t.Fatal(err)
	}
}

// manifest is a finished run's manifest with the given status.
func manifest(id, plan string, start time.Time, status string, code int) *rundir.Manifest {
	fin := start.Add(time.Minute)
	m := &rundir.Manifest{
		RunID: id, Plan: plan, PlanFile: "plans/" + plan + ".cue", StartedAt: start, Benchrun: "v0.test", GoVersion: "go1.26",
		Host: rundir.Host{Hostname: "bench-host", OS: "linux", Arch: "amd64", CPUs: 16}, Status: status,
		Stages:   []rundir.StageRecord{{Name: "sweep", Kind: "sweep", Status: "ok", DurationS: 42}},
		Attempts: []rundir.AttemptRecord{{Attempt: 1, StartedAt: start, Status: status, PID: 4242, Hostname: "bench-host"}},
	}
	if status != rundir.RunRunning {
		m.FinishedAt, m.ExitCode = &fin, ptr(code)
		m.Attempts[0].FinishedAt, m.Attempts[0].ExitCode = &fin, ptr(code)
	}
	return m
}

// copyDir copies a fixture run directory to dst.
func copyDir(t testing.TB, src, dst string) string {
	t.Helper()
	if err := os.CopyFS(dst, os.DirFS(src)); err != nil {
		t.Fatal(err)
	}
	return dst
}

// snapshot lists every file under dir with its size and modification
// time, to show that a reader changed nothing.
func snapshot(t testing.TB, dir string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		out = append(out, fmt.Sprintf("%s %s %d %s", rel, info.Mode(), info.Size(), info.ModTime().Format(time.RFC3339Nano)))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(out)
	return out
}

// cellField finds a cell column's field.
func cellField(c *results.Cell, column string) (reflect.Value, error) {
	v := reflect.ValueOf(c).Elem()
	for i := range v.NumField() {
		name, _, _ := strings.Cut(v.Type().Field(i).Tag.Get("parquet"), ",")
		if name == column {
			return v.Field(i), nil
		}
	}
	return reflect.Value{}, fmt.Errorf("no column %s", column)
}

// setMetric sets a nullable column of a cell row to v (a pointer to a
// float or an integer, by the column's type), or to nil when measured is
// false.
func setMetric(c *results.Cell, column string, v int, measured bool) error {
	f, err := cellField(c, column)
	if err != nil {
		return err
	}
	if f.Kind() != reflect.Pointer {
		return fmt.Errorf("column %s is %s, not nullable", column, f.Type())
	}
	if !measured {
		f.SetZero()
		return nil
	}
	p := reflect.New(f.Type().Elem())
	switch p.Elem().Kind() {
	case reflect.Float64, reflect.Float32:
		p.Elem().SetFloat(float64(v) + 0.25*float64(v%2))
	case reflect.Int64, reflect.Int, reflect.Int32:
		p.Elem().SetInt(int64(v))
	default:
		return fmt.Errorf("column %s is %s", column, f.Type())
	}
	f.Set(p)
	return nil
}

// metric reads a nullable column of a cell row as text, nil when null.
func metric(c results.Cell, column string) *string {
	f, err := cellField(&c, column)
	if err != nil || f.IsNil() {
		return nil
	}
	s := fmt.Sprint(f.Elem().Interface())
	return &s
}

func show[T any](p *T) string {
	if p == nil {
		return "nil"
	}
	return fmt.Sprint(*p)
}

// recordEqual compares run records, times by instant.
func recordEqual(a, b results.Run) bool {
	if !a.StartedAt.Equal(b.StartedAt) || (a.FinishedAt == nil) != (b.FinishedAt == nil) || a.FinishedAt != nil && !a.FinishedAt.Equal(*b.FinishedAt) {
		return false
	}
	a.StartedAt, b.StartedAt, a.FinishedAt, b.FinishedAt = time.Time{}, time.Time{}, nil, nil
	return reflect.DeepEqual(a, b)
}
