package loadgen

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"time"
)

// CSV traces: production request logs as their publishers release them,
// replayed as a Mooncake trace is (timestamps, input and output lengths;
// the prompts synthesized to each length).
const (
	// FormatBurstGPT is BurstGPT's CSV (HPMLL/BurstGPT, data/BurstGPT_*.csv):
	// a header naming Timestamp (seconds from the trace's start), Model,
	// Request tokens, Response tokens, Total tokens and Log Type (newer
	// releases add Session ID and Elapsed time); columns are found by
	// name. A row whose Response tokens are 0 is a request that failed in
	// production (the README: "some failure that Response tokens are 0s"):
	// it asked for no output, so it is left out.
	FormatBurstGPT = "burstgpt"
	// FormatAzure is the Azure LLM inference trace's CSV
	// (Azure/AzurePublicDataset, AzureLLMInferenceTrace_{code,conv}.csv and
	// the 2024 week-long ones): TIMESTAMP (a wall-clock time,
	// "2023-11-16 18:15:46.6805900", 100 ns ticks), ContextTokens,
	// GeneratedTokens.
	FormatAzure = "azure"
)

// csvColumns are the columns a CSV trace's header must name: the
// timestamp's, the input length's and the output length's.
func csvColumns(format string) (ts, in, out string) {
	if format == FormatAzure {
		return "TIMESTAMP", "ContextTokens", "GeneratedTokens"
	}
	return "Timestamp", "Request tokens", "Response tokens"
}

// azureTimeLayouts are the TIMESTAMP forms the Azure traces use (7
// fractional digits in the 2023 and 2024 releases; fewer, or none, read
// too).
var azureTimeLayouts = []string{"2006-01-02 15:04:05.999999999", "2006-01-02T15:04:05.999999999", "2006-01-02 15:04:05.999999999Z07:00"}

// parseCSVTrace reads a BurstGPT or Azure CSV trace: one request per row
// after the header, each row's timestamp in ms since an origin (the
// caller makes them relative to the first). Errors name the file's line.
func parseCSVTrace(r io.Reader, spec TraceSpec) ([]TraceRequest, []float64, error) {
	cr := csv.NewReader(r)
	cr.FieldsPerRecord = -1 // checked per row, to say which
	cr.ReuseRecord = true
	header, err := cr.Read()
	if errors.Is(err, io.EOF) {
		return nil, nil, fmt.Errorf("trace %s: empty (format %s: a CSV with a header row)", spec.Path, spec.Format)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("trace %s:1: %w", spec.Path, csvError(err))
	}
	tsName, inName, outName := csvColumns(spec.Format)
	col := map[string]int{}
	for i, h := range header {
		col[strings.TrimSpace(strings.TrimPrefix(h, "\ufeff"))] = i
	}
	var idx [3]int
	for k, name := range []string{tsName, inName, outName} {
		i, ok := col[name]
		if !ok {
			return nil, nil, fmt.Errorf("trace %s:1: no column %q in the header %q (format %s: %s, %s, %s)", spec.Path, name, strings.Join(header, ","), spec.Format, tsName, inName, outName)
		}
		idx[k] = i
	}
	width := len(header)
	var base time.Time // Azure: the first row's time, the origin of the rest
	var reqs []TraceRequest
	var stamps []float64
	for {
		rec, err := cr.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		line, _ := cr.FieldPos(0)
		if err != nil {
			return nil, nil, fmt.Errorf("trace %s:%d: %w", spec.Path, line, csvError(err))
		}
		if len(rec) == 1 && strings.TrimSpace(rec[0]) == "" {
			continue
		}
		if len(rec) != width {
			return nil, nil, fmt.Errorf("trace %s:%d: %d fields, the header has %d", spec.Path, line, len(rec), width)
		}
		ms, err := csvTimestamp(spec.Format, rec[idx[0]], &base)
		if err != nil {
			return nil, nil, fmt.Errorf("trace %s:%d: %s %q: %w", spec.Path, line, tsName, rec[idx[0]], err)
		}
		in, err := csvTokens(rec[idx[1]])
		if err != nil {
			return nil, nil, fmt.Errorf("trace %s:%d: %s %q: %w", spec.Path, line, inName, rec[idx[1]], err)
		}
		out, err := csvTokens(rec[idx[2]])
		if err != nil {
			return nil, nil, fmt.Errorf("trace %s:%d: %s %q: %w", spec.Path, line, outName, rec[idx[2]], err)
		}
		if out == 0 && spec.Format == FormatBurstGPT {
			continue // a request that failed in production
		}
		for name, n := range map[string]int{inName: in, outName: out} {
			if n < 1 {
				return nil, nil, fmt.Errorf("trace %s:%d: %s is 0: a request needs at least one token of each", spec.Path, line, name)
			}
		}
		reqs = append(reqs, TraceRequest{Line: line, InputLength: in, OutputLength: out})
		stamps = append(stamps, ms)
	}
	return reqs, stamps, nil
}

// csvTimestamp is a row's timestamp in ms: BurstGPT's seconds, Azure's
// wall-clock time as ms after *base (the first row's, set by it: ms since
// the epoch would lose the 100 ns ticks to float64's precision).
func csvTimestamp(format, s string, base *time.Time) (float64, error) {
	s = strings.TrimSpace(s)
	if format == FormatAzure {
		for _, layout := range azureTimeLayouts {
			if t, err := time.Parse(layout, s); err == nil {
				if base.IsZero() {
					*base = t
				}
				return float64(t.Sub(*base)) / 1e6, nil
			}
		}
		return 0, errors.New(`want a time such as "2023-11-16 18:15:46.6805900"`)
	}
	sec, err := strconv.ParseFloat(s, 64)
	if err != nil || sec < 0 || math.IsInf(sec, 0) || math.IsNaN(sec) {
		return 0, errors.New("want seconds since the trace's start, a number >= 0")
	}
	return sec * 1000, nil
}

// csvTokens is a token count: a whole number from 0 to maxTraceTokens
// ("12.0" reads as 12).
func csvTokens(s string) (int, error) {
	f, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
	if err != nil || f != math.Trunc(f) || f < 0 || f > maxTraceTokens {
		return 0, fmt.Errorf("want a whole number of tokens from 0 to %d", maxTraceTokens)
	}
	return int(f), nil
}

// csvError is a CSV parse error without encoding/csv's own position
// (the caller says the file and line).
func csvError(err error) error {
	var pe *csv.ParseError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}
