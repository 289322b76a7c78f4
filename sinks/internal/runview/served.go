package runview

import (
	"path"
	"slices"
	"strings"

	"github.com/benchrun/benchrun/internal/results"
)

// ServedFacts are a report header's facts on the model file served and its
// digest, from what the rows say was served, the plan's model.file only
// where they say nothing of it. The run record's file, quantization and
// digest are the plan's (model.file, as its @tag default or a -t gave
// it), while a launch stage's cmd may serve another file (-m other.gguf)
// and a program report its own: labelling such a run "Q4_K_M.gguf,
// Q4_K_M" put the plan's file on the rows of another.
//
// What a row says of the file: a model column that names a GGUF file
// (a server's model id, "models/other.gguf"), a program's row whose model
// is none of the plan's names (llama-bench's model_filename, its
// model_type beside it), and a model_digest other than the plan file's.
// A sweep's model column is the name it asked the server for (an alias),
// which says nothing of the file, so rows of aliases keep the plan's label.
// The report's header and the SiYuan document's summary both say what was
// served from it (ServedModel alone is the plan's file, whatever the rows
// say).
func ServedFacts(r results.Run, cells []results.Cell) [][2]string {
	var facts [][2]string
	planFile := ServedModel(r)
	served, digests, other := rowsServed(r, cells)
	if other {
		facts = append(facts, [2]string{"served", strings.Join(served, "; ")})
		if planFile != "" {
			facts = append(facts, [2]string{"plan's model.file", planFile + " (not what the rows say was served)"})
		}
	} else if planFile != "" {
		facts = append(facts, [2]string{"served", planFile})
	}
	// The digest the rows carry is the one measured against; the run
	// record's is the plan file's, the same unless the rows say otherwise.
	digest := strings.Join(digests, ", ")
	if digest == "" {
		digest = r.ModelDigest
	}
	if other && digest != "" && digest == r.ModelDigest {
		// The rows name another file but carry the plan file's digest
		// (the run stamps the digest of model.file on every row): it is
		// not the served file's.
		digest += " (the plan's model.file's)"
	}
	if digest != "" {
		facts = append(facts, [2]string{"model digest", digest})
	}
	return facts
}

// rowsServed is what the rows say was served: a label per model file or
// digest they name, in the order met, their distinct digests, and
// whether any of it is other than the plan's model.file (other: false
// when the rows agree with the plan or say nothing of the file).
func rowsServed(r results.Run, cells []results.Cell) (served, digests []string, other bool) {
	planNames := []string{r.Model}
	if r.ModelFile != "" {
		planNames = append(planNames, r.ModelFile, ggufStem(r.ModelFile))
	}
	add := func(xs []string, x string) []string {
		if x == "" || slices.Contains(xs, x) {
			return xs
		}
		return append(xs, x)
	}
	for _, c := range cells {
		digests = add(digests, c.ModelDigest)
		var label string
		switch file := path.Base(strings.ReplaceAll(c.Model, `\`, "/")); {
		case c.Model != "" && strings.EqualFold(path.Ext(file), ".gguf"):
			// A GGUF named by the row: the plan's file, or another.
			if r.ModelFile == "" || !strings.EqualFold(file, r.ModelFile) {
				label, other = file, true
			}
		case c.Program != "" && c.Model != "" && !slices.Contains(planNames, c.Model):
			label, other = c.Model, true
			if c.ModelType != "" {
				label += ", " + c.ModelType
			}
		}
		if c.ModelDigest != "" && r.ModelDigest != "" && c.ModelDigest != r.ModelDigest {
			other = true
			if label == "" {
				label = strings.TrimPrefix(c.Model+", model_digest "+c.ModelDigest, ", ")
			}
		}
		served = add(served, label)
	}
	if other && len(served) == 0 {
		served = []string{"unknown"}
	}
	return served, digests, other
}

// ggufStem is a model file's name less its .gguf, as a program names it
// (stages/exec: llama-bench's model_filename).
func ggufStem(file string) string {
	if ext := path.Ext(file); strings.EqualFold(ext, ".gguf") {
		return strings.TrimSuffix(file, ext)
	}
	return file
}
