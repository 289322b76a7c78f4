package results

// SchemaVersion numbers the row layout written to Parquet (the
// "benchrun.schema_version" key of each file's metadata). It goes up by one
// in the release that adds columns; columns are never renamed or retyped,
// and a column may only become nullable (required to optional, never back),
// so a reader of version N reads every file of versions 1..N
// (sinks/parquet/testdata/v1 holds files of version 1, read by a test).
// Version 2 added `attempt`; version 3 made the metrics that can lack
// samples nullable (Column.Nullable) where earlier files wrote 0; version 4
// added the assertions table's `name`, `severity` and `level`; version 8
// added conversations, trace replay, SLO search, start-up, prefix-cache
// accounting and kernel-stamp columns; version 9 added the machine's
// lateness (the cells' machine_* columns) and the assertions table's
// `measurement`, `explained` and the outcome `inconclusive`; version 10
// added the cells' `slice_s` and the slices table; version 11 added
// reasoning: the cells' `reasoning`, `ttfo_*`, `ttfr_ms`,
// `reasoning_tokens_mean`, `answer_tokens_mean`, `reasoning_tok_s`,
// `answer_tok_s`, `answered_pct`, and the requests' `ttfo_ms`, `ttfr_ms`,
// `reasoning_end_ms`, `reasoning_tokens`, `answer_tokens`,
// `reasoning_source`, `answered`; and tool calls and structured output:
// the cells' `tool_calls_mean`, `tool_args_json_pct`,
// `tool_args_valid_pct`, `structured_valid_pct`, the requests'
// `tool_calls`, `tool_calls_json`, `tool_calls_valid`, `answer_json`,
// `answer_valid`, `answer_invalid_reason`; version 12 added the
// percentiles' 95 % confidence bounds (`ttft_p99_ms_lo`, `ttft_p99_ms_hi`
// and the like for ttft, itl, tpot, e2el and ttfo p50/p90/p95/p99) and
// their sample sizes (`itl_samples`, `tpot_samples`, `ttfo_samples`);
// agent sessions: the cells' `max_steps`, `tool_latency_ms`,
// `agent_sessions`, `steps_mean`, `steps_max`, `final_answer_pct`,
// `final_answer_p50_ms`, `final_answer_p99_ms`, `tool_ms_mean`,
// `model_ms_mean`, `ttft_step1_p50_ms`, `ttft_later_steps_p50_ms`,
// `cached_tokens_step1_mean`, `cached_tokens_later_steps_mean`, and the
// requests' `step` and `tool_ms`; measure until precise: the cells'
// `precision_metric`, `precision_reached_pct`, `precision_target_pct`,
// `precision_confidence`, `stop_reason`.
// Version 12 also added the time to the first tool call, the cells' and
// the requests' `ttftc_ms`; and length distributions, the cells'
// `isl_dist`, `osl_dist`, `effective_isl_p50`/`_p90`/`_p99` and
// `effective_osl_p50`/`_p90`/`_p99`, the requests' `isl` and `osl`.
const SchemaVersion = 12

// Table names: the folders of a run directory that hold Parquet part files.
const (
	TableCells      = "cells"
	TableRequests   = "requests"
	TableAssertions = "assertions"
	TableSamples    = "samples"
	TableSlices     = "slices"
)

// Tables are every table of a run directory, in the order a run writes a
// cell's parts (requests before the slices and the cell row they are
// derived from).
var Tables = []string{TableCells, TableRequests, TableSlices, TableAssertions, TableSamples}
