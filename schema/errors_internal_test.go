package schema

import (
	"testing"

	"cuelang.org/go/cue"
)

// TestPlainerListLengths: CUE's "incompatible list lengths (A and B)"
// becomes "the list has A elements; it needs at least B" only when A is
// the smaller, compared as numbers (10 and 4 once read as 10 < 4).
func TestPlainerListLengths(t *testing.T) {
	for in, want := range map[string]string{
		"x: incompatible list lengths (3 and 4)":  "x: the list has 3 elements; it needs at least 4",
		"x: incompatible list lengths (10 and 4)": "x: incompatible list lengths (10 and 4)",
		"x: incompatible list lengths (9 and 10)": "x: the list has 9 elements; it needs at least 10",
	} {
		if got := plainer("x", in); got != want {
			t.Errorf("plainer(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestListLengthErrorYieldsToItsElement: a list whose element is wrong is
// reported at the element, not also as a list of another length.
func TestListLengthErrorYieldsToItsElement(t *testing.T) {
	errs := fixErrors([]pathError{
		{path: "stages.s.cells", Error: Error{Msg: "stages.s.cells: incompatible list lengths (3 and 4)"}},
		{path: "stages.s.cells.1.isl", Error: Error{Msg: `stages.s.cells.1.isl: conflicting values "x" and int (mismatched types string and int)`}},
	}, cue.Value{}, cue.Value{}, "plan.cue")
	for _, e := range errs {
		if e.path == "stages.s.cells" {
			t.Errorf("the list's length error stayed beside its element's: %v", errs)
		}
	}
	if len(errs) != 1 {
		t.Errorf("%d errors, want the element's one: %v", len(errs), errs)
	}
}
