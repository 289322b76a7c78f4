package results

import "time"

// Sample is one telemetry reading (GPU, server /metrics) taken while a
// stage ran: the `samples` table. The telemetry issue fills it; the schema
// is fixed here so that readers and the Parquet layout exist from v1.
type Sample struct {
	RunID  string `parquet:"run_id" json:"run_id"`
	Plan   string `parquet:"plan" json:"plan"`
	Stage  string `parquet:"stage" json:"stage"`
	CellID string `parquet:"cell_id" json:"cell_id"` // "" between cells
	// Attempt is the run attempt that took the reading, as in Cell.
	Attempt int64             `parquet:"attempt" json:"attempt"`
	At      time.Time         `parquet:"at,timestamp(microsecond)" json:"at"`
	Source  string            `parquet:"source" json:"source"` // "nvml", "prometheus", ...
	Device  string            `parquet:"device" json:"device"` // "gpu0", a scrape URL, ...
	Metric  string            `parquet:"metric" json:"metric"` // e.g. "gpu_util_pct", "vllm:num_requests_running"
	Unit    string            `parquet:"unit" json:"unit"`
	Value   float64           `parquet:"value" json:"value"`
	Labels  map[string]string `parquet:"labels" json:"labels,omitempty"`
}
