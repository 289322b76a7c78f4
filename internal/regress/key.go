package regress

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/benchrun/benchrun/internal/results"
)

// Key says which cells of two runs are the same measurement: the same
// plan, stage and cell id (isl:osl × load point), against the same
// endpoint of the same model file (digest), served by the same engine
// at the same version, on the same hardware, with the same variant
// metadata. Two cells with equal keys may be compared; any other pair
// measures something else.
type Key struct {
	Plan          string `json:"plan"`
	Stage         string `json:"stage"`
	CellID        string `json:"cell_id"`
	Endpoint      string `json:"endpoint"`
	ModelDigest   string `json:"model_digest"`
	Engine        string `json:"engine"`
	EngineVersion string `json:"engine_version"`
	Hardware      string `json:"hardware"`
	// Metadata is the row's metadata map in one canonical form (JSON with
	// sorted keys; "" for none): Meta reads it back, and MetaString
	// writes it as k=v;k=v for people.
	Metadata string `json:"metadata"`
}

// KeyFields names the parts of a Key, as Diff and Without name them.
var KeyFields = []string{"plan", "stage", "cell_id", "endpoint", "model_digest", "engine", "engine_version", "hardware", "metadata"}

// KeyOf is the key of a cell row. The repeats of one point (a sweep's
// `repeats: N`, rows with Repeat 1..N and cell ids ending in /repN) share
// one key: the /repN suffix is not part of it, so the checks read a run's
// repeats as samples of the one point (PointID).
func KeyOf(c results.Cell) Key {
	return Key{
		Plan: c.Plan, Stage: c.Stage, CellID: PointID(c), Endpoint: c.Endpoint,
		ModelDigest: c.ModelDigest, Engine: c.Engine, EngineVersion: c.EngineVersion,
		Hardware: c.Hardware, Metadata: canonicalMeta(c.Metadata),
	}
}

// PointID is the cell id of a row less its repeat: "sweep/64:32/c4/rep2"
// (Repeat 2) is "sweep/64:32/c4"; a row without repeats (Repeat 0) keeps
// its id whole.
func PointID(c results.Cell) string {
	if c.Repeat > 0 {
		if id, ok := strings.CutSuffix(c.CellID, fmt.Sprintf("/rep%d", c.Repeat)); ok {
			return id
		}
	}
	return c.CellID
}

func canonicalMeta(m map[string]string) string {
	if len(m) == 0 {
		return ""
	}
	b, _ := json.Marshal(m) // encoding/json sorts map keys
	return string(b)
}

// Meta is the key's metadata map (nil for none).
func (k Key) Meta() map[string]string {
	if k.Metadata == "" {
		return nil
	}
	var m map[string]string
	_ = json.Unmarshal([]byte(k.Metadata), &m)
	return m
}

// MetaString is the metadata as k=v;k=v, sorted by key (as the CSV
// writes it).
func (k Key) MetaString() string {
	m := k.Meta()
	var parts []string
	for _, name := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, name+"="+m[name])
	}
	return strings.Join(parts, ";")
}

// String names the cell and what it ran on, for people.
func (k Key) String() string {
	parts := []string{k.CellID}
	if k.Plan != "" {
		parts = append(parts, "plan "+k.Plan)
	}
	if k.Engine != "" || k.EngineVersion != "" {
		parts = append(parts, strings.TrimSpace(k.Engine+" "+k.EngineVersion))
	}
	if k.Endpoint != "" {
		parts = append(parts, k.Endpoint)
	}
	if m := k.MetaString(); m != "" {
		parts = append(parts, m)
	}
	return strings.Join(parts, " · ")
}

// Without returns the key with the named parts blanked, so cells that
// differ only there match: a field of KeyFields, or any other name as a
// metadata key (Without("engine_version") compares two engine versions;
// Without("quant") two quantizations).
func (k Key) Without(names ...string) Key {
	var meta map[string]string
	for _, n := range names {
		switch n {
		case "plan":
			k.Plan = ""
		case "stage":
			k.Stage = ""
		case "cell_id":
			k.CellID = ""
		case "endpoint":
			k.Endpoint = ""
		case "model_digest":
			k.ModelDigest = ""
		case "engine":
			k.Engine = ""
		case "engine_version":
			k.EngineVersion = ""
		case "hardware":
			k.Hardware = ""
		case "metadata":
			k.Metadata, meta = "", nil
		default:
			if meta == nil {
				meta = k.Meta()
			}
			// metadata.NAME names a metadata key even where NAME is a
			// column's (metadata.engine).
			delete(meta, strings.TrimPrefix(n, "metadata."))
			k.Metadata = canonicalMeta(meta)
		}
	}
	return k
}

// FieldDiff is one part in which two keys differ: Field is a name of
// KeyFields, or metadata.NAME for one metadata entry ("" where a side
// lacks it).
type FieldDiff struct {
	Field string `json:"field"`
	A     string `json:"a"`
	B     string `json:"b"`
}

func (d FieldDiff) String() string {
	return fmt.Sprintf("%s differs (%s vs %s)", d.Field, orNone(d.A), orNone(d.B))
}

func orNone(s string) string {
	if s == "" {
		return `""`
	}
	return s
}

// Diff lists the parts in which k and o differ, in KeyFields order, a
// metadata difference one entry per metadata key.
func (k Key) Diff(o Key) []FieldDiff {
	var out []FieldDiff
	add := func(field, a, b string) {
		if a != b {
			out = append(out, FieldDiff{field, a, b})
		}
	}
	add("plan", k.Plan, o.Plan)
	add("stage", k.Stage, o.Stage)
	add("cell_id", k.CellID, o.CellID)
	add("endpoint", k.Endpoint, o.Endpoint)
	add("model_digest", k.ModelDigest, o.ModelDigest)
	add("engine", k.Engine, o.Engine)
	add("engine_version", k.EngineVersion, o.EngineVersion)
	add("hardware", k.Hardware, o.Hardware)
	if k.Metadata != o.Metadata {
		a, b := k.Meta(), o.Meta()
		names := slices.Sorted(maps.Keys(a))
		for n := range b {
			if _, ok := a[n]; !ok {
				names = append(names, n)
			}
		}
		slices.Sort(names)
		for _, n := range names {
			add("metadata."+n, a[n], b[n])
		}
	}
	return out
}

// Nearest finds among keys the one closest to k: the same cell id first,
// then the fewest differing parts. ok is false when keys is empty.
func Nearest(k Key, keys []Key) (best Key, diffs []FieldDiff, ok bool) {
	bestScore := 0
	for _, c := range keys {
		d := k.Diff(c)
		if s := diffScore(d); !ok || s < bestScore {
			best, diffs, bestScore, ok = c, d, s, true
		}
	}
	return best, diffs, ok
}

// Explain says why no cell of news matches a cell of olds, from the
// nearest pair: "no cell matches: engine_version differs (b6500 vs
// b6600)". It is "" when some cell matches, or a side has no cells.
func Explain(olds, news []Key) string {
	oldSet := map[Key]bool{}
	for _, k := range olds {
		oldSet[k] = true
	}
	for _, k := range news {
		if oldSet[k] {
			return ""
		}
	}
	var diffs []FieldDiff
	found := false
	for _, k := range news {
		_, d, ok := Nearest(k, olds)
		if ok && (!found || diffScore(d) < diffScore(diffs)) {
			diffs, found = d, true
		}
	}
	if !found {
		return ""
	}
	var why []string
	for _, d := range diffs {
		// Old first, as the user gave them.
		why = append(why, FieldDiff{d.Field, d.B, d.A}.String())
	}
	return "no cell matches: " + strings.Join(why, ", ")
}

// diffScore ranks how far apart two keys are: each differing part counts
// one, a different cell id a hundred (another cell is never the nearest
// explanation while the same cell exists under other settings).
func diffScore(ds []FieldDiff) int {
	s := len(ds)
	if slices.ContainsFunc(ds, func(d FieldDiff) bool { return d.Field == "cell_id" }) {
		s += 100
	}
	return s
}
