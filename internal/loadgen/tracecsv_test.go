package loadgen

import (
	"strings"
	"testing"
	"time"
)

// TestCSVTraces: the BurstGPT and Azure fixtures (testdata/traces, made
// for the tests in each release's header) read as traces: lengths per
// row, times relative to the first request, in time order (rows out of
// order sorted, the file's line kept), BurstGPT's failed rows (0
// response tokens) left out.
func TestCSVTraces(t *testing.T) {
	for _, tc := range []struct {
		format, path string
		want         []TraceRequest
	}{
		{FormatBurstGPT, "testdata/traces/burstgpt.csv", []TraceRequest{
			{At: 0, Line: 2, InputLength: 40, OutputLength: 12},
			{At: time.Second, Line: 5, InputLength: 32, OutputLength: 16},
			{At: 1250 * time.Millisecond, Line: 4, InputLength: 64, OutputLength: 8},
			{At: 2 * time.Second, Line: 6, InputLength: 16, OutputLength: 4},
		}},
		{FormatAzure, "testdata/traces/azure.csv", []TraceRequest{
			{At: 0, Line: 2, InputLength: 40, OutputLength: 12},
			{At: 250 * time.Millisecond, Line: 4, InputLength: 64, OutputLength: 8},
			{At: 500 * time.Millisecond, Line: 3, InputLength: 24, OutputLength: 6},
			{At: 2 * time.Second, Line: 5, InputLength: 16, OutputLength: 4},
		}},
	} {
		tr, err := LoadTrace(TraceSpec{Path: tc.path, Format: tc.format})
		if err != nil {
			t.Fatalf("%s: %v", tc.format, err)
		}
		if len(tr.Requests) != len(tc.want) {
			t.Fatalf("%s: %d requests %+v, want %d", tc.format, len(tr.Requests), tr.Requests, len(tc.want))
		}
		for i, q := range tr.Requests {
			w := tc.want[i]
			if q.At != w.At || q.Line != w.Line || q.InputLength != w.InputLength || q.OutputLength != w.OutputLength || q.Prompt != "" || q.HashIDs != nil {
				t.Errorf("%s request %d: %+v, want %+v", tc.format, i, q, w)
			}
		}
	}
}

// TestCSVTraceErrors: a malformed CSV trace is refused with its file and
// line and what is wrong.
func TestCSVTraceErrors(t *testing.T) {
	for _, tc := range []struct{ format, csv, want string }{
		{FormatBurstGPT, "Timestamp,Model,Request tokens\n0,x,4\n", `t.csv:1: no column "Response tokens" in the header`},
		{FormatBurstGPT, "Timestamp,Request tokens,Response tokens\n0,4,2\nsoon,4,2\n", `t.csv:3: Timestamp "soon": want seconds since the trace's start`},
		{FormatBurstGPT, "Timestamp,Request tokens,Response tokens\n0,4,2\n1,4.5,2\n", `t.csv:3: Request tokens "4.5": want a whole number of tokens`},
		{FormatBurstGPT, "Timestamp,Request tokens,Response tokens\n0,4,2\n1,0,2\n", `t.csv:3: Request tokens is 0`},
		{FormatBurstGPT, "Timestamp,Request tokens,Response tokens\n0,4,2\n1,4\n", `t.csv:3: 2 fields, the header has 3`},
		{FormatBurstGPT, "Timestamp,Request tokens,Response tokens\n0,4,0\n", `t.csv: no requests (format burstgpt: a header row, then one request per row)`},
		{FormatBurstGPT, "Timestamp,Request tokens,Response tokens\n0,\"4,2\n", `t.csv:2: extraneous or missing " in quoted-field`},
		{FormatAzure, "TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:15:46.68,4,2\n16/11/2023,4,2\n", `t.csv:3: TIMESTAMP "16/11/2023": want a time such as "2023-11-16 18:15:46.6805900"`},
		{FormatAzure, "TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:15:46.68,4,0\n", `t.csv:2: GeneratedTokens is 0`},
		{FormatAzure, "", `t.csv: empty (format azure: a CSV with a header row)`},
	} {
		_, err := ParseTrace(strings.NewReader(tc.csv), TraceSpec{Path: "t.csv", Format: tc.format})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: err = %v, want %q", tc.csv, err, tc.want)
		}
	}
}

// FuzzCSVTrace: no CSV makes the reader panic or hang; what it accepts
// has requests in time order with lengths of at least one token.
func FuzzCSVTrace(f *testing.F) {
	f.Add("Timestamp,Request tokens,Response tokens\n0,4,2\n", FormatBurstGPT)
	f.Add("TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:15:46.6805900,4,2\n", FormatAzure)
	f.Fuzz(func(t *testing.T, s, format string) {
		if format != FormatAzure {
			format = FormatBurstGPT
		}
		tr, err := ParseTrace(strings.NewReader(s), TraceSpec{Path: "f.csv", Format: format})
		if err != nil {
			return
		}
		for i, q := range tr.Requests {
			if q.InputLength < 1 || q.OutputLength < 1 || i > 0 && q.At < tr.Requests[i-1].At {
				t.Fatalf("request %d: %+v", i, q)
			}
		}
	})
}
