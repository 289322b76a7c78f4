package pipeline

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	gguf "github.com/gpustack/gguf-parser-go"

	"github.com/benchrun/benchrun/schema"
)

// ModelFile is what vet can learn about the plan's model.file without
// running anything.
type ModelFile struct {
	// Path is the file as benchrun reads it (relative names are relative
	// to the plan's folder).
	Path   string
	Exists bool
	// ContextLength is a GGUF file's own <arch>.context_length (the
	// training context; a server may give each request less, never more
	// without rope scaling). 0 when unknown.
	ContextLength int
	// Quant is a GGUF file's quantization as its header gives it (F32,
	// Q4_K_M); "" when unknown.
	Quant string
}

// ContextUser is implemented by measuring stages that can say which of
// their cells cannot fit a context length, for vet's warnings.
type ContextUser interface {
	ContextWarnings(p *schema.Plan, contextLength int, source string) []schema.Error
}

// InspectModelFile reads the plan's model.file: whether it exists and,
// for GGUF, its context length (the header only, never the weights).
func InspectModelFile(p *schema.Plan) (ModelFile, bool) {
	if p == nil || p.Model.File == "" {
		return ModelFile{}, false
	}
	path := p.Model.File
	if !filepath.IsAbs(path) && p.Path != "" {
		path = filepath.Join(filepath.Dir(p.Path), path)
	}
	mf := ModelFile{Path: path}
	st, err := os.Stat(path)
	if err != nil || st.IsDir() {
		return mf, true
	}
	mf.Exists = true
	if strings.EqualFold(filepath.Ext(path), ".gguf") {
		if f, err := gguf.ParseGGUFFile(path); err == nil {
			mf.ContextLength = int(f.Architecture().MaximumContextLength)
			mf.Quant = f.Metadata().FileTypeDescriptor
		}
	}
	return mf, true
}

// modelFileWarnings are vet's warnings about model.file: a file that is
// not there (a launch stage reading it would fail; it may live on a
// provisioned machine, so this is a warning) and cells that cannot fit
// the GGUF's own context.
func modelFileWarnings(g *Graph) schema.Errors {
	mf, ok := InspectModelFile(g.Plan)
	if !ok {
		return nil
	}
	var ws schema.Errors
	if !mf.Exists {
		ws = append(ws, schema.Error{Pos: g.Plan.PosOf("model.file"), Msg: fmt.Sprintf("model.file: %s does not exist (relative paths are relative to the plan's folder; give the right one with -t if the plan has a tag for it)", mf.Path)})
		return ws
	}
	if mf.ContextLength <= 0 {
		return nil
	}
	for _, n := range g.Nodes {
		if cu, ok := n.Stage.(ContextUser); ok {
			ws = append(ws, cu.ContextWarnings(g.Plan, mf.ContextLength, fmt.Sprintf("the context_length of %s", filepath.Base(mf.Path)))...)
		}
	}
	return ws
}
