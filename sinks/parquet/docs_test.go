package parquet_test

import (
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"github.com/benchrun/benchrun/internal/results"
	pqs "github.com/benchrun/benchrun/sinks/parquet"
)

// columnsOf lists a row type's Parquet column names in order.
func columnsOf(v any) []string {
	t := reflect.TypeOf(v)
	var out []string
	for i := 0; i < t.NumField(); i++ {
		name, _, _ := strings.Cut(t.Field(i).Tag.Get("parquet"), ",")
		if name != "" && name != "-" {
			out = append(out, name)
		}
	}
	return out
}

// docRow is one documented column: `| `name` | TYPE | unit | dir | definition |`.
type docRow struct{ typ, unit, dir, def string }

// docTables parses the column tables of docs/RESULTS.md, by table name.
func docTables(t *testing.T) map[string]map[string]docRow {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "docs", "RESULTS.md"))
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	row := regexp.MustCompile("(?m)^\\| `([a-z0-9_]+)` \\| ([^|]+) \\| ([^|]+) \\| ([^|]+) \\| ([^|]+) \\|$")
	out := map[string]map[string]docRow{}
	for _, table := range pqs.Tables {
		head := "## Table `" + table + "`"
		i := strings.Index(doc, head)
		if i < 0 {
			t.Errorf("docs/RESULTS.md has no section %q", head)
			continue
		}
		section := doc[i+len(head):]
		if j := strings.Index(section, "\n## "); j >= 0 {
			section = section[:j]
		}
		rows := map[string]docRow{}
		for _, m := range row.FindAllStringSubmatch(section, -1) {
			if _, dup := rows[m[1]]; dup {
				t.Errorf("docs/RESULTS.md documents %s.%s twice", table, m[1])
			}
			rows[m[1]] = docRow{strings.TrimSpace(m[2]), strings.TrimSpace(m[3]), strings.TrimSpace(m[4]), strings.TrimSpace(m[5])}
		}
		out[table] = rows
	}
	return out
}

// writeTables writes one part file of each table (one zero row) and
// returns their paths by table, so DuckDB can say how it types each column.
func writeTables(t *testing.T) map[string]string {
	t.Helper()
	dir := t.TempDir()
	paths := map[string]string{}
	for table, write := range map[string]func(string) error{
		results.TableCells:      func(p string) error { return pqs.WriteFile(p, []results.Cell{{}}) },
		results.TableRequests:   func(p string) error { return pqs.WriteFile(p, []results.Request{{}}) },
		results.TableAssertions: func(p string) error { return pqs.WriteFile(p, []results.Verdict{{}}) },
		results.TableSamples:    func(p string) error { return pqs.WriteFile(p, []results.Sample{{}}) },
		results.TableSlices:     func(p string) error { return pqs.WriteFile(p, []results.Slice{{}}) },
	} {
		paths[table] = filepath.Join(dir, table+".parquet")
		if err := write(paths[table]); err != nil {
			t.Fatal(err)
		}
	}
	return paths
}

// TestEveryColumnDocumented keeps docs/RESULTS.md complete and true: every
// column of every table has a row whose type is the one DuckDB reads from
// the file benchrun writes, with a unit, a direction (↑, ↓ or –) and a
// definition; and every documented column exists. A column added to a row
// type without its documentation row fails here, naming the row to add.
func TestEveryColumnDocumented(t *testing.T) {
	docs := docTables(t)
	files := writeTables(t)
	db := duck(t)
	rowTypes := map[string]any{
		results.TableCells: results.Cell{}, results.TableRequests: results.Request{},
		results.TableAssertions: results.Verdict{}, results.TableSamples: results.Sample{},
		results.TableSlices: results.Slice{},
	}
	for _, table := range pqs.Tables {
		if rowTypes[table] == nil {
			t.Fatalf("table %s has no row type in this test: add it to rowTypes and writeTables", table)
		}
		documented := docs[table]
		duckType := map[string]string{}
		for _, r := range query(t, db, "SELECT column_name, column_type FROM (DESCRIBE SELECT * FROM read_parquet("+sqlPath(files[table])+"))") {
			duckType[r[0]] = r[1]
		}
		have := map[string]bool{}
		for _, c := range columnsOf(rowTypes[table]) {
			have[c] = true
			d, ok := documented[c]
			if !ok {
				t.Errorf("column %s of table %s is not documented in docs/RESULTS.md: add a row `| `%s` | %s | unit | ↑/↓/– | definition |` to its table", c, table, c, duckType[c])
				continue
			}
			if d.typ != duckType[c] {
				t.Errorf("docs/RESULTS.md types %s.%s as %s; DuckDB reads it as %s", table, c, d.typ, duckType[c])
			}
			if d.unit == "" {
				t.Errorf("docs/RESULTS.md: %s.%s has no unit (write – for none)", table, c)
			}
			if d.dir != "↑" && d.dir != "↓" && d.dir != "–" {
				t.Errorf("docs/RESULTS.md: %s.%s has direction %q; want ↑ (higher is better), ↓ (lower is better) or – (neither)", table, c, d.dir)
			}
			if d.def == "" || d.def == "–" {
				t.Errorf("docs/RESULTS.md: %s.%s has no definition", table, c)
			}
		}
		if len(duckType) != len(have) {
			t.Errorf("table %s: DuckDB sees %d columns, the row type has %d", table, len(duckType), len(have))
		}
		for c := range documented {
			if !have[c] {
				t.Errorf("docs/RESULTS.md documents %s.%s, which the table does not have (columns are never renamed or removed)", table, c)
			}
		}
	}
}
