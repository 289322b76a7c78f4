package results

import "time"

// Run is what the run-level outputs (result.json, the reports) say about a
// run as a whole. Outputs build it from the pipeline's summary at the end
// of a run; `benchrun report` builds it from manifest.json.
type Run struct {
	RunID       string     `json:"run_id"`
	Plan        string     `json:"plan"`
	Description string     `json:"description,omitempty"`
	StartedAt   time.Time  `json:"started_at"`
	FinishedAt  *time.Time `json:"finished_at,omitempty"`
	Status      string     `json:"status"` // running, ok, failed, interrupted
	ExitCode    *int       `json:"exit_code,omitempty"`
	Model       string     `json:"model,omitempty"`
	ModelDigest string     `json:"model_digest,omitempty"`
	// ModelFile and ModelQuant are the plan's model.file as served: its
	// name and, for GGUF, the quantization its header gives (F32, Q4_K_M),
	// which may not be what the plan's label says.
	ModelFile       string            `json:"model_file,omitempty"`
	ModelQuant      string            `json:"model_quant,omitempty"`
	Metadata        map[string]string `json:"metadata,omitempty"`
	Tags            []string          `json:"tags,omitempty"`
	Hostname        string            `json:"hostname,omitempty"`
	Hardware        string            `json:"hardware,omitempty"`
	BenchrunVersion string            `json:"benchrun_version,omitempty"`
	Stages          []StageOutcome    `json:"stages,omitempty"`
}

// StageOutcome is how one stage of a run ended.
type StageOutcome struct {
	Name      string  `json:"name"`
	Kind      string  `json:"kind"`
	Status    string  `json:"status"`
	Reason    string  `json:"reason,omitempty"`
	DurationS float64 `json:"duration_s"`
}
