package stages_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"cuelang.org/go/cue/ast"
	"cuelang.org/go/cue/parser"
	"cuelang.org/go/cue/token"

	"github.com/benchrun/benchrun/internal/engines"
	"github.com/benchrun/benchrun/internal/loadgen"
	"github.com/benchrun/benchrun/internal/sim"
	"github.com/benchrun/benchrun/internal/sim/simtest"
	"github.com/benchrun/benchrun/pipeline"
	"github.com/benchrun/benchrun/schema"
	"github.com/benchrun/benchrun/stages"
)

// The engines a plan may name are written twice: as the `engine` field's
// enum in the kinds' CUE schemas and as the Go presets. An engine added to
// one and not the other would pass vet and run with the custom preset's
// paths, or have a preset no plan can name.
func TestEngineEnumsInTheSchemasAreTheGoPresets(t *testing.T) {
	reg := pipeline.NewRegistry()
	stages.Builtin(reg)
	want := slices.Sorted(slices.Values(engines.Names()))
	checked := map[string]bool{}
	for _, k := range reg.Schemas() {
		doc, err := schema.Describe(reg.Schemas(), reg.SinkSchemas(), k.Def)
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range doc.Fields {
			if f.Name != "engine" {
				continue
			}
			checked[k.Kind] = true
			got, err := stringEnum(f.Type)
			if err != nil {
				t.Errorf("%s (%s) engine: %q is not an enum of strings: %v", k.Kind, k.Def, f.Type, err)
				continue
			}
			slices.Sort(got)
			if !slices.Equal(got, want) {
				t.Errorf("%s (%s) engine allows %q; internal/engines has descriptors %q", k.Kind, k.Def, got, want)
			}
		}
	}
	// The launch stage is where a plan names its engine; if the field
	// moved, this test must follow it, not pass silently.
	if !checked["launch"] {
		t.Errorf("the launch kind's schema has no engine field (kinds with one: %v)", checked)
	}
}

// stringEnum returns the string literals of a disjunction of them
// (`"a" | "b"`), as `benchrun schema` renders a field's type.
func stringEnum(typ string) ([]string, error) {
	expr, err := parser.ParseExpr("engine", typ)
	if err != nil {
		return nil, err
	}
	var out []string
	var walk func(ast.Expr) error
	walk = func(e ast.Expr) error {
		switch e := e.(type) {
		case *ast.BinaryExpr:
			if e.Op != token.OR {
				return strconv.ErrSyntax
			}
			if err := walk(e.X); err != nil {
				return err
			}
			return walk(e.Y)
		case *ast.UnaryExpr: // a default, *"custom"
			if e.Op != token.MUL {
				return strconv.ErrSyntax
			}
			return walk(e.X)
		case *ast.BasicLit:
			if e.Kind != token.STRING {
				return strconv.ErrSyntax
			}
			s, err := strconv.Unquote(e.Value)
			if err != nil {
				return err
			}
			out = append(out, s)
			return nil
		default:
			return strconv.ErrSyntax
		}
	}
	return out, walk(expr)
}

// Each engine is described twice, on purpose: by its client descriptor
// (internal/engines: the paths, names and shapes benchrun expects) and by
// the simulator persona that imitates it (internal/sim: what it serves),
// which share no code because the simulator is the ground truth the
// client is checked against. These tests hold the two to each other: an
// engine added on one side only, or a path, metric name, owned_by,
// version endpoint, tokenizer dialect or /slots shape changed on one side
// only, fails here.

// personaOf is the simulator persona that imitates engine ("" for none):
// the engine's own name, but benchrun's simulator is the generic one.
func personaOf(engine string) string {
	if engine == engines.Sim.Name {
		return sim.PersonaGeneric
	}
	if sim.ValidPersonality(engine) {
		return engine
	}
	return ""
}

// withoutPersona are the engines the simulator does not imitate, and why.
// An entry here is a known gap, not a licence: an engine with a persona
// must not be listed.
var withoutPersona = map[string]string{
	"custom": "any server benchrun has no preset for: there are no habits to imitate",
	"max":    "Modular's MAX: not simulated yet (metrics on a port of their own)",
	"tgi":    "text-generation-inference: not simulated yet",
}

// notSimulated are the Prometheus names a descriptor reads that no
// persona serves, and why.
var notSimulated = map[string]string{
	"sglang:num_retracted_reqs_total":     "the simulator serves SGLang's retractions as the gauge its builds export",
	"llamacpp:prompt_tokens_cached_total": "newer llama.cpp builds only; the simulator imitates the ones without it",
}

func TestEveryEngineHasASimulatorPersona(t *testing.T) {
	for _, name := range engines.Names() {
		p, why := personaOf(name), withoutPersona[name]
		switch {
		case p == "" && why == "":
			t.Errorf("engine %q (internal/engines) has no simulator persona (internal/sim/persona_*.go) and is not in withoutPersona", name)
		case p != "" && why != "":
			t.Errorf("engine %q has the simulator persona %q but withoutPersona says %q", name, p, why)
		}
	}
	for _, p := range sim.Personalities() {
		found := false
		for _, name := range engines.Names() {
			found = found || personaOf(name) == p
		}
		if !found {
			t.Errorf("simulator persona %q imitates no engine of internal/engines", p)
		}
	}
}

func TestEnginesAgreeWithTheirPersonas(t *testing.T) {
	for _, e := range engines.All() {
		p := personaOf(e.Name)
		if p == "" {
			continue
		}
		t.Run(e.Name, func(t *testing.T) {
			cfg := simtest.DefaultConfigFor(p)
			srv := httptest.NewServer(sim.New(cfg))
			defer srv.Close()
			model := cfg.Models[0]
			get := func(path string) (int, []byte) {
				t.Helper()
				resp, err := srv.Client().Get(srv.URL + path)
				if err != nil {
					t.Fatal(err)
				}
				defer resp.Body.Close()
				b, _ := io.ReadAll(resp.Body)
				return resp.StatusCode, b
			}
			if code, _ := get(e.HealthPath); code != http.StatusOK {
				t.Errorf("health path %s: status %d from the %s persona", e.HealthPath, code, p)
			}
			checkModels(t, e, model, get)
			checkMetrics(t, e, p, get)
			checkSlots(t, e, get)
			checkTokenize(t, e, srv.URL, model)
			checkEmbeddings(t, e, srv.URL, model)
			checkHooks(t, e, srv.URL, model)
			info := loadgen.Discover(context.Background(), &loadgen.Target{BaseURL: srv.URL, Model: model}, "")
			if info.Engine != e.Name || info.Version != sim.DefaultVersion(p) || info.Tokenizer != e.Tokenize {
				t.Errorf("discovery against the %s persona: engine %q, version %q, tokenizer %q; want %q, %q, %q",
					p, info.Engine, info.Version, info.Tokenizer, e.Name, sim.DefaultVersion(p), e.Tokenize)
			}
			if info.MaxModelLen != cfg.MaxModelLen {
				t.Errorf("discovery against the %s persona: context %d (%s), want %d", p, info.MaxModelLen, info.ContextFrom, cfg.MaxModelLen)
			}
		})
	}
}

// checkModels: the models path lists the model, with an owned_by that
// names the engine.
func checkModels(t *testing.T, e engines.Engine, model string, get func(string) (int, []byte)) {
	code, body := get(e.ModelsPath)
	var list struct {
		Data []struct {
			ID      string `json:"id"`
			OwnedBy string `json:"owned_by"`
		} `json:"data"`
	}
	if err := json.Unmarshal(body, &list); code != http.StatusOK || err != nil || len(list.Data) == 0 {
		t.Fatalf("models path %s: status %d, %v: %s", e.ModelsPath, code, err, body)
	}
	m := list.Data[0]
	if !e.Serves(m.ID, model) {
		t.Errorf("models path %s lists %q, which the descriptor does not take for %q", e.ModelsPath, m.ID, model)
	}
	if !slices.Contains(e.OwnedBy, m.OwnedBy) {
		t.Errorf("models path %s says owned_by %q; the descriptor's OwnedBy is %q", e.ModelsPath, m.OwnedBy, e.OwnedBy)
	}
}

var promType = regexp.MustCompile(`(?m)^# TYPE (\S+) (\S+)`)

// checkMetrics: an engine without metrics serves none; one with metrics
// serves, in the current or the legacy spelling, every name its
// descriptor reads, with the type it reads it as, and at least one name
// for each column every engine should serve.
func checkMetrics(t *testing.T, e engines.Engine, persona string, get func(string) (int, []byte)) {
	if e.NoMetrics != "" || e.MetricsPath == "" {
		if code, _ := get("/metrics"); code != http.StatusNotFound {
			t.Errorf("%s has no metrics endpoint, but the %s persona answers /metrics with %d", e.Name, persona, code)
		}
		return
	}
	served := map[string]string{}
	for _, legacy := range []bool{false, true} {
		cfg := simtest.DefaultConfigFor(persona)
		cfg.MetricsLegacyNames = legacy
		srv := httptest.NewServer(sim.New(cfg))
		resp, err := srv.Client().Get(srv.URL + e.MetricsPath)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		srv.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("metrics path %s: status %d", e.MetricsPath, resp.StatusCode)
		}
		for _, m := range promType.FindAllStringSubmatch(string(body), -1) {
			served[m[1]] = m[2]
		}
	}
	m := e.Metrics
	scalars := slices.Concat(m.Running, m.Waiting, m.KV, m.Preempt, m.PreemptGauge, m.PromptTokens, m.GenTokens, m.HitRate,
		[]string{m.CachedApart, m.DecodeSeconds, m.PromptSeconds})
	for _, pair := range m.Prefix {
		scalars = append(scalars, pair[0], pair[1])
	}
	for _, n := range scalars {
		if typ, ok := served[n]; n != "" && notSimulated[n] == "" && (!ok || (typ != "counter" && typ != "gauge")) {
			t.Errorf("%s reads %s as a counter or gauge; the %s persona serves it as %q", e.Name, n, persona, typ)
		}
	}
	for _, n := range slices.Concat(m.TTFT, m.ITL, m.Queue, m.PromptHist, m.GenHist) {
		if typ := served[n]; notSimulated[n] == "" && typ != "histogram" {
			t.Errorf("%s reads %s as a histogram; the %s persona serves it as %q", e.Name, n, persona, typ)
		}
	}
	for _, n := range m.Legacy {
		if !slices.Contains(slices.Concat(scalars, m.TTFT, m.ITL, m.Queue), n) {
			t.Errorf("%s's legacy name %s is not among the names it reads", e.Name, n)
		}
	}
	// The columns every engine should serve (the probe's "not served"
	// note), by any engine's spelling: the generic persona serves vLLM's.
	for col, field := range map[string]func(engines.Metrics) []string{
		"running":    func(m engines.Metrics) []string { return m.Running },
		"waiting":    func(m engines.Metrics) []string { return m.Waiting },
		"prompt":     func(m engines.Metrics) []string { return slices.Concat(m.PromptTokens, m.PromptHist) },
		"generation": func(m engines.Metrics) []string { return slices.Concat(m.GenTokens, m.GenHist) },
	} {
		found := false
		for _, other := range engines.All() {
			for _, n := range field(other.Metrics) {
				_, ok := served[n]
				found = found || ok
			}
		}
		if !found {
			t.Errorf("the %s persona serves no %s metric any engine descriptor names", persona, col)
		}
	}
}

// checkSlots: the slots path lists the slots in the shape the probe
// reads (internal/telemetry/prom_slots.go): each with n_ctx and
// is_processing.
func checkSlots(t *testing.T, e engines.Engine, get func(string) (int, []byte)) {
	if e.SlotsPath == "" {
		return
	}
	code, body := get(e.SlotsPath)
	var slots []map[string]any
	if err := json.Unmarshal(body, &slots); code != http.StatusOK || err != nil || len(slots) == 0 {
		t.Fatalf("slots path %s: status %d, %v: %s", e.SlotsPath, code, err, body)
	}
	for i, s := range slots {
		nctx, ok1 := s["n_ctx"].(float64)
		_, ok2 := s["is_processing"].(bool)
		if !ok1 || nctx <= 0 || !ok2 {
			t.Errorf("slot %d of %s has no n_ctx or is_processing: %v", i, e.SlotsPath, s)
		}
	}
}

// checkTokenize: the persona answers /tokenize in the descriptor's
// dialect, or has none where the descriptor says so.
func checkTokenize(t *testing.T, e engines.Engine, base, model string) {
	var body any
	switch e.Tokenize {
	case engines.DialectPrompt:
		body = map[string]any{"model": model, "prompt": "the of and"}
	case engines.DialectContent:
		body = map[string]any{"content": "the of and"}
	case engines.DialectNone:
		body = map[string]any{"model": model, "prompt": "the of and"}
	default:
		return
	}
	b, _ := json.Marshal(body)
	resp, err := http.Post(base+"/tokenize", "application/json", bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out struct {
		Tokens []any `json:"tokens"`
	}
	err = json.NewDecoder(resp.Body).Decode(&out)
	ok := resp.StatusCode == http.StatusOK && err == nil && len(out.Tokens) > 0
	if ok != (e.Tokenize != engines.DialectNone) {
		t.Errorf("/tokenize in the %q dialect: status %d, %d tokens (%v)", e.Tokenize, resp.StatusCode, len(out.Tokens), err)
	}
}

// checkEmbeddings: an engine that embeds only when started with its
// EmbeddingsArgs refuses by default, naming the first of them.
func checkEmbeddings(t *testing.T, e engines.Engine, base, model string) {
	if len(e.EmbeddingsArgs) == 0 {
		return
	}
	b, _ := json.Marshal(map[string]any{"model": model, "input": "the of and"})
	resp, err := http.Post(base+"/v1/embeddings", "application/json", bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	msg, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusNotImplemented || !strings.Contains(string(msg), e.EmbeddingsArgs[0]) {
		t.Errorf("/v1/embeddings without %s: status %d, %s", e.EmbeddingsArgs[0], resp.StatusCode, msg)
	}
}

// checkHooks: the cache reset and the profiler the descriptor names are
// served by the persona (a 2xx for each call the sweep's reset_cache and
// profile make), and an engine with none is said to have none.
func checkHooks(t *testing.T, e engines.Engine, base, model string) {
	target := &loadgen.Target{BaseURL: base, Model: model}
	lines, err := loadgen.ResetCache(context.Background(), target, e)
	var none *loadgen.ErrNoHook
	switch {
	case e.ResetCachePath == "" && !e.ResetSlots:
		if !errors.As(err, &none) {
			t.Errorf("%s has no cache reset, but ResetCache said %v %v", e.Name, lines, err)
		}
	case err != nil:
		t.Errorf("cache reset against the %s persona: %v (%v)", e.Name, err, lines)
	}
	for _, start := range []bool{true, false} {
		line, err := loadgen.Profile(context.Background(), target, e, start)
		if e.ProfileStartPath == "" {
			if !errors.As(err, &none) {
				t.Errorf("%s has no profiler, but Profile said %q %v", e.Name, line, err)
			}
			continue
		}
		if err != nil {
			t.Errorf("profiler against the %s persona: %v (%s)", e.Name, err, line)
		}
	}
}
