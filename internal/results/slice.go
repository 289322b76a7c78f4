package results

import "time"

// Slice is one fixed window of a cell's timed pass: the `slices` table.
// Where a cell row averages its whole pass, its slices show the pass's
// shape: a warm-up tail, a stall or a throttling GPU. Each event counts in
// the window it happened in (docs/RESULTS.md, Time slices): a send where
// it was sent, a first token where it arrived, a gap where it ended, a
// request where it ended. A failed request's end is not stored, so it
// counts where it was sent. Rates divide by the window's own width (the
// last window may be shorter than the others).
type Slice struct {
	RunID       string `parquet:"run_id" json:"run_id"`
	Plan        string `parquet:"plan" json:"plan"`
	Stage       string `parquet:"stage" json:"stage"`
	CellID      string `parquet:"cell_id" json:"cell_id"`
	Attempt     int64  `parquet:"attempt" json:"attempt"`         // as in Cell
	Measurement int64  `parquet:"measurement" json:"measurement"` // as in Cell
	// Slice numbers the windows from 0; StartS is the window's start in
	// seconds after the pass's first scheduled send, StartedAt the same
	// instant on the clock, WidthS its length.
	Slice     int64     `parquet:"slice" json:"slice"`
	StartS    float64   `parquet:"start_s" json:"start_s"`
	StartedAt time.Time `parquet:"started_at,timestamp(microsecond)" json:"started_at"`
	WidthS    float64   `parquet:"width_s" json:"width_s"`
	// Sent counts requests sent in the window, Completed the ones that
	// ended in it, Failed the failed ones sent in it. InFlight is the mean
	// number of requests between their send and their end over the window.
	Sent      int64   `parquet:"sent" json:"sent"`
	Completed int64   `parquet:"completed" json:"completed"`
	Failed    int64   `parquet:"failed" json:"failed"`
	InFlight  float64 `parquet:"in_flight" json:"in_flight"`
	// ReqS and OutputTokS are the completions and the output tokens that
	// arrived in the window, per second of it.
	ReqS       float64 `parquet:"req_s" json:"req_s"`
	OutputTokS float64 `parquet:"output_tok_s" json:"output_tok_s"`
	// The latencies observed in the window (nil: none was).
	TTFTP50Ms    *float64 `parquet:"ttft_p50_ms" json:"ttft_p50_ms"`
	TTFTP99Ms    *float64 `parquet:"ttft_p99_ms" json:"ttft_p99_ms"`
	ITLP50Ms     *float64 `parquet:"itl_p50_ms" json:"itl_p50_ms"`
	ITLP99Ms     *float64 `parquet:"itl_p99_ms" json:"itl_p99_ms"`
	ITLMaxMs     *float64 `parquet:"itl_max_ms" json:"itl_max_ms"`
	E2ELP50Ms    *float64 `parquet:"e2el_p50_ms" json:"e2el_p50_ms"`
	E2ELP99Ms    *float64 `parquet:"e2el_p99_ms" json:"e2el_p99_ms"`
	SendLagP99Ms *float64 `parquet:"send_lag_p99_ms" json:"send_lag_p99_ms"`
}
