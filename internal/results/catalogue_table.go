package results

// The cells table's column names, for code that names a column.
const (
	ColRunID                    = "run_id"
	ColPlan                     = "plan"
	ColStage                    = "stage"
	ColCellID                   = "cell_id"
	ColAttempt                  = "attempt"
	ColStartedAt                = "started_at"
	ColModel                    = "model"
	ColModelDigest              = "model_digest"
	ColEngine                   = "engine"
	ColEngineVersion            = "engine_version"
	ColEndpoint                 = "endpoint"
	ColMetadata                 = "metadata"
	ColHostname                 = "hostname"
	ColHardware                 = "hardware"
	ColBenchrunVersion          = "benchrun_version"
	ColISL                      = "isl"
	ColOSL                      = "osl"
	ColConcurrency              = "concurrency"
	ColRate                     = "rate"
	ColRepeat                   = "repeat"
	ColMeasurement              = "measurement"
	ColRequests                 = "requests"
	ColFirstCallMs              = "first_call_ms"
	ColTTFTMs                   = "ttft_ms"
	ColPrefillTokS              = "prefill_tok_s"
	ColITLP50Ms                 = "itl_p50_ms"
	ColITLP99Ms                 = "itl_p99_ms"
	ColDecodeTokS               = "decode_tok_s"
	ColSpeedupVsC1              = "speedup_vs_c1"
	ColBatchingEfficiency       = "batching_efficiency"
	ColTTFTP50Ms                = "ttft_p50_ms"
	ColTTFTP90Ms                = "ttft_p90_ms"
	ColTTFTP99Ms                = "ttft_p99_ms"
	ColTTFTMaxMs                = "ttft_max_ms"
	ColTPOTMs                   = "tpot_ms"
	ColTPOTP50Ms                = "tpot_p50_ms"
	ColTPOTP99Ms                = "tpot_p99_ms"
	ColITLMs                    = "itl_ms"
	ColITLP90Ms                 = "itl_p90_ms"
	ColITLMaxMs                 = "itl_max_ms"
	ColE2ELMs                   = "e2el_ms"
	ColE2ELP50Ms                = "e2el_p50_ms"
	ColE2ELP99Ms                = "e2el_p99_ms"
	ColSendLagP99               = "send_lag_p99_ms"
	ColDurationS                = "duration_s"
	ColSliceS                   = "slice_s"
	ColReqS                     = "req_s"
	ColOutputTokS               = "output_tok_s"
	ColTotalTokS                = "total_tok_s"
	ColGoodput                  = "goodput"
	ColCompleted                = "completed"
	ColFailed                   = "failed"
	ColEffectiveISL             = "effective_isl"
	ColEffectiveOSL             = "effective_osl"
	ColISLDist                  = "isl_dist"
	ColOSLDist                  = "osl_dist"
	ColEffectiveISLP50          = "effective_isl_p50"
	ColEffectiveISLP90          = "effective_isl_p90"
	ColEffectiveISLP99          = "effective_isl_p99"
	ColEffectiveOSLP50          = "effective_osl_p50"
	ColEffectiveOSLP90          = "effective_osl_p90"
	ColEffectiveOSLP99          = "effective_osl_p99"
	ColTTFTP95Ms                = "ttft_p95_ms"
	ColTTFTSchedMs              = "ttft_sched_ms"
	ColTTFTSchedP50Ms           = "ttft_sched_p50_ms"
	ColTTFTSchedP90Ms           = "ttft_sched_p90_ms"
	ColTTFTSchedP95Ms           = "ttft_sched_p95_ms"
	ColTTFTSchedP99Ms           = "ttft_sched_p99_ms"
	ColTTFTSchedMaxMs           = "ttft_sched_max_ms"
	ColTPOTP90Ms                = "tpot_p90_ms"
	ColTPOTP95Ms                = "tpot_p95_ms"
	ColTPOTMaxMs                = "tpot_max_ms"
	ColITLP95Ms                 = "itl_p95_ms"
	ColITLTokMs                 = "itl_tok_ms"
	ColITLTokP50Ms              = "itl_tok_p50_ms"
	ColITLTokP90Ms              = "itl_tok_p90_ms"
	ColITLTokP95Ms              = "itl_tok_p95_ms"
	ColITLTokP99Ms              = "itl_tok_p99_ms"
	ColITLTokMaxMs              = "itl_tok_max_ms"
	ColE2ELP90Ms                = "e2el_p90_ms"
	ColE2ELP95Ms                = "e2el_p95_ms"
	ColE2ELMaxMs                = "e2el_max_ms"
	ColE2ELSchedMs              = "e2el_sched_ms"
	ColE2ELSchedP50Ms           = "e2el_sched_p50_ms"
	ColE2ELSchedP90Ms           = "e2el_sched_p90_ms"
	ColE2ELSchedP95Ms           = "e2el_sched_p95_ms"
	ColE2ELSchedP99Ms           = "e2el_sched_p99_ms"
	ColE2ELSchedMaxMs           = "e2el_sched_max_ms"
	ColSendLagMs                = "send_lag_ms"
	ColSendLagP50Ms             = "send_lag_p50_ms"
	ColSendLagP90Ms             = "send_lag_p90_ms"
	ColSendLagP95Ms             = "send_lag_p95_ms"
	ColSendLagMaxMs             = "send_lag_max_ms"
	ColNTPOTMs                  = "ntpot_ms"
	ColArrival                  = "arrival"
	ColBurstiness               = "burstiness"
	ColMaxInflight              = "max_inflight"
	ColSentReqS                 = "sent_req_s"
	ColMaxModelLen              = "max_model_len"
	ColConnRetries              = "conn_retries"
	ColClientCPUUtil            = "client_cpu_util"
	ColClientCPUWaitMs          = "client_cpu_wait_ms"
	ColServerCPUWaitMs          = "server_cpu_wait_ms"
	ColMachineLateP50Ms         = "machine_late_p50_ms"
	ColMachineLateP99Ms         = "machine_late_p99_ms"
	ColMachineLateMaxMs         = "machine_late_max_ms"
	ColMachineWakeP99Ms         = "machine_wake_p99_ms"
	ColMachineCPUPressurePct    = "machine_cpu_pressure_pct"
	ColGoodputRatio             = "goodput_ratio"
	ColAdmittedTok              = "admitted_tok"
	ColRetires                  = "retires"
	ColGPUUtilMean              = "gpu_util_mean"
	ColGPUUtilP95               = "gpu_util_p95"
	ColGPUSMUtilMean            = "gpu_sm_util_mean"
	ColGPUMemUtilMean           = "gpu_mem_util_mean"
	ColGPUMemPeakBytes          = "gpu_mem_peak_bytes"
	ColGPUMemReservedBytes      = "gpu_mem_reserved_bytes"
	ColPowerWMean               = "power_w_mean"
	ColPowerWMax                = "power_w_max"
	ColEnergyJ                  = "energy_j"
	ColEnergyJPerToken          = "energy_j_per_token"
	ColTokensPerJoule           = "tokens_per_joule"
	ColSMClockMHzMean           = "sm_clock_mhz_mean"
	ColGPUTempCMax              = "gpu_temp_c_max"
	ColThrottleReasons          = "throttle_reasons"
	ColGPUs                     = "gpus"
	ColServerRunningPeak        = "server_running_peak"
	ColServerWaitingPeak        = "server_waiting_peak"
	ColServerParkWaits          = "num_inflight_park_waits"
	ColKVCacheUsagePeak         = "kv_cache_usage_peak"
	ColServerPreemptions        = "server_preemptions"
	ColServerPromptTokens       = "server_prompt_tokens"
	ColServerGenerationTokens   = "server_generation_tokens"
	ColPrefixCacheHitRate       = "prefix_cache_hit_rate"
	ColServerTTFTMeanMs         = "server_ttft_mean_ms"
	ColServerITLMeanMs          = "server_itl_mean_ms"
	ColServerQueueMeanMs        = "server_queue_mean_ms"
	ColServerCPUS               = "server_cpu_s"
	ColServerCPUUtil            = "server_cpu_util"
	ColServerRSSPeakBytes       = "server_rss_peak_bytes"
	ColProgram                  = "program"
	ColBenchTest                = "bench_test"
	ColTestKind                 = "test_kind"
	ColNDepth                   = "n_depth"
	ColAvgTS                    = "avg_ts"
	ColStddevTS                 = "stddev_ts"
	ColAvgNs                    = "avg_ns"
	ColStddevNs                 = "stddev_ns"
	ColModelType                = "model_type"
	ColModelSizeBytes           = "model_size_bytes"
	ColModelNParams             = "model_n_params"
	ColBackends                 = "backends"
	ColNGPULayers               = "n_gpu_layers"
	ColNThreads                 = "n_threads"
	ColNBatch                   = "n_batch"
	ColNUBatch                  = "n_ubatch"
	ColFlashAttn                = "flash_attn"
	ColTypeK                    = "type_k"
	ColTypeV                    = "type_v"
	ColSplitMode                = "split_mode"
	ColDevices                  = "devices"
	ColBuildCommit              = "build_commit"
	ColBuildNumber              = "build_number"
	ColCPUInfo                  = "cpu_info"
	ColGPUInfo                  = "gpu_info"
	ColPeakMemoryBytes          = "peak_memory_bytes"
	ColExecExtra                = "exec_extra"
	ColAgainstCellID            = "against_cell_id"
	ColDocuments                = "documents"
	ColSyntheticEffectiveISL    = "synthetic_effective_isl"
	ColDecodeTokSRatio          = "decode_tok_s_ratio"
	ColOutputTokSRatio          = "output_tok_s_ratio"
	ColPrefillTokSRatio         = "prefill_tok_s_ratio"
	ColTotalTokSRatio           = "total_tok_s_ratio"
	ColReqSRatio                = "req_s_ratio"
	ColTTFTRatio                = "ttft_ratio"
	ColTPOTRatio                = "tpot_ratio"
	ColITLRatio                 = "itl_ratio"
	ColE2ELRatio                = "e2el_ratio"
	ColBatch                    = "batch"
	ColImages                   = "images"
	ColImageResolution          = "image_resolution"
	ColAudioSeconds             = "audio_seconds"
	ColInputTokS                = "input_tok_s"
	ColEmbeddingsS              = "embeddings_s"
	ColDocumentsS               = "documents_s"
	ColDimensions               = "dimensions"
	ColCosineMin                = "cosine_min"
	ColCosineMean               = "cosine_mean"
	ColRealTimeFactor           = "real_time_factor"
	ColAudioSPerS               = "audio_s_per_s"
	ColTurns                    = "turns"
	ColThinkTimeMs              = "think_time_ms"
	ColReasoning                = "reasoning"
	ColTTFOMs                   = "ttfo_ms"
	ColTTFOP50Ms                = "ttfo_p50_ms"
	ColTTFOP90Ms                = "ttfo_p90_ms"
	ColTTFOP95Ms                = "ttfo_p95_ms"
	ColTTFOP99Ms                = "ttfo_p99_ms"
	ColTTFOMaxMs                = "ttfo_max_ms"
	ColITLSamples               = "itl_samples"
	ColTPOTSamples              = "tpot_samples"
	ColTTFOSamples              = "ttfo_samples"
	ColTTFRMs                   = "ttfr_ms"
	ColTTFTCMs                  = "ttftc_ms"
	ColReasoningTokensMean      = "reasoning_tokens_mean"
	ColAnswerTokensMean         = "answer_tokens_mean"
	ColReasoningTokS            = "reasoning_tok_s"
	ColAnswerTokS               = "answer_tok_s"
	ColAnsweredPct              = "answered_pct"
	ColToolCallsMean            = "tool_calls_mean"
	ColToolArgsJSONPct          = "tool_args_json_pct"
	ColToolArgsValidPct         = "tool_args_valid_pct"
	ColStructuredValidPct       = "structured_valid_pct"
	ColTTFTTurn1P50Ms           = "ttft_turn1_p50_ms"
	ColTTFTLaterTurnsP50Ms      = "ttft_later_turns_p50_ms"
	ColCachedTokens             = "cached_tokens"
	ColServerPrefixCacheHitRate = "server_prefix_cache_hit_rate"
	ColTimeScale                = "time_scale"
	ColSearch                   = "search"
	ColMaxRateWithinSLO         = "max_rate_within_slo"
	ColMaxConcurrencyWithinSLO  = "max_concurrency_within_slo"
	ColPrecisionMetric          = "precision_metric"
	ColPrecisionReachedPct      = "precision_reached_pct"
	ColPrecisionTargetPct       = "precision_target_pct"
	ColPrecisionConfidence      = "precision_confidence"
	ColStopReason               = "stop_reason"
	ColStartupS                 = "startup_s"
	ColStampDelayP50Ms          = "stamp_delay_p50_ms"
	ColStampDelayP99Ms          = "stamp_delay_p99_ms"
	ColEventsJoinedPct          = "events_joined_pct"
	ColStampSource              = "stamp_source"
	ColShard                    = "shard"
	ColShards                   = "shards"
	ColCostUSD                  = "cost_usd"
	ColTokensPerDollar          = "tokens_per_dollar"
	ColStatus                   = "status"
	ColReason                   = "reason"
	ColNotes                    = "notes"
)

// The agent sessions' columns (docs/METRICS.md, Agent sessions).
const (
	ColMaxSteps                   = "max_steps"
	ColToolLatencyMs              = "tool_latency_ms"
	ColAgentSessions              = "agent_sessions"
	ColStepsMean                  = "steps_mean"
	ColStepsMax                   = "steps_max"
	ColFinalAnswerPct             = "final_answer_pct"
	ColFinalAnswerP50Ms           = "final_answer_p50_ms"
	ColFinalAnswerP99Ms           = "final_answer_p99_ms"
	ColToolMsMean                 = "tool_ms_mean"
	ColModelMsMean                = "model_ms_mean"
	ColTTFTStep1P50Ms             = "ttft_step1_p50_ms"
	ColTTFTLaterStepsP50Ms        = "ttft_later_steps_p50_ms"
	ColCachedTokensStep1Mean      = "cached_tokens_step1_mean"
	ColCachedTokensLaterStepsMean = "cached_tokens_later_steps_mean"
)

// entries are the catalogue: one entry per column of Cell. The columns a
// regression check reads come first, in the order `compare` lists them.
var entries = []Column{
	{Name: ColTTFTMs, Unit: "ms", Better: LowerBetter, Sample: "ttft", Late: LateSend, SLO: true, Threshold: 0.05, Floor: 1,
		Doc: "mean time to first token, `c1 − a` (first token-bearing event minus actual send); **NULL** when no request completed"},
	{Name: ColTTFTP50Ms, Unit: "ms", Better: LowerBetter, Label: "TTFT p50 ms", Sample: "ttft", Quantile: 0.5, Bounds: true, Late: LateSend, SLO: true, Threshold: 0.05, Floor: 1, Default: true,
		Doc: "median TTFT; **NULL** when no request completed"},
	{Name: ColTTFTP90Ms, Unit: "ms", Better: LowerBetter, Sample: "ttft", Quantile: 0.9, Bounds: true, Late: LateSend, SLO: true, Threshold: 0.1, Floor: 1,
		Doc: "p90 TTFT; **NULL** when no request completed"},
	{Name: ColTTFTP95Ms, Unit: "ms", Better: LowerBetter, Sample: "ttft", Quantile: 0.95, Bounds: true, Late: LateSend, SLO: true, Threshold: 0.1, Floor: 1,
		Doc: "p95 TTFT; **NULL** when no request completed"},
	{Name: ColTTFTP99Ms, Unit: "ms", Better: LowerBetter, Label: "TTFT p99 ms", Sample: "ttft", Quantile: 0.99, Bounds: true, Late: LateSend, SLO: true, Threshold: 0.1, Floor: 1, Default: true,
		Doc: "p99 TTFT; **NULL** when no request completed"},
	{Name: ColTTFTMaxMs, Unit: "ms", Better: LowerBetter, Sample: "ttft", Quantile: 1, Late: LateSend, SLO: true, Threshold: 0.1, Floor: 1,
		Doc: "worst TTFT; **NULL** when no request completed"},
	{Name: ColTTFTSchedMs, Unit: "ms", Better: LowerBetter, Sample: "ttft_sched", Late: LateSchedule, SLO: true, Threshold: 0.05, Floor: 1,
		Doc: "mean `c1 − s`: TTFT from the *scheduled* send, safe from coordinated omission; **NULL** when no request completed"},
	{Name: ColTTFTSchedP50Ms, Unit: "ms", Better: LowerBetter, Sample: "ttft_sched", Quantile: 0.5, Late: LateSchedule, SLO: true, Threshold: 0.05, Floor: 1,
		Doc: "median ttft_sched; **NULL** when no request completed"},
	{Name: ColTTFTSchedP90Ms, Unit: "ms", Better: LowerBetter, Sample: "ttft_sched", Quantile: 0.9, Late: LateSchedule, SLO: true, Threshold: 0.1, Floor: 1,
		Doc: "p90 ttft_sched; **NULL** when no request completed"},
	{Name: ColTTFTSchedP95Ms, Unit: "ms", Better: LowerBetter, Sample: "ttft_sched", Quantile: 0.95, Late: LateSchedule, SLO: true, Threshold: 0.1, Floor: 1,
		Doc: "p95 ttft_sched; **NULL** when no request completed"},
	{Name: ColTTFTSchedP99Ms, Unit: "ms", Better: LowerBetter, Sample: "ttft_sched", Quantile: 0.99, Late: LateSchedule, SLO: true, Threshold: 0.1, Floor: 1,
		Doc: "p99 ttft_sched; **NULL** when no request completed"},
	{Name: ColTTFTSchedMaxMs, Unit: "ms", Better: LowerBetter, Sample: "ttft_sched", Quantile: 1, Late: LateSchedule, SLO: true, Threshold: 0.1, Floor: 1,
		Doc: "worst ttft_sched; **NULL** when no request completed"},
	{Name: ColE2ELMs, Unit: "ms", Better: LowerBetter, Sample: "e2el", Late: LateSend, SLO: true, Threshold: 0.05, Floor: 1,
		Doc: "mean end-to-end latency, `cK − a` (last token-bearing event); **NULL** when no request completed"},
	{Name: ColE2ELP50Ms, Unit: "ms", Better: LowerBetter, Sample: "e2el", Quantile: 0.5, Bounds: true, Late: LateSend, SLO: true, Threshold: 0.05, Floor: 1, Default: true,
		Doc: "median e2el; **NULL** when no request completed"},
	{Name: ColE2ELP90Ms, Unit: "ms", Better: LowerBetter, Sample: "e2el", Quantile: 0.9, Bounds: true, Late: LateSend, SLO: true, Threshold: 0.1, Floor: 1,
		Doc: "p90 e2el; **NULL** when no request completed"},
	{Name: ColE2ELP95Ms, Unit: "ms", Better: LowerBetter, Sample: "e2el", Quantile: 0.95, Bounds: true, Late: LateSend, SLO: true, Threshold: 0.1, Floor: 1,
		Doc: "p95 e2el; **NULL** when no request completed"},
	{Name: ColE2ELP99Ms, Unit: "ms", Better: LowerBetter, Label: "E2EL p99 ms", Sample: "e2el", Quantile: 0.99, Bounds: true, Late: LateSend, SLO: true, Threshold: 0.1, Floor: 1, Default: true,
		Doc: "p99 e2el; **NULL** when no request completed"},
	{Name: ColE2ELMaxMs, Unit: "ms", Better: LowerBetter, Sample: "e2el", Quantile: 1, Late: LateSend, SLO: true, Threshold: 0.1, Floor: 1,
		Doc: "worst e2el; **NULL** when no request completed"},
	{Name: ColE2ELSchedMs, Unit: "ms", Better: LowerBetter, Sample: "e2el_sched", Late: LateSchedule, SLO: true, Threshold: 0.05, Floor: 1,
		Doc: "mean `cK − s`: e2el from the scheduled send; **NULL** when no request completed"},
	{Name: ColE2ELSchedP50Ms, Unit: "ms", Better: LowerBetter, Sample: "e2el_sched", Quantile: 0.5, Late: LateSchedule, SLO: true, Threshold: 0.05, Floor: 1,
		Doc: "median e2el_sched; **NULL** when no request completed"},
	{Name: ColE2ELSchedP90Ms, Unit: "ms", Better: LowerBetter, Sample: "e2el_sched", Quantile: 0.9, Late: LateSchedule, SLO: true, Threshold: 0.1, Floor: 1,
		Doc: "p90 e2el_sched; **NULL** when no request completed"},
	{Name: ColE2ELSchedP95Ms, Unit: "ms", Better: LowerBetter, Sample: "e2el_sched", Quantile: 0.95, Late: LateSchedule, SLO: true, Threshold: 0.1, Floor: 1,
		Doc: "p95 e2el_sched; **NULL** when no request completed"},
	{Name: ColE2ELSchedP99Ms, Unit: "ms", Better: LowerBetter, Sample: "e2el_sched", Quantile: 0.99, Late: LateSchedule, SLO: true, Threshold: 0.1, Floor: 1,
		Doc: "p99 e2el_sched; **NULL** when no request completed"},
	{Name: ColE2ELSchedMaxMs, Unit: "ms", Better: LowerBetter, Sample: "e2el_sched", Quantile: 1, Late: LateSchedule, SLO: true, Threshold: 0.1, Floor: 1,
		Doc: "worst e2el_sched; **NULL** when no request completed"},
	{Name: ColTPOTMs, Unit: "ms", Better: LowerBetter, Label: "TPOT ms", Sample: "tpot", Late: LateTPOT, SLO: true, Threshold: 0.05, Floor: 0.2, why: whyNoTPOT,
		Doc: "mean time per output token, `(e2el − ttft)/(N_out − 1)` per request; **NULL** when no completed request had N_out > 1"},
	{Name: ColTPOTP50Ms, Unit: "ms", Better: LowerBetter, Label: "TPOT p50 ms", Sample: "tpot", Quantile: 0.5, Bounds: true, Late: LateTPOT, SLO: true, Threshold: 0.05, Floor: 0.2, Default: true, why: whyNoTPOT,
		Doc: "median TPOT; **NULL** when no completed request had N_out > 1"},
	{Name: ColTPOTP90Ms, Unit: "ms", Better: LowerBetter, Sample: "tpot", Quantile: 0.9, Bounds: true, Late: LateTPOT, SLO: true, Threshold: 0.1, Floor: 0.2, why: whyNoTPOT,
		Doc: "p90 TPOT; **NULL** when no completed request had N_out > 1"},
	{Name: ColTPOTP95Ms, Unit: "ms", Better: LowerBetter, Sample: "tpot", Quantile: 0.95, Bounds: true, Late: LateTPOT, SLO: true, Threshold: 0.1, Floor: 0.2, why: whyNoTPOT,
		Doc: "p95 TPOT; **NULL** when no completed request had N_out > 1"},
	{Name: ColTPOTP99Ms, Unit: "ms", Better: LowerBetter, Sample: "tpot", Quantile: 0.99, Bounds: true, Late: LateTPOT, SLO: true, Threshold: 0.1, Floor: 0.2, why: whyNoTPOT,
		Doc: "p99 TPOT; **NULL** when no completed request had N_out > 1"},
	{Name: ColTPOTMaxMs, Unit: "ms", Better: LowerBetter, Sample: "tpot", Quantile: 1, Late: LateTPOT, SLO: true, Threshold: 0.1, Floor: 0.2, why: whyNoTPOT,
		Doc: "worst TPOT; **NULL** when no completed request had N_out > 1"},
	{Name: ColITLMs, Unit: "ms", Better: LowerBetter, Sample: "itl", Late: LateGap, SLO: true, Threshold: 0.05, Floor: 0.2, why: whyNoGap,
		Doc: "mean ITL (per event gap); **NULL** when no completed request had two token events"},
	{Name: ColITLP50Ms, Unit: "ms", Better: LowerBetter, Label: "ITL p50 ms", Sample: "itl", Quantile: 0.5, Bounds: true, Late: LateGap, SLO: true, Threshold: 0.05, Floor: 0.2, Default: true, why: whyNoGap,
		Doc: "median inter-token latency: gaps between token-bearing events, pooled over the cell's requests; **NULL** when no completed request had two token events"},
	{Name: ColITLP90Ms, Unit: "ms", Better: LowerBetter, Sample: "itl", Quantile: 0.9, Bounds: true, Late: LateGap, SLO: true, Threshold: 0.1, Floor: 0.2, why: whyNoGap,
		Doc: "p90 ITL; **NULL** when no completed request had two token events"},
	{Name: ColITLP95Ms, Unit: "ms", Better: LowerBetter, Sample: "itl", Quantile: 0.95, Bounds: true, Late: LateGap, SLO: true, Threshold: 0.1, Floor: 0.2, why: whyNoGap,
		Doc: "p95 ITL; **NULL** when no completed request had two token events"},
	{Name: ColITLP99Ms, Unit: "ms", Better: LowerBetter, Label: "ITL p99 ms", Sample: "itl", Quantile: 0.99, Bounds: true, Late: LateGap, SLO: true, Threshold: 0.1, Floor: 0.2, Default: true, why: whyNoGap,
		Doc: "p99 of the same gaps; **NULL** when no completed request had two token events"},
	{Name: ColITLMaxMs, Unit: "ms", Better: LowerBetter, Sample: "itl", Quantile: 1, Late: LateGap, SLO: true, Threshold: 0.1, Floor: 0.2, why: whyNoGap,
		Doc: "worst ITL gap; **NULL** when no completed request had two token events"},
	{Name: ColITLTokMs, Unit: "ms/token", Better: LowerBetter, Late: LateGap, SLO: true, Threshold: 0.05, Floor: 0.2, why: whyNoGap,
		Doc: "mean ITL per token: each gap divided by the tokens its event carried (speculative decoding packs several); **NULL** when no completed request had two token events"},
	{Name: ColITLTokP50Ms, Unit: "ms/token", Better: LowerBetter, Quantile: 0.5, Late: LateGap, SLO: true, Threshold: 0.05, Floor: 0.2, why: whyNoGap,
		Doc: "median itl_tok; **NULL** when no completed request had two token events"},
	{Name: ColITLTokP90Ms, Unit: "ms/token", Better: LowerBetter, Quantile: 0.9, Late: LateGap, SLO: true, Threshold: 0.1, Floor: 0.2, why: whyNoGap,
		Doc: "p90 itl_tok; **NULL** when no completed request had two token events"},
	{Name: ColITLTokP95Ms, Unit: "ms/token", Better: LowerBetter, Quantile: 0.95, Late: LateGap, SLO: true, Threshold: 0.1, Floor: 0.2, why: whyNoGap,
		Doc: "p95 itl_tok; **NULL** when no completed request had two token events"},
	{Name: ColITLTokP99Ms, Unit: "ms/token", Better: LowerBetter, Quantile: 0.99, Late: LateGap, SLO: true, Threshold: 0.1, Floor: 0.2, why: whyNoGap,
		Doc: "p99 itl_tok; **NULL** when no completed request had two token events"},
	{Name: ColITLTokMaxMs, Unit: "ms/token", Better: LowerBetter, Quantile: 1, Late: LateGap, SLO: true, Threshold: 0.1, Floor: 0.2, why: whyNoGap,
		Doc: "worst itl_tok; **NULL** when no completed request had two token events"},
	{Name: ColSendLagMs, Unit: "ms", Better: LowerBetter, Late: LateOwn, Threshold: 0.05, Floor: 1,
		Doc: "mean send lag `a − s`; **NULL** when no request was sent"},
	{Name: ColSendLagP50Ms, Unit: "ms", Better: LowerBetter, Quantile: 0.5, Late: LateOwn, Threshold: 0.05, Floor: 1,
		Doc: "median send lag; **NULL** when no request was sent"},
	{Name: ColSendLagP90Ms, Unit: "ms", Better: LowerBetter, Quantile: 0.9, Late: LateOwn, Threshold: 0.1, Floor: 1,
		Doc: "p90 send lag; **NULL** when no request was sent"},
	{Name: ColSendLagP95Ms, Unit: "ms", Better: LowerBetter, Quantile: 0.95, Late: LateOwn, Threshold: 0.1, Floor: 1,
		Doc: "p95 send lag; **NULL** when no request was sent"},
	{Name: ColSendLagP99, Unit: "ms", Better: LowerBetter, Quantile: 0.99, Late: LateOwn, Threshold: 0.1, Floor: 1,
		Doc: "p99 of `a − s` (actual minus scheduled send): the client's own lag; **NULL** when no request was sent"},
	{Name: ColSendLagMaxMs, Unit: "ms", Better: LowerBetter, Quantile: 1, Late: LateOwn, Threshold: 0.1, Floor: 1,
		Doc: "worst send lag; **NULL** when no request was sent"},
	{Name: ColFirstCallMs, Unit: "ms", Better: LowerBetter, Late: LateFirstCall, Threshold: 0.1, Floor: 1, why: whyNoFirstCall,
		Doc: "e2el of the cell's very first request (cold caches, kernel loads), kept out of every other column; **NULL** when that request failed"},
	{Name: ColNTPOTMs, Unit: "ms/token", Better: LowerBetter, Late: LateNTPOT, SLO: true, Threshold: 0.05, Floor: 0.2,
		Doc: "mean `e2el / N_out` (GuideLLM's \"TPOT\", LLMPerf's \"ITL\"): includes the TTFT; **NULL** when no request completed"},
	{Name: ColPrefillTokS, Unit: "tok/s", Better: HigherBetter, Label: "prefill tok/s", Late: LatePrefill, Threshold: 0.05, Floor: 1,
		Doc: "ΣN_in / Σttft: prompt ingest rate; **NULL** when no request completed"},
	{Name: ColDecodeTokS, Unit: "tok/s", Better: HigherBetter, Label: "decode tok/s", Late: LateThroughput, Threshold: 0.05, Floor: 1,
		Doc: "the seed's name for `output_tok_s` (ΣN_out / T); **NULL** when nothing was sent (no window *T*); a cell whose requests all failed has a measured 0"},
	{Name: ColOutputTokS, Unit: "tok/s", Better: HigherBetter, Label: "output tok/s", Late: LateThroughput, Threshold: 0.05, Floor: 1, Default: true,
		Doc: "ΣN_out / T; **NULL** when nothing was sent (no window *T*); a cell whose requests all failed has a measured 0"},
	{Name: ColTotalTokS, Unit: "tok/s", Better: HigherBetter, Late: LateThroughput, Threshold: 0.05, Floor: 1,
		Doc: "Σ(N_in + N_out) / T; **NULL** when nothing was sent (no window *T*); a cell whose requests all failed has a measured 0"},
	{Name: ColReqS, Unit: "req/s", Better: HigherBetter, Label: "req/s", Late: LateThroughput, Threshold: 0.05, Floor: 0.1, Default: true,
		Doc: "completed requests / T; **NULL** when nothing was sent (no window *T*); a cell whose requests all failed has a measured 0"},
	{Name: ColGoodput, Unit: "req/s", Better: HigherBetter, Late: LateThroughput, Threshold: 0.05, Floor: 0.1,
		Doc: "requests meeting every SLO of the plan / T (failed requests never count); **NULL** when nothing was sent (no window *T*); a cell whose requests all failed has a measured 0"},
	{Name: ColGoodputRatio, Unit: "fraction", Better: HigherBetter, Late: LateNone, Threshold: 0.05, Floor: 0.01,
		Doc: "sent requests meeting every SLO / sent requests; **NULL** when no request was sent"},
	{Name: ColSpeedupVsC1, Unit: "ratio", Better: HigherBetter, Label: "speedup vs c=1", Late: LateNone, Threshold: 0.05, Floor: 0.01, why: whyNoC1,
		Doc: "decode_tok_s(c) / decode_tok_s(1) of the same cell; **NULL** when the cell has no measured c=1 row to compare with (it failed, the ladder has no c=1, or the point is open-loop)"},
	{Name: ColBatchingEfficiency, Unit: "ratio", Better: HigherBetter, Label: "batching efficiency", Late: LateNone, Threshold: 0.05, Floor: 0.01, why: whyNoC1,
		Doc: "speedup_vs_c1 / concurrency (1 = perfect scaling); **NULL** when the cell has no measured c=1 row to compare with (it failed, the ladder has no c=1, or the point is open-loop)"},
	{Name: ColClientCPUUtil, Unit: "cores", Better: LowerBetter, Label: "benchrun client CPU (cores)", Late: LateNone, Threshold: 0.1, Floor: 0.05, why: whyNoOwnCPU,
		Doc: "benchrun's own CPU time over the timed window (user + system, all threads; 1.0 = one core busy): near the machine's core count, the client was the bottleneck (notes say so); **NULL** when benchrun could not read its own CPU time"},
	{Name: ColClientCPUWaitMs, Unit: "ms", Better: LowerBetter, Late: LateNone, Threshold: 0.1, Floor: 1, why: whyNoSchedstat,
		Doc: "how long benchrun's threads were runnable but waited for a CPU over the timed window, summed over threads (Linux schedstat `run_delay`): what CPU-bound neighbours took from the client, which the machine probe (a sleeper the kernel wakes promptly) does not show; an SLO search's saturation call allows for it; **NULL** off Linux or without scheduler statistics"},
	{Name: ColServerCPUWaitMs, Unit: "ms", Better: LowerBetter, Late: LateOwn, Threshold: 0.1, Floor: 1, why: whyNoSchedstat,
		Doc: "the same for the server's threads, when a launch stage started it on this machine; **NULL** otherwise"},
	{Name: ColCostUSD, Unit: "USD", Better: LowerBetter, Late: LateNone, Threshold: 0.05, Floor: 0.0001, why: whyNoPrice,
		Doc: "the plan's `cost_per_hour` × duration; in a row `benchrun merge` recomputed, the shards' price × the merged (union) window; **NULL** when the plan gives no price"},
	{Name: ColTokensPerDollar, Unit: "tokens/USD", Better: HigherBetter, Late: LateNone, Threshold: 0.05, Floor: 1, why: whyNoPrice,
		Doc: "output tokens / cost_usd (a merged row's: its pooled output tokens over its own cost); **NULL** when the plan gives no price"},
	{Name: ColPowerWMean, Unit: "W", Better: LowerBetter, Label: "power mean W", Late: LateNone, Threshold: 0.05, Floor: 5,
		Doc: "mean power draw (NVML's averaged reading), summed over devices; **NULL** when GPU telemetry was not measured (as `gpu_util_mean`)"},
	{Name: ColEnergyJ, Unit: "J", Better: LowerBetter, Label: "energy J", Late: LateNone, Threshold: 0.05, Floor: 1,
		Doc: "the total-energy counters' delta over the window, summed over devices; **NULL** when GPU telemetry was not measured (as `gpu_util_mean`)"},
	{Name: ColEnergyJPerToken, Unit: "J", Better: LowerBetter, Late: LateNone, Threshold: 0.05, Floor: 0.001,
		Doc: "`energy_j` / output tokens; **NULL** without an energy reading or without output tokens"},
	{Name: ColTokensPerJoule, Unit: "tok/J", Better: HigherBetter, Label: "tokens per joule", Late: LateNone, Threshold: 0.05, Floor: 0.01,
		Doc: "output tokens / `energy_j`; **NULL** without an energy reading or without output tokens"},
	{Name: ColServerWaitingPeak, Unit: "requests", Better: LowerBetter, Label: "waiting peak", Late: LateNone, Threshold: 0.1, Floor: 1,
		Doc: "the waiting-queue gauge's peak (`vllm:num_requests_waiting`, `llamacpp:requests_deferred`, `sglang:num_queue_reqs`, `tgi_queue_size`); **NULL** when the server exposes no such metric (as `server_running_peak`)"},
	{Name: ColServerParkWaits, Unit: "requests", Better: LowerBetter, Label: "park waits", Late: LateNone, Threshold: 0.1, Floor: 1,
		Doc: "the seed's admission pressure: requests that waited for a slot during the cell (the queue's entries by counter where the engine has one, else the rise of the waiting gauge); 0 when none waited; **NULL** when the server exposes no such metric (as `server_running_peak`)"},
	{Name: ColServerPreemptions, Unit: "count", Better: LowerBetter, Label: "preemptions", Late: LateNone, Threshold: 0.1, Floor: 1,
		Doc: "preemptions during the cell (counter delta: `vllm:num_preemptions_total`, `sglang:num_retracted_reqs`); **NULL** when the server exposes no such metric (as `server_running_peak`)"},
	{Name: ColServerTTFTMeanMs, Unit: "ms", Better: LowerBetter, Late: LateOwn, Threshold: 0.05, Floor: 1,
		Doc: "the server's own TTFT histogram, mean over the cell (sum / count deltas): a cross-check of the client's `ttft_ms`; **NULL** when the server exposes no such metric (as `server_running_peak`)"},
	{Name: ColServerITLMeanMs, Unit: "ms", Better: LowerBetter, Late: LateOwn, Threshold: 0.05, Floor: 0.2,
		Doc: "the server's inter-token histogram mean (`vllm:inter_token_latency_seconds`, older `vllm:time_per_output_token_seconds`); **NULL** when the server exposes no such metric (as `server_running_peak`)"},
	{Name: ColServerQueueMeanMs, Unit: "ms", Better: LowerBetter, Label: "queue mean ms", Late: LateOwn, Threshold: 0.05, Floor: 1,
		Doc: "the server's queue-time histogram mean (`vllm:request_queue_time_seconds`); **NULL** when the server exposes no such metric (as `server_running_peak`)"},
	{Name: ColTTFOMs, Unit: "ms", Better: LowerBetter, Sample: "ttfo", Late: LateSend, SLO: true, Threshold: 0.05, Floor: 1, why: whyNoAnswer,
		Doc: "mean time to the first *answer* token, `o1 − a`: the first event of answer text or a tool call, after any reasoning (docs/METRICS.md, Reasoning); equals `ttft_ms` on a model that does not think; over the completed requests that answered; **NULL** when none answered"},
	{Name: ColTTFOP50Ms, Unit: "ms", Better: LowerBetter, Label: "TTFO p50 ms", Sample: "ttfo", Quantile: 0.5, Bounds: true, Late: LateSend, SLO: true, Threshold: 0.05, Floor: 1, why: whyNoAnswer,
		Doc: "median time to the first answer token; **NULL** as `ttfo_ms`"},
	{Name: ColTTFOP90Ms, Unit: "ms", Better: LowerBetter, Sample: "ttfo", Quantile: 0.9, Bounds: true, Late: LateSend, SLO: true, Threshold: 0.1, Floor: 1, why: whyNoAnswer,
		Doc: "p90 time to the first answer token; **NULL** as `ttfo_ms`"},
	{Name: ColTTFOP95Ms, Unit: "ms", Better: LowerBetter, Sample: "ttfo", Quantile: 0.95, Bounds: true, Late: LateSend, SLO: true, Threshold: 0.1, Floor: 1, why: whyNoAnswer,
		Doc: "p95 time to the first answer token; **NULL** as `ttfo_ms`"},
	{Name: ColTTFOP99Ms, Unit: "ms", Better: LowerBetter, Label: "TTFO p99 ms", Sample: "ttfo", Quantile: 0.99, Bounds: true, Late: LateSend, SLO: true, Threshold: 0.1, Floor: 1, why: whyNoAnswer,
		Doc: "p99 time to the first answer token; **NULL** as `ttfo_ms`"},
	{Name: ColTTFOMaxMs, Unit: "ms", Better: LowerBetter, Sample: "ttfo", Quantile: 1, Late: LateSend, SLO: true, Threshold: 0.1, Floor: 1, why: whyNoAnswer,
		Doc: "worst time to the first answer token; **NULL** as `ttfo_ms`"},
	{Name: ColITLSamples, Unit: "gaps", Better: Neither, Counts: []string{"itl"},
		Doc: "the gaps pooled into the itl percentiles (their sample size, as `completed` is ttft's and e2el's); **NULL** in rows older than schema version 12"},
	{Name: ColTPOTSamples, Unit: "requests", Better: Neither, Counts: []string{"tpot"},
		Doc: "completed requests with N_out > 1: the tpot percentiles' sample size; **NULL** in rows older than schema version 12"},
	{Name: ColTTFOSamples, Unit: "requests", Better: Neither, Counts: []string{"ttfo"},
		Doc: "completed requests that answered: the ttfo percentiles' sample size; **NULL** in rows older than schema version 12"},
	{Name: ColTTFTCMs, Unit: "ms", Better: LowerBetter, Late: LateSend, SLO: true, Threshold: 0.05, Floor: 1, why: whyNoToolCall,
		Doc: "mean time to the first *tool-call* token, `c1 − a`: the first event carrying a tool call (a chat delta's `tool_calls`, a Responses `function_call_arguments.delta`, a Messages `input_json_delta`; docs/METRICS.md, Tool calls and structured output), over the completed requests that made a call; equals `ttfo_ms` where the answer is the call; **NULL** when no request made one"},
	{Name: ColTTFRMs, Unit: "ms", Better: LowerBetter, Late: LateSend, SLO: true, Threshold: 0.05, Floor: 1, why: whyNoReasoning,
		Doc: "mean time to the first *reasoning* token, `r1 − a`, over the completed requests that reasoned where the server shows it (`delta.reasoning_content` or `delta.reasoning`); **NULL** when none did"},
	{Name: ColReasoningTokensMean, Unit: "tokens", Better: Neither, Label: "reasoning tok", Late: LateNone,
		Doc: "reasoning tokens per completed request, mean: usage's `completion_tokens_details.reasoning_tokens` where the server reports it, else the reasoning events' tokens (the requests' `reasoning_source`; the row's notes say which); 0 on a model that does not think; **NULL** when nothing completed or no completed request's count is known"},
	{Name: ColAnswerTokensMean, Unit: "tokens", Better: Neither, Late: LateNone,
		Doc: "answer tokens per completed request, mean: output tokens less reasoning tokens; **NULL** as `reasoning_tokens_mean`"},
	{Name: ColReasoningTokS, Unit: "tok/s", Better: HigherBetter, Late: LateThroughput, Threshold: 0.05, Floor: 1, why: whyNoReasoning,
		Doc: "the thinking phase's decode rate, mean over requests that reasoned: reasoning tokens / (`ttfo` − `ttfr`), or (reasoning tokens − 1) / (last reasoning event − `ttfr`) for a request that never answered; **NULL** when no request reasoned over two events"},
	{Name: ColAnswerTokS, Unit: "tok/s", Better: HigherBetter, Late: LateThroughput, Threshold: 0.05, Floor: 1, why: whyNoAnswer,
		Doc: "the answer's decode rate, mean over requests: (answer tokens − 1) / (`e2el` − `ttfo`), for those with two answer tokens or more (on a model that does not think, 1000 / TPOT); **NULL** when none had"},
	{Name: ColAnsweredPct, Unit: "%", Better: HigherBetter, Label: "answered %", Late: LateNone, Threshold: 0.01, Floor: 1,
		Doc: "completed requests that produced an answer (text or a tool call), percent; a request whose reasoning used up `max_tokens` is `ok` but unanswered (vLLM issue 42548's 0-answer runs); **NULL** when nothing completed"},
	{Name: ColToolCallsMean, Unit: "calls", Better: Neither, Late: LateNone, why: whyNoTools,
		Doc: "tool calls per completed request that offered `tools` (docs/METRICS.md, Tool calls and structured output); **NULL** when the cell offered no tools or nothing completed"},
	{Name: ColToolArgsJSONPct, Unit: "%", Better: HigherBetter, Late: LateNone, Threshold: 0.01, Floor: 1, why: whyNoToolCall,
		Doc: "tool calls whose arguments (the streamed pieces joined) are one JSON value, percent of the completed requests' calls; **NULL** when the cell offered no tools or no call came"},
	{Name: ColToolArgsValidPct, Unit: "%", Better: HigherBetter, Label: "tool args valid %", Late: LateNone, Threshold: 0.01, Floor: 1, why: whyNoToolCall,
		Doc: "tool calls whose arguments are valid against the named tool's `parameters` schema, percent of the calls (a call naming a tool not offered is not); **NULL** as `tool_args_json_pct`"},
	{Name: ColStructuredValidPct, Unit: "%", Better: HigherBetter, Label: "JSON valid %", Late: LateNone, Threshold: 0.01, Floor: 1, why: whyNoFormat,
		Doc: "completed requests whose answer text (content joined) is valid against the `response_format` schema (`json_object`: a JSON object), percent; a whitespace-only answer is not JSON; **NULL** when the cell asked for no structured output or nothing completed"},
	{Name: ColTTFTTurn1P50Ms, Unit: "ms", Better: LowerBetter, Quantile: 0.5, Late: LateSend, Threshold: 0.05, Floor: 1, why: whyNoTurn,
		Doc: "median TTFT of the sessions' first turns (no history to reuse); **NULL** when the cell is not a conversation or no first turn completed"},
	{Name: ColTTFTLaterTurnsP50Ms, Unit: "ms", Better: LowerBetter, Quantile: 0.5, Late: LateSend, Threshold: 0.05, Floor: 1, why: whyNoTurn,
		Doc: "median TTFT of turns 2 and later (history a prefix cache can serve: well under the first turn's per prompt token when the cache works); **NULL** when not a conversation or no later turn completed"},
	{Name: ColMaxSteps, Unit: "steps", Better: Neither, why: whyNoAgent,
		Doc: "agent cells (the sweep's `agent`): the step limit, `agent.max_steps`: a session whose last allowed step still calls a tool ends there (docs/METRICS.md, Agent sessions); **NULL** when the cell is not an agent cell"},
	{Name: ColToolLatencyMs, Unit: "ms", Better: Neither, Late: LateNone, why: whyNoAgent,
		Doc: "the planned mean latency of one tool call (`agent.tool_latency`); **NULL** when the cell is not an agent cell"},
	{Name: ColAgentSessions, Unit: "sessions", Better: Neither, Late: LateNone, why: whyNoAgent,
		Doc: "agent sessions the cell's timed passes ran (the n behind the per-session columns: `steps_*`, `final_answer_*`, `tool_ms_mean`, `model_ms_mean`); **NULL** when the cell is not an agent cell"},
	{Name: ColStepsMean, Unit: "steps", Better: Neither, Late: LateNone, why: whyNoAgent,
		Doc: "steps (model calls) per session, mean over the sessions whose every step completed; **NULL** when not an agent cell or no session completed"},
	{Name: ColStepsMax, Unit: "steps", Better: Neither, Late: LateNone, why: whyNoAgent,
		Doc: "the most steps a completed session took; **NULL** as `steps_mean`"},
	{Name: ColFinalAnswerPct, Unit: "%", Better: HigherBetter, Late: LateNone, Threshold: 0.01, Floor: 1, why: whyNoAgent,
		Doc: "completed sessions that ended on a final answer (a step with no tool call), percent; the rest reached `max_steps` still calling tools; **NULL** as `steps_mean`"},
	{Name: ColFinalAnswerP50Ms, Unit: "ms", Better: LowerBetter, Quantile: 0.5, Late: LateSend, Threshold: 0.05, Floor: 1, why: whyNoAgent,
		Doc: "median time to the final answer: from the send of a session's first step to its final answer's last token, tool time and the client's turnaround included; over the sessions that reached one; **NULL** when none did"},
	{Name: ColFinalAnswerP99Ms, Unit: "ms", Better: LowerBetter, Quantile: 0.99, Late: LateSend, Threshold: 0.1, Floor: 1, why: whyNoAgent,
		Doc: "p99 time to the final answer; **NULL** as `final_answer_p50_ms`"},
	{Name: ColToolMsMean, Unit: "ms", Better: Neither, Late: LateNone, why: whyNoAgent,
		Doc: "tool time per completed session, mean: Σ the requests' `tool_ms` (the calls played between steps; the client's lateness after them is in the steps' `send_lag_ms`, not here); **NULL** as `steps_mean`"},
	{Name: ColModelMsMean, Unit: "ms", Better: LowerBetter, Late: LateSend, Threshold: 0.05, Floor: 1, why: whyNoAgent,
		Doc: "model time per completed session, mean: Σ its steps' `e2el_ms`; beside `tool_ms_mean`, where a session's time went; **NULL** as `steps_mean`"},
	{Name: ColTTFTStep1P50Ms, Unit: "ms", Better: LowerBetter, Quantile: 0.5, Late: LateSend, Threshold: 0.05, Floor: 1, why: whyNoAgent,
		Doc: "median TTFT of the sessions' first steps (no history to reuse; as `ttft_turn1_p50_ms`); **NULL** when not an agent cell or no first step completed"},
	{Name: ColTTFTLaterStepsP50Ms, Unit: "ms", Better: LowerBetter, Quantile: 0.5, Late: LateSend, Threshold: 0.05, Floor: 1, why: whyNoAgent,
		Doc: "median TTFT of steps 2 and later (the history, calls and results a prefix cache can serve); **NULL** when not an agent cell or no later step completed"},
	{Name: ColCachedTokensStep1Mean, Unit: "tokens", Better: Neither, Late: LateNone, why: whyNoAgent,
		Doc: "cached prompt tokens per completed first step, mean (`usage.prompt_tokens_details.cached_tokens`); **NULL** when not an agent cell or no first step reported it"},
	{Name: ColCachedTokensLaterStepsMean, Unit: "tokens", Better: Neither, Late: LateNone, why: whyNoAgent,
		Doc: "cached prompt tokens per completed step 2 and later, mean: the history a prefix cache served (the requests' `cached_tokens` by `step` show it grow step by step); **NULL** when not an agent cell or no later step reported it"},
	{Name: ColMaxRateWithinSLO, Unit: "req/s", Better: HigherBetter, Late: LateNone, Threshold: 0.05, Floor: 0.1,
		Doc: "on an SLO search's `knee` row over `rate`: the highest rate whose point met the SLO; **NULL** on every other row and when no probed rate met it"},
	{Name: ColMaxConcurrencyWithinSLO, Unit: "sessions", Better: HigherBetter, Late: LateNone, Threshold: 0.05, Floor: 1,
		Doc: "as `max_rate_within_slo`, for a search over `concurrency`; **NULL** on every other row and when no probed point met it"},
	{Name: ColPrecisionMetric, Unit: "–", Better: Neither,
		Doc: "with the sweep's `precision`: the targeted metric furthest from its target (the last one met, or the one its budget left widest), whose precision `precision_reached_pct` is (docs/METRICS.md, Measure until precise); \"\" without a target"},
	{Name: ColPrecisionReachedPct, Unit: "%", Better: Neither, Late: LateNone, why: whyNoPrecision,
		Doc: "the precision `precision_metric` reached over the cell's completed requests: the half-width of its confidence interval relative to its value, the larger side, percent (a percentile's distribution-free order-statistic bound, a mean's Student t interval) at `precision_confidence`; **NULL** without a target, or when too few requests completed to bound it (a p99 at 95 % needs 368)"},
	{Name: ColPrecisionTargetPct, Unit: "%", Better: Neither, Late: LateNone, why: whyNoPrecision,
		Doc: "that metric's target, from the sweep's `precision.within`; **NULL** without a target"},
	{Name: ColPrecisionConfidence, Unit: "–", Better: Neither, Late: LateNone, why: whyNoPrecision,
		Doc: "the two-sided confidence of the precision's interval (`precision.confidence`, default 0.95); **NULL** without a target"},
	{Name: ColStopReason, Unit: "–", Better: Neither,
		Doc: "why a timed pass with a precision target stopped: `target met` (every target met; `notes` says at how many requests), `budget: requests` (`max_requests` sent first) or `budget: time` (`max_duration` passed first); \"\" without a target, or when the run or the server ended the pass (`status` says)"},
	{Name: ColStartupS, Unit: "s", Better: LowerBetter, Late: LateNone, Threshold: 0.1, Floor: 1,
		Doc: "process start to the first passing health check of the server benchrun started for this row (a launch stage's start-up rows, and the cells measured right after a `restart: per_cell` start); **NULL** when no server was started for the row"},
	{Name: ColStampDelayP50Ms, Unit: "ms", Better: LowerBetter, Quantile: 0.5, Late: LateOwn, Threshold: 0.1, Floor: 0.05,
		Doc: "median of how much later benchrun's user-space clock read an event than the kernel's receive timestamp of its bytes (over the token events of completed requests): the measurement error kernel stamps removed from the latencies (docs/METRICS.md, Kernel receive stamps); **NULL** when kernel timestamps were not available (`stamp_source` = `user`)"},
	{Name: ColStampDelayP99Ms, Unit: "ms", Better: LowerBetter, Quantile: 0.99, Late: LateOwn, Threshold: 0.1, Floor: 0.1,
		Doc: "the same delay's 99th percentile; **NULL** as `stamp_delay_p50_ms`"},
	{Name: ColInputTokS, Unit: "tok/s", Better: HigherBetter, Late: LateNone, Threshold: 0.05, Floor: 1,
		Doc: "Σ usage.prompt_tokens of completed requests / window: the input throughput of an embeddings or media sweep (media tokens included as the server counts them); **NULL** when the cell has no window"},
	{Name: ColEmbeddingsS, Unit: "vectors/s", Better: HigherBetter, Late: LateNone, Threshold: 0.05, Floor: 0.1,
		Doc: "vectors returned by completed requests / window (≈ `batch` × `req_s`); **NULL** for other endpoints or without a window"},
	{Name: ColDocumentsS, Unit: "docs/s", Better: HigherBetter, Late: LateNone, Threshold: 0.05, Floor: 0.1,
		Doc: "rerank: documents scored by completed requests / window (≈ `batch` × `req_s`); **NULL** for other endpoints or without a window"},
	{Name: ColCosineMin, Unit: "cosine", Better: HigherBetter, Late: LateNone, Threshold: 0.001, Floor: 0.0005,
		Doc: "the lowest cosine similarity of a returned vector to its reference vector (the dataset's `vector` field); **NULL** without reference vectors or when no request completed"},
	{Name: ColCosineMean, Unit: "cosine", Better: HigherBetter, Late: LateNone, Threshold: 0.001, Floor: 0.0005,
		Doc: "the mean of those cosine similarities; **NULL** as `cosine_min`"},
	{Name: ColRealTimeFactor, Unit: "ratio", Better: LowerBetter, Late: LateNone, Threshold: 0.05, Floor: 0.001,
		Doc: "transcriptions: mean over completed requests of processing time (e2el) / audio seconds; **NULL** for other endpoints or when no request completed"},
	{Name: ColAudioSPerS, Unit: "s/s", Better: HigherBetter, Late: LateNone, Threshold: 0.05, Floor: 0.1,
		Doc: "transcriptions: audio seconds transcribed by completed requests / window; **NULL** for other endpoints or without a window"},
	{Name: ColRunID, Unit: "–", Better: Neither,
		Doc: "the run's id, `<UTC start>-<6 hex>`; also the `run` hive key"},
	{Name: ColPlan, Unit: "–", Better: Neither,
		Doc: "the plan's `name`; also the `plan` hive key"},
	{Name: ColStage, Unit: "–", Better: Neither,
		Doc: "the stage that measured the cell (`sweep`)"},
	{Name: ColCellID, Unit: "–", Better: Neither,
		Doc: "`<stage>/<isl>:<osl>/c<concurrency>` (or `/r<rate>`; a trace replay `<stage>/trace/x<time_scale>`, an SLO search's knee `<stage>/<isl>:<osl>/knee`): stable across runs, so the key for comparing them; a launch stage's start-ups are `<stage>/startup/r<i>` and `<stage>/startup/restart<k>` (docs/PLANS.md, Start-up time)"},
	{Name: ColAttempt, Unit: "–", Better: Neither,
		Doc: "the run attempt that wrote the row: 1, then one more per `--resume`; a cell's current row is the one of its highest attempt (the latest rule, above); NULL in files older than schema version 2, meaning 1"},
	{Name: ColStartedAt, Unit: "µs, UTC", Better: Neither,
		Doc: "when the cell's first (warm-up) request was sent"},
	{Name: ColModel, Unit: "–", Better: Neither,
		Doc: "the served model name the requests named; a model mix's pooled row (the sweep's `models`) the mix, `base=0.6,lora-a=0.3`, and each of its per-model rows (cell id `…/model=NAME`) its model"},
	{Name: ColModelDigest, Unit: "–", Better: Neither,
		Doc: "`sha256:<hex>` of the plan's `model.file` (as `sha256sum`; cached by path, size and mtime in `~/.cache/benchrun/digests.json`), \"\" when benchrun cannot read the file. The file is hashed before anything is measured: in the background from the start of the run, while the first stages start servers, and every later stage waits for it (stderr says so when it takes over a second); a file that appears during the run is hashed before the next stage starts, never during a sweep"},
	{Name: ColEngine, Unit: "–", Better: Neither,
		Doc: "the server software (`sim`, `vllm`, `llama-server`, ...)"},
	{Name: ColEngineVersion, Unit: "–", Better: Neither,
		Doc: "the server's version as it reported it (`/version`, `/props` `build_info`, `/api/version`, else the launched command's `--version`); `unknown` when nothing said"},
	{Name: ColEndpoint, Unit: "–", Better: Neither,
		Doc: "the sweep's API: `completions`, `chat`, `embeddings`, `transcriptions`, `responses` (OpenAI's Responses API) or `messages` (Anthropic's Messages API); the last two fill chat's columns"},
	{Name: ColMetadata, Unit: "–", Better: Neither,
		Doc: "the plan's `metadata` plus `--metadata k=v` stamps; `metadata['quant']`"},
	{Name: ColHostname, Unit: "–", Better: Neither,
		Doc: "the machine benchrun ran on"},
	{Name: ColHardware, Unit: "–", Better: Neither,
		Doc: "`os/arch, N CPUs (model), RAM, GPUs` as the machine reports them"},
	{Name: ColBenchrunVersion, Unit: "–", Better: Neither,
		Doc: "the benchrun build that wrote the row"},
	{Name: ColISL, Unit: "tokens", Better: Neither,
		Doc: "requested input length; 0 for a trace replay (each request has its own: `effective_isl`)"},
	{Name: ColOSL, Unit: "tokens", Better: Neither,
		Doc: "requested output length (`max_tokens`); 0 for a trace replay (`effective_osl`)"},
	{Name: ColConcurrency, Unit: "requests", Better: Neither,
		Doc: "closed loop: requests kept in flight; open loop: the in-flight cap (`max_inflight`, 0 = none)"},
	{Name: ColRate, Unit: "req/s", Better: Neither,
		Doc: "open loop: the target arrival rate; a trace replay: the trace's mean rate at its `time_scale`; 0 for a closed loop"},
	{Name: ColRepeat, Unit: "–", Better: Neither,
		Doc: "with `repeats: N` on the sweep: which of the N independent measurements of the point this row is (1..N; its `cell_id` ends in `/repN`); 0 when the sweep does not repeat (and before schema version 4). Group repeats with `regexp_replace(cell_id, '/rep[0-9]+$', '')`; the report gives each point's mean, 95% interval and CV"},
	{Name: ColMeasurement, Unit: "–", Better: Neither,
		Doc: "which measurement of the cell in its attempt this row is: 1, and 2 for a cell measured once more while its server was up, because a latency check of its first measurement was inconclusive (the machine's lateness could explain it) or because it regressed against its history (`baseline.confirm`, on by default). The second is the current row, the one its checks judge; its `notes` begin with why it was measured again, and the regression verdict records the first's value as `first`. A check that failed on measurement 1 without the machine to explain it still fails the run (docs/PLANS.md, \"Inconclusive verdicts\"); NULL before schema version 5 (meaning 1)"},
	{Name: ColRequests, Unit: "requests", Better: Neither,
		Doc: "timed requests sent (warm-up excluded)"},
	{Name: ColDurationS, Unit: "s", Better: Neither,
		Doc: "the window *T*: a timed pass's first scheduled send to its last response (summed over iterations; METRICS.md)"},
	{Name: ColSliceS, Unit: "s", Better: Neither,
		Doc: "the width of the windows the cell's time slices use (table `slices`): the sweep's `slice`, or the 1-2-5 width that gives about ten windows, widened when either gives more than 1000; 0 for a cell without requests and before schema version 10"},
	{Name: ColCompleted, Unit: "requests", Better: HigherBetter, Counts: []string{"ttft", "e2el", "ttft_sched", "e2el_sched"},
		Doc: "timed requests that finished without error"},
	{Name: ColFailed, Unit: "requests", Better: LowerBetter,
		Doc: "timed requests that failed (kept out of every latency statistic)"},
	{Name: ColEffectiveISL, Unit: "tokens", Better: Neither, Late: LateNone,
		Doc: "mean prompt tokens the server reported (`usage`), to check the cell is the shape asked for; **NULL** when no request completed"},
	{Name: ColEffectiveOSL, Unit: "tokens", Better: Neither, Late: LateNone,
		Doc: "mean output tokens the server reported; **NULL** when no request completed"},
	{Name: ColISLDist, Unit: "–", Better: Neither,
		Doc: "the distribution each request's input length was drawn from (docs/PLANS.md, Length distributions), as the cell id names it: `lognormal(128,32)`, `normal(128,32,16..512)`, `uniform(64..256)`, `empirical(64=3,128=1)`; \"\" when every request asked for `isl` (the column `isl` then holds the distribution's mean, rounded); each request's draw is its row's `isl`"},
	{Name: ColOSLDist, Unit: "–", Better: Neither,
		Doc: "as `isl_dist`, for the output length (each request's draw is its `max_tokens`, forced with `force_osl`, and its row's `osl`)"},
	{Name: ColEffectiveISLP50, Unit: "tokens", Better: Neither, Quantile: 0.5, Late: LateNone,
		Doc: "median prompt tokens the server reported over the completed requests (with `effective_isl`, their mean: the realised length distribution); **NULL** when no request completed"},
	{Name: ColEffectiveISLP90, Unit: "tokens", Better: Neither, Quantile: 0.9, Late: LateNone,
		Doc: "as `effective_isl_p50`, the 90th percentile; **NULL** as it"},
	{Name: ColEffectiveISLP99, Unit: "tokens", Better: Neither, Quantile: 0.99, Late: LateNone,
		Doc: "as `effective_isl_p50`, the 99th percentile; **NULL** as it"},
	{Name: ColEffectiveOSLP50, Unit: "tokens", Better: Neither, Quantile: 0.5, Late: LateNone,
		Doc: "median output tokens the server reported over the completed requests (with `effective_osl`, their mean); **NULL** when no request completed"},
	{Name: ColEffectiveOSLP90, Unit: "tokens", Better: Neither, Quantile: 0.9, Late: LateNone,
		Doc: "as `effective_osl_p50`, the 90th percentile; **NULL** as it"},
	{Name: ColEffectiveOSLP99, Unit: "tokens", Better: Neither, Quantile: 0.99, Late: LateNone,
		Doc: "as `effective_osl_p50`, the 99th percentile; **NULL** as it"},
	{Name: ColArrival, Unit: "–", Better: Neither,
		Doc: "open loop: `constant`, `poisson` or `gamma`; `trace` for a trace replay; \"\" for a closed loop"},
	{Name: ColBurstiness, Unit: "–", Better: Neither,
		Doc: "gamma shape of the arrivals (1 = Poisson); 0 for a closed loop"},
	{Name: ColMaxInflight, Unit: "requests", Better: Neither,
		Doc: "open loop: the plan's cap on requests in flight (0 = none of the plan's; the client then keeps its own ceiling, `loadgen.InFlightLimit`, and notes `client-bound` when requests waited for it, or `server-paced` when short requests waited for the server's turnover: docs/METRICS.md)"},
	{Name: ColSentReqS, Unit: "req/s", Better: Neither, Late: LateNone, why: whyNoSendRate,
		Doc: "the offered rate: (sent − 1) over the send window, first to last send (compare with `rate`; the drain after the last send is in `req_s`'s window, not this one); **NULL** when fewer than two requests were sent"},
	{Name: ColMaxModelLen, Unit: "tokens", Better: Neither, why: whyNoContextLength,
		Doc: "the context one request may use, as the server reported it (else the plan's `model.max_model_len`); **NULL** when neither the server nor the plan said"},
	{Name: ColConnRetries, Unit: "sends", Better: LowerBetter,
		Doc: "sends that met a pooled keep-alive connection the server had closed, before any response byte, and went again on a fresh one (the request was never seen twice)"},
	{Name: ColMachineLateP50Ms, Unit: "ms", Better: Neither, Quantile: 0.5, Late: LateNone, why: whyNoMachineProbe,
		Doc: "the machine's own lateness over the timed window (docs/METRICS.md, \"The machine's lateness\"): how late a probe process beside the load ran a timer task of an event loop handed to another thread, the median; **NULL** when the probe did not run (`telemetry.machine: \"off\"`, or it could not start: the notes say why)"},
	{Name: ColMachineLateP99Ms, Unit: "ms", Better: Neither, Quantile: 0.99, Late: LateNone, why: whyNoMachineProbe,
		Doc: "the same, p99: what a latency verdict on this row allows the machine (a check that fails by less than this could be the machine's: `inconclusive`); **NULL** as `machine_late_p50_ms`, and for a window too short for five samples"},
	{Name: ColMachineLateMaxMs, Unit: "ms", Better: Neither, Quantile: 1, Late: LateNone, why: whyNoMachineProbe,
		Doc: "the same, the latest wait: the cell's longest stall, which an assertion allows a latency as far as one stall reaches its statistic (docs/PLANS.md, \"Inconclusive verdicts\"); **NULL** as `machine_late_p99_ms`"},
	{Name: ColMachineWakeP99Ms, Unit: "ms", Better: Neither, Quantile: 0.99, Late: LateNone, why: whyNoMachineProbe,
		Doc: "how late a lone sleeping thread of the probe woke, p99: the floor under a client's send lag; **NULL** as `machine_late_p99_ms`"},
	{Name: ColMachineCPUPressurePct, Unit: "%", Better: Neither, Late: LateNone, why: whyNoMachineProbe,
		Doc: "share of the window in which some runnable task waited for a CPU (Linux pressure stall information, `/proc/pressure/cpu` \"some\"); near 100 the machine was oversubscribed; **NULL** where the kernel does not report it"},
	{Name: ColAdmittedTok, Unit: "tokens", Better: Neither,
		Doc: "Σ usage.prompt_tokens of completed requests (the seed's admission column, as a client sees it)"},
	{Name: ColRetires, Unit: "sequences", Better: Neither,
		Doc: "sequences the server retired (completed requests)"},
	{Name: ColGPUUtilMean, Unit: "%", Better: Neither, Label: "GPU util mean %", Late: LateNone,
		Doc: "NVML GPU utilisation over the timed window, mean of the samples (every `telemetry.interval`, default 100 ms) over the devices the server was given; **NULL** without NVML (this machine, CI) or a GPU"},
	{Name: ColGPUUtilP95, Unit: "%", Better: Neither, Label: "GPU util p95 %", Quantile: 0.95, Late: LateNone,
		Doc: "the samples' 95th percentile; **NULL** when GPU telemetry was not measured (as `gpu_util_mean`)"},
	{Name: ColGPUSMUtilMean, Unit: "%", Better: Neither, Late: LateNone,
		Doc: "GPM SM utilisation where the device supports it (Hopper and newer); **NULL** elsewhere"},
	{Name: ColGPUMemUtilMean, Unit: "%", Better: Neither, Late: LateNone,
		Doc: "NVML memory (bandwidth) utilisation, mean; **NULL** when GPU telemetry was not measured (as `gpu_util_mean`)"},
	{Name: ColGPUMemPeakBytes, Unit: "bytes", Better: LowerBetter, Label: "GPU memory peak GiB",
		Doc: "the peak of device memory used (NVML v2 memory info), the largest over devices: the seed's `peak_active_bytes` as the device sees it; **NULL** when GPU telemetry was not measured (as `gpu_util_mean`)"},
	{Name: ColGPUMemReservedBytes, Unit: "bytes", Better: Neither,
		Doc: "memory the driver reserves (v2 info), at the peak; **NULL** when GPU telemetry was not measured (as `gpu_util_mean`)"},
	{Name: ColPowerWMax, Unit: "W", Better: Neither, Label: "power max W", Quantile: 1, Late: LateNone,
		Doc: "the largest summed reading (the instantaneous field where the device has it); **NULL** when GPU telemetry was not measured (as `gpu_util_mean`)"},
	{Name: ColSMClockMHzMean, Unit: "MHz", Better: Neither, Late: LateNone,
		Doc: "mean SM clock; **NULL** when GPU telemetry was not measured (as `gpu_util_mean`)"},
	{Name: ColGPUTempCMax, Unit: "°C", Better: Neither, Quantile: 1, Late: LateNone,
		Doc: "the highest GPU temperature seen; **NULL** when GPU telemetry was not measured (as `gpu_util_mean`)"},
	{Name: ColThrottleReasons, Unit: "–", Better: Neither,
		Doc: "clock event reasons seen in the window, by name (`sw_power_cap,hw_thermal_slowdown`); `\"\"` when none was seen or nothing was measured (a NULL `gpu_util_mean` says which)"},
	{Name: ColGPUs, Unit: "–", Better: Neither,
		Doc: "the devices measured: UUIDs, comma separated (the same device to nvidia-smi, CUDA and benchrun); `\"\"` when GPU telemetry was not measured"},
	{Name: ColServerRunningPeak, Unit: "requests", Better: Neither, Label: "running peak", Late: LateNone,
		Doc: "the server's own running-requests gauge, peak over the window's scrapes (`vllm:num_requests_running`, `llamacpp:requests_processing`, `sglang:num_running_reqs`, `tgi_batch_current_size`); **NULL** when the server exposes no metrics (Ollama) or not this one"},
	{Name: ColKVCacheUsagePeak, Unit: "fraction", Better: Neither, Label: "KV cache peak", Late: LateNone,
		Doc: "KV-cache usage peak, 0–1 (`vllm:kv_cache_usage_perc`, older `vllm:gpu_cache_usage_perc`; `sglang:token_usage`; llama.cpp from `/slots` when enabled); **NULL** when the server reports no KV-cache usage (llama.cpp without `/slots`, Ollama)"},
	{Name: ColServerPromptTokens, Unit: "tokens", Better: Neither, Late: LateNone,
		Doc: "prompt tokens as the server counted them (counter delta), beside the client's `admitted_tok`: notes say when they differ by more than 1%; **NULL** when the server exposes no such metric (as `server_running_peak`)"},
	{Name: ColServerGenerationTokens, Unit: "tokens", Better: Neither, Late: LateNone,
		Doc: "generated tokens as the server counted them (counter delta); **NULL** when the server exposes no such metric (as `server_running_peak`)"},
	{Name: ColPrefixCacheHitRate, Unit: "fraction", Better: Neither, Late: LateNone, why: whyNoCache,
		Doc: "prompt tokens served from the prefix cache / prompt tokens: from the answers' `usage.prompt_tokens_details.cached_tokens` where they carry it (the requests that did), else the server's counters (`server_prefix_cache_hit_rate`); notes say which, and when the two differ by more than 5 points; **NULL** when neither is there"},
	{Name: ColServerCPUS, Unit: "s", Better: Neither, Late: LateNone,
		Doc: "CPU seconds of the launched server's process tree over the window (/proc; user + system, children included); **NULL** for a server benchrun did not launch on this host"},
	{Name: ColServerCPUUtil, Unit: "cores", Better: Neither, Label: "server CPU (cores)", Late: LateNone,
		Doc: "`server_cpu_s` / the window's seconds; **NULL** as `server_cpu_s`"},
	{Name: ColServerRSSPeakBytes, Unit: "bytes", Better: LowerBetter, Label: "server RSS peak GiB",
		Doc: "the largest resident memory of the server's process tree over the window's samples; **NULL** as `server_cpu_s`"},
	{Name: ColProgram, Unit: "–", Better: Neither,
		Doc: "exec rows: the parser that read the program's output (`llama-bench`, `mlx-lm`, `json`, `jsonl`, `csv`); `\"\"` on sweep rows"},
	{Name: ColBenchTest, Unit: "–", Better: Neither,
		Doc: "exec rows: the program's test as llama.cpp's compare script names it (`pp512`, `tg128`, `pp512+tg128`, `…@d4096` with a depth; mlx-lm: `pp512+tg1024`); `\"\"` when the program names none"},
	{Name: ColTestKind, Unit: "–", Better: Neither,
		Doc: "exec rows: `pp` (prompt only: its speed is `prefill_tok_s`), `tg` (generation only: `decode_tok_s`), `pg` (both: `total_tok_s`); `\"\"` otherwise"},
	{Name: ColNDepth, Unit: "tokens", Better: Neither,
		Doc: "llama-bench's `n_depth`: tokens already in the KV cache before the timed test (not timed); **NULL** when the program does not report a depth (llama-bench before depths, mlx-lm, sweeps)"},
	{Name: ColAvgTS, Unit: "tok/s", Better: Neither, Late: LateNone,
		Doc: "the program's own mean of the repetitions' tokens per second (llama-bench `avg_ts`: (n_prompt+n_gen)/t per repetition, averaged); the comparable figure is in `prefill_tok_s`, `decode_tok_s` or `total_tok_s` by `test_kind`; **NULL** when the program reports none"},
	{Name: ColStddevTS, Unit: "tok/s", Better: Neither, Late: LateNone,
		Doc: "the sample standard deviation of the repetitions' tokens per second (llama-bench `stddev_ts`); **NULL** when the program reports none"},
	{Name: ColAvgNs, Unit: "ns", Better: LowerBetter,
		Doc: "llama-bench's mean time of one repetition; **NULL** when the program reports none"},
	{Name: ColStddevNs, Unit: "ns", Better: Neither,
		Doc: "llama-bench's standard deviation of the repetitions' times; **NULL** when the program reports none"},
	{Name: ColModelType, Unit: "–", Better: Neither,
		Doc: "the model as the program describes it (llama-bench: `qwen2 7B Q4_K - Medium`); `\"\"` when it does not say"},
	{Name: ColModelSizeBytes, Unit: "bytes", Better: Neither,
		Doc: "the model's size as the program reports it (llama-bench `model_size`); **NULL** when it does not say"},
	{Name: ColModelNParams, Unit: "parameters", Better: Neither,
		Doc: "the model's parameter count (llama-bench `model_n_params`); **NULL** when the program does not say"},
	{Name: ColBackends, Unit: "–", Better: Neither,
		Doc: "the program's compute backends (llama-bench `backends`: `CUDA`, `Metal`, `CPU`); `\"\"` when it does not say"},
	{Name: ColNGPULayers, Unit: "layers", Better: Neither,
		Doc: "layers offloaded to the GPU (llama-bench `n_gpu_layers`, -1 = all); **NULL** when the program does not say"},
	{Name: ColNThreads, Unit: "threads", Better: Neither,
		Doc: "CPU threads the program used; **NULL** when it does not say"},
	{Name: ColNBatch, Unit: "tokens", Better: Neither,
		Doc: "logical batch size (llama-bench `n_batch`); **NULL** when the program does not say"},
	{Name: ColNUBatch, Unit: "tokens", Better: Neither,
		Doc: "physical batch size (llama-bench `n_ubatch`); **NULL** when the program does not say"},
	{Name: ColFlashAttn, Unit: "–", Better: Neither,
		Doc: "flash attention: `on`, `off` or `auto`, whichever form the release wrote (a bool in older llama-bench, -1/0/1 or a word in newer ones); `\"\"` when the program does not say"},
	{Name: ColTypeK, Unit: "–", Better: Neither,
		Doc: "KV cache type of K (llama-bench `type_k`: `f16`, `q8_0`); `\"\"` when the program does not say"},
	{Name: ColTypeV, Unit: "–", Better: Neither,
		Doc: "KV cache type of V; `\"\"` when the program does not say"},
	{Name: ColSplitMode, Unit: "–", Better: Neither,
		Doc: "how the model is split over GPUs (llama-bench `split_mode`: `none`, `layer`, `row`); `\"\"` when the program does not say"},
	{Name: ColDevices, Unit: "–", Better: Neither,
		Doc: "the devices the program used as it names them (llama-bench `devices`: `CUDA0/CUDA1`, `auto`); `\"\"` when it does not say"},
	{Name: ColBuildCommit, Unit: "–", Better: Neither,
		Doc: "the program's build commit (llama-bench `build_commit`; `unknown` in a build without git metadata); `\"\"` when it does not say"},
	{Name: ColBuildNumber, Unit: "–", Better: Neither,
		Doc: "the program's build number (llama.cpp's `b6500` is 6500); **NULL** when it does not say"},
	{Name: ColCPUInfo, Unit: "–", Better: Neither,
		Doc: "the CPU as the program saw it; `\"\"` when it does not say"},
	{Name: ColGPUInfo, Unit: "–", Better: Neither,
		Doc: "the GPUs as the program saw them; `\"\"` when it does not say or there is none"},
	{Name: ColPeakMemoryBytes, Unit: "bytes", Better: LowerBetter,
		Doc: "the program's own peak memory figure (mlx-lm `peak_memory`, GB × 10⁹; the largest over trials), not NVML's `gpu_mem_peak_bytes`; **NULL** when the program reports none"},
	{Name: ColExecExtra, Unit: "JSON", Better: Neither,
		Doc: "exec rows: every field of the program's record that no column took, as one JSON object (llama-bench's field set grows with each release: `model_filename`, `n_cpu_moe`, `load_mode`, ...); `\"\"` when there is none"},
	{Name: ColAgainstCellID, Unit: "–", Better: Neither,
		Doc: "a `validate` row: the synthetic cell (of the stage its `against` names, measured in this run) the documents were compared with; `\"\"` on every other row"},
	{Name: ColDocuments, Unit: "documents", Better: Neither,
		Doc: "a `validate` row: how many documents were sent (each file, or each JSONL record); 0 on every other row"},
	{Name: ColSyntheticEffectiveISL, Unit: "tokens", Better: Neither, Late: LateNone,
		Doc: "a `validate` row: the synthetic cell's `effective_isl`, beside the documents' own `effective_isl`; **NULL** on every other row and when the synthetic cell measured none"},
	{Name: ColDecodeTokSRatio, Unit: "ratio", Better: Neither, Late: LateNone,
		Doc: "a `validate` row: `decode_tok_s` on the documents / the synthetic cell's (the seed's \"real-world docs are 0.3-0.9x synthetic\"; the default band assertion reads it); **NULL** on every other row, when either side was not measured, and on the error row of a synthetic cell that failed"},
	{Name: ColOutputTokSRatio, Unit: "ratio", Better: Neither, Late: LateNone,
		Doc: "as `decode_tok_s_ratio`, for `output_tok_s`; **NULL** as `decode_tok_s_ratio`"},
	{Name: ColPrefillTokSRatio, Unit: "ratio", Better: Neither, Late: LateNone,
		Doc: "as `decode_tok_s_ratio`, for `prefill_tok_s` (longer documents than the cell's isl raise it on a server whose TTFT does not grow with the prompt); **NULL** as `decode_tok_s_ratio`"},
	{Name: ColTotalTokSRatio, Unit: "ratio", Better: Neither, Late: LateNone,
		Doc: "as `decode_tok_s_ratio`, for `total_tok_s` (the embedding variant's band reads it: input tokens/s); **NULL** as `decode_tok_s_ratio`"},
	{Name: ColReqSRatio, Unit: "ratio", Better: Neither, Late: LateNone,
		Doc: "as `decode_tok_s_ratio`, for `req_s` (embeddings/s for the embedding variant); **NULL** as `decode_tok_s_ratio`"},
	{Name: ColTTFTRatio, Unit: "ratio", Better: Neither, Late: LateOwn,
		Doc: "a `validate` row: mean `ttft_ms` on the documents / the synthetic cell's (above 1: the documents wait longer); **NULL** as `decode_tok_s_ratio`"},
	{Name: ColTPOTRatio, Unit: "ratio", Better: Neither, Late: LateTPOTRatio, why: whyNoTPOT,
		Doc: "as `ttft_ratio`, for `tpot_ms`; **NULL** as `decode_tok_s_ratio`"},
	{Name: ColITLRatio, Unit: "ratio", Better: Neither, Late: LateGapRatio, why: whyNoGap,
		Doc: "as `ttft_ratio`, for `itl_ms`; **NULL** as `decode_tok_s_ratio`"},
	{Name: ColE2ELRatio, Unit: "ratio", Better: Neither, Late: LateOwn,
		Doc: "as `ttft_ratio`, for `e2el_ms`; **NULL** as `decode_tok_s_ratio`"},
	{Name: ColBatch, Unit: "inputs", Better: Neither,
		Doc: "embeddings: inputs per request (the sweep's `batch` ladder; its `cell_id` ends in `/b<batch>`); 0 for other endpoints"},
	{Name: ColImages, Unit: "images", Better: Neither,
		Doc: "chat: generated images sent with every request (`images` ladder; `cell_id` ends in `/img<n>@<WxH>`); 0 when none"},
	{Name: ColReasoning, Unit: "–", Better: Neither,
		Doc: "the request's reasoning controls as the cell sent them (`reasoning_effort=low`, `think=false`, `chat_template_kwargs={\"enable_thinking\":false}`; docs/PLANS.md, Reasoning); the sweep's `reasoning` axis joins them to `cell_id`; `\"\"` when none"},
	{Name: ColImageResolution, Unit: "pixels", Better: Neither,
		Doc: "the images' size, `WxH` (`image_resolution`); `\"\"` when no image is sent"},
	{Name: ColAudioSeconds, Unit: "s", Better: Neither,
		Doc: "transcriptions: the generated audio's length per request (`audio_seconds` ladder; `cell_id` is `<stage>/audio<s>s/c<n>`); 0 for other endpoints"},
	{Name: ColDimensions, Unit: "elements", Better: Neither,
		Doc: "the length of the vectors (the plan's `dimensions`, or the first answer's, which every later vector must match); **NULL** for other endpoints or when no request completed"},
	{Name: ColTurns, Unit: "turns", Better: Neither, why: whyNoTurn,
		Doc: "conversation cells (`turns: N` or a conversation dataset): turns per session (a conversations dataset: its longest conversation's human turns, at most `turns`; a session of a shorter one sends fewer); **NULL** when the cell is not a conversation"},
	{Name: ColThinkTimeMs, Unit: "ms", Better: Neither, Late: LateNone, why: whyNoTurn,
		Doc: "the planned mean pause between a session's turns (`think_time`); **NULL** when the cell is not a conversation"},
	{Name: ColCachedTokens, Unit: "tokens", Better: Neither, why: whyNoCache,
		Doc: "Σ `usage.prompt_tokens_details.cached_tokens` over the completed requests that reported it; 0 when they reported misses; **NULL** when no answer carried the field (the server does not say)"},
	{Name: ColServerPrefixCacheHitRate, Unit: "fraction", Better: Neither, Late: LateNone, why: whyNoCache,
		Doc: "prefix-cache hits / queries by the server's own counters (`vllm:prefix_cache_*_total`, `sglang:cache_hit_rate`): the cross-check of `prefix_cache_hit_rate`; **NULL** when the server exposes no such metric (as `server_running_peak`)"},
	{Name: ColTimeScale, Unit: "ratio", Better: Neither, Late: LateNone,
		Doc: "a trace replay's speed-up of the recorded timestamps (2: twice as fast); **NULL** when the cell does not replay a trace"},
	{Name: ColSearch, Unit: "–", Better: Neither,
		Doc: "an SLO search's rows: `probe` for each point it measured, `knee` for the highest load found within the SLO; `\"\"` for every other row"},
	{Name: ColEventsJoinedPct, Unit: "%", Better: Neither, Late: LateNone, why: whyNotKernelStamped,
		Doc: "the share of token events that came in one socket read with the next (kernel stamps: they carry the later bytes' arrival, and their gap reads 0): past half, the cell's `itl` percentiles are mostly the reads' (a client read late beside busy neighbours), and a baseline leaves such a history value of an `itl` metric out; a check on an `itl` percentile that fell among the joined gaps (row or `baseline.`) is inconclusive, not failed (docs/PLANS.md, \"Inconclusive verdicts\"); **NULL** when not kernel-stamped"},
	{Name: ColStampSource, Unit: "–", Better: Neither,
		Doc: "the clock the row's latencies were measured with: `kernel` (SO_TIMESTAMPING receive stamps) or `user` (the time the reading goroutine ran; notes say why; also when only some of the cell's streamed requests, or of a merged cell's shards, had kernel stamps: then all use their user stamps); `\"\"` for rows that sent no streaming request"},
	{Name: ColShard, Unit: "index", Better: Neither,
		Doc: "the process's shard, 0-based, of `shards` that split the cell's load (`--shard i/n`, docs/METRICS.md Shards); 0 unsharded and in a merged row"},
	{Name: ColShards, Unit: "processes", Better: Neither,
		Doc: "how many processes split the cell's load: 1 unsharded (0 in rows written before the column), n in each shard's rows and in the rows `benchrun merge` recomputes from them"},
	{Name: ColStatus, Unit: "–", Better: Neither,
		Doc: "`ok`, `error` (the cell or some requests failed) or `skipped` (not run)"},
	{Name: ColReason, Unit: "–", Better: Neither,
		Doc: "why a cell is not ok, in words (\"3 of 8 requests failed; first: ...\"); \"\" when ok"},
	{Name: ColNotes, Unit: "–", Better: Neither,
		Doc: "what the row measured (cold or warm prompts, where token counts came from, warm-up warnings)"},
}
