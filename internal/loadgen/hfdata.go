package loadgen

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
)

// FormatHF is a Hugging Face dataset on disk, read offline: a dataset
// repository as downloaded (Parquet or JSONL shards, the split in the
// shard's name or folder: data/train-00000-of-00001.parquet,
// train/part.jsonl, test.jsonl), the hub cache's copy of one
// (datasets--org--name, its snapshot of refs/main), or the datasets
// library's own cache (Arrow stream files, <name>-<split>.arrow and
// <name>-<split>-00000-of-00002.arrow). A column of strings is the
// prompts; a column of conversations (ShareGPT's [{from, value}] or
// OpenAI's [{role, content}]) gives each row's first human turn. Arrow's
// own readers read Parquet and Arrow (internal/rundir's Parquet library
// is the run directory's).
const FormatHF = "hf"

// hfDefaultSplit is the split a dataset without one named is read from.
const hfDefaultSplit = "train"

// hfColumns are the columns tried, in order, when the named one (the
// default "prompt") is not in a shard: the names the common prompt
// datasets use.
var hfColumns = []string{"prompt", "text", "question", "instruction", "input", "conversations", "messages"}

// loadHF reads a split's prompts from a Hugging Face dataset folder.
func loadHF(spec DatasetSpec) ([]string, error) {
	split := spec.Split
	if split == "" {
		split = hfDefaultSplit
	}
	root, err := hfRoot(spec.Path)
	if err != nil {
		return nil, err
	}
	shards, splits, err := hfShards(root, split)
	if err != nil {
		return nil, err
	}
	if len(shards) == 0 {
		return nil, fmt.Errorf("dataset %s: no Parquet, JSONL or Arrow shard of split %q (splits found: %s)", spec.Path, split, strings.Join(splits, ", "))
	}
	var out []string
	for _, s := range shards {
		var got []string
		switch {
		case strings.HasSuffix(s, ".parquet"):
			got, err = hfParquet(s, spec.Field)
		case strings.HasSuffix(s, ".arrow"):
			got, err = hfArrow(s, spec.Field)
		default:
			got, err = hfJSONL(s, spec.Field)
		}
		if err != nil {
			return nil, err
		}
		out = append(out, got...)
	}
	return out, nil
}

// hfRoot is the folder holding the dataset's files: the folder given, or,
// for the hub cache's datasets--org--name, the snapshot refs/main names
// (else the only snapshot).
func hfRoot(path string) (string, error) {
	st, err := os.Stat(path)
	if err != nil {
		return "", fmt.Errorf("dataset %s: %w", path, err)
	}
	if !st.IsDir() {
		return "", fmt.Errorf("dataset %s: a Hugging Face dataset is a folder (a downloaded repository, a hub cache entry, or the datasets cache's)", path)
	}
	snaps := filepath.Join(path, "snapshots")
	if _, err := os.Stat(snaps); err != nil {
		return path, nil
	}
	if ref, err := os.ReadFile(filepath.Join(path, "refs", "main")); err == nil {
		return filepath.Join(snaps, strings.TrimSpace(string(ref))), nil
	}
	entries, err := os.ReadDir(snaps)
	if err != nil {
		return "", fmt.Errorf("dataset %s: %w", path, err)
	}
	if len(entries) != 1 {
		return "", fmt.Errorf("dataset %s: %d snapshots and no refs/main to choose one: give the snapshot's folder", path, len(entries))
	}
	return filepath.Join(snaps, entries[0].Name()), nil
}

// hfShards are root's data files of split, in path order, and the splits
// its data files name (for the error when split has none).
func hfShards(root, split string) ([]string, []string, error) {
	var shards []string
	seen := map[string]bool{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if n := d.Name(); p != root && (strings.HasPrefix(n, ".") || n == "blobs" || n == "refs") {
				return filepath.SkipDir
			}
			return nil
		}
		rel, _ := filepath.Rel(root, p)
		s, ok := hfSplitOf(rel)
		if !ok {
			return nil
		}
		seen[s] = true
		if s == split {
			shards = append(shards, p)
		}
		return nil
	})
	if err != nil {
		return nil, nil, fmt.Errorf("dataset %s: %w", root, err)
	}
	slices.Sort(shards)
	splits := slices.Sorted(func(yield func(string) bool) {
		for s := range seen {
			if !yield(s) {
				return
			}
		}
	})
	return shards, splits, nil
}

// hfSplitOf is the split a data file belongs to, by the hub's naming: a
// folder named for it (train/…), a name starting with it (train-00000-
// of-00001.parquet, test.jsonl) or the datasets cache's <name>-<split>
// [-NNNNN-of-NNNNN].arrow; false for a file that is not a shard.
func hfSplitOf(rel string) (string, bool) {
	base := filepath.Base(rel)
	ext := ""
	for _, e := range []string{".parquet", ".jsonl", ".arrow"} {
		if strings.HasSuffix(base, e) {
			ext = e
		}
	}
	if ext == "" {
		return "", false
	}
	stem := strings.TrimSuffix(base, ext)
	if ext == ".arrow" {
		// datasets' cache: <name>-<split>.arrow or <name>-<split>-00000-of-00002.arrow.
		parts := strings.Split(stem, "-")
		if n := len(parts); n >= 4 && parts[n-2] == "of" {
			parts = parts[:n-3]
		}
		if len(parts) < 2 {
			return "", false
		}
		return parts[len(parts)-1], true
	}
	dirs := strings.Split(filepath.ToSlash(filepath.Dir(rel)), "/")
	for _, known := range []string{"train", "test", "validation", "dev", "valid", "eval"} {
		if slices.Contains(dirs, known) {
			return known, true
		}
	}
	name, _, _ := strings.Cut(stem, "-")
	name, _, _ = strings.Cut(name, ".")
	return name, true
}

// hfJSONL reads a JSONL shard's prompts, a broken line an error at its
// file and line.
func hfJSONL(path, field string) ([]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("dataset %s: %w", path, err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 256<<20)
	var out []string
	col := ""
	for n := 1; sc.Scan(); n++ {
		b := bytes.TrimSpace(sc.Bytes())
		if len(b) == 0 {
			continue
		}
		var row map[string]json.RawMessage
		if err := json.Unmarshal(b, &row); err != nil {
			return nil, fmt.Errorf("dataset %s:%d: not a JSON object: %w", path, n, err)
		}
		if col == "" {
			if col, err = hfColumn(field, func(c string) bool { _, ok := row[c]; return ok }, keysOf(row)); err != nil {
				return nil, fmt.Errorf("dataset %s:%d: %w", path, n, err)
			}
		}
		p, err := hfPrompt(row[col])
		if err != nil {
			return nil, fmt.Errorf("dataset %s:%d: column %q: %w", path, n, col, err)
		}
		if p != "" {
			out = append(out, p)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("dataset %s: %w", path, err)
	}
	return out, nil
}

func keysOf(m map[string]json.RawMessage) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}

// hfColumn is the column the prompts are in: field when the shard has
// it, else (field the default "prompt") the first of hfColumns it has.
func hfColumn(field string, has func(string) bool, all []string) (string, error) {
	if field == "" {
		field = "prompt"
	}
	if has(field) {
		return field, nil
	}
	if field == "prompt" {
		for _, c := range hfColumns {
			if has(c) {
				return c, nil
			}
		}
	}
	return "", fmt.Errorf("no column %q (the columns: %s): set dataset.field", field, strings.Join(all, ", "))
}

// hfPrompt is a cell's prompt: a string, or a conversation's first human
// turn ("" when it has none); anything else is an error.
func hfPrompt(raw json.RawMessage) (string, error) {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s, nil
	}
	var turns []struct {
		From    string `json:"from"`
		Value   string `json:"value"`
		Role    string `json:"role"`
		Content string `json:"content"`
	}
	if err := json.Unmarshal(raw, &turns); err != nil {
		return "", fmt.Errorf("%s: want a string or a conversation ([{from, value}] or [{role, content}])", clip(raw))
	}
	for _, t := range turns {
		who, text := t.From+t.Role, t.Value+t.Content
		if (who == "human" || who == "user") && strings.TrimSpace(text) != "" {
			return text, nil
		}
	}
	return "", nil
}

// hfParquet reads a Parquet shard's prompt column with Arrow's reader.
func hfParquet(path, field string) ([]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("dataset %s: %w", path, err)
	}
	defer f.Close()
	tbl, err := pqarrow.ReadTable(context.Background(), f, parquet.NewReaderProperties(memory.DefaultAllocator), pqarrow.ArrowReadProperties{}, memory.DefaultAllocator)
	if err != nil {
		return nil, fmt.Errorf("dataset %s: not a Parquet file Arrow can read: %w", path, err)
	}
	defer tbl.Release()
	return hfTable(path, field, tbl)
}

// hfArrow reads an Arrow shard of the datasets cache (the IPC stream
// format; the file format read too).
func hfArrow(path, field string) ([]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("dataset %s: %w", path, err)
	}
	defer f.Close()
	var recs []arrow.RecordBatch
	var schema *arrow.Schema
	if r, err := ipc.NewReader(f); err == nil {
		defer r.Release()
		schema = r.Schema()
		for r.Next() {
			rec := r.RecordBatch()
			rec.Retain()
			recs = append(recs, rec)
		}
		if err := r.Err(); err != nil {
			return nil, fmt.Errorf("dataset %s: a broken Arrow stream: %w", path, err)
		}
	} else {
		fr, ferr := ipc.NewFileReader(f)
		if ferr != nil {
			return nil, fmt.Errorf("dataset %s: not an Arrow stream or file: %w", path, errors.Join(err, ferr))
		}
		defer fr.Close()
		schema = fr.Schema()
		for i := range fr.NumRecords() {
			rec, err := fr.RecordBatch(i)
			if err != nil {
				return nil, fmt.Errorf("dataset %s: record batch %d: %w", path, i, err)
			}
			rec.Retain()
			recs = append(recs, rec)
		}
	}
	tbl := array.NewTableFromRecords(schema, recs)
	for _, r := range recs {
		r.Release()
	}
	defer tbl.Release()
	return hfTable(path, field, tbl)
}

// hfTable reads the prompt column of a shard's table, row by row (a
// value that is neither a string nor a conversation an error at its row,
// counted from 1).
func hfTable(path, field string, tbl arrow.Table) ([]string, error) {
	sc := tbl.Schema()
	var names []string
	for _, f := range sc.Fields() {
		names = append(names, f.Name)
	}
	col, err := hfColumn(field, func(c string) bool { return len(sc.FieldIndices(c)) > 0 }, names)
	if err != nil {
		return nil, fmt.Errorf("dataset %s: %w", path, err)
	}
	var out []string
	row := 0
	for _, chunk := range tbl.Column(sc.FieldIndices(col)[0]).Data().Chunks() {
		for i := range chunk.Len() {
			row++
			if chunk.IsNull(i) {
				continue
			}
			b, err := json.Marshal(chunk.GetOneForMarshal(i))
			if err != nil {
				return nil, fmt.Errorf("dataset %s: row %d: column %q: %w", path, row, col, err)
			}
			p, err := hfPrompt(b)
			if err != nil {
				return nil, fmt.Errorf("dataset %s: row %d: column %q: %w", path, row, col, err)
			}
			if p != "" {
				out = append(out, p)
			}
		}
	}
	return out, nil
}
