package sweep

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/benchrun/benchrun/internal/loadgen"
	"github.com/benchrun/benchrun/pipeline"
	"github.com/benchrun/benchrun/schema"
	"github.com/benchrun/benchrun/stages/internal/client"
)

// This file is the kind's configuration and its decoding from the
// stage's CUE value: the one file of a kind that may import cuelang.org/go
// (internal/archtest). What the kind learns from other kinds comes
// through the pipeline's contracts, never from their CUE.

// Cell is one input:output shape, with the server variables it measures
// under (${cell.KEY} in the target launch stage's cmd and env).
type Cell struct {
	ISL    int               `json:"isl"`
	OSL    int               `json:"osl"`
	Server map[string]string `json:"server"`
	// ISLDist and OSLDist draw each request's lengths (nil: ISL and OSL
	// are every request's); ISL and OSL are then their means, rounded
	// (lengths.go).
	ISLDist *loadgen.Lengths `json:"-"`
	OSLDist *loadgen.Lengths `json:"-"`
	// Models is the cell's own model mix, over the stage's (mix.go).
	Models []ModelWeight `json:"models"`
	// The cell's reasoning controls, over the stage's (#Reasoning).
	client.Reasoning
}

// serverVars writes the cell's server variables as "k=v k=v", sorted by
// key ("" when it has none).
func (c Cell) serverVars(sep string) string {
	keys := make([]string, 0, len(c.Server))
	for k := range c.Server {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k + "=" + c.Server[k]
	}
	return strings.Join(parts, sep)
}

// key tells cells apart, server variables included.
func (c Cell) key() string {
	k := fmt.Sprintf("%s/%s", c.shape(), c.serverVars("/"))
	if r := c.Reasoning.Label(","); r != "" {
		k += "/" + r // cells apart only by their reasoning controls are two
	}
	if len(c.Models) > 0 {
		k += "/" + mixLabel(c.Models)
	}
	return k
}

// conversation reports whether the stage's cells are conversations: turns
// given, or a conversations dataset.
func (c *Config) conversation() bool {
	return c.Turns > 0 || c.Dataset != nil && c.Dataset.Format == loadgen.FormatConversations
}

// ModelWeight is one model of a mix (the sweep's or a cell's `models`):
// a served name, a base model's or an adapter's, and its share of the
// requests.
type ModelWeight struct {
	Name   string  `json:"name"`
	Weight float64 `json:"weight"`
}

// RampConfig is the open loop's optional ramp.
type RampConfig struct {
	Kind     string  `json:"kind"`
	From     float64 `json:"from"`
	Duration string  `json:"duration"`
}

// DatasetConfig names prompts on disk.
type DatasetConfig struct {
	Path   string `json:"path"`
	Format string `json:"format"`
	Field  string `json:"field"`
	Limit  int    `json:"limit"`
	// Vector is the JSONL field holding each text's reference embedding.
	Vector string `json:"vector"`
	// A trace replay's speed-up and tokens per hash id (trace.go).
	TimeScale   float64 `json:"time_scale"`
	BlockTokens int     `json:"block_tokens"`
	// Split is a Hugging Face dataset's split (format hf).
	Split string `json:"split"`
}

// Config is the stage's configuration (see schema.cue).
type Config struct {
	Target        string         `json:"target"`
	Model         string         `json:"model"`
	Endpoint      string         `json:"endpoint"`
	Stream        bool           `json:"stream"`
	Cells         []Cell         `json:"cells"`
	Concurrency   []int          `json:"concurrency"`
	Rates         []float64      `json:"rates"`
	Arrival       string         `json:"arrival"`
	Burstiness    float64        `json:"burstiness"`
	Ramp          *RampConfig    `json:"ramp"`
	MaxInflight   int            `json:"max_inflight"`
	Requests      int            `json:"requests"`
	Duration      string         `json:"duration"`
	MinRequests   int            `json:"min_requests"`
	MinDuration   string         `json:"min_duration"`
	Slice         string         `json:"slice"`
	Warmup        int            `json:"warmup"`
	Iterations    int            `json:"iterations"`
	Repeats       int            `json:"repeats"`
	Prompts       string         `json:"prompts"`
	SharedPrefix  int            `json:"shared_prefix"`
	Turns         int            `json:"turns"`
	ThinkTime     string         `json:"think_time"`
	ThinkTimeDist string         `json:"think_time_dist"`
	Agent         *AgentConfig   `json:"agent"`
	Seed          int64          `json:"seed"`
	Calibrate     string         `json:"calibrate"`
	Dataset       *DatasetConfig `json:"dataset"`
	ForceOSL      bool           `json:"force_osl"`
	// Models is the stage's model mix (mix.go; nil: the one model).
	Models []ModelWeight `json:"models"`
	// Server hooks around each timed pass (hooks.go).
	ResetCache         bool            `json:"reset_cache"`
	Profile            bool            `json:"profile"`
	ContinuousUsage    bool            `json:"continuous_usage"`
	SendLagThresholdMs float64         `json:"send_lag_threshold_ms"`
	RequestTimeout     string          `json:"request_timeout"`
	FirstTokenTimeout  string          `json:"first_token_timeout"`
	Telemetry          TelemetryConfig `json:"telemetry"`
	// headers, api_key_env, body and stall_timeout (#Requests).
	client.RequestConfig
	Search *SearchConfig `json:"search"`
	// Embeddings and media (media.go).
	Batch      []int `json:"batch"`
	Dimensions int   `json:"dimensions"`
	Images     []int `json:"images"`
	// ReasoningAxis is the plan's `reasoning`: one point per entry.
	ReasoningAxis   []client.Reasoning `json:"reasoning"`
	ImageResolution []string           `json:"image_resolution"`
	AudioSeconds    []float64          `json:"audio_seconds"`
	// Measure until precise (precision.go): each timed pass, and each
	// point's repeats.
	Precision    *PrecisionConfig    `json:"precision"`
	RepeatsUntil *RepeatsUntilConfig `json:"repeats_until"`
}

// PrecisionConfig is the sweep's `precision`: a timed pass sends until
// every metric in Within is known that closely, or its budget ends.
type PrecisionConfig struct {
	Within      map[string]string `json:"within"`
	Confidence  float64           `json:"confidence"`
	MaxRequests int               `json:"max_requests"`
	MaxDuration string            `json:"max_duration"`
}

// RepeatsUntilConfig is the sweep's `repeats_until`: a point is repeated
// (at most `repeats` times) until the mean of each metric in Within over
// its repeats is known that closely.
type RepeatsUntilConfig struct {
	Within     map[string]string `json:"within"`
	Confidence float64           `json:"confidence"`
	MinRepeats int               `json:"min_repeats"`
}

// TelemetryConfig says what is measured beside the load (schema.cue).
type TelemetryConfig struct {
	Interval string `json:"interval"`
	GPU      string `json:"gpu"`
	Metrics  string `json:"metrics"`
	Host     string `json:"host"`
	Machine  string `json:"machine"`
}

// New decodes the configuration.
func New(s *schema.Stage) (pipeline.Stage, error) {
	st := &Stage{spec: s}
	if err := s.Decode(&st.cfg); err != nil {
		return nil, err
	}
	st.setDefaults()
	// Bad durations stay zero here; Validate reports them with positions.
	st.duration, _ = time.ParseDuration(st.cfg.Duration)
	st.minDuration, _ = time.ParseDuration(st.cfg.MinDuration)
	st.slice, _ = time.ParseDuration(st.cfg.Slice)
	st.stallTimeout = st.cfg.Stall()
	st.requestTimeout, _ = time.ParseDuration(st.cfg.RequestTimeout)
	st.firstTokenTimeout, _ = time.ParseDuration(st.cfg.FirstTokenTimeout)
	st.thinkTime, _ = time.ParseDuration(st.cfg.ThinkTime)
	if st.cfg.Ramp != nil {
		st.rampDuration, _ = time.ParseDuration(st.cfg.Ramp.Duration)
	}
	st.precision, st.repeatsUntil, _ = st.cfg.parsePrecision()
	return st, nil
}

// setDefaults fills what a config built in Go (tests) may leave out; the
// CUE schema gives the same defaults to plans.
func (s *Stage) setDefaults() {
	c := &s.cfg
	if c.Endpoint == "" {
		c.Endpoint = "completions"
	}
	if c.Arrival == "" {
		c.Arrival = loadgen.ArrivalPoisson
	}
	if c.Burstiness == 0 {
		c.Burstiness = 1
	}
	if c.Iterations == 0 {
		c.Iterations = 1
	}
	if c.Repeats == 0 {
		c.Repeats = 1
	}
	if c.Prompts == "" {
		c.Prompts = "cold"
	}
	if c.ThinkTimeDist == "" {
		c.ThinkTimeDist = loadgen.ThinkFixed
	}
	if c.Calibrate == "" {
		c.Calibrate = loadgen.CalibrateAuto
	}
	if c.SendLagThresholdMs == 0 {
		c.SendLagThresholdMs = 5
	}
	if c.Telemetry.Interval == "" {
		c.Telemetry.Interval = "100ms"
	}
	for _, f := range []*string{&c.Telemetry.GPU, &c.Telemetry.Metrics, &c.Telemetry.Host, &c.Telemetry.Machine} {
		if *f == "" {
			*f = "auto"
		}
	}
}
