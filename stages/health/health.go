// Package health is the `health` stage: it polls a server until it is
// ready, serves the plan's model and answers a 1-token request.
package health

import (
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/benchrun/benchrun/internal/engines"
	"github.com/benchrun/benchrun/internal/httpsafe"
	"github.com/benchrun/benchrun/internal/loadgen"
	"github.com/benchrun/benchrun/internal/procrun"
	"github.com/benchrun/benchrun/pipeline"
	"github.com/benchrun/benchrun/schema"
	"github.com/benchrun/benchrun/stages/internal/client"
)

// What this kind implements, checked by the compiler (the runner finds
// the optional interfaces by type assertion, so a renamed method would
// silently drop the capability).
var (
	_ pipeline.Stage         = (*Stage)(nil)
	_ pipeline.ReadinessGate = (*Stage)(nil)
)

//go:embed schema.cue
var schemaSource string

// Kind registers the stage.
var Kind = pipeline.Kind{
	Name:   "health",
	Doc:    "wait until a server answers its health path, lists the model and serves a 1-token request",
	Schema: schema.KindSchema{Def: "#Health", Source: client.WithSchema(schemaSource)},
	New:    New,
}

// Stage is a configured health stage.
type Stage struct {
	spec     *schema.Stage
	cfg      Config
	within   time.Duration
	interval time.Duration
}

// Validate checks the configuration without side effects.
func (s *Stage) Validate(*pipeline.Check) error {
	for _, f := range []struct{ name, v string }{{"path", s.cfg.Path}, {"models_path", s.cfg.ModelsPath}} {
		if f.v != "" && !strings.HasPrefix(f.v, "/") {
			return schema.Error{Pos: s.spec.PosOf(f.name), Msg: fmt.Sprintf("stages.%s.%s: %q must start with /", s.spec.Name, f.name, f.v)}
		}
	}
	errs := s.cfg.Check(s.spec)
	if s.cfg.Probe != "none" {
		errs = append(errs, s.cfg.CheckReasoning(s.spec, s.cfg.Probe)...)
	}
	if len(errs) > 0 {
		return errs
	}
	return nil
}

// ReadinessOf names the stage (or URL) this one waits for
// (pipeline.ReadinessGate): stages that need this one send to a ready
// server.
func (s *Stage) ReadinessOf() string { return s.cfg.Target }

// errNeedsCredentials marks a 401 or 403: waiting cannot help.
var errNeedsCredentials = errors.New("credentials refused")

// refused is the error for a 401 or 403: the server wants credentials
// (or others than those sent), and will not change its mind.
func (s *Stage) refused(what string, code int, sent bool) error {
	hint := fmt.Sprintf("the server wants credentials: set api_key_env / headers on stages.%s", s.spec.Name)
	if sent {
		hint = fmt.Sprintf("the server refused the credentials sent (api_key_env / headers on stages.%s)", s.spec.Name)
	}
	return fmt.Errorf("%w: %s answered %d %s: %s", errNeedsCredentials, what, code, http.StatusText(code), hint)
}

// errNotServed marks a server that is up but serves other models: it will
// not change its mind, so the stage fails at once.
var errNotServed = errors.New("model not served")

// Run polls until ready or until `within` passes.
func (s *Stage) Run(ctx context.Context, env *pipeline.Env) (*pipeline.Outputs, error) {
	target, err := env.Target()
	if err != nil {
		return nil, err
	}
	model := env.ModelName(s.cfg.Model)
	engName := s.cfg.Engine
	if engName == "" {
		engName = target.Engine
	}
	eng := engines.For(engName)
	if s.cfg.Path != "" {
		eng.HealthPath = s.cfg.Path
	}
	if s.cfg.ModelsPath != "" {
		eng.ModelsPath = s.cfg.ModelsPath
	}
	base := strings.TrimRight(target.URL, "/")
	logPath := target.LogPath

	ctx, cancel := context.WithTimeoutCause(ctx, s.within, fmt.Errorf("server at %s not ready within %s", base, s.within))
	defer cancel()
	headers, key, err := s.cfg.Credentials(s.spec.Name)
	if err != nil {
		return nil, err
	}
	client := &http.Client{Timeout: 5 * time.Second, CheckRedirect: httpsafe.NoRedirects}
	lt := &loadgen.Target{BaseURL: base, Model: model, Endpoint: loadgen.Endpoint(s.cfg.Probe), Stream: true,
		Headers: headers, APIKey: key, HTTP: loadgen.NewHTTPClient(1), ExtraBody: map[string]any{}}
	s.cfg.Reasoning.AddTo(lt.ExtraBody)
	defer lt.HTTP.CloseIdleConnections()
	start := time.Now()
	last := "no answer yet"
	for {
		served, why, err := s.check(ctx, client, base, eng, model, lt)
		if err != nil {
			return nil, err
		}
		if why == "" {
			fmt.Fprintf(env.Log, "benchrun: %s ready after %s (model %q)\n", base, time.Since(start).Round(time.Millisecond), served)
			out := *target
			if out.Model == "" {
				out.Model = model
			}
			// Health is not a service itself: do not forward Done or Restart.
			out.Done, out.DoneReason, out.Restart, out.StartupS = nil, nil, nil, nil
			return &out, nil
		}
		if ctx.Err() != nil && last != "" {
			// The deadline cut this check short: what the server last
			// answered says more than the cancellation.
			why = last
		}
		if why != last {
			fmt.Fprintf(env.Log, "benchrun: %s: %s\n", time.Since(start).Round(time.Millisecond), why)
		}
		last = why
		select {
		case <-ctx.Done():
			cause := context.Cause(ctx)
			var died *pipeline.ServiceDiedError
			if errors.As(cause, &died) {
				// The server died: its reason says it all, and the launch
				// stage has shown its log's tail already.
				return nil, cause
			}
			// Wrapped (%w), so the runner does not repeat the cause.
			err := fmt.Errorf("%w; last check: %s", cause, last)
			if t := procrun.Tail(logPath, procrun.TailLines); t != "" {
				err = fmt.Errorf("%w\nlast lines of the server's log:\n%s", err, t)
				// The progress view shows only an error's first line.
				fmt.Fprintf(env.Progress, "  %s: last lines of the server's log:\n%s\n", env.Stage.Name, t)
			}
			return nil, err
		case <-time.After(s.interval):
		}
	}
}

// check runs the three checks in order. It returns the served name when
// ready, why not otherwise, and an error when waiting cannot help.
func (s *Stage) check(ctx context.Context, client *http.Client, base string, eng engines.Engine, model string, lt *loadgen.Target) (string, string, error) {
	code, _, err := get(ctx, client, base+eng.HealthPath, lt)
	if e := loadgen.HTTP2Answer(err); e != nil {
		// Waiting cannot help: the server will answer in HTTP/2 again.
		return "", "", fmt.Errorf("%s: %w", base+eng.HealthPath, e)
	}
	if err != nil {
		return "", err.Error(), nil
	}
	if code == http.StatusUnauthorized || code == http.StatusForbidden {
		return "", "", s.refused(eng.HealthPath, code, sentCredentials(lt))
	}
	if code != http.StatusOK {
		why := fmt.Sprintf("%s answered %d", eng.HealthPath, code)
		if code == http.StatusServiceUnavailable {
			why += " (loading)"
		}
		return "", why, nil
	}
	code, body, err := get(ctx, client, base+eng.ModelsPath, lt)
	if e := loadgen.HTTP2Answer(err); e != nil {
		return "", "", fmt.Errorf("%s: %w", base+eng.ModelsPath, e)
	}
	if err != nil {
		return "", err.Error(), nil
	}
	if code == http.StatusUnauthorized || code == http.StatusForbidden {
		return "", "", s.refused(eng.ModelsPath, code, sentCredentials(lt))
	}
	if code != http.StatusOK {
		return "", fmt.Sprintf("%s answered %d", eng.ModelsPath, code), nil
	}
	var list struct {
		Data []struct {
			ID string `json:"id"`
		} `json:"data"`
	}
	if err := json.Unmarshal(body, &list); err != nil {
		return "", fmt.Sprintf("%s: not an OpenAI model list: %v", eng.ModelsPath, err), nil
	}
	var ids []string
	served := ""
	for _, m := range list.Data {
		ids = append(ids, m.ID)
		if model != "" && eng.Serves(m.ID, model) {
			served = m.ID
		}
	}
	if model != "" && served == "" {
		if len(ids) == 0 {
			// Some servers list models only once loaded: keep waiting.
			return "", fmt.Sprintf("%s lists no models yet", eng.ModelsPath), nil
		}
		return "", "", fmt.Errorf("%w: %q is not among the models %s serves %q: the plan's model name (model.name, or model in the stage) must equal the server's served name", errNotServed, model, base, ids)
	}
	if s.cfg.Probe == "none" {
		return served, "", nil
	}
	r := lt.Do(ctx, loadgen.Request{Prompt: "Hello", MaxTokens: 1})
	if r.TokensUnshown() {
		// A thinking model's token went into reasoning the endpoint does
		// not show (Ollama's /v1/completions): it generated one.
		return served, "", nil
	}
	if e := loadgen.HTTP2Answer(r.Err); e != nil {
		return "", "", fmt.Errorf("the 1-token probe on %s: %w", lt.Endpoint.Path(), e)
	}
	if r.Err != nil {
		var he *loadgen.HTTPError
		if errors.As(r.Err, &he) && (he.Status == http.StatusUnauthorized || he.Status == http.StatusForbidden) {
			return "", "", s.refused("the 1-token probe on "+lt.Endpoint.Path(), he.Status, sentCredentials(lt))
		}
		if errors.As(r.Err, &he) && he.Status/100 == 4 && he.Status != http.StatusTooManyRequests {
			return "", "", fmt.Errorf("the 1-token probe on %s was refused: %w", lt.Endpoint.Path(), r.Err)
		}
		return "", fmt.Sprintf("1-token probe on %s: %v", lt.Endpoint.Path(), r.Err), nil
	}
	return served, "", nil
}

func sentCredentials(lt *loadgen.Target) bool { return len(lt.Headers) > 0 || lt.APIKey != "" }

// get fetches url with the probe's headers and key, as the probe sends them.
func get(ctx context.Context, client *http.Client, url string, lt *loadgen.Target) (int, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, nil, err
	}
	for k, v := range lt.Headers {
		if http.CanonicalHeaderKey(k) == "Host" {
			// net/http sends Request.Host, never a Host header: a
			// virtual-hosted gateway would answer for its default backend.
			req.Host = v
			continue
		}
		req.Header.Set(k, v)
	}
	if lt.APIKey != "" {
		req.Header.Set("Authorization", "Bearer "+lt.APIKey)
	}
	resp, err := client.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	return resp.StatusCode, b, err
}
