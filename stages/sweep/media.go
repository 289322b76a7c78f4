package sweep

import (
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/benchrun/benchrun/internal/loadgen"
	"github.com/benchrun/benchrun/internal/results"
	"github.com/benchrun/benchrun/internal/stats"
	"github.com/benchrun/benchrun/pipeline"
	"github.com/benchrun/benchrun/stages/internal/client"
)

// variant is what an embeddings or media sweep varies beside the cell
// and the ladder: the batch, the images and their size, the audio length.
type variant struct {
	batch  int
	images int
	res    string
	audio  float64
	// set says the sweep varies it, so the cell id names it.
	batchSet, imagesSet bool
	// reasoning is the reasoning axis's entry (reasoning.go).
	reasoning client.Reasoning
}

// variants are the sweep's variants in plan order (one zero variant
// when it has none).
func (s *Stage) variants() []variant { return s.withReasoning(s.mediaVariants()) }

// mediaVariants are the embeddings and media variants.
func (s *Stage) mediaVariants() []variant {
	c := s.cfg
	switch {
	case c.Endpoint == "transcriptions":
		out := make([]variant, len(c.AudioSeconds))
		for i, a := range c.AudioSeconds {
			out[i] = variant{audio: a}
		}
		return out
	case len(c.Batch) > 0:
		out := make([]variant, len(c.Batch))
		for i, b := range c.Batch {
			out[i] = variant{batch: b, batchSet: true}
		}
		return out
	case len(c.Images) > 0:
		res := c.ImageResolution
		if len(res) == 0 {
			res = []string{"512x512"}
		}
		var out []variant
		for _, n := range c.Images {
			if n == 0 {
				// No image has no size: one point, not one per size.
				out = append(out, variant{imagesSet: true})
				continue
			}
			for _, r := range res {
				out = append(out, variant{images: n, res: r, imagesSet: true})
			}
		}
		return out
	}
	return []variant{{}}
}

// idSuffix joins the cell id: /b8, /img4@512x512.
func (v variant) idSuffix() string {
	switch {
	case v.batchSet:
		return fmt.Sprintf("/b%d", v.batch)
	case v.imagesSet && v.images == 0:
		return "/img0"
	case v.imagesSet:
		return fmt.Sprintf("/img%d@%s", v.images, v.res)
	}
	return ""
}

func (v variant) label() string {
	switch {
	case v.batchSet:
		return fmt.Sprintf(" batch=%d", v.batch)
	case v.imagesSet && v.images == 0:
		return " images=0"
	case v.imagesSet:
		return fmt.Sprintf(" images=%d@%s", v.images, v.res)
	}
	return ""
}

// audioLabel names a transcription point's audio: audio30s.
func audioLabel(secs float64) string {
	return "audio" + strconv.FormatFloat(secs, 'g', -1, 64) + "s"
}

// validateMedia checks the embeddings and media fields against the
// endpoint they belong to.
func (s *Stage) validateMedia(bad func([]string, string, ...any)) {
	c := s.cfg
	only := func(field, endpoint string, set bool) {
		if set && c.Endpoint != endpoint {
			bad([]string{field}, "applies to endpoint %q only, not %q", endpoint, c.Endpoint)
		}
	}
	if len(c.Batch) > 0 && c.Endpoint != "embeddings" && c.Endpoint != "rerank" {
		bad([]string{"batch"}, "applies to endpoint \"embeddings\" or \"rerank\" only, not %q", c.Endpoint)
	}
	s.validateRerank(bad)
	only("dimensions", "embeddings", c.Dimensions > 0)
	only("images", "chat", len(c.Images) > 0)
	only("image_resolution", "chat", len(c.ImageResolution) > 0)
	only("audio_seconds", "transcriptions", len(c.AudioSeconds) > 0)
	if len(c.ImageResolution) > 0 && len(c.Images) == 0 {
		bad([]string{"image_resolution"}, "sizes images, but images gives none per request")
	}
	for i, r := range c.ImageResolution {
		if _, _, err := loadgen.ParseResolution(r); err != nil {
			bad([]string{"image_resolution", strconv.Itoa(i)}, "%v", err)
		}
	}
	if c.Endpoint == "transcriptions" && len(c.AudioSeconds) == 0 {
		bad([]string{"audio_seconds"}, "a transcriptions sweep needs audio lengths: audio_seconds: [5, 30, 120]")
	}
}

// mediaKit is what a point's requests carry beyond their prompts.
type mediaKit struct {
	v      variant
	rerank bool     // the first of a request's documents is its query too
	images []string // a pool of distinct data URIs
	audio  [][]byte // a pool of distinct WAV files of v.audio seconds
	refs   map[string][]float32
}

// imagePool is how many distinct images a point cycles through: enough
// that a server caching images by content does not serve one pass from
// its cache, few enough that encoding them stays cheap.
const imagePool = 32

func (s *Stage) newMediaKit(p point, refs map[string][]float32) (*mediaKit, error) {
	k := &mediaKit{v: p.v, refs: refs, rerank: s.cfg.Endpoint == "rerank"}
	if p.v.images > 0 {
		w, h, err := loadgen.ParseResolution(p.v.res)
		if err != nil {
			return nil, err
		}
		for i := 0; i < imagePool; i++ {
			k.images = append(k.images, loadgen.ImageDataURI(w, h, uint64(s.cfg.Seed)<<32^uint64(w*h)<<8^uint64(i)))
		}
	}
	if p.v.audio > 0 {
		for i := 0; i < 4; i++ {
			k.audio = append(k.audio, loadgen.WAV(p.v.audio, uint64(s.cfg.Seed)<<8^uint64(i)))
		}
	}
	return k, nil
}

// request builds request i of a pass; prompt(j) is the pass's j-th prompt.
func (k *mediaKit) request(i int, prompt func(int) string, base loadgen.Request) loadgen.Request {
	req := base
	switch {
	case k.v.batch > 0:
		req.Inputs = make([]string, k.v.batch)
		for j := range req.Inputs {
			req.Inputs[j] = prompt(i*k.v.batch + j)
		}
		if k.rerank {
			req.Prompt = req.Inputs[0]
		}
	case k.v.audio > 0:
		req.Audio, req.AudioSeconds = k.audio[i%len(k.audio)], k.v.audio
		return req
	default:
		req.Prompt = prompt(i)
	}
	if k.v.images > 0 {
		for j := 0; j < k.v.images; j++ {
			req.Images = append(req.Images, k.images[(i*k.v.images+j)%len(k.images)])
		}
	}
	if k.refs != nil {
		ins := req.Inputs
		if ins == nil {
			ins = []string{req.Prompt}
		}
		req.References = make([][]float32, len(ins))
		for j, in := range ins {
			req.References[j] = k.refs[in]
		}
	}
	return req
}

// fillMedia adds what embeddings and media points measure to a row that
// fillRow filled (docs/METRICS.md, "Embeddings" and "Media").
func fillMedia(row *results.Cell, m *mediaTally, window time.Duration, hasRefs bool) {
	in, vectors, audio, docs, dim, cos, rtf := m.in, m.vectors, m.audio, m.docs, m.dim, m.cos, m.rtf
	w := window.Seconds()
	if w > 0 {
		row.InputTokS = results.Some(in / w)
	}
	switch row.Endpoint {
	case "embeddings":
		if w > 0 {
			row.EmbeddingsS = results.Some(vectors / w)
		}
		row.Dimensions = results.SomeIf(dim > 0, int64(dim))
		if len(cos) > 0 {
			s := stats.Summarize(cos)
			row.CosineMin, row.CosineMean = results.Some(minOf(cos)), results.Some(s.Mean)
		}
		if vectors > 0 {
			// Per input, so it reads against isl whatever the batch.
			row.EffectiveISL = results.Some(in / vectors)
		}
		if hasRefs && row.Completed > 0 && len(cos) < int(vectors) {
			row.Notes = joinNotes(row.Notes, fmt.Sprintf("%d of %d vectors had a reference vector (cosine over those only)", len(cos), int(vectors)))
		}
	case "rerank":
		fillRerank(row, in, docs, w)
	case "transcriptions":
		if w > 0 {
			row.AudioSPerS = results.Some(audio / w)
		}
		if len(rtf) > 0 {
			row.RealTimeFactor = results.Some(stats.Mean(rtf))
		}
	}
	if row.Images > 0 && row.EffectiveISL != nil && row.Completed > 0 {
		row.Notes = joinNotes(row.Notes, fmt.Sprintf("%d images of %s per request; effective isl %.1f counts their tokens as the server did (%.1f beyond isl %d)",
			row.Images, row.ImageResolution, *row.EffectiveISL, *row.EffectiveISL-float64(row.ISL), row.ISL))
	}
	if row.Status != results.StatusOK && row.Endpoint == "embeddings" {
		row.Reason = joinNotes(row.Reason, m.hint)
	}
}

func minOf(xs []float64) float64 {
	m := xs[0]
	for _, x := range xs {
		m = min(m, x)
	}
	return m
}

// loadReferences reads the dataset's reference vectors by text (nil when
// the dataset is not JSONL or no line has the field).
func (s *Stage) loadReferences(env *pipeline.Env) (map[string][]float32, error) {
	d := s.cfg.Dataset
	if d == nil || s.cfg.Endpoint != "embeddings" || d.Vector == "" {
		return nil, nil
	}
	if d.Format != loadgen.FormatJSONL && !(d.Format == "" && strings.HasSuffix(d.Path, ".jsonl")) {
		return nil, nil
	}
	path := d.Path
	if !filepath.IsAbs(path) && env.Plan != nil && env.Plan.Path != "" {
		path = filepath.Join(filepath.Dir(env.Plan.Path), path)
	}
	field := d.Field
	if field == "" {
		field = "prompt"
	}
	return loadgen.LoadReferenceVectors(path, field, d.Vector)
}
