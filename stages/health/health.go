// Package health is the `health` stage: it polls a server until it is
// ready and serves the plan's model.
package health

import (
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/benchrun/benchrun/pipeline"
	"github.com/benchrun/benchrun/schema"
)

//go:embed schema.cue
var schemaSource string

// Kind registers the stage.
var Kind = pipeline.Kind{
	Name:   "health",
	Doc:    "wait until a server answers its health path and lists the model",
	Schema: schema.KindSchema{Def: "#Health", Source: schemaSource},
	New:    New,
}

// Config is the stage's configuration (see schema.cue).
type Config struct {
	Target     string `json:"target"`
	Model      string `json:"model"`
	Path       string `json:"path"`
	ModelsPath string `json:"models_path"`
	Within     string `json:"within"`
	Interval   string `json:"interval"`
}

// Stage is a configured health stage.
type Stage struct {
	spec     *schema.Stage
	cfg      Config
	within   time.Duration
	interval time.Duration
}

// New decodes the configuration.
func New(s *schema.Stage) (pipeline.Stage, error) {
	st := &Stage{spec: s}
	if err := s.Decode(&st.cfg); err != nil {
		return nil, err
	}
	var err error
	if st.within, err = time.ParseDuration(st.cfg.Within); err != nil {
		return nil, schema.Error{Pos: s.PosOf("within"), Msg: "within: " + err.Error()}
	}
	if st.interval, err = time.ParseDuration(st.cfg.Interval); err != nil {
		return nil, schema.Error{Pos: s.PosOf("interval"), Msg: "interval: " + err.Error()}
	}
	return st, nil
}

// Validate checks the configuration without side effects.
func (s *Stage) Validate(p *schema.Plan) error { return nil }

// Run polls until ready or until `within` passes.
func (s *Stage) Run(ctx context.Context, env *pipeline.Env) (*pipeline.Outputs, error) {
	target, err := env.Target()
	if err != nil {
		return nil, err
	}
	model := env.ModelName(s.cfg.Model)
	ctx, cancel := context.WithTimeoutCause(ctx, s.within, fmt.Errorf("server at %s not ready within %s", target.URL, s.within))
	defer cancel()
	client := &http.Client{Timeout: 5 * time.Second}
	base := strings.TrimRight(target.URL, "/")
	start := time.Now()
	last := "no answer yet"
	for {
		ready, why := s.probe(ctx, client, base, model)
		if ready {
			fmt.Fprintf(env.Log, "benchrun: %s ready after %s\n", base, time.Since(start).Round(time.Millisecond))
			out := *target
			if out.Model == "" {
				out.Model = model
			}
			// Health is not a service itself: do not forward Done.
			out.Done, out.DoneReason = nil, nil
			return &out, nil
		}
		if why != "" {
			last = why
		}
		// A server that is up but serves another model will not change its
		// mind: fail at once with the names it does serve.
		if strings.HasPrefix(why, modelMissingPrefix) {
			return nil, errors.New(why)
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("%w; last check: %s", context.Cause(ctx), last)
		case <-time.After(s.interval):
		}
	}
}

const modelMissingPrefix = "model not served: "

// probe checks health then the model list; it says what was wrong.
func (s *Stage) probe(ctx context.Context, client *http.Client, base, model string) (bool, string) {
	code, _, err := get(ctx, client, base+s.cfg.Path)
	if err != nil {
		return false, err.Error()
	}
	if code != http.StatusOK {
		return false, fmt.Sprintf("%s answered %d", s.cfg.Path, code)
	}
	code, body, err := get(ctx, client, base+s.cfg.ModelsPath)
	if err != nil {
		return false, err.Error()
	}
	if code != http.StatusOK {
		return false, fmt.Sprintf("%s answered %d", s.cfg.ModelsPath, code)
	}
	var list struct {
		Data []struct {
			ID string `json:"id"`
		} `json:"data"`
	}
	if err := json.Unmarshal(body, &list); err != nil {
		return false, fmt.Sprintf("%s: not an OpenAI model list: %v", s.cfg.ModelsPath, err)
	}
	var ids []string
	for _, m := range list.Data {
		ids = append(ids, m.ID)
	}
	if model == "" || slices.Contains(ids, model) {
		return true, ""
	}
	return false, fmt.Sprintf("%s%q is not among the served models %q: the plan's model name must equal the server's served name", modelMissingPrefix, model, ids)
}

func get(ctx context.Context, client *http.Client, url string) (int, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, nil, err
	}
	resp, err := client.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	return resp.StatusCode, b, err
}
