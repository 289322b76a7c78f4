package parquet_test

import (
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"github.com/benchrun/benchrun/internal/results"
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

// TestEveryColumnDocumented keeps docs/RESULTS.md complete: every column of
// every table has a row (type, unit, direction, definition), and every
// documented column exists.
func TestEveryColumnDocumented(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "docs", "RESULTS.md"))
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	row := regexp.MustCompile("(?m)^\\| `([a-z0-9_]+)` \\| ([^|]+) \\| ([^|]+) \\| ([^|]+) \\| ([^|]+) \\|$")
	for table, v := range map[string]any{
		results.TableCells: results.Cell{}, results.TableRequests: results.Request{},
		results.TableAssertions: results.Verdict{}, results.TableSamples: results.Sample{},
	} {
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
		documented := map[string]bool{}
		for _, m := range row.FindAllStringSubmatch(section, -1) {
			documented[m[1]] = true
			if strings.TrimSpace(m[5]) == "" {
				t.Errorf("%s.%s: no definition", table, m[1])
			}
		}
		have := map[string]bool{}
		for _, c := range columnsOf(v) {
			have[c] = true
			if !documented[c] {
				t.Errorf("column %s of table %s is not documented in docs/RESULTS.md: add a row `| `%s` | TYPE | unit | ↑/↓/– | definition |` to its table", c, table, c)
			}
		}
		for c := range documented {
			if !have[c] {
				t.Errorf("docs/RESULTS.md documents %s.%s, which the table does not have (columns are never renamed or removed)", table, c)
			}
		}
	}
}
