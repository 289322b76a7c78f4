package pipeline

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	pq "github.com/parquet-go/parquet-go"

	"github.com/benchrun/benchrun/schema"
)

// ResumeRunInfo continues the run in dir (--resume RUN_DIR): the run keeps
// its id and directory, new rows are written beside the old ones, and
// every cell already finished with status ok is reported by Env.CellDone,
// so measuring stages skip it. The directory must hold a run of the same
// plan (manifest.json names it).
func ResumeRunInfo(dir string, p *schema.Plan, tags []string, now time.Time) (*RunInfo, error) {
	b, err := os.ReadFile(filepath.Join(dir, "manifest.json"))
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("--resume %s: not a run directory (no manifest.json)", dir)
		}
		return nil, fmt.Errorf("--resume %s: %w", dir, err)
	}
	var m Manifest
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("--resume %s: manifest.json: %w", dir, err)
	}
	if m.Plan != p.Name {
		return nil, fmt.Errorf("--resume %s: the run is of plan %q, not %q", dir, m.Plan, p.Name)
	}
	// Cell ids name the cell, not the configuration: resuming with other
	// -t values (another model file, say) would skip cells measured on a
	// different configuration and mix the two in one run.
	if was, now := normTags(m.Tags), normTags(tags); was != now {
		return nil, fmt.Errorf("--resume %s: the run was made with %s but this resume gives %s: resuming would mix two configurations in one run (give the same -t values, or start a new run)", dir, was, now)
	}
	done, err := DoneCells(dir)
	if err != nil {
		return nil, fmt.Errorf("--resume %s: %w", dir, err)
	}
	id := m.RunID
	if id == "" {
		id = strings.TrimPrefix(filepath.Base(dir), "run=")
	}
	ri := &RunInfo{ID: id, Plan: p, Dir: dir, StartedAt: now, Tags: tags, Resumed: true, doneCells: done}
	// Keep the plan as first written; record this attempt's resolution beside it.
	resolved, err := p.JSON()
	if err != nil {
		return nil, err
	}
	if old, err := os.ReadFile(filepath.Join(dir, "plan.json")); err == nil && string(old) != string(resolved) {
		if err := WriteFileAtomic(filepath.Join(dir, "plan.resumed.json"), resolved); err != nil {
			return nil, err
		}
	}
	return ri, nil
}

// DoneCells reads the cell rows of a run directory (cells/*.parquet) and
// returns the ids of the cells that finished with status ok. Error and
// skipped rows are not done: resuming runs them again.
func DoneCells(dir string) (map[string]bool, error) {
	files, err := filepath.Glob(filepath.Join(dir, "cells", "*.parquet"))
	if err != nil {
		return nil, err
	}
	sort.Strings(files)
	type cellStatus struct {
		CellID string `parquet:"cell_id"`
		Status string `parquet:"status"`
	}
	done := map[string]bool{}
	for _, f := range files {
		rows, err := pq.ReadFile[cellStatus](f)
		if err != nil {
			return nil, fmt.Errorf("reading %s: %w", f, err)
		}
		for _, r := range rows {
			if r.Status == "ok" && r.CellID != "" {
				done[r.CellID] = true
			}
		}
	}
	return done, nil
}

// normTags renders -t values for comparison and messages: sorted, without
// repeats, "no -t values" when there are none.
func normTags(tags []string) string {
	t := slices.Clone(tags)
	sort.Strings(t)
	t = slices.Compact(t)
	if len(t) == 0 {
		return "no -t values"
	}
	return "-t " + strings.Join(t, " -t ")
}
