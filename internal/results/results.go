// Package results defines the rows benchrun produces: one Cell row per
// (cell × ladder point), one Request row per request. Stages fill them,
// assertions read them, sinks write them; nothing downstream re-measures.
//
// Column names are stable: add columns, never rename (docs/RESULTS.md).
// Each field carries the same name for Parquet, JSON, CSV and expr
// (assertions such as `itl_p99_ms < 2*itl_p50_ms` use these names).
//
// Zero is a measurement; "not measured" is nil. A metric that can lack
// samples (a latency statistic of a cell whose every request failed, a
// speedup without a c=1 row, a cost without a price) is a pointer: nil is
// NULL in Parquet, an empty CSV field, null in JSON, "–" in the reports,
// and an assertion that reads it is an error verdict, never a pass
// (docs/METRICS.md, "Not measured is NULL"). Counts (requests, completed,
// failed) are never null.
package results

import "time"

// Status values of a cell row.
const (
	StatusOK      = "ok"
	StatusError   = "error"
	StatusSkipped = "skipped"
)

// Cell is one cell × ladder point of a sweep: the unit a user reads and an
// assertion judges. Times are milliseconds, rates per second; a pointer
// field is nil when it was not measured (WhyNull says why).
type Cell struct {
	// Identity.
	RunID  string `parquet:"run_id" json:"run_id" expr:"run_id"`
	Plan   string `parquet:"plan" json:"plan" expr:"plan"`
	Stage  string `parquet:"stage" json:"stage" expr:"stage"`
	CellID string `parquet:"cell_id" json:"cell_id" expr:"cell_id"`
	// Attempt numbers the run's attempts: 1 for the first, one more for
	// each --resume. A resumed run keeps the rows of earlier attempts, so
	// the current row of a cell is the one of its highest attempt
	// (LatestCells; docs/RESULTS.md). Files of schema version 1 have no
	// such column: read as 0 here, NULL in DuckDB, both meaning 1.
	Attempt   int64     `parquet:"attempt" json:"attempt" expr:"attempt"`
	StartedAt time.Time `parquet:"started_at,timestamp(microsecond)" json:"started_at" expr:"started_at"`
	Model     string    `parquet:"model" json:"model" expr:"model"`
	// ModelDigest is "sha256:<hex>" of the plan's model.file when benchrun
	// can read it; "" for a model it only reaches over HTTP.
	ModelDigest string `parquet:"model_digest" json:"model_digest" expr:"model_digest"`
	Engine      string `parquet:"engine" json:"engine" expr:"engine"`
	// EngineVersion is what the server said its version is ("unknown"
	// when it would not say): engines differ 3-4x between releases.
	EngineVersion string            `parquet:"engine_version" json:"engine_version" expr:"engine_version"`
	Endpoint      string            `parquet:"endpoint" json:"endpoint" expr:"endpoint"`
	Metadata      map[string]string `parquet:"metadata" json:"metadata,omitempty" expr:"metadata"`
	// Hardware: where the client ran (and, on the same host, the server).
	Hostname        string `parquet:"hostname" json:"hostname" expr:"hostname"`
	Hardware        string `parquet:"hardware" json:"hardware" expr:"hardware"` // "linux/amd64, 16 CPUs (AMD EPYC ...), 1× NVIDIA H200"
	BenchrunVersion string `parquet:"benchrun_version" json:"benchrun_version" expr:"benchrun_version"`

	// Cell parameters.
	ISL         int64   `parquet:"isl" json:"isl" expr:"isl"`
	OSL         int64   `parquet:"osl" json:"osl" expr:"osl"`
	Concurrency int64   `parquet:"concurrency" json:"concurrency" expr:"concurrency"`
	Rate        float64 `parquet:"rate" json:"rate" expr:"rate"` // requests/s for open-loop cells; 0 for closed loop
	// Repeat numbers the independent measurements of one point (repeats:
	// N): 1..N, 0 when the sweep does not repeat.
	Repeat int64 `parquet:"repeat" json:"repeat" expr:"repeat"`
	// Measurement numbers the measurements of the cell within its attempt:
	// 1, and 2 for the re-measurement `baseline.confirm` makes of a cell
	// that breached its history (both rows are kept; the latest counts).
	Measurement int64 `parquet:"measurement" json:"measurement" expr:"measurement"`
	Requests    int64 `parquet:"requests" json:"requests" expr:"requests"`

	// The seed `bench` command's columns.
	FirstCallMs        *float64 `parquet:"first_call_ms" json:"first_call_ms" expr:"first_call_ms"`
	TTFTMs             *float64 `parquet:"ttft_ms" json:"ttft_ms" expr:"ttft_ms"`
	PrefillTokS        *float64 `parquet:"prefill_tok_s" json:"prefill_tok_s" expr:"prefill_tok_s"`
	ITLP50Ms           *float64 `parquet:"itl_p50_ms" json:"itl_p50_ms" expr:"itl_p50_ms"`
	ITLP99Ms           *float64 `parquet:"itl_p99_ms" json:"itl_p99_ms" expr:"itl_p99_ms"`
	DecodeTokS         *float64 `parquet:"decode_tok_s" json:"decode_tok_s" expr:"decode_tok_s"`
	SpeedupVsC1        *float64 `parquet:"speedup_vs_c1" json:"speedup_vs_c1" expr:"speedup_vs_c1"`
	BatchingEfficiency *float64 `parquet:"batching_efficiency" json:"batching_efficiency" expr:"batching_efficiency"`

	// Latency distributions (ms): exact percentiles over raw samples.
	TTFTP50Ms  *float64 `parquet:"ttft_p50_ms" json:"ttft_p50_ms" expr:"ttft_p50_ms"`
	TTFTP90Ms  *float64 `parquet:"ttft_p90_ms" json:"ttft_p90_ms" expr:"ttft_p90_ms"`
	TTFTP99Ms  *float64 `parquet:"ttft_p99_ms" json:"ttft_p99_ms" expr:"ttft_p99_ms"`
	TTFTMaxMs  *float64 `parquet:"ttft_max_ms" json:"ttft_max_ms" expr:"ttft_max_ms"`
	TPOTMs     *float64 `parquet:"tpot_ms" json:"tpot_ms" expr:"tpot_ms"`
	TPOTP50Ms  *float64 `parquet:"tpot_p50_ms" json:"tpot_p50_ms" expr:"tpot_p50_ms"`
	TPOTP99Ms  *float64 `parquet:"tpot_p99_ms" json:"tpot_p99_ms" expr:"tpot_p99_ms"`
	ITLMs      *float64 `parquet:"itl_ms" json:"itl_ms" expr:"itl_ms"`
	ITLP90Ms   *float64 `parquet:"itl_p90_ms" json:"itl_p90_ms" expr:"itl_p90_ms"`
	ITLMaxMs   *float64 `parquet:"itl_max_ms" json:"itl_max_ms" expr:"itl_max_ms"`
	E2ELMs     *float64 `parquet:"e2el_ms" json:"e2el_ms" expr:"e2el_ms"`
	E2ELP50Ms  *float64 `parquet:"e2el_p50_ms" json:"e2el_p50_ms" expr:"e2el_p50_ms"`
	E2ELP99Ms  *float64 `parquet:"e2el_p99_ms" json:"e2el_p99_ms" expr:"e2el_p99_ms"`
	SendLagP99 *float64 `parquet:"send_lag_p99_ms" json:"send_lag_p99_ms" expr:"send_lag_p99_ms"`

	// Throughput over the cell's window (first send to last completion).
	DurationS float64 `parquet:"duration_s" json:"duration_s" expr:"duration_s"`
	// SliceS is the width of the windows the cell's timed pass is cut into
	// (the slices table): the plan's `slice`, or the width that gives about
	// ten windows; 0 for a cell without requests and in files older than
	// schema version 10.
	SliceS       float64  `parquet:"slice_s" json:"slice_s" expr:"slice_s"`
	ReqS         *float64 `parquet:"req_s" json:"req_s" expr:"req_s"`
	OutputTokS   *float64 `parquet:"output_tok_s" json:"output_tok_s" expr:"output_tok_s"`
	TotalTokS    *float64 `parquet:"total_tok_s" json:"total_tok_s" expr:"total_tok_s"`
	Goodput      *float64 `parquet:"goodput" json:"goodput" expr:"goodput"`
	Completed    int64    `parquet:"completed" json:"completed" expr:"completed"`
	Failed       int64    `parquet:"failed" json:"failed" expr:"failed"`
	EffectiveISL *float64 `parquet:"effective_isl" json:"effective_isl" expr:"effective_isl"`
	EffectiveOSL *float64 `parquet:"effective_osl" json:"effective_osl" expr:"effective_osl"`
	// Length distributions (schema version 12): the cell's isl and osl
	// distributions as the plan drew them ("" for a fixed length; its
	// cell id names it too), and the percentiles of the lengths the server
	// counted (usage), beside their means effective_isl and effective_osl.
	ISLDist         string   `parquet:"isl_dist" json:"isl_dist" expr:"isl_dist"`
	OSLDist         string   `parquet:"osl_dist" json:"osl_dist" expr:"osl_dist"`
	EffectiveISLP50 *float64 `parquet:"effective_isl_p50" json:"effective_isl_p50" expr:"effective_isl_p50"`
	EffectiveISLP90 *float64 `parquet:"effective_isl_p90" json:"effective_isl_p90" expr:"effective_isl_p90"`
	EffectiveISLP99 *float64 `parquet:"effective_isl_p99" json:"effective_isl_p99" expr:"effective_isl_p99"`
	EffectiveOSLP50 *float64 `parquet:"effective_osl_p50" json:"effective_osl_p50" expr:"effective_osl_p50"`
	EffectiveOSLP90 *float64 `parquet:"effective_osl_p90" json:"effective_osl_p90" expr:"effective_osl_p90"`
	EffectiveOSLP99 *float64 `parquet:"effective_osl_p99" json:"effective_osl_p99" expr:"effective_osl_p99"`

	// Full distributions (ms; docs/METRICS.md): the percentiles the seed
	// columns above leave out, and the scheduled-time and per-token views.
	TTFTP95Ms      *float64 `parquet:"ttft_p95_ms" json:"ttft_p95_ms" expr:"ttft_p95_ms"`
	TTFTSchedMs    *float64 `parquet:"ttft_sched_ms" json:"ttft_sched_ms" expr:"ttft_sched_ms"`
	TTFTSchedP50Ms *float64 `parquet:"ttft_sched_p50_ms" json:"ttft_sched_p50_ms" expr:"ttft_sched_p50_ms"`
	TTFTSchedP90Ms *float64 `parquet:"ttft_sched_p90_ms" json:"ttft_sched_p90_ms" expr:"ttft_sched_p90_ms"`
	TTFTSchedP95Ms *float64 `parquet:"ttft_sched_p95_ms" json:"ttft_sched_p95_ms" expr:"ttft_sched_p95_ms"`
	TTFTSchedP99Ms *float64 `parquet:"ttft_sched_p99_ms" json:"ttft_sched_p99_ms" expr:"ttft_sched_p99_ms"`
	TTFTSchedMaxMs *float64 `parquet:"ttft_sched_max_ms" json:"ttft_sched_max_ms" expr:"ttft_sched_max_ms"`
	TPOTP90Ms      *float64 `parquet:"tpot_p90_ms" json:"tpot_p90_ms" expr:"tpot_p90_ms"`
	TPOTP95Ms      *float64 `parquet:"tpot_p95_ms" json:"tpot_p95_ms" expr:"tpot_p95_ms"`
	TPOTMaxMs      *float64 `parquet:"tpot_max_ms" json:"tpot_max_ms" expr:"tpot_max_ms"`
	ITLP95Ms       *float64 `parquet:"itl_p95_ms" json:"itl_p95_ms" expr:"itl_p95_ms"`
	ITLTokMs       *float64 `parquet:"itl_tok_ms" json:"itl_tok_ms" expr:"itl_tok_ms"`
	ITLTokP50Ms    *float64 `parquet:"itl_tok_p50_ms" json:"itl_tok_p50_ms" expr:"itl_tok_p50_ms"`
	ITLTokP90Ms    *float64 `parquet:"itl_tok_p90_ms" json:"itl_tok_p90_ms" expr:"itl_tok_p90_ms"`
	ITLTokP95Ms    *float64 `parquet:"itl_tok_p95_ms" json:"itl_tok_p95_ms" expr:"itl_tok_p95_ms"`
	ITLTokP99Ms    *float64 `parquet:"itl_tok_p99_ms" json:"itl_tok_p99_ms" expr:"itl_tok_p99_ms"`
	ITLTokMaxMs    *float64 `parquet:"itl_tok_max_ms" json:"itl_tok_max_ms" expr:"itl_tok_max_ms"`
	E2ELP90Ms      *float64 `parquet:"e2el_p90_ms" json:"e2el_p90_ms" expr:"e2el_p90_ms"`
	E2ELP95Ms      *float64 `parquet:"e2el_p95_ms" json:"e2el_p95_ms" expr:"e2el_p95_ms"`
	E2ELMaxMs      *float64 `parquet:"e2el_max_ms" json:"e2el_max_ms" expr:"e2el_max_ms"`
	E2ELSchedMs    *float64 `parquet:"e2el_sched_ms" json:"e2el_sched_ms" expr:"e2el_sched_ms"`
	E2ELSchedP50Ms *float64 `parquet:"e2el_sched_p50_ms" json:"e2el_sched_p50_ms" expr:"e2el_sched_p50_ms"`
	E2ELSchedP90Ms *float64 `parquet:"e2el_sched_p90_ms" json:"e2el_sched_p90_ms" expr:"e2el_sched_p90_ms"`
	E2ELSchedP95Ms *float64 `parquet:"e2el_sched_p95_ms" json:"e2el_sched_p95_ms" expr:"e2el_sched_p95_ms"`
	E2ELSchedP99Ms *float64 `parquet:"e2el_sched_p99_ms" json:"e2el_sched_p99_ms" expr:"e2el_sched_p99_ms"`
	E2ELSchedMaxMs *float64 `parquet:"e2el_sched_max_ms" json:"e2el_sched_max_ms" expr:"e2el_sched_max_ms"`
	SendLagMs      *float64 `parquet:"send_lag_ms" json:"send_lag_ms" expr:"send_lag_ms"`
	SendLagP50Ms   *float64 `parquet:"send_lag_p50_ms" json:"send_lag_p50_ms" expr:"send_lag_p50_ms"`
	SendLagP90Ms   *float64 `parquet:"send_lag_p90_ms" json:"send_lag_p90_ms" expr:"send_lag_p90_ms"`
	SendLagP95Ms   *float64 `parquet:"send_lag_p95_ms" json:"send_lag_p95_ms" expr:"send_lag_p95_ms"`
	SendLagMaxMs   *float64 `parquet:"send_lag_max_ms" json:"send_lag_max_ms" expr:"send_lag_max_ms"`
	NTPOTMs        *float64 `parquet:"ntpot_ms" json:"ntpot_ms" expr:"ntpot_ms"`
	// Load shape of the point: arrival process and in-flight cap of an
	// open loop ("" and 0 for a closed loop), and the achieved send rate.
	Arrival     string   `parquet:"arrival" json:"arrival" expr:"arrival"`
	Burstiness  float64  `parquet:"burstiness" json:"burstiness" expr:"burstiness"`
	MaxInflight int64    `parquet:"max_inflight" json:"max_inflight" expr:"max_inflight"`
	SentReqS    *float64 `parquet:"sent_req_s" json:"sent_req_s" expr:"sent_req_s"`
	// MaxModelLen is the context one request may use as the server
	// reported it (nil: unknown); ConnRetries counts sends resent after a
	// pooled connection turned out closed before any response byte.
	MaxModelLen *int64 `parquet:"max_model_len" json:"max_model_len" expr:"max_model_len"`
	ConnRetries int64  `parquet:"conn_retries" json:"conn_retries" expr:"conn_retries"`
	// ClientCPUUtil is benchrun's own CPU use over the timed window, in
	// cores (1.0 = one core busy): a client near the machine's cores was
	// the bottleneck, whatever the latencies say (nil: the process CPU
	// time could not be read).
	ClientCPUUtil *float64 `parquet:"client_cpu_util" json:"client_cpu_util" expr:"client_cpu_util"`
	// ClientCPUWaitMs and ServerCPUWaitMs are how long benchrun's threads
	// and the launched server's spent runnable but waiting for a CPU over
	// the timed window, summed over threads (Linux schedstat run_delay;
	// the server's over every process of its tree, workers included):
	// what CPU-bound neighbours took from the measurement, which a
	// sleeping probe's lateness does not show (nil: not measured; the
	// server's also when it was not launched here).
	ClientCPUWaitMs *float64 `parquet:"client_cpu_wait_ms" json:"client_cpu_wait_ms" expr:"client_cpu_wait_ms"`
	ServerCPUWaitMs *float64 `parquet:"server_cpu_wait_ms" json:"server_cpu_wait_ms" expr:"server_cpu_wait_ms"`
	// The machine itself over the timed window (docs/METRICS.md, "The
	// machine's lateness"): how late a probe process beside the load ran
	// an event loop's timer task handed to another thread (p50, p99, max;
	// the lateness verdicts judge with the p99) and a lone sleeping
	// thread (p99), and the share of the window in which some runnable
	// task waited for a CPU (Linux PSI, percent). Nil: not measured.
	MachineLateP50Ms      *float64 `parquet:"machine_late_p50_ms" json:"machine_late_p50_ms" expr:"machine_late_p50_ms"`
	MachineLateP99Ms      *float64 `parquet:"machine_late_p99_ms" json:"machine_late_p99_ms" expr:"machine_late_p99_ms"`
	MachineLateMaxMs      *float64 `parquet:"machine_late_max_ms" json:"machine_late_max_ms" expr:"machine_late_max_ms"`
	MachineWakeP99Ms      *float64 `parquet:"machine_wake_p99_ms" json:"machine_wake_p99_ms" expr:"machine_wake_p99_ms"`
	MachineCPUPressurePct *float64 `parquet:"machine_cpu_pressure_pct" json:"machine_cpu_pressure_pct" expr:"machine_cpu_pressure_pct"`
	// GoodputRatio is the fraction of sent requests meeting every SLO.
	GoodputRatio *float64 `parquet:"goodput_ratio" json:"goodput_ratio" expr:"goodput_ratio"`
	// The seed's admission columns as a client sees them: prompt tokens
	// the server admitted (Σ usage.prompt_tokens of completed requests) and
	// sequences it retired (completed requests).
	AdmittedTok int64 `parquet:"admitted_tok" json:"admitted_tok" expr:"admitted_tok"`
	Retires     int64 `parquet:"retires" json:"retires" expr:"retires"`

	// GPU telemetry over the cell's timed window, from NVML, for the
	// devices the server was given (nil: not measured: no NVML, no GPU,
	// or the device does not report it; docs/RESULTS.md). Utilisation in
	// percent; memory the peak over devices of used memory (NVML v2
	// info: reserved separately); power the mean and max of the summed
	// devices' averaged readings; energy the total-energy counters' delta
	// over the window, summed over devices.
	GPUUtilMean         *float64 `parquet:"gpu_util_mean" json:"gpu_util_mean" expr:"gpu_util_mean"`
	GPUUtilP95          *float64 `parquet:"gpu_util_p95" json:"gpu_util_p95" expr:"gpu_util_p95"`
	GPUSMUtilMean       *float64 `parquet:"gpu_sm_util_mean" json:"gpu_sm_util_mean" expr:"gpu_sm_util_mean"`
	GPUMemUtilMean      *float64 `parquet:"gpu_mem_util_mean" json:"gpu_mem_util_mean" expr:"gpu_mem_util_mean"`
	GPUMemPeakBytes     *int64   `parquet:"gpu_mem_peak_bytes" json:"gpu_mem_peak_bytes" expr:"gpu_mem_peak_bytes"`
	GPUMemReservedBytes *int64   `parquet:"gpu_mem_reserved_bytes" json:"gpu_mem_reserved_bytes" expr:"gpu_mem_reserved_bytes"`
	PowerWMean          *float64 `parquet:"power_w_mean" json:"power_w_mean" expr:"power_w_mean"`
	PowerWMax           *float64 `parquet:"power_w_max" json:"power_w_max" expr:"power_w_max"`
	EnergyJ             *float64 `parquet:"energy_j" json:"energy_j" expr:"energy_j"`
	EnergyJPerToken     *float64 `parquet:"energy_j_per_token" json:"energy_j_per_token" expr:"energy_j_per_token"`
	TokensPerJoule      *float64 `parquet:"tokens_per_joule" json:"tokens_per_joule" expr:"tokens_per_joule"`
	SMClockMHzMean      *float64 `parquet:"sm_clock_mhz_mean" json:"sm_clock_mhz_mean" expr:"sm_clock_mhz_mean"`
	GPUTempCMax         *float64 `parquet:"gpu_temp_c_max" json:"gpu_temp_c_max" expr:"gpu_temp_c_max"`
	// ThrottleReasons names the clock event reasons seen in the window
	// ("sw_power_cap,hw_slowdown"); GPUs lists the devices measured by
	// UUID. Both "" when none was seen or nothing was measured: a NULL
	// gpu_util_mean tells the two apart.
	ThrottleReasons string `parquet:"throttle_reasons" json:"throttle_reasons" expr:"throttle_reasons"`
	GPUs            string `parquet:"gpus" json:"gpus" expr:"gpus"`

	// The server's own metrics (Prometheus text), scraped before, during
	// and after the window: gauge peaks and counter deltas mapped from
	// the engine's names (docs/RESULTS.md; nil: the server exposes none,
	// or not that one). ServerParkWaits is the seed's
	// num_inflight_park_waits: requests that waited for a slot.
	ServerRunningPeak      *float64 `parquet:"server_running_peak" json:"server_running_peak" expr:"server_running_peak"`
	ServerWaitingPeak      *float64 `parquet:"server_waiting_peak" json:"server_waiting_peak" expr:"server_waiting_peak"`
	ServerParkWaits        *float64 `parquet:"num_inflight_park_waits" json:"num_inflight_park_waits" expr:"num_inflight_park_waits"`
	KVCacheUsagePeak       *float64 `parquet:"kv_cache_usage_peak" json:"kv_cache_usage_peak" expr:"kv_cache_usage_peak"`
	ServerPreemptions      *float64 `parquet:"server_preemptions" json:"server_preemptions" expr:"server_preemptions"`
	ServerPromptTokens     *float64 `parquet:"server_prompt_tokens" json:"server_prompt_tokens" expr:"server_prompt_tokens"`
	ServerGenerationTokens *float64 `parquet:"server_generation_tokens" json:"server_generation_tokens" expr:"server_generation_tokens"`
	PrefixCacheHitRate     *float64 `parquet:"prefix_cache_hit_rate" json:"prefix_cache_hit_rate" expr:"prefix_cache_hit_rate"`
	ServerTTFTMeanMs       *float64 `parquet:"server_ttft_mean_ms" json:"server_ttft_mean_ms" expr:"server_ttft_mean_ms"`
	ServerITLMeanMs        *float64 `parquet:"server_itl_mean_ms" json:"server_itl_mean_ms" expr:"server_itl_mean_ms"`
	ServerQueueMeanMs      *float64 `parquet:"server_queue_mean_ms" json:"server_queue_mean_ms" expr:"server_queue_mean_ms"`

	// The server's process tree on this host (/proc): CPU seconds over the
	// window and peak resident memory (nil: not a process benchrun
	// launched here, or /proc not readable).
	ServerCPUS         *float64 `parquet:"server_cpu_s" json:"server_cpu_s" expr:"server_cpu_s"`
	ServerCPUUtil      *float64 `parquet:"server_cpu_util" json:"server_cpu_util" expr:"server_cpu_util"`
	ServerRSSPeakBytes *int64   `parquet:"server_rss_peak_bytes" json:"server_rss_peak_bytes" expr:"server_rss_peak_bytes"`

	// exec rows (llama-bench, mlx-lm, generic programs)
	// An exec stage runs a benchmark program and maps what the program
	// means the same way onto the common columns above (a llama-bench pp
	// test's avg_ts is prefill_tok_s, n_prompt is isl); these hold the rest,
	// under the program's own names so that a llama-bench user finds them.
	// Strings are "" and pointers nil on rows the program did not report
	// them for (every sweep row).
	Program   string   `parquet:"program" json:"program" expr:"program"`          // the parser that read the row: llama-bench, mlx-lm, json, jsonl, csv
	BenchTest string   `parquet:"bench_test" json:"bench_test" expr:"bench_test"` // the program's test name: pp512, tg128, pp512+tg128, tg128@d4096
	TestKind  string   `parquet:"test_kind" json:"test_kind" expr:"test_kind"`    // pp (prompt only), tg (generation only), pg (both)
	NDepth    *int64   `parquet:"n_depth" json:"n_depth" expr:"n_depth"`
	AvgTS     *float64 `parquet:"avg_ts" json:"avg_ts" expr:"avg_ts"`
	StddevTS  *float64 `parquet:"stddev_ts" json:"stddev_ts" expr:"stddev_ts"`
	AvgNs     *int64   `parquet:"avg_ns" json:"avg_ns" expr:"avg_ns"`
	StddevNs  *int64   `parquet:"stddev_ns" json:"stddev_ns" expr:"stddev_ns"`
	// The model as the program describes it.
	ModelType      string `parquet:"model_type" json:"model_type" expr:"model_type"`
	ModelSizeBytes *int64 `parquet:"model_size_bytes" json:"model_size_bytes" expr:"model_size_bytes"`
	ModelNParams   *int64 `parquet:"model_n_params" json:"model_n_params" expr:"model_n_params"`
	// The program's settings: they decide what a test measured.
	Backends   string `parquet:"backends" json:"backends" expr:"backends"`
	NGPULayers *int64 `parquet:"n_gpu_layers" json:"n_gpu_layers" expr:"n_gpu_layers"`
	NThreads   *int64 `parquet:"n_threads" json:"n_threads" expr:"n_threads"`
	NBatch     *int64 `parquet:"n_batch" json:"n_batch" expr:"n_batch"`
	NUBatch    *int64 `parquet:"n_ubatch" json:"n_ubatch" expr:"n_ubatch"`
	// FlashAttn is "on", "off" or "auto" whatever form the release wrote
	// (a bool in older llama-bench, -1/0/1 or a word in newer ones).
	FlashAttn string `parquet:"flash_attn" json:"flash_attn" expr:"flash_attn"`
	TypeK     string `parquet:"type_k" json:"type_k" expr:"type_k"`
	TypeV     string `parquet:"type_v" json:"type_v" expr:"type_v"`
	SplitMode string `parquet:"split_mode" json:"split_mode" expr:"split_mode"`
	Devices   string `parquet:"devices" json:"devices" expr:"devices"`
	// The program's build and the hardware it saw.
	BuildCommit string `parquet:"build_commit" json:"build_commit" expr:"build_commit"`
	BuildNumber *int64 `parquet:"build_number" json:"build_number" expr:"build_number"`
	CPUInfo     string `parquet:"cpu_info" json:"cpu_info" expr:"cpu_info"`
	GPUInfo     string `parquet:"gpu_info" json:"gpu_info" expr:"gpu_info"`
	// PeakMemoryBytes is the program's own peak memory figure (mlx-lm's
	// peak_memory, GB × 1e9), not NVML's (gpu_mem_peak_bytes).
	PeakMemoryBytes *int64 `parquet:"peak_memory_bytes" json:"peak_memory_bytes" expr:"peak_memory_bytes"`
	// ExecExtra is every field of the program's record that no column
	// took, as one JSON object: the field set grows with each release, and
	// nothing the program said is dropped.
	ExecExtra string `parquet:"exec_extra" json:"exec_extra" expr:"exec_extra"`

	// validate rows: real documents against a synthetic cell. A validate
	// stage's row is a normal cell row measured on documents, plus the
	// synthetic cell it was compared with and each metric's real/synthetic
	// ratio (nil on every other row, and when either side was not measured:
	// a ratio against nothing is no ratio).
	AgainstCellID         string   `parquet:"against_cell_id" json:"against_cell_id" expr:"against_cell_id"`
	Documents             int64    `parquet:"documents" json:"documents" expr:"documents"`
	SyntheticEffectiveISL *float64 `parquet:"synthetic_effective_isl" json:"synthetic_effective_isl" expr:"synthetic_effective_isl"`
	DecodeTokSRatio       *float64 `parquet:"decode_tok_s_ratio" json:"decode_tok_s_ratio" expr:"decode_tok_s_ratio"`
	OutputTokSRatio       *float64 `parquet:"output_tok_s_ratio" json:"output_tok_s_ratio" expr:"output_tok_s_ratio"`
	PrefillTokSRatio      *float64 `parquet:"prefill_tok_s_ratio" json:"prefill_tok_s_ratio" expr:"prefill_tok_s_ratio"`
	TotalTokSRatio        *float64 `parquet:"total_tok_s_ratio" json:"total_tok_s_ratio" expr:"total_tok_s_ratio"`
	ReqSRatio             *float64 `parquet:"req_s_ratio" json:"req_s_ratio" expr:"req_s_ratio"`
	TTFTRatio             *float64 `parquet:"ttft_ratio" json:"ttft_ratio" expr:"ttft_ratio"`
	TPOTRatio             *float64 `parquet:"tpot_ratio" json:"tpot_ratio" expr:"tpot_ratio"`
	ITLRatio              *float64 `parquet:"itl_ratio" json:"itl_ratio" expr:"itl_ratio"`
	E2ELRatio             *float64 `parquet:"e2el_ratio" json:"e2el_ratio" expr:"e2el_ratio"`

	// embeddings and media: the embeddings batch, the images per chat
	// request and their size, the audio length of a transcription (0 and
	// "" when the sweep sends none), and what those sweeps measure (nil:
	// not that kind of sweep, or nothing completed; docs/METRICS.md).
	Batch           int64    `parquet:"batch" json:"batch" expr:"batch"`
	Images          int64    `parquet:"images" json:"images" expr:"images"`
	ImageResolution string   `parquet:"image_resolution" json:"image_resolution" expr:"image_resolution"`
	AudioSeconds    float64  `parquet:"audio_seconds" json:"audio_seconds" expr:"audio_seconds"`
	InputTokS       *float64 `parquet:"input_tok_s" json:"input_tok_s" expr:"input_tok_s"`
	EmbeddingsS     *float64 `parquet:"embeddings_s" json:"embeddings_s" expr:"embeddings_s"`
	DocumentsS      *float64 `parquet:"documents_s" json:"documents_s" expr:"documents_s"`
	Dimensions      *int64   `parquet:"dimensions" json:"dimensions" expr:"dimensions"`
	CosineMin       *float64 `parquet:"cosine_min" json:"cosine_min" expr:"cosine_min"`
	CosineMean      *float64 `parquet:"cosine_mean" json:"cosine_mean" expr:"cosine_mean"`
	RealTimeFactor  *float64 `parquet:"real_time_factor" json:"real_time_factor" expr:"real_time_factor"`
	AudioSPerS      *float64 `parquet:"audio_s_per_s" json:"audio_s_per_s" expr:"audio_s_per_s"`

	// Multi-turn conversations (the sweep's `turns`): sessions send turn k
	// with every earlier turn's prompt and answer as history (nil: not a
	// conversation cell). TTFT of the first turn and of the later turns is
	// the number that shows whether a prefix cache serves the history.
	Turns               *int64   `parquet:"turns" json:"turns" expr:"turns"`
	ThinkTimeMs         *float64 `parquet:"think_time_ms" json:"think_time_ms" expr:"think_time_ms"`
	TTFTTurn1P50Ms      *float64 `parquet:"ttft_turn1_p50_ms" json:"ttft_turn1_p50_ms" expr:"ttft_turn1_p50_ms"`
	TTFTLaterTurnsP50Ms *float64 `parquet:"ttft_later_turns_p50_ms" json:"ttft_later_turns_p50_ms" expr:"ttft_later_turns_p50_ms"`
	// Prefix-cache accounting from the answers themselves: Σ
	// usage.prompt_tokens_details.cached_tokens (nil: no request's usage
	// said), beside the server's own counters (ServerPrefixCacheHitRate;
	// PrefixCacheHitRate is the usage figure where there is one).
	CachedTokens             *int64   `parquet:"cached_tokens" json:"cached_tokens" expr:"cached_tokens"`
	ServerPrefixCacheHitRate *float64 `parquet:"server_prefix_cache_hit_rate" json:"server_prefix_cache_hit_rate" expr:"server_prefix_cache_hit_rate"`

	// Agent sessions (the sweep's `agent`; docs/METRICS.md, Agent
	// sessions): the plan (step limit, mean tool latency), then per
	// session (steps, whether it reached a final answer, the time to it,
	// its tool and model time) and by step position as turns are (the
	// first step against the later ones). nil: not an agent cell.
	MaxSteps                   *int64   `parquet:"max_steps" json:"max_steps" expr:"max_steps"`
	ToolLatencyMs              *float64 `parquet:"tool_latency_ms" json:"tool_latency_ms" expr:"tool_latency_ms"`
	AgentSessions              *int64   `parquet:"agent_sessions" json:"agent_sessions" expr:"agent_sessions"`
	StepsMean                  *float64 `parquet:"steps_mean" json:"steps_mean" expr:"steps_mean"`
	StepsMax                   *int64   `parquet:"steps_max" json:"steps_max" expr:"steps_max"`
	FinalAnswerPct             *float64 `parquet:"final_answer_pct" json:"final_answer_pct" expr:"final_answer_pct"`
	FinalAnswerP50Ms           *float64 `parquet:"final_answer_p50_ms" json:"final_answer_p50_ms" expr:"final_answer_p50_ms"`
	FinalAnswerP99Ms           *float64 `parquet:"final_answer_p99_ms" json:"final_answer_p99_ms" expr:"final_answer_p99_ms"`
	ToolMsMean                 *float64 `parquet:"tool_ms_mean" json:"tool_ms_mean" expr:"tool_ms_mean"`
	ModelMsMean                *float64 `parquet:"model_ms_mean" json:"model_ms_mean" expr:"model_ms_mean"`
	TTFTStep1P50Ms             *float64 `parquet:"ttft_step1_p50_ms" json:"ttft_step1_p50_ms" expr:"ttft_step1_p50_ms"`
	TTFTLaterStepsP50Ms        *float64 `parquet:"ttft_later_steps_p50_ms" json:"ttft_later_steps_p50_ms" expr:"ttft_later_steps_p50_ms"`
	CachedTokensStep1Mean      *float64 `parquet:"cached_tokens_step1_mean" json:"cached_tokens_step1_mean" expr:"cached_tokens_step1_mean"`
	CachedTokensLaterStepsMean *float64 `parquet:"cached_tokens_later_steps_mean" json:"cached_tokens_later_steps_mean" expr:"cached_tokens_later_steps_mean"`
	// Reasoning (docs/METRICS.md, Reasoning): the time to the first
	// answer token's distribution, the time to the first reasoning token,
	// reasoning and answer tokens per completed request, each phase's
	// decode rate, and the share of completed requests that answered
	// (nil: nothing completed, or nothing to summarize). Reasoning is
	// the request's reasoning controls as the cell sent them ("" for
	// none), a key like images.
	Reasoning          string   `parquet:"reasoning" json:"reasoning" expr:"reasoning"`
	TTFOMs             *float64 `parquet:"ttfo_ms" json:"ttfo_ms" expr:"ttfo_ms"`
	TTFOP50Ms          *float64 `parquet:"ttfo_p50_ms" json:"ttfo_p50_ms" expr:"ttfo_p50_ms"`
	TTFOP90Ms          *float64 `parquet:"ttfo_p90_ms" json:"ttfo_p90_ms" expr:"ttfo_p90_ms"`
	TTFOP95Ms          *float64 `parquet:"ttfo_p95_ms" json:"ttfo_p95_ms" expr:"ttfo_p95_ms"`
	TTFOP99Ms          *float64 `parquet:"ttfo_p99_ms" json:"ttfo_p99_ms" expr:"ttfo_p99_ms"`
	TTFOMaxMs          *float64 `parquet:"ttfo_max_ms" json:"ttfo_max_ms" expr:"ttfo_max_ms"`
	TTFRMs             *float64 `parquet:"ttfr_ms" json:"ttfr_ms" expr:"ttfr_ms"`
	TTFTCMs            *float64 `parquet:"ttftc_ms" json:"ttftc_ms" expr:"ttftc_ms"`
	ReasoningTokensAvg *float64 `parquet:"reasoning_tokens_mean" json:"reasoning_tokens_mean" expr:"reasoning_tokens_mean"`
	AnswerTokensAvg    *float64 `parquet:"answer_tokens_mean" json:"answer_tokens_mean" expr:"answer_tokens_mean"`
	ReasoningTokS      *float64 `parquet:"reasoning_tok_s" json:"reasoning_tok_s" expr:"reasoning_tok_s"`
	AnswerTokS         *float64 `parquet:"answer_tok_s" json:"answer_tok_s" expr:"answer_tok_s"`
	AnsweredPct        *float64 `parquet:"answered_pct" json:"answered_pct" expr:"answered_pct"`
	// Tool calls and structured output (docs/METRICS.md, Tool calls and
	// structured output): tool calls per completed request that offered
	// tools (nil: none offered), the share of calls whose arguments are
	// JSON and valid against the tool's parameters (nil: no call came),
	// and the share of answers valid against the response_format (nil:
	// none asked for), percent.
	ToolCallsMean      *float64 `parquet:"tool_calls_mean" json:"tool_calls_mean" expr:"tool_calls_mean"`
	ToolArgsJSONPct    *float64 `parquet:"tool_args_json_pct" json:"tool_args_json_pct" expr:"tool_args_json_pct"`
	ToolArgsValidPct   *float64 `parquet:"tool_args_valid_pct" json:"tool_args_valid_pct" expr:"tool_args_valid_pct"`
	StructuredValidPct *float64 `parquet:"structured_valid_pct" json:"structured_valid_pct" expr:"structured_valid_pct"`
	// TimeScale is a trace replay's speed-up (2: twice as fast as
	// recorded; nil: not a trace replay).
	TimeScale *float64 `parquet:"time_scale" json:"time_scale" expr:"time_scale"`
	// SLO search (the sweep's `search`): "probe" rows are the points the
	// search measured, the "knee" row the highest load found within the
	// SLO ("" for every other row); the max_* columns are set on the knee.
	Search                  string   `parquet:"search" json:"search" expr:"search"`
	MaxRateWithinSLO        *float64 `parquet:"max_rate_within_slo" json:"max_rate_within_slo" expr:"max_rate_within_slo"`
	MaxConcurrencyWithinSLO *float64 `parquet:"max_concurrency_within_slo" json:"max_concurrency_within_slo" expr:"max_concurrency_within_slo"`
	// Measure until precise (the sweep's `precision`; docs/METRICS.md,
	// Measure until precise): the target furthest from being met, the
	// precision its interval reached (half-width relative to the
	// estimate, %; nil: too few values to bound it) and its target, the
	// confidence, and why the timed pass stopped ("" without a target).
	PrecisionMetric     string   `parquet:"precision_metric" json:"precision_metric" expr:"precision_metric"`
	PrecisionReachedPct *float64 `parquet:"precision_reached_pct" json:"precision_reached_pct" expr:"precision_reached_pct"`
	PrecisionTargetPct  *float64 `parquet:"precision_target_pct" json:"precision_target_pct" expr:"precision_target_pct"`
	PrecisionConfidence *float64 `parquet:"precision_confidence" json:"precision_confidence" expr:"precision_confidence"`
	StopReason          string   `parquet:"stop_reason" json:"stop_reason" expr:"stop_reason"`
	// StartupS: process start to healthy of the server benchrun started
	// for the row (nil: none was started for it); a launch stage's own
	// start-up rows carry it with first_call_ms, its first request.
	StartupS *float64 `parquet:"startup_s" json:"startup_s" expr:"startup_s"`
	// The client's own stamping delay: how much later than the kernel's
	// receive timestamp benchrun's user-space clock read saw each event
	// (nil: no kernel timestamps); StampSource is "kernel" or "user",
	// the clock the row's latencies were measured with.
	StampDelayP50Ms *float64 `parquet:"stamp_delay_p50_ms" json:"stamp_delay_p50_ms" expr:"stamp_delay_p50_ms"`
	StampDelayP99Ms *float64 `parquet:"stamp_delay_p99_ms" json:"stamp_delay_p99_ms" expr:"stamp_delay_p99_ms"`
	// EventsJoinedPct is the share of token events, in %, that came in one
	// socket read with the next (kernel stamps: they carry the later
	// bytes' arrival): past half, the cell's gaps (itl) are mostly the
	// reads', not the server's (nil: not kernel-stamped).
	EventsJoinedPct *float64 `parquet:"events_joined_pct" json:"events_joined_pct" expr:"events_joined_pct"`
	StampSource     string   `parquet:"stamp_source" json:"stamp_source" expr:"stamp_source"`

	// Confidence bounds of the percentiles that assertions, baselines and
	// compare read (docs/METRICS.md, Confidence bounds of a percentile):
	// the two-sided 95 % distribution-free interval of each, two of the
	// same sample's order statistics (nil: too few samples to bound that
	// side, or the percentile itself is nil), and the size of the samples
	// that have no count column yet (ttft and e2el's is Completed): the
	// gaps behind itl, the requests behind tpot and ttfo (nil: a row
	// older than schema version 12).
	TTFTP50MsLo *float64 `parquet:"ttft_p50_ms_lo" json:"ttft_p50_ms_lo" expr:"ttft_p50_ms_lo"`
	TTFTP50MsHi *float64 `parquet:"ttft_p50_ms_hi" json:"ttft_p50_ms_hi" expr:"ttft_p50_ms_hi"`
	TTFTP90MsLo *float64 `parquet:"ttft_p90_ms_lo" json:"ttft_p90_ms_lo" expr:"ttft_p90_ms_lo"`
	TTFTP90MsHi *float64 `parquet:"ttft_p90_ms_hi" json:"ttft_p90_ms_hi" expr:"ttft_p90_ms_hi"`
	TTFTP95MsLo *float64 `parquet:"ttft_p95_ms_lo" json:"ttft_p95_ms_lo" expr:"ttft_p95_ms_lo"`
	TTFTP95MsHi *float64 `parquet:"ttft_p95_ms_hi" json:"ttft_p95_ms_hi" expr:"ttft_p95_ms_hi"`
	TTFTP99MsLo *float64 `parquet:"ttft_p99_ms_lo" json:"ttft_p99_ms_lo" expr:"ttft_p99_ms_lo"`
	TTFTP99MsHi *float64 `parquet:"ttft_p99_ms_hi" json:"ttft_p99_ms_hi" expr:"ttft_p99_ms_hi"`
	ITLP50MsLo  *float64 `parquet:"itl_p50_ms_lo" json:"itl_p50_ms_lo" expr:"itl_p50_ms_lo"`
	ITLP50MsHi  *float64 `parquet:"itl_p50_ms_hi" json:"itl_p50_ms_hi" expr:"itl_p50_ms_hi"`
	ITLP90MsLo  *float64 `parquet:"itl_p90_ms_lo" json:"itl_p90_ms_lo" expr:"itl_p90_ms_lo"`
	ITLP90MsHi  *float64 `parquet:"itl_p90_ms_hi" json:"itl_p90_ms_hi" expr:"itl_p90_ms_hi"`
	ITLP95MsLo  *float64 `parquet:"itl_p95_ms_lo" json:"itl_p95_ms_lo" expr:"itl_p95_ms_lo"`
	ITLP95MsHi  *float64 `parquet:"itl_p95_ms_hi" json:"itl_p95_ms_hi" expr:"itl_p95_ms_hi"`
	ITLP99MsLo  *float64 `parquet:"itl_p99_ms_lo" json:"itl_p99_ms_lo" expr:"itl_p99_ms_lo"`
	ITLP99MsHi  *float64 `parquet:"itl_p99_ms_hi" json:"itl_p99_ms_hi" expr:"itl_p99_ms_hi"`
	TPOTP50MsLo *float64 `parquet:"tpot_p50_ms_lo" json:"tpot_p50_ms_lo" expr:"tpot_p50_ms_lo"`
	TPOTP50MsHi *float64 `parquet:"tpot_p50_ms_hi" json:"tpot_p50_ms_hi" expr:"tpot_p50_ms_hi"`
	TPOTP90MsLo *float64 `parquet:"tpot_p90_ms_lo" json:"tpot_p90_ms_lo" expr:"tpot_p90_ms_lo"`
	TPOTP90MsHi *float64 `parquet:"tpot_p90_ms_hi" json:"tpot_p90_ms_hi" expr:"tpot_p90_ms_hi"`
	TPOTP95MsLo *float64 `parquet:"tpot_p95_ms_lo" json:"tpot_p95_ms_lo" expr:"tpot_p95_ms_lo"`
	TPOTP95MsHi *float64 `parquet:"tpot_p95_ms_hi" json:"tpot_p95_ms_hi" expr:"tpot_p95_ms_hi"`
	TPOTP99MsLo *float64 `parquet:"tpot_p99_ms_lo" json:"tpot_p99_ms_lo" expr:"tpot_p99_ms_lo"`
	TPOTP99MsHi *float64 `parquet:"tpot_p99_ms_hi" json:"tpot_p99_ms_hi" expr:"tpot_p99_ms_hi"`
	E2ELP50MsLo *float64 `parquet:"e2el_p50_ms_lo" json:"e2el_p50_ms_lo" expr:"e2el_p50_ms_lo"`
	E2ELP50MsHi *float64 `parquet:"e2el_p50_ms_hi" json:"e2el_p50_ms_hi" expr:"e2el_p50_ms_hi"`
	E2ELP90MsLo *float64 `parquet:"e2el_p90_ms_lo" json:"e2el_p90_ms_lo" expr:"e2el_p90_ms_lo"`
	E2ELP90MsHi *float64 `parquet:"e2el_p90_ms_hi" json:"e2el_p90_ms_hi" expr:"e2el_p90_ms_hi"`
	E2ELP95MsLo *float64 `parquet:"e2el_p95_ms_lo" json:"e2el_p95_ms_lo" expr:"e2el_p95_ms_lo"`
	E2ELP95MsHi *float64 `parquet:"e2el_p95_ms_hi" json:"e2el_p95_ms_hi" expr:"e2el_p95_ms_hi"`
	E2ELP99MsLo *float64 `parquet:"e2el_p99_ms_lo" json:"e2el_p99_ms_lo" expr:"e2el_p99_ms_lo"`
	E2ELP99MsHi *float64 `parquet:"e2el_p99_ms_hi" json:"e2el_p99_ms_hi" expr:"e2el_p99_ms_hi"`
	TTFOP50MsLo *float64 `parquet:"ttfo_p50_ms_lo" json:"ttfo_p50_ms_lo" expr:"ttfo_p50_ms_lo"`
	TTFOP50MsHi *float64 `parquet:"ttfo_p50_ms_hi" json:"ttfo_p50_ms_hi" expr:"ttfo_p50_ms_hi"`
	TTFOP90MsLo *float64 `parquet:"ttfo_p90_ms_lo" json:"ttfo_p90_ms_lo" expr:"ttfo_p90_ms_lo"`
	TTFOP90MsHi *float64 `parquet:"ttfo_p90_ms_hi" json:"ttfo_p90_ms_hi" expr:"ttfo_p90_ms_hi"`
	TTFOP95MsLo *float64 `parquet:"ttfo_p95_ms_lo" json:"ttfo_p95_ms_lo" expr:"ttfo_p95_ms_lo"`
	TTFOP95MsHi *float64 `parquet:"ttfo_p95_ms_hi" json:"ttfo_p95_ms_hi" expr:"ttfo_p95_ms_hi"`
	TTFOP99MsLo *float64 `parquet:"ttfo_p99_ms_lo" json:"ttfo_p99_ms_lo" expr:"ttfo_p99_ms_lo"`
	TTFOP99MsHi *float64 `parquet:"ttfo_p99_ms_hi" json:"ttfo_p99_ms_hi" expr:"ttfo_p99_ms_hi"`
	ITLSamples  *int64   `parquet:"itl_samples" json:"itl_samples" expr:"itl_samples"`
	TPOTSamples *int64   `parquet:"tpot_samples" json:"tpot_samples" expr:"tpot_samples"`
	TTFOSamples *int64   `parquet:"ttfo_samples" json:"ttfo_samples" expr:"ttfo_samples"`

	// Shards: the row is shard Shard (0-based) of Shards processes that
	// split the cell's load (--shard i/n; 0 of 1 unsharded, and 0 of n
	// for a merged row, which holds every shard's requests).
	Shard  int64 `parquet:"shard" json:"shard" expr:"shard"`
	Shards int64 `parquet:"shards" json:"shards" expr:"shards"`

	// Cost: a provisioned machine's cost_per_hour over the cell's duration
	// (nil when the plan gives no price). tokens_per_dollar counts output tokens.
	CostUSD         *float64 `parquet:"cost_usd" json:"cost_usd" expr:"cost_usd"`
	TokensPerDollar *float64 `parquet:"tokens_per_dollar" json:"tokens_per_dollar" expr:"tokens_per_dollar"`

	// Verdict.
	Status string `parquet:"status" json:"status" expr:"status"`
	Reason string `parquet:"reason" json:"reason" expr:"reason"`
	Notes  string `parquet:"notes" json:"notes" expr:"notes"`
}

// Request is one request's raw measurements, kept so any percentile can be
// recomputed later. Times are milliseconds relative to the actual send,
// except SentAt (wall clock); a failed request's ttft and e2el are nil.
type Request struct {
	RunID        string    `parquet:"run_id" json:"run_id"`
	Plan         string    `parquet:"plan" json:"plan"`
	Stage        string    `parquet:"stage" json:"stage"`
	CellID       string    `parquet:"cell_id" json:"cell_id"`
	Attempt      int64     `parquet:"attempt" json:"attempt"`         // the attempt that sent it, as in Cell
	Measurement  int64     `parquet:"measurement" json:"measurement"` // the cell's measurement that sent it, as in Cell
	Seq          int64     `parquet:"seq" json:"seq"`
	ResponseID   string    `parquet:"response_id" json:"response_id"`
	SentAt       time.Time `parquet:"sent_at,timestamp(microsecond)" json:"sent_at"`
	SendLagMs    float64   `parquet:"send_lag_ms" json:"send_lag_ms"`
	TTFTMs       *float64  `parquet:"ttft_ms" json:"ttft_ms"`
	E2ELMs       *float64  `parquet:"e2el_ms" json:"e2el_ms"`
	InputTokens  int64     `parquet:"input_tokens" json:"input_tokens"`
	OutputTokens int64     `parquet:"output_tokens" json:"output_tokens"`
	Chunks       int64     `parquet:"chunks" json:"chunks"`
	ChunkGapsMs  []float64 `parquet:"chunk_gaps_ms,list" json:"chunk_gaps_ms"`
	Status       string    `parquet:"status" json:"status"`
	Error        string    `parquet:"error" json:"error"`
	// Scheduled-time views (open loop; equal to the actual-send ones in a
	// closed loop) and tokens per chunk (chunk_tokens[k] belongs to the
	// k-th token-bearing event).
	TTFTSchedMs   *float64 `parquet:"ttft_sched_ms" json:"ttft_sched_ms"`
	E2ELSchedMs   *float64 `parquet:"e2el_sched_ms" json:"e2el_sched_ms"`
	ChunkTokens   []int64  `parquet:"chunk_tokens,list" json:"chunk_tokens"`
	UsageReported bool     `parquet:"usage_reported" json:"usage_reported"`
	// ConnRetries: times this request was resent because a pooled
	// keep-alive connection was found closed before any response byte.
	ConnRetries int64 `parquet:"conn_retries" json:"conn_retries"`
	// Conversations: the session (0-based within the cell) and its turn
	// (1-based), the history tokens the prompt carried (nil: not a
	// conversation cell). CachedTokens is the answer's
	// usage.prompt_tokens_details.cached_tokens (nil: the server did not
	// say; 0 is a reported miss).
	Session       *int64 `parquet:"session" json:"session"`
	Turn          *int64 `parquet:"turn" json:"turn"`
	HistoryTokens *int64 `parquet:"history_tokens" json:"history_tokens"`
	CachedTokens  *int64 `parquet:"cached_tokens" json:"cached_tokens"`
	// Agent sessions (schema version 12): the step of its session
	// (1-based; Session is the session) and the tool time before it (the
	// longest latency of the step before's calls, played at once; 0 on
	// step 1); nil: not an agent step.
	Step   *int64   `parquet:"step" json:"step"`
	ToolMs *float64 `parquet:"tool_ms" json:"tool_ms"`
	// ISL and OSL are the lengths drawn for this request from the cell's
	// distributions (schema version 12; nil: the cell's fixed isl and osl).
	ISL *int64 `parquet:"isl" json:"isl"`
	OSL *int64 `parquet:"osl" json:"osl"`
	// Model is the served model the request named when its cell mixes
	// models (schema version 12; "": the cell's model).
	Model string `parquet:"model" json:"model"`
	// StampDelaysMs: per token-bearing event, user-space stamp − kernel
	// receive timestamp (empty without kernel timestamps).
	StampDelaysMs []float64 `parquet:"stamp_delays_ms,list" json:"stamp_delays_ms"`
	// Reasoning (schema version 11; docs/METRICS.md, Reasoning): the
	// time to the first answer token (text or a tool call) and to the
	// first reasoning token, nil when none came (or the request failed);
	// the output split into reasoning and answer tokens (nil: failed, or
	// a whole answer that carried reasoning without a count), where the
	// reasoning count came from (ReasoningSource: usage, events or
	// unknown), and whether an answer came at all (nil: failed). TTFT
	// stays the first token of any kind. ReasoningEndMs is the last
	// reasoning event's time (nil: none), the end of the thinking phase of
	// a request that never answered.
	TTFOMs          *float64 `parquet:"ttfo_ms" json:"ttfo_ms"`
	TTFRMs          *float64 `parquet:"ttfr_ms" json:"ttfr_ms"`
	TTFTCMs         *float64 `parquet:"ttftc_ms" json:"ttftc_ms"` // the first tool-call event (nil: no call); schema version 12
	ReasoningEndMs  *float64 `parquet:"reasoning_end_ms" json:"reasoning_end_ms"`
	ReasoningTokens *int64   `parquet:"reasoning_tokens" json:"reasoning_tokens"`
	AnswerTokens    *int64   `parquet:"answer_tokens" json:"answer_tokens"`
	ReasoningSource string   `parquet:"reasoning_source" json:"reasoning_source"`
	Answered        *bool    `parquet:"answered" json:"answered"`
	// Tool calls and structured output (schema version 11): the calls
	// that arrived, those whose arguments are one JSON value, those valid
	// against the named tool's parameters (nil: the request offered no
	// tools and made no call, or failed); whether the answer text is JSON
	// and valid against the response_format (nil: none asked for, or
	// failed); why the first call or answer that failed its check failed.
	ToolCalls           *int64 `parquet:"tool_calls" json:"tool_calls"`
	ToolCallsJSON       *int64 `parquet:"tool_calls_json" json:"tool_calls_json"`
	ToolCallsValid      *int64 `parquet:"tool_calls_valid" json:"tool_calls_valid"`
	AnswerJSON          *bool  `parquet:"answer_json" json:"answer_json"`
	AnswerValid         *bool  `parquet:"answer_valid" json:"answer_valid"`
	AnswerInvalidReason string `parquet:"answer_invalid_reason" json:"answer_invalid_reason"`
}

// RequestTPOT is one request's time per output token after the first, the
// value the tpot columns summarize: (e2el − ttft) / (output tokens − 1);
// false for a request of fewer than two output tokens, which has no such
// time. The cell's columns (internal/measure) and the regression
// bootstrap's per-request values (internal/regress) both take it here.
func RequestTPOT(ttftMs, e2elMs float64, outputTokens int64) (float64, bool) {
	if outputTokens < 2 {
		return 0, false
	}
	return (e2elMs - ttftMs) / float64(outputTokens-1), true
}
