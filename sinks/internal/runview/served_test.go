package runview

import (
	"slices"
	"testing"

	"github.com/benchrun/benchrun/internal/results"
)

// TestServedFacts: the header's served model and digest come from what
// the rows say was served, the plan's model.file only where they say
// nothing of the file.
func TestServedFacts(t *testing.T) {
	plan := results.Run{Model: "llama-3.2-1b", ModelFile: "Llama-3.2-1B-Instruct-Q4_K_M.gguf", ModelQuant: "Q4_K_M", ModelDigest: "sha256:aaaa"}
	noFile := results.Run{Model: "llama-3.2-1b"}
	sweep := func(model, digest string) results.Cell {
		return results.Cell{Stage: "sweep", Model: model, ModelDigest: digest}
	}
	program := func(model, modelType string) results.Cell {
		return results.Cell{Stage: "bench", Program: "llama-bench", Model: model, ModelType: modelType, ModelDigest: "sha256:aaaa"}
	}
	for _, tc := range []struct {
		name  string
		run   results.Run
		cells []results.Cell
		want  [][2]string
	}{
		{"rows of the served alias say nothing of the file", plan, []results.Cell{sweep("llama-3.2-1b", "sha256:aaaa")},
			[][2]string{{"served", "Llama-3.2-1B-Instruct-Q4_K_M.gguf, Q4_K_M"}, {"model digest", "sha256:aaaa"}}},
		{"no rows", plan, nil,
			[][2]string{{"served", "Llama-3.2-1B-Instruct-Q4_K_M.gguf, Q4_K_M"}, {"model digest", "sha256:aaaa"}}},
		{"rows name another GGUF (-m in the launch cmd)", plan, []results.Cell{sweep("models/Llama-3.2-1B-Instruct-Q8_0.gguf", "sha256:aaaa")},
			[][2]string{
				{"served", "Llama-3.2-1B-Instruct-Q8_0.gguf"},
				{"plan's model.file", "Llama-3.2-1B-Instruct-Q4_K_M.gguf, Q4_K_M (not what the rows say was served)"},
				{"model digest", "sha256:aaaa (the plan's model.file's)"},
			}},
		{"rows name the plan's own file", plan, []results.Cell{sweep("/m/Llama-3.2-1B-Instruct-Q4_K_M.gguf", "sha256:aaaa")},
			[][2]string{{"served", "Llama-3.2-1B-Instruct-Q4_K_M.gguf, Q4_K_M"}, {"model digest", "sha256:aaaa"}}},
		{"a program reports another model", plan, []results.Cell{program("Llama-3.2-1B-Instruct-Q8_0", "llama 1B Q8_0"), program("Llama-3.2-1B-Instruct-Q8_0", "llama 1B Q8_0")},
			[][2]string{
				{"served", "Llama-3.2-1B-Instruct-Q8_0, llama 1B Q8_0"},
				{"plan's model.file", "Llama-3.2-1B-Instruct-Q4_K_M.gguf, Q4_K_M (not what the rows say was served)"},
				{"model digest", "sha256:aaaa (the plan's model.file's)"},
			}},
		{"a program reports the plan's file", plan, []results.Cell{program("Llama-3.2-1B-Instruct-Q4_K_M", "llama 1B Q4_K - Medium")},
			[][2]string{{"served", "Llama-3.2-1B-Instruct-Q4_K_M.gguf, Q4_K_M"}, {"model digest", "sha256:aaaa"}}},
		{"the rows' digest is another file's", plan, []results.Cell{sweep("llama-3.2-1b", "sha256:bbbb")},
			[][2]string{
				{"served", "llama-3.2-1b, model_digest sha256:bbbb"},
				{"plan's model.file", "Llama-3.2-1B-Instruct-Q4_K_M.gguf, Q4_K_M (not what the rows say was served)"},
				{"model digest", "sha256:bbbb"},
			}},
		{"two files, in the order met", plan, []results.Cell{sweep("a.gguf", ""), sweep("b.GGUF", ""), sweep("a.gguf", "")},
			[][2]string{
				{"served", "a.gguf; b.GGUF"},
				{"plan's model.file", "Llama-3.2-1B-Instruct-Q4_K_M.gguf, Q4_K_M (not what the rows say was served)"},
				{"model digest", "sha256:aaaa (the plan's model.file's)"},
			}},
		{"no model.file in the plan, a GGUF in the rows", noFile, []results.Cell{sweep("other.gguf", "")},
			[][2]string{{"served", "other.gguf"}}},
		{"no model.file and rows of an alias", noFile, []results.Cell{sweep("llama-3.2-1b", "")}, nil},
	} {
		if got := ServedFacts(tc.run, tc.cells); !slices.Equal(got, tc.want) {
			t.Errorf("%s:\n got %q\nwant %q", tc.name, got, tc.want)
		}
	}
}
