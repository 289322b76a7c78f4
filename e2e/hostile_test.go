package e2e

import (
	"bytes"
	"context"
	"database/sql"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestProxyPageStaysReadable: a proxy's 502 page in latin-1, with escape
// sequences that clear a terminal and print a fake green line, answers
// every request. The run exits 3 (nothing measured), and its text reaches
// every output made safe: DuckDB reads the Parquet files (raw latin-1
// makes it refuse the whole glob: "Invalid string encoding"), the byte
// that was not UTF-8 reads as U+FFFD, and no ESC byte reaches stdout,
// stderr or any file of the run directory (the escapes are written as
// visible \x1b).
func TestProxyPageStaysReadable(t *testing.T) {
	model := uniqueModel()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	r := run(t, ctx, "testdata/hostile.cue", "-t", "model="+model)
	waitGone(t, model)
	if r.code != 3 {
		t.Fatalf("exit %d, want 3\nstderr:\n%s", r.code, r.stderr)
	}
	for name, out := range map[string]string{"stdout": r.stdout, "stderr": r.stderr} {
		if strings.ContainsRune(out, 0x1b) {
			t.Errorf("%s holds a raw ESC:\n%q", name, out)
		}
	}
	dir := runDir(t, r.out)
	filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || strings.HasSuffix(path, ".log") || strings.HasSuffix(path, ".parquet") {
			return err // a server's own log is its words, kept raw; Parquet is read below
		}
		b, err := os.ReadFile(path)
		if err == nil && bytes.IndexByte(b, 0x1b) >= 0 {
			t.Errorf("%s holds a raw ESC", path)
		}
		return nil
	})
	db, err := sql.Open("duckdb", "")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var reqErr, reason string
	if err := db.QueryRow(`SELECT error FROM read_parquet('` + filepath.Join(dir, "requests", "*.parquet") + `') LIMIT 1`).Scan(&reqErr); err != nil {
		t.Fatalf("DuckDB reading the requests: %v", err)
	}
	if err := db.QueryRow(`SELECT reason FROM read_parquet('` + filepath.Join(dir, "cells", "*.parquet") + `') LIMIT 1`).Scan(&reason); err != nil {
		t.Fatalf("DuckDB reading the cells: %v", err)
	}
	var escapes int
	if err := db.QueryRow(`SELECT (SELECT count(*) FROM read_parquet('` + filepath.Join(dir, "requests", "*.parquet") + `') WHERE contains(error, chr(27)))
		+ (SELECT count(*) FROM read_parquet('` + filepath.Join(dir, "cells", "*.parquet") + `') WHERE contains(reason, chr(27)) OR contains(notes, chr(27)))`).Scan(&escapes); err != nil {
		t.Fatal(err)
	}
	if escapes != 0 {
		t.Errorf("%d Parquet rows hold a raw ESC", escapes)
	}
	for _, s := range []string{reqErr, reason} {
		if !strings.Contains(s, "d\uFFFDfaillante") || !strings.Contains(s, `\x1b[2J`) {
			t.Errorf("stored text %q: want the latin-1 byte as U+FFFD and the escape written as \\x1b", s)
		}
	}
}
