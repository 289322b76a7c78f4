package resultstest

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/benchrun/benchrun/internal/results"
)

// docRow matches one documented column: `| `name` | TYPE | unit | dir | definition |`.
var docRow = regexp.MustCompile("(?m)^\\| `([a-z0-9_]+)` \\| ([^|]+) \\| ([^|]+) \\| ([^|]+) \\| ([^|]+) \\|$")

// DocProblems holds docs/RESULTS.md's cells table (doc, the file's text)
// to the column catalogue cols, both ways: every column has a row whose
// unit, direction mark and definition are its entry's, and every row is
// a column. Each problem is one line naming the column.
func DocProblems(doc string, cols []results.Column) []string {
	_, sec, ok := strings.Cut(doc, "## Table `cells`")
	if !ok {
		return []string{"docs/RESULTS.md has no section \"Table `cells`\""}
	}
	if i := strings.Index(sec, "\n## "); i >= 0 {
		sec = sec[:i]
	}
	rows := map[string][]string{}
	for _, m := range docRow.FindAllStringSubmatch(sec, -1) {
		rows[m[1]] = []string{strings.TrimSpace(m[3]), strings.TrimSpace(m[4]), strings.TrimSpace(m[5])}
	}
	var out []string
	have := map[string]bool{}
	for _, c := range cols {
		have[c.Name] = true
		r, ok := rows[c.Name]
		if !ok {
			out = append(out, fmt.Sprintf("%s: not documented in docs/RESULTS.md's cells table: add `| `%s` | TYPE | %s | %s | %s |`", c.Name, c.Name, c.Unit, c.Better.Arrow(), c.Doc))
			continue
		}
		if r[0] != c.Unit {
			out = append(out, fmt.Sprintf("%s: docs/RESULTS.md says unit %q, the catalogue %q", c.Name, r[0], c.Unit))
		}
		if r[1] != c.Better.Arrow() {
			out = append(out, fmt.Sprintf("%s: docs/RESULTS.md marks %q, the catalogue says %s is better (%s)", c.Name, r[1], c.Better, c.Better.Arrow()))
		}
		if r[2] != c.Doc {
			out = append(out, fmt.Sprintf("%s: docs/RESULTS.md's definition is not the catalogue's Doc:\n\tdoc:       %s\n\tcatalogue: %s", c.Name, r[2], c.Doc))
		}
	}
	for name := range rows {
		if !have[name] {
			out = append(out, fmt.Sprintf("%s: documented in docs/RESULTS.md's cells table, but no column of the catalogue", name))
		}
	}
	return out
}
