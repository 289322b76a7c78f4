package resultstest

import (
	"sync"

	"github.com/benchrun/benchrun/internal/results"
)

// NullableColumns lists the cell columns that can be null, in column
// order: the metrics that a cell can fail to measure. The outputs' null
// round-trip tests write and read back each of them.
func NullableColumns() []string { return nullable() }

var nullable = sync.OnceValue(func() []string {
	var out []string
	for _, c := range results.Columns() {
		if c.Nullable {
			out = append(out, c.Name)
		}
	}
	return out
})

// IsNullable says whether a cell column can be null.
func IsNullable(column string) bool {
	for _, c := range nullable() {
		if c == column {
			return true
		}
	}
	return false
}
