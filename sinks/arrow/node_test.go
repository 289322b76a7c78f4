package arrow

import (
	"bytes"
	"context"
	"encoding/json"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/benchrun/benchrun/internal/results"
)

// arrowJS finds node and the apache-arrow npm package: in a NODE_PATH
// directory, else where ./test.sh installs it ($REPO/.cache/node). When
// either is missing the test fails under CI (CI set) and is skipped
// otherwise.
func arrowJS(t *testing.T) (node, modules string) {
	t.Helper()
	missing := func(what string) {
		t.Helper()
		msg := what + ": run ./test.sh (it installs apache-arrow with npm into .cache/node)"
		if os.Getenv("CI") != "" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	node, err := exec.LookPath("node")
	if err != nil {
		missing("node is not installed")
	}
	repo, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	dirs := filepath.SplitList(os.Getenv("NODE_PATH"))
	dirs = append(dirs, filepath.Join(repo, ".cache", "node", "node_modules"))
	for _, d := range dirs {
		if d == "" {
			continue
		}
		if _, err := os.Stat(filepath.Join(d, "apache-arrow", "package.json")); err == nil {
			return node, d
		}
	}
	missing("the npm package apache-arrow is in none of " + strings.Join(dirs, ", "))
	return "", ""
}

type jsFile struct {
	Path     string            `json:"path"`
	Metadata map[string]string `json:"metadata"`
	Batches  int               `json:"batches"`
	Fields   []struct {
		Name     string `json:"name"`
		Type     string `json:"type"`
		Nullable bool   `json:"nullable"`
	} `json:"fields"`
	Rows []map[string]any `json:"rows"`
}

// TestNodeReadsIt reads both files with another Arrow implementation,
// the apache-arrow npm package under node (testdata/read.mjs), and
// compares every value with the rows the Parquet files of the same cells
// read back as (resultstest.ReadTable): strings, 64-bit integers and
// timestamps exactly, doubles bit for bit (-0 included), NULL where
// Parquet has NULL, lists and maps entry for entry (maps in key order);
// and the schema: the Parquet columns in order, typed and nullable as
// the Go fields say, with the benchrun metadata.
func TestNodeReadsIt(t *testing.T) {
	node, modules := arrowJS(t)
	cells := testCells()
	dir := t.TempDir()
	cellsPath, reqsPath := writeArrow(t, dir, cells)
	pqCells, pqReqs := writeParquet(t, filepath.Join(dir, "parquet"), cells)

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, filepath.Join("testdata", "read.mjs"), modules, cellsPath, reqsPath)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("node testdata/read.mjs: %v\n%s", err, stderr.String())
	}
	var got struct {
		Arrow  string   `json:"arrow"`
		Module string   `json:"module"`
		Files  []jsFile `json:"files"`
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("read.mjs printed no JSON: %v\n%.2000s", err, out)
	}
	t.Logf("apache-arrow %s (%s)", got.Arrow, got.Module)
	if len(got.Files) != 2 {
		t.Fatalf("read.mjs read %d files, want 2", len(got.Files))
	}
	withReqs := 0
	for _, c := range cells {
		if len(c.reqs) > 0 {
			withReqs++
		}
	}
	checkJS(t, got.Files[0], reflect.TypeFor[results.Cell](), results.TableCells, len(cells), canonAll(pqCells))
	checkJS(t, got.Files[1], reflect.TypeFor[results.Request](), results.TableRequests, withReqs, canonAll(pqReqs))
}

// jsType is the type apache-arrow names for the Arrow type of a Go field.
func jsType(t reflect.Type) string {
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t {
	case reflect.TypeFor[string]():
		return "Utf8"
	case reflect.TypeFor[int64]():
		return "Int64"
	case reflect.TypeFor[float64]():
		return "Float64"
	case reflect.TypeFor[bool]():
		return "Bool"
	case reflect.TypeFor[time.Time]():
		return "Timestamp<MICROSECOND, UTC>" // every table's times are timestamp(microsecond)
	case reflect.TypeFor[[]float64]():
		return "List<Float64>"
	case reflect.TypeFor[[]int64]():
		return "List<Int64>"
	case reflect.TypeFor[map[string]string]():
		return "Map<{key:Utf8, value:Utf8}>"
	}
	return "unmapped " + t.String()
}

func checkJS(t *testing.T, f jsFile, rowType reflect.Type, table string, batches int, want []map[string]any) {
	t.Helper()
	name := filepath.Base(f.Path)
	var fields []string
	for i := 0; i < rowType.NumField(); i++ {
		sf := rowType.Field(i)
		col, _, _ := strings.Cut(sf.Tag.Get("parquet"), ",")
		fields = append(fields, col)
		if i >= len(f.Fields) {
			continue
		}
		jf := f.Fields[i]
		if jf.Name != col || jf.Type != jsType(sf.Type) || jf.Nullable != (sf.Type.Kind() == reflect.Pointer) {
			t.Errorf("%s: field %d is %s %s nullable=%v; want %s %s nullable=%v", name, i, jf.Name, jf.Type, jf.Nullable,
				col, jsType(sf.Type), sf.Type.Kind() == reflect.Pointer)
		}
	}
	if len(f.Fields) != len(fields) {
		t.Errorf("%s: %d fields, want %d", name, len(f.Fields), len(fields))
	}
	if f.Metadata["benchrun.schema_version"] != strconv.Itoa(results.SchemaVersion) || f.Metadata["benchrun.table"] != table {
		t.Errorf("%s: metadata %v", name, f.Metadata)
	}
	if f.Batches != batches {
		t.Errorf("%s: %d record batches, want %d (one per cell)", name, f.Batches, batches)
	}
	if len(f.Rows) != len(want) {
		t.Fatalf("%s: %d rows, want %d", name, len(f.Rows), len(want))
	}
	for i := range f.Rows {
		for col, v := range f.Rows[i] {
			f.Rows[i][col] = fromJS(t, want[i][col], v)
		}
	}
	compareRows(t, name+" read by apache-arrow vs Parquet", want, f.Rows)
}

// fromJS turns read.mjs's JSON value into the canon form of want's: "-0"
// back to -0, a map's "__order" checked (keys sorted, as written) and
// dropped.
func fromJS(t *testing.T, want, v any) any {
	switch w := want.(type) {
	case float64:
		if v == "-0" {
			return math.Copysign(0, -1)
		}
	case []any:
		if s, ok := v.([]any); ok {
			for i := range s {
				if i < len(w) {
					s[i] = fromJS(t, w[i], s[i])
				}
			}
		}
	case map[string]any:
		if m, ok := v.(map[string]any); ok {
			if order, ok := m["__order"].([]any); ok {
				var keys []string
				for _, k := range order {
					keys = append(keys, k.(string))
				}
				if !slices.IsSorted(keys) {
					t.Errorf("map keys stored in order %v; want sorted", keys)
				}
				delete(m, "__order")
			}
		}
	}
	return v
}
