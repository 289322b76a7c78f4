package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

func TestSelfBench(t *testing.T) {
	var out, errb bytes.Buffer
	code := runSelfBench(context.Background(), []string{"--concurrency", "4", "--streams", "16", "--step", "100ms"}, &out, &errb)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	for _, want := range []string{"measurement,value,unit,detail\n", "sse_events_per_s_per_core,", "allocs_per_event,", "event_error_p99_ms,", "send_lag_p99_ms_at_500_req_s,", "max_rate_req_s,", "bytes_per_stream,"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
	if code := runSelfBench(context.Background(), []string{"--streams", "0"}, &out, &errb); code != 2 {
		t.Errorf("--streams 0: exit %d, want 2", code)
	}
}
