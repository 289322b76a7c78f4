package exec

import (
	"encoding/json"
	"strings"
	"testing"
)

// The parsers read whatever a program prints: no input may panic them,
// and every row they make must be one the sinks can store (JSON-encodable,
// an id, exec_extra valid JSON).
func checkRecords(t *testing.T, recs []record) {
	t.Helper()
	seen := map[string]bool{}
	for _, r := range recs {
		if r.id == "" || seen[r.id] {
			t.Fatalf("id %q empty or repeated", r.id)
		}
		seen[r.id] = true
		if _, err := json.Marshal(r.cell); err != nil {
			t.Fatalf("row %s: %v", r.id, err)
		}
		if r.cell.ExecExtra != "" && !json.Valid([]byte(r.cell.ExecExtra)) {
			t.Fatalf("row %s: exec_extra %q", r.id, r.cell.ExecExtra)
		}
		for _, q := range r.reqs {
			if _, err := json.Marshal(q); err != nil {
				t.Fatalf("row %s request: %v", r.id, err)
			}
		}
	}
}

func seed(f *testing.F, parser string) {
	for _, fx := range fixtures {
		if fx.parser == parser || parser == "generic" && strings.HasPrefix(fx.file, "generic") {
			f.Add(readFixture(f, fx.file))
		}
	}
}

func FuzzLlamaBench(f *testing.F) {
	seed(f, parserLlamaBench)
	f.Add([]byte(`{"flash_attn": "auto", "n_prompt": "512", "samples_ns": [1, "x"]}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		recs, _ := parseLlamaBench(b)
		checkRecords(t, recs)
	})
}

func FuzzMLX(f *testing.F) {
	seed(f, parserMLX)
	f.Fuzz(func(t *testing.T, b []byte) {
		recs, _ := parseMLX(b)
		checkRecords(t, recs)
	})
}

func FuzzGeneric(f *testing.F) {
	seed(f, "generic")
	f.Fuzz(func(t *testing.T, b []byte) {
		for _, p := range []string{parserJSON, parserJSONL, parserCSV} {
			recs, _ := parseGeneric(p, b, genericFields)
			checkRecords(t, recs)
		}
	})
}
