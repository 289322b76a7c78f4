package loadgen

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/benchrun/benchrun/internal/engines"
	"github.com/benchrun/benchrun/internal/httpsafe"
)

// Tokenizer dialects: how a server's tokenizer endpoint wants to be asked
// (engines.Dialect*, which each engine's descriptor names).
const (
	DialectPrompt  = engines.DialectPrompt
	DialectContent = engines.DialectContent
	DialectNone    = engines.DialectNone
)

// ServerInfo is what a server says about itself before it is measured:
// which engine it is, its version, and the context a request must fit.
// Unknown values are "" and 0, never a guess.
type ServerInfo struct {
	Engine  string
	Version string
	// MaxModelLen is the context (prompt + output tokens) one request may
	// use: vLLM's max_model_len, llama-server's per-slot n_ctx, Ollama's
	// num_ctx capped by the model's context_length. 0: unknown.
	MaxModelLen int
	// ContextFrom says where MaxModelLen came from ("GET /props
	// default_generation_settings.n_ctx", ...), for the notes.
	ContextFrom string
	// Tokenizer is the tokenizer dialect to calibrate with (Dialect*); ""
	// means not decided yet (calibration tries the dialects).
	Tokenizer string
}

// VersionOrUnknown is the version for a row: "unknown" rather than "".
func (si ServerInfo) VersionOrUnknown() string {
	if si.Version == "" {
		return "unknown"
	}
	return si.Version
}

// Discover asks the target what it is, by the endpoints each engine
// documents (engine, when known from the plan, narrows the questions):
// GET /v1/models (owned_by names the engine, max_model_len or meta.n_ctx
// its context), then each engine's self-description (engines.Info*) in
// the registry's order while the engine is not yet known:
//
//	llama    GET /props (build_info, default_generation_settings.n_ctx)
//	SGLang   GET /get_server_info (version, context_length)
//	Ollama   GET /api/version, POST /api/show (parameters num_ctx,
//	         model_info.*.context_length)
//
// then the engine's version endpoint (vLLM's GET /version) when the
// version is still unknown. Every question is bounded by a short timeout
// and failures are ignored: what cannot be learned stays unknown.
func Discover(ctx context.Context, t *Target, engine string) ServerInfo {
	si := ServerInfo{Engine: engine}
	if si.Engine == engines.Custom.Name {
		si.Engine = ""
	}
	si.askModels(ctx, t)
	for _, e := range engines.All() {
		if ask := infoAskers[e.Info]; ask != nil && si.mayBe(e.Name) {
			ask(&si, ctx, t, e.Name)
		}
	}
	if path := versionPath(si.Engine); si.Version == "" && path != "" {
		var v struct {
			Version string `json:"version"`
		}
		if t.getJSON(ctx, path, &v) == nil && v.Version != "" {
			si.Version = v.Version
		}
	}
	si.Tokenizer = engines.For(si.Engine).Tokenize
	return si
}

// infoAskers read each self-description (engines.Info*) into si; name
// is the engine that answers it.
var infoAskers = map[string]func(si *ServerInfo, ctx context.Context, t *Target, name string){
	engines.InfoLlamaProps:       (*ServerInfo).askLlamaProps,
	engines.InfoSGLangServerInfo: (*ServerInfo).askSGLang,
	engines.InfoOllama:           (*ServerInfo).askOllama,
}

// versionPath is where engine answers {"version": ...}: its descriptor's
// VersionPath, or /version while the engine is unknown.
func versionPath(engine string) string {
	if engine == "" {
		return engines.Custom.VersionPath
	}
	return engines.For(engine).VersionPath
}

// mayBe reports whether the server may be engine: the engine is not known
// yet, or is that one.
func (si *ServerInfo) mayBe(engine string) bool { return si.Engine == "" || si.Engine == engine }

// askModels reads GET /v1/models: every OpenAI-compatible server has it;
// owned_by names the engine when the plan did not.
func (si *ServerInfo) askModels(ctx context.Context, t *Target) {
	var models struct {
		Data []struct {
			ID          string `json:"id"`
			OwnedBy     string `json:"owned_by"`
			MaxModelLen int    `json:"max_model_len"`
			Meta        *struct {
				NCtx      int `json:"n_ctx"`
				NCtxTrain int `json:"n_ctx_train"`
			} `json:"meta"`
		} `json:"data"`
	}
	if t.getJSON(ctx, "/v1/models", &models) != nil || len(models.Data) == 0 {
		return
	}
	m := models.Data[0]
	for _, d := range models.Data {
		if d.ID == t.Model {
			m = d
			break
		}
	}
	if si.Engine == "" {
		si.Engine = engines.Owning(m.OwnedBy)
	}
	switch {
	case m.MaxModelLen > 0:
		si.MaxModelLen, si.ContextFrom = m.MaxModelLen, "GET /v1/models max_model_len"
	case m.Meta != nil && m.Meta.NCtx > 0:
		si.MaxModelLen, si.ContextFrom = m.Meta.NCtx, "GET /v1/models meta.n_ctx"
	}
}

// askLlamaProps reads llama-server's GET /props: its build and the
// per-slot context.
func (si *ServerInfo) askLlamaProps(ctx context.Context, t *Target, name string) {
	var props struct {
		BuildInfo string `json:"build_info"`
		Settings  *struct {
			NCtx int `json:"n_ctx"`
		} `json:"default_generation_settings"`
		TotalSlots int `json:"total_slots"`
	}
	if t.getJSON(ctx, "/props", &props) != nil || (props.Settings == nil && props.BuildInfo == "") {
		return
	}
	si.Engine = name
	si.Version = props.BuildInfo
	if props.Settings != nil && props.Settings.NCtx > 0 {
		// The per-slot context, which is what one request gets
		// (-c divided by -np), not the model's training context.
		si.MaxModelLen, si.ContextFrom = props.Settings.NCtx, "GET /props default_generation_settings.n_ctx"
	}
}

// askSGLang reads SGLang's GET /get_server_info: its version and context
// (a context /v1/models gave stays).
func (si *ServerInfo) askSGLang(ctx context.Context, t *Target, name string) {
	var info struct {
		Version       string `json:"version"`
		ContextLength int    `json:"context_length"`
	}
	if t.getJSON(ctx, "/get_server_info", &info) != nil || (info.Version == "" && info.ContextLength <= 0) {
		return
	}
	si.Engine = name
	if info.Version != "" {
		si.Version = info.Version
	}
	if info.ContextLength > 0 && si.MaxModelLen == 0 {
		si.MaxModelLen, si.ContextFrom = info.ContextLength, "GET /get_server_info context_length"
	}
}

// askOllama reads Ollama's GET /api/version and, when it answers, the
// model's context (ollamaContext).
func (si *ServerInfo) askOllama(ctx context.Context, t *Target, name string) {
	var v struct {
		Version string `json:"version"`
	}
	if t.getJSON(ctx, "/api/version", &v) != nil || v.Version == "" {
		return
	}
	si.Engine, si.Version = name, v.Version
	if n, from := t.ollamaContext(ctx); n > 0 {
		si.MaxModelLen, si.ContextFrom = n, from
	}
}

// ollamaDefaultNumCtx is Ollama's num_ctx when a model's parameters set
// none (2048 up to v0.5, and still the floor of later defaults).
const ollamaDefaultNumCtx = 2048

var numCtxRe = regexp.MustCompile(`(?m)^num_ctx\s+(\d+)`)

// ollamaContext reads POST /api/show: the Modelfile's num_ctx (or Ollama's
// default) capped by the model's own context_length, which Ollama also
// caps it to.
func (t *Target) ollamaContext(ctx context.Context) (int, string) {
	var show struct {
		Parameters string         `json:"parameters"`
		ModelInfo  map[string]any `json:"model_info"`
	}
	if err := t.postJSON(ctx, "/api/show", map[string]any{"model": t.Model, "name": t.Model}, &show); err != nil {
		return 0, ""
	}
	numCtx, from := ollamaDefaultNumCtx, fmt.Sprintf("Ollama's default num_ctx %d", ollamaDefaultNumCtx)
	if m := numCtxRe.FindStringSubmatch(show.Parameters); m != nil {
		if n, err := strconv.Atoi(m[1]); err == nil && n > 0 {
			numCtx, from = n, "POST /api/show parameters num_ctx"
		}
	}
	for k, v := range show.ModelInfo {
		if !strings.HasSuffix(k, ".context_length") {
			continue
		}
		if f, ok := v.(float64); ok && f > 0 && int(f) < numCtx {
			numCtx, from = int(f), "POST /api/show model_info."+k
		}
	}
	return numCtx, from
}

// getJSON is a small GET with the target's credentials, bounded by a short
// timeout (discovery must never hold a run up).
func (t *Target) getJSON(ctx context.Context, path string, out any) error {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	return t.exchangeJSON(ctx, http.MethodGet, path, nil, 4<<20, out)
}

// exchangeJSON is one side request (discovery's, calibration's; never a
// measured one) with the target's credentials: body, when not nil, is
// sent as JSON; an answer of at most limit bytes that is a JSON object
// is decoded into out. A 4xx or 5xx is an *HTTPError.
func (t *Target) exchangeJSON(ctx context.Context, method, path string, body []byte, limit int64, out any) error {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, strings.TrimRight(t.BaseURL, "/")+path, rd)
	if err != nil {
		return err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	t.setAuth(req)
	client := t.HTTP
	if client == nil {
		client = httpsafe.Client
	}
	resp, err := client.Do(req)
	if err != nil {
		if c := context.Cause(ctx); c != nil && ctx.Err() != nil {
			err = c
		}
		return fmt.Errorf("%s %s: %w", method, path, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, limit))
	if err != nil {
		return fmt.Errorf("%s %s: reading answer: %w", method, path, err)
	}
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("%s %s: %w", method, path, &HTTPError{Status: resp.StatusCode, Body: errorMessage(data)})
	}
	if !bytes.HasPrefix(bytes.TrimSpace(data), []byte("{")) {
		return fmt.Errorf("%s %s: not a JSON object", method, path)
	}
	if err := json.Unmarshal(data, out); err != nil {
		return fmt.Errorf("%s %s: %w", method, path, err)
	}
	return nil
}

// setAuth sets the target's headers and key on req. A Host among the
// headers is the request's Host: net/http writes Request.Host and ignores
// Header["Host"], so a virtual-hosted gateway would get the URL's host
// and answer from its default backend.
func (t *Target) setAuth(req *http.Request) {
	for k, v := range t.Headers {
		if http.CanonicalHeaderKey(k) == "Host" {
			req.Host = v
			continue
		}
		req.Header.Set(k, v)
	}
	if t.APIKey != "" {
		req.Header.Set("Authorization", "Bearer "+t.APIKey)
	}
}
