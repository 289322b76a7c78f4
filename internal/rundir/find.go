package rundir

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"
)

// Filter chooses runs for Find. Zero fields choose everything.
type Filter struct {
	// Plan is the plan's name (the manifest's plan, the plan=NAME key).
	Plan string
	// From and To bound the run's start time, both inclusive; zero is
	// unbounded. ParseFrom and ParseTo read "2026-11-01" as that whole
	// day (UTC) and RFC3339 as an instant.
	From, To time.Time
	// Status keeps runs with one of these statuses (as Entry.Status says:
	// "crashed" and "incomplete" included).
	Status []string
}

// Entry is one run Find found, from its manifest alone.
type Entry struct {
	Dir        string
	RunID      string
	Plan       string
	StartedAt  time.Time
	FinishedAt *time.Time
	// Status is the manifest's, "crashed" for one that says running with
	// no writer holding the run directory, "incomplete" for a run without
	// a readable manifest (Err says why it could not be read).
	Status   string
	ExitCode *int
	Attempts int
	// Err is why the run's manifest could not be read (nil when it could,
	// or when there is none: a writer killed before writing it).
	Err error
}

// maxFindDepth bounds how deep Find looks for runs below its root: the
// hive layout is three levels (plan=, date=, run=), and a few more allow
// for roots that gather several runs folders.
const maxFindDepth = 6

// Find lists the run directories under root, oldest first, that f
// chooses. root is a runs folder (the hive layout
// root/plan=NAME/date=YYYY-MM-DD/run=ID), a plan's or a date's folder, a
// folder of runs folders, or one run directory. It reads the manifests
// only (no Parquet), and the lock of a run whose manifest says running,
// so it stays fast over months of runs; folders of other plans, and dates
// outside From..To, are not even listed. A run whose manifest cannot be
// read is listed as "incomplete" with its Err, never dropped.
func Find(root string, f Filter) ([]Entry, error) {
	st, err := os.Stat(root)
	if err != nil {
		return nil, fmt.Errorf("finding runs under %s: %w", root, err)
	}
	if !st.IsDir() {
		return nil, fmt.Errorf("finding runs under %s: it is a file; give a runs folder (runs/, runs/plan=NAME) or a run directory", root)
	}
	entries, err := os.ReadDir(root)
	if err != nil {
		return nil, fmt.Errorf("finding runs under %s: %w", root, err)
	}
	fd := finder{f: f}
	if strings.HasPrefix(filepath.Base(filepath.Clean(root)), "run=") || hasMarkerEntry(entries) {
		fd.add(root)
	} else {
		fd.walk(root, entries, 0)
	}
	out := fd.entries()
	slices.SortFunc(out, func(a, b Entry) int {
		return cmp.Or(a.StartedAt.Compare(b.StartedAt), cmp.Compare(a.Dir, b.Dir))
	})
	return out, nil
}

type finder struct {
	f    Filter
	dirs []string
}

// walk looks for runs in the subfolders of dir (entries is its
// listing). A run=ID folder is a run without listing it; another folder
// is listed once, to tell a run directory from a folder of runs. A
// subfolder that cannot be listed is skipped.
func (fd *finder) walk(dir string, entries []fs.DirEntry, depth int) {
	for _, e := range entries {
		name := e.Name()
		if !e.IsDir() || strings.HasPrefix(name, ".") {
			continue
		}
		path := filepath.Join(dir, name)
		switch {
		case strings.HasPrefix(name, "run="):
			fd.add(path)
		case fd.prune(name):
		case depth+1 < maxFindDepth:
			sub, err := os.ReadDir(path)
			if err != nil {
				continue
			}
			if hasMarkerEntry(sub) {
				fd.add(path) // a run directory not named run=ID (a copy)
				continue
			}
			fd.walk(path, sub, depth+1)
		}
	}
}

// prune says whether a hive key folder cannot hold a run the filter
// chooses: another plan's folder, or a date outside From..To (the date
// key is the run's start day, UTC).
func (fd *finder) prune(name string) bool {
	if v, ok := strings.CutPrefix(name, "plan="); ok {
		return fd.f.Plan != "" && v != fd.f.Plan
	}
	v, ok := strings.CutPrefix(name, "date=")
	if !ok {
		return false
	}
	day, err := time.Parse(time.DateOnly, v)
	if err != nil {
		return false
	}
	if !fd.f.From.IsZero() && day.Before(dayOf(fd.f.From)) {
		return true
	}
	return !fd.f.To.IsZero() && day.After(dayOf(fd.f.To))
}

func dayOf(t time.Time) time.Time {
	t = t.UTC()
	return time.Date(t.Year(), t.Month(), t.Day(), 0, 0, 0, 0, time.UTC)
}

// hasMarkerEntry says whether a folder's listing is a run directory's:
// a manifest, a cells table or a writer's lock file.
func hasMarkerEntry(entries []fs.DirEntry) bool {
	for _, e := range entries {
		switch e.Name() {
		case ManifestFile, LockFile:
			return true
		case "cells":
			if e.IsDir() {
				return true
			}
		}
	}
	return false
}

// add notes a run directory to read.
func (fd *finder) add(dir string) { fd.dirs = append(fd.dirs, dir) }

// readers bounds the manifests read at once: reading is mostly waiting on
// the file system, so a few more readers than cores pay.
var readers = max(4, 2*runtime.GOMAXPROCS(0))

// entries reads the runs' manifests, a few at a time, and keeps those the
// filter chooses.
func (fd *finder) entries() []Entry {
	all := make([]Entry, len(fd.dirs))
	var wg sync.WaitGroup
	next := make(chan int)
	for range min(readers, len(fd.dirs)) {
		wg.Go(func() {
			for i := range next {
				all[i] = entryOf(fd.dirs[i])
			}
		})
	}
	for i := range fd.dirs {
		next <- i
	}
	close(next)
	wg.Wait()
	out := all[:0]
	for _, e := range all {
		if fd.f.chooses(&e) {
			out = append(out, e)
		}
	}
	return out
}

// manifestHead is the part of manifest.json an Entry says: decoding only
// these fields (the attempts as raw JSON, only counted) keeps Find fast.
type manifestHead struct {
	RunID      string            `json:"run_id"`
	Plan       string            `json:"plan"`
	StartedAt  time.Time         `json:"started_at"`
	FinishedAt *time.Time        `json:"finished_at"`
	Status     string            `json:"status"`
	ExitCode   *int              `json:"exit_code"`
	ResumedAt  []json.RawMessage `json:"resumed_at"`
	Attempts   []json.RawMessage `json:"attempts"`
}

// entryOf reads one run's manifest into its entry.
func entryOf(dir string) Entry {
	e := Entry{Dir: dir, RunID: idFromDir(dir), Plan: keyOf(filepath.Dir(filepath.Dir(dir)), "plan=")}
	path := filepath.Join(dir, ManifestFile)
	b, err := os.ReadFile(path)
	var m manifestHead
	if err == nil {
		if jerr := json.Unmarshal(b, &m); jerr != nil {
			err = fmt.Errorf("%s is not a manifest benchrun can read (%w)", path, jerr)
		}
	}
	if err != nil {
		if !errors.Is(err, fs.ErrNotExist) {
			e.Err = err
		}
		e.Status = RunIncomplete
		if lock, _ := ProbeLock(dir); lock.Held {
			e.Status = RunRunning
		}
		e.StartedAt = startOfID(e.RunID)
		return e
	}
	e.RunID = cmp.Or(m.RunID, e.RunID)
	e.Plan = cmp.Or(m.Plan, e.Plan)
	e.StartedAt, e.FinishedAt, e.ExitCode, e.Status = m.StartedAt, m.FinishedAt, m.ExitCode, m.Status
	// As Manifest.AttemptRecords counts them: a manifest from before
	// attempts were recorded has one per start.
	e.Attempts = len(m.Attempts)
	if e.Attempts == 0 {
		e.Attempts = 1 + len(m.ResumedAt)
	}
	if m.Status == RunRunning {
		lock, lerr := ProbeLock(dir)
		e.Status = status(&Manifest{Status: m.Status}, lock, lerr)
	}
	return e
}

// startOfID is the start time a run id begins with
// (20261201T052532Z-d8734b), zero when it does not.
func startOfID(id string) time.Time {
	stamp, _, _ := strings.Cut(id, "-")
	t, err := time.Parse("20060102T150405Z", stamp)
	if err != nil {
		return time.Time{}
	}
	return t
}

func (f Filter) chooses(e *Entry) bool {
	switch {
	case f.Plan != "" && e.Plan != f.Plan:
		return false
	case !f.From.IsZero() && e.StartedAt.Before(f.From):
		return false
	case !f.To.IsZero() && e.StartedAt.After(f.To):
		return false
	case len(f.Status) > 0 && !slices.Contains(f.Status, e.Status):
		return false
	}
	return true
}

// ParseFrom reads the lower bound of a time range: "2026-11-01" is the
// start of that day (UTC), an RFC3339 time is that instant.
func ParseFrom(s string) (time.Time, error) {
	return parseBound(s, false)
}

// ParseTo reads the upper bound of a time range, inclusive:
// "2026-11-30" is the last instant of that day (UTC), so From and To of
// the same day choose that whole day; an RFC3339 time is that instant.
func ParseTo(s string) (time.Time, error) {
	return parseBound(s, true)
}

func parseBound(s string, upper bool) (time.Time, error) {
	s = strings.TrimSpace(s)
	if t, err := time.Parse(time.DateOnly, s); err == nil {
		if upper {
			t = t.AddDate(0, 0, 1).Add(-time.Nanosecond)
		}
		return t, nil
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}, fmt.Errorf("%q is not a date: give YYYY-MM-DD (a whole day, UTC) or an RFC3339 time such as 2026-11-01T08:00:00Z", s)
	}
	return t, nil
}
