package rundir

import (
	"cmp"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"time"

	pq "github.com/parquet-go/parquet-go"

	"github.com/benchrun/benchrun/internal/results"
)

// CompactOptions are Compact's options.
type CompactOptions struct {
	// DryRun says what Compact would do and does nothing: it takes no
	// lock (it only looks at it), writes and removes nothing.
	DryRun bool
}

// AlreadyCompact is why a table of one part file (or none) is left alone.
const AlreadyCompact = "already compact"

// CompactResult is what Compact did with one run directory.
type CompactResult struct {
	Dir string
	// Skipped says why the run was left alone as a whole ("" when its
	// tables were looked at): a writer holds it, its manifest says
	// running, it has no readable manifest.
	Skipped string
	// Tables are the run's tables, each compacted or left alone.
	Tables []TableCompaction
	// Removed are the leftovers of an interrupted compaction that were
	// removed first, relative to Dir; Restored the table folders it had
	// moved away and were moved back.
	Removed, Restored []string
}

// TableCompaction is what Compact did with one table of a run.
type TableCompaction struct {
	Table string
	// Parts is how many part files the table had.
	Parts int
	// Into is the part file they were rewritten into ("" when the table
	// was left alone; with DryRun, the one they would be).
	Into string
	// Skipped says why the table was left alone (AlreadyCompact for one
	// part file or none).
	Skipped string
}

// compactTables are the tables Compact rewrites, each with its row type.
var compactTables = []struct {
	name    string
	compact func(dir, table string, dryRun bool) (TableCompaction, error)
}{
	{results.TableCells, compactTable[results.Cell]},
	{results.TableRequests, compactTable[results.Request]},
	{results.TableSlices, compactTable[results.Slice]},
	{results.TableAssertions, compactTable[results.Verdict]},
	{results.TableSamples, compactTable[results.Sample]},
}

// Compact rewrites each table of the run directory dir whose rows are
// spread over several part files (one per finished cell) into one part
// file, so that queries over months of runs open few files. Readers see
// the same rows in the same order before and after, and never both sets
// nor neither: the new table folder is built beside the old one under a
// hidden name (".cells.compact-tmp", which no `*/cells/*.parquet` glob
// matches) and the two are exchanged in one rename (Linux, macOS; on
// other systems the old folder is renamed away, then the new one in).
// The new part is named part-000-NNNNN.parquet after the highest part it
// replaces, a name none of them has, so it sorts where they did and a
// later resume's parts (LastPart) follow it.
//
// Compact holds the run directory's lock as a writer does, so no run or
// resume starts writing meanwhile; a run a writer holds, or whose
// manifest says running (it crashed: resume it first), is skipped. A
// table whose parts carry another schema version than this benchrun's is
// left alone: rewriting its rows would give old rows this version's
// columns (zeros where NULL was). Compacting again changes nothing. A
// compaction interrupted at any point is finished or undone by the next
// Compact, which first removes (or moves back) what it left.
func Compact(dir string, opt CompactOptions) (CompactResult, error) {
	res := CompactResult{Dir: dir}
	if opt.DryRun {
		lock, err := ProbeLock(dir)
		if err != nil {
			return res, err
		}
		if lock.Held {
			res.Skipped = "locked by " + lock.Holder.String()
			return res, nil
		}
	} else {
		// A compaction replaces table folders, so no run or resume may
		// write into one meanwhile: it takes the writers' lock.
		host, _ := os.Hostname()
		lock, held, err := LockWriter(dir, LockHolder{PID: os.Getpid(), Hostname: host, StartedAt: time.Now().UTC()})
		if err != nil {
			return res, err
		}
		if lock == nil {
			res.Skipped = "locked by " + held.Holder.String()
			return res, nil
		}
		defer lock.Release()
	}
	if why, err := notCompactable(dir); why != "" || err != nil {
		res.Skipped = why
		return res, err
	}
	if !opt.DryRun {
		var err error
		if res.Removed, res.Restored, err = removeCompactLeftovers(dir); err != nil {
			return res, err
		}
	}
	for _, t := range compactTables {
		tc, err := t.compact(dir, t.name, opt.DryRun)
		res.Tables = append(res.Tables, tc)
		if err != nil {
			return res, err
		}
	}
	return res, nil
}

// notCompactable says why a run directory, whose lock nobody else holds,
// is no run to compact: its manifest is missing or unreadable (a writer
// killed early: what it wrote is left as it is), or says running (a
// crashed run, which a resume continues).
func notCompactable(dir string) (string, error) {
	m, err := ReadManifest(dir)
	var pathErr *fs.PathError
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return "incomplete (no manifest.json: its writer was killed before writing one)", nil
	case errors.As(err, &pathErr):
		return "", err
	case err != nil:
		return "incomplete (" + err.Error() + ")", nil
	case m.Status == RunRunning:
		return "running (its manifest says running and no benchrun holds it: it crashed; resume it first)", nil
	}
	return "", nil
}

// Names of a table folder's stand-ins while it is compacted: the new
// folder being built, and (where folders cannot be exchanged) the old
// one renamed away. They start with "." and are no table's name, so no
// documented glob nor Find looks in them.
const (
	compactTmpSuffix = ".compact-tmp"
	compactOldSuffix = ".compact-old"
)

func compactTmp(dir, table string) string {
	return filepath.Join(dir, "."+table+compactTmpSuffix)
}

func compactOld(dir, table string) string {
	return filepath.Join(dir, "."+table+compactOldSuffix)
}

// removeCompactLeftovers finishes or undoes what an interrupted
// compaction left in dir (the caller holds its lock). A new folder never
// swapped in goes; an old folder swapped out goes when its table's new
// folder is in place, and is moved back when it is not (the rename-away
// fallback stopped between its two renames). An old folder beside both a
// table folder and an unfinished new one means a writer made the table
// folder afresh after the interruption: its rows and the old folder's
// are both the run's, and which to keep is not Compact's to guess.
func removeCompactLeftovers(dir string) (removed, restored []string, err error) {
	for _, t := range compactTables {
		table := filepath.Join(dir, t.name)
		tmp, old := compactTmp(dir, t.name), compactOld(dir, t.name)
		if exists(old) {
			switch {
			case !exists(table):
				if err := os.Rename(old, table); err != nil {
					return removed, restored, fmt.Errorf("moving back %s, which an interrupted compaction moved away: %w", table, err)
				}
				restored = append(restored, t.name)
			case exists(tmp):
				return removed, restored, fmt.Errorf("%s holds %s's part files, which an interrupted compaction moved away, and %s was made again since (a resume?): move the part files back into it by hand (renaming any whose name it already has), then compact again", old, t.name, table)
			default:
				if err := os.RemoveAll(old); err != nil {
					return removed, restored, fmt.Errorf("removing %s, left by an interrupted compaction: %w", old, err)
				}
				removed = append(removed, filepath.Base(old))
			}
		}
		if exists(tmp) {
			if err := os.RemoveAll(tmp); err != nil {
				return removed, restored, fmt.Errorf("removing %s, left by an interrupted compaction: %w", tmp, err)
			}
			removed = append(removed, filepath.Base(tmp))
		}
	}
	return removed, restored, nil
}

func exists(path string) bool {
	_, err := os.Lstat(path)
	return err == nil
}

// killedWriterTemp matches the temporary files of an atomic write that
// never finished (".part-001-00003.parquet.tmp-123"): with the lock
// held, no writer is finishing them, and they are no part of the table.
var killedWriterTemp = regexp.MustCompile(`^\..+\.tmp-[0-9]+$`)

// compactTable compacts one table of the run directory dir (see Compact).
func compactTable[T any](dir, table string, dryRun bool) (TableCompaction, error) {
	tc := TableCompaction{Table: table}
	tableDir := filepath.Join(dir, table)
	st, err := os.Lstat(tableDir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		tc.Skipped = AlreadyCompact
		return tc, nil
	case err != nil:
		return tc, fmt.Errorf("compacting %s: %w", tableDir, err)
	case !st.IsDir():
		tc.Skipped = "not a folder (a symbolic link?)"
		return tc, nil
	}
	files, err := partFiles(tableDir)
	if err != nil {
		return tc, err
	}
	tc.Parts = len(files)
	if len(files) <= 1 {
		tc.Skipped = AlreadyCompact
		return tc, nil
	}
	if tc.Skipped, err = whyNotRewrite[T](tableDir, files); tc.Skipped != "" || err != nil {
		return tc, err
	}
	name := compactName(files)
	for _, f := range files {
		if filepath.Base(f) == name {
			// Only files of other names added beside an earlier compaction's part.
			tc.Skipped = "the compacted part's name, " + name + ", is taken: give the other files part-AAA-NNNNN.parquet names"
			return tc, nil
		}
	}
	if dryRun {
		tc.Into = name
		return tc, nil
	}
	tmp := compactTmp(dir, table)
	if err := os.Mkdir(tmp, st.Mode().Perm()); err != nil {
		return tc, fmt.Errorf("compacting %s: %w", tableDir, err)
	}
	if err := writeTablePart(filepath.Join(tmp, name), table, func(w *pq.GenericWriter[T]) error { return copyParts(w, files) }); err != nil {
		os.RemoveAll(tmp)
		return tc, fmt.Errorf("compacting %s: %w", tableDir, err)
	}
	syncDir(tmp)
	if err := swapInto(dir, table); err != nil {
		return tc, err
	}
	tc.Into = name
	return tc, nil
}

// exchange is exchangeDirs; the tests replace it to take the fallback.
var exchange = exchangeDirs

// swapInto replaces the table folder with the compacted one built at its
// compactTmp name, then removes the old one. Where folders cannot be
// exchanged in one step, the old one is renamed away first: readers then
// see no table for an instant, which is better than its rows twice.
func swapInto(dir, table string) error {
	tableDir, tmp := filepath.Join(dir, table), compactTmp(dir, table)
	exchanged, err := exchange(tableDir, tmp)
	if err != nil {
		os.RemoveAll(tmp)
		return fmt.Errorf("compacting %s: swapping in the compacted folder: %w", tableDir, err)
	}
	old := tmp
	if !exchanged {
		old = compactOld(dir, table)
		if err := os.Rename(tableDir, old); err != nil {
			os.RemoveAll(tmp)
			return fmt.Errorf("compacting %s: moving the old folder away: %w", tableDir, err)
		}
		if err := os.Rename(tmp, tableDir); err != nil {
			if rerr := os.Rename(old, tableDir); rerr != nil {
				return fmt.Errorf("compacting %s: moving the compacted folder in: %w (and moving the old one back: %v; compact again to restore it)", tableDir, err, rerr)
			}
			os.RemoveAll(tmp)
			return fmt.Errorf("compacting %s: moving the compacted folder in: %w", tableDir, err)
		}
	}
	syncDir(dir)
	if err := os.RemoveAll(old); err != nil {
		return fmt.Errorf("compacting %s: removing the old part files (compact again to finish): %w", tableDir, err)
	}
	return nil
}

// syncDir makes a folder's entries durable; where folders cannot be
// synced (Windows), the renames are as durable as the system makes them.
func syncDir(dir string) {
	if f, err := os.Open(dir); err == nil {
		_ = f.Sync()
		f.Close()
	}
}

// whyNotRewrite says why a table's part files are not to be rewritten
// into one ("" when they may): the folder holds something else than part
// files (which the swap would drop), or a part of another schema version.
func whyNotRewrite[T any](tableDir string, files []string) (string, error) {
	entries, err := os.ReadDir(tableDir)
	if err != nil {
		return "", fmt.Errorf("listing %s: %w", tableDir, err)
	}
	if len(entries) > len(files) {
		for _, e := range entries {
			name := e.Name()
			if e.IsDir() || !killedWriterTemp.MatchString(name) && (filepath.Ext(name) != ".parquet" || name[0] == '.') {
				return fmt.Sprintf("it holds %s, which is no part file: move it away first", name), nil
			}
		}
	}
	want := strconv.Itoa(results.SchemaVersion)
	schema := pq.SchemaOf(new(T))
	for _, path := range files {
		var why string
		err := withPart(path, func(pf *pq.File) error {
			v, _ := pf.Lookup("benchrun.schema_version")
			switch {
			case v != want:
				why = fmt.Sprintf("mixed schema versions (%s is version %s, this benchrun writes %s: rewriting would change old rows' columns)", filepath.Base(path), cmp.Or(v, "none"), want)
			case !pq.EqualNodes(pf.Schema(), schema):
				why = fmt.Sprintf("%s's columns are not this benchrun's, though its version is (a development build wrote it?): rewriting would change its rows' columns", filepath.Base(path))
			}
			return nil
		})
		if why != "" || err != nil {
			return why, err
		}
	}
	return "", nil
}

// withPart opens a part file (its footer) for use.
func withPart(path string, use func(*pq.File) error) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("reading %s: %w", path, err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return fmt.Errorf("reading %s: %w", path, err)
	}
	pf, err := pq.OpenFile(f, st.Size(), pq.SkipPageIndex(true), pq.SkipBloomFilters(true))
	if err != nil {
		return fmt.Errorf("reading %s: %w (a part file benchrun wrote is complete; this one was changed or truncated since: move it away to compact the rest)", path, err)
	}
	if err := use(pf); err != nil {
		return fmt.Errorf("reading %s: %w", path, err)
	}
	return nil
}

// copyParts writes the rows of files, in order, to w as they are stored:
// values are copied, not decoded into Go values and encoded again, so a
// timestamp or a float reads back bit for bit. Their columns are w's
// (whyNotRewrite checked).
func copyParts[T any](w *pq.GenericWriter[T], files []string) error {
	for _, path := range files {
		err := withPart(path, func(pf *pq.File) error {
			for _, rg := range pf.RowGroups() {
				rows := rg.Rows()
				_, err := pq.CopyRows(w, rows)
				rows.Close()
				if err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// compactName is the name of the part that replaces files (in part
// order): part-000-<the highest part number among them>. No writer uses
// attempt 0, so the name is none of the files' own: a reader that listed
// the old files just before the swap and opens one by its name after it
// finds nothing, and fails, rather than reading the new file's rows
// among the old ones. It sorts after no file it replaces, both by name
// and in part order, and a resume numbers its parts after it (LastPart).
func compactName(files []string) string {
	n := 0
	for _, f := range files {
		if m := partRE.FindStringSubmatch(filepath.Base(f)); m != nil {
			v, _ := strconv.Atoi(m[2])
			n = max(n, v)
		}
	}
	return PartName(compactedAttempt, n)
}

// compactedAttempt is the attempt a compacted part's name carries: its
// rows are every attempt's (each row says its own).
const compactedAttempt = 0
