package results_test

import (
	"os"
	"testing"

	"github.com/benchrun/benchrun/internal/results"
	"github.com/benchrun/benchrun/internal/results/resultstest"
)

// TestCatalogueAgreesWithDoc holds docs/RESULTS.md's cells table to the
// catalogue: each column's unit, direction and definition, both ways.
func TestCatalogueAgreesWithDoc(t *testing.T) {
	b, err := os.ReadFile("../../docs/RESULTS.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range resultstest.DocProblems(string(b), results.Columns()) {
		t.Error(p)
	}
}
