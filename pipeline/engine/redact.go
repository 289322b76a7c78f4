package engine

import (
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/benchrun/benchrun/internal/redact"
	"github.com/benchrun/benchrun/internal/rundir"
	"github.com/benchrun/benchrun/pipeline"
	"github.com/benchrun/benchrun/schema"
)

// Secrets. benchrun knows the secret values it sends: the key an
// api_key_env names, header values expanded from the environment, the
// password of a target URL. They are registered with internal/redact
// before anything of the run is written (RegisterPlanSecrets, from the
// resolved plan; the stages register again where they read them), and
// every string the run writes goes through it: rows before any output
// sees them (emit), the stage logs and the progress writer, the manifest,
// the summary, and the plan copies (plan.cue, plan.json), where a URL's
// password becomes "xxxxx".

// RegisterPlanSecrets registers the secrets a plan will send: for every
// `api_key_env` (and other `*key_env`, `*token_env`, `*password_env`,
// `*secret_env` fields), the variable's value; for every `headers` entry
// that names environment variables, their values and the expanded value;
// and the password of every URL in the plan. It reads only the plan and
// the environment.
func RegisterPlanSecrets(p *schema.Plan) {
	if p == nil {
		return
	}
	redact.URLSecrets(string(p.Source))
	b, err := p.JSON()
	if err != nil {
		return
	}
	redact.URLSecrets(string(b))
	var v any
	if json.Unmarshal(b, &v) == nil {
		registerIn(v)
	}
}

func registerIn(v any) {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			if s, ok := e.(string); ok && secretEnvField(k) {
				redact.Add(os.Getenv(s))
			}
			if h, ok := e.(map[string]any); ok && k == "headers" {
				raw, sent := map[string]string{}, map[string]string{}
				for name, hv := range h {
					if s, ok := hv.(string); ok {
						raw[name] = s
						if ev, err := pipeline.ExpandEnv(s, nil); err == nil {
							sent[name] = ev
						} else {
							sent[name] = "" // an unset name: the stage refuses it; register what is set
						}
					}
				}
				redact.Headers(raw, sent)
			}
			registerIn(e)
		}
	case []any:
		for _, e := range x {
			registerIn(e)
		}
	}
}

// secretEnvField says whether a plan field names an environment variable
// that holds a credential.
func secretEnvField(k string) bool {
	for _, suffix := range []string{"key_env", "token_env", "password_env", "secret_env"} {
		if strings.HasSuffix(k, suffix) {
			return true
		}
	}
	return false
}

// planFileText is what the run directory keeps of a plan file: the text as
// written (or resolved), with the password of every URL masked and every
// registered secret redacted.
func planFileText(p *schema.Plan, b []byte) []byte {
	RegisterPlanSecrets(p)
	return []byte(redact.URLs(string(b)))
}

// resolvedPlanText is plan.json's content for p (as planFileText keeps it,
// so that a resume compares like with like).
func resolvedPlanText(p *schema.Plan) ([]byte, error) {
	b, err := p.JSON()
	if err != nil {
		return nil, err
	}
	return planFileText(p, b), nil
}

// redactingProgress wraps the progress writer. A terminal stays as it is
// for the stages (the sweep's live view draws only on an *os.File that is
// a terminal); pipes and files, which keep what they are given (CI logs,
// `2> run.log`), always get the redacting writer. The runner's own lines
// and the summary are redacted either way.
func redactingProgress(w io.Writer) (runner, stages io.Writer, flush func()) {
	rw := redact.NewWriter(w)
	flush = func() { _ = rw.Flush() }
	// A live view finds the terminal behind the writer (redact.Writer.File)
	// and still draws through it, so a terminal gets masked lines too.
	return rw, rw, flush
}

// redactSummary masks secrets in what a summary says (stage reasons,
// verdicts), before the outputs and the manifest get it.
func redactSummary(sum *pipeline.Summary) {
	if sum == nil {
		return
	}
	sum.Reason = redact.String(sum.Reason)
	sum.Stages = redact.Value(sum.Stages)
	sum.Verdicts = redact.Value(sum.Verdicts)
	sum.Failed = redact.Value(sum.Failed)
	sum.Inconclusive = redact.Value(sum.Inconclusive)
}

// scrubLogs redacts the logs in a run directory once the run's processes
// are gone: a server benchrun launched writes its own output straight
// into its stage's log (a server that prints its command line or its
// request errors prints the key). A log is rewritten only when it holds a
// secret.
func scrubLogs(dir string) {
	logs, _ := filepath.Glob(filepath.Join(dir, "*.log"))
	for _, path := range logs {
		scrubFile(path)
	}
}

func scrubFile(path string) {
	b, err := os.ReadFile(path)
	if err != nil || !redact.Contains(string(b)) {
		return
	}
	_ = rundir.WriteFileAtomic(path, redact.Bytes(b))
}
