// Package client is what the stage kinds that send requests to a server
// share: the plan's #Client and #Requests fields (client.cue, which a
// kind's schema embeds), their checks, and the loadgen.Target they make.
// A kind embeds Config or RequestConfig in its own configuration.
package client

import (
	_ "embed"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/benchrun/benchrun/internal/loadgen"
	"github.com/benchrun/benchrun/internal/redact"
	"github.com/benchrun/benchrun/pipeline"
	"github.com/benchrun/benchrun/schema"
)

// Schema is #Client and #Requests. A kind appends it to its own schema
// source (WithSchema); the copies every kind brings are one definition
// (CUE unifies identical declarations).
//
//go:embed client.cue
var Schema string

// WithSchema is a kind's schema source with #Client and #Requests.
func WithSchema(kindSource string) string { return schema.WithFragment(kindSource, Schema) }

// Config is #Client: how a stage reaches a server.
type Config struct {
	Headers   map[string]string `json:"headers"`
	APIKeyEnv string            `json:"api_key_env"`
	// The request's reasoning controls (#Reasoning), sent with every
	// request the stage makes.
	Reasoning
}

// Check reports what is wrong with the fields, at the field.
func (c Config) Check(spec *schema.Stage) schema.Errors {
	if c.APIKeyEnv != "" && strings.ContainsAny(c.APIKeyEnv, " =$") {
		return schema.Errors{{Pos: spec.PosOf("api_key_env"), Msg: fmt.Sprintf("stages.%s.api_key_env: %q should name an environment variable (OPENAI_API_KEY), not hold the key", spec.Name, c.APIKeyEnv)}}
	}
	return nil
}

// Credentials are what every request sends: the headers, ${NAME}
// expanded from benchrun's environment (an unset name is an error, not an
// empty value), and the api_key_env key, sent as a bearer token. What
// came from the environment is masked in everything benchrun writes.
func (c Config) Credentials(stage string) (headers map[string]string, key string, err error) {
	headers, err = pipeline.ExpandHeaders(stage, c.Headers)
	if err != nil {
		return nil, "", err
	}
	if c.APIKeyEnv != "" {
		if key = os.Getenv(c.APIKeyEnv); key == "" {
			return nil, "", fmt.Errorf("stages.%s.api_key_env: the environment variable %s is empty or not set; export it before running", stage, c.APIKeyEnv)
		}
		redact.Add(key)
	}
	return headers, key, nil
}

// RequestConfig is #Requests: a Config that sends generated requests.
type RequestConfig struct {
	Config
	Body         map[string]any `json:"body"`
	StallTimeout string         `json:"stall_timeout"`
	// The tools and structured output (#Constraints), sent with every
	// request and checked in every answer.
	Constraints
}

// Stall is the stall timeout: the plan's, else the schema's default.
func (r RequestConfig) Stall() time.Duration {
	d, err := schema.ParseDuration(r.StallTimeout)
	if err != nil || r.StallTimeout == "" {
		return 2 * time.Minute
	}
	return d
}

// Check reports what is wrong with the fields, at the field.
func (r RequestConfig) Check(spec *schema.Stage) schema.Errors {
	errs := r.Config.Check(spec)
	if r.StallTimeout != "" {
		if _, err := schema.ParseDuration(r.StallTimeout); err != nil {
			errs = append(errs, schema.Error{Pos: spec.PosOf("stall_timeout"), Msg: fmt.Sprintf("stages.%s.stall_timeout: %v", spec.Name, err)})
		}
	}
	return errs
}

// NewTarget is a loadgen.Target for the server at base: the credentials,
// the body fields, the stall timeout, and a connection pool for conns
// requests at once. The caller closes its idle connections when done.
func (r RequestConfig) NewTarget(stage, base, model string, endpoint loadgen.Endpoint, stream bool, conns int) (*loadgen.Target, error) {
	headers, key, err := r.Credentials(stage)
	if err != nil {
		return nil, err
	}
	t := &loadgen.Target{BaseURL: base, Model: model, Endpoint: endpoint, Stream: stream,
		Headers: headers, APIKey: key, ExtraBody: make(map[string]any, len(r.Body)),
		HTTP: loadgen.NewHTTPClient(conns), StallTimeout: r.Stall()}
	r.Reasoning.AddTo(t.ExtraBody)
	r.Constraints.AddTo(t.ExtraBody)
	if r.Constraints.IsSet() {
		// Compiled once per target; vet compiled the same fields.
		check, errs := r.Constraints.Compile(&schema.Stage{Name: stage})
		if len(errs) > 0 {
			return nil, errs
		}
		t.Check = check
	}
	for k, v := range r.Body {
		t.ExtraBody[k] = v // the plan's body fields win
	}
	return t, nil
}
