package results

import "testing"

func TestWhyNull(t *testing.T) {
	one := int64(1)
	ran := Cell{Requests: 5, Completed: 5, Status: StatusOK, DurationS: 1}
	failed := Cell{Requests: 5, Status: StatusError, DurationS: 1}
	cases := []struct {
		name   string
		c      Cell
		column string
		want   string
	}{
		{"skipped", Cell{Status: StatusSkipped}, "ttft_p50_ms", "the cell was skipped"},
		{"all failed", failed, "ttft_p50_ms", "every request failed"},
		{"no sample", ran, "ttft_p50_ms", "no sample"},
		{"tpot", ran, "tpot_p50_ms", "no completed request had more than one output token"},
		{"itl", ran, "itl_p99_ms", "no completed request had two token events"},
		{"open loop", Cell{Rate: 2}, "speedup_vs_c1", "an open-loop point has no c=1 row to compare with"},
		{"no c1", ran, "batching_efficiency", "no c=1 row of this cell measured output throughput to compare with"},
		// Read over the cell's duration: a cell that ran has its own reason even when every request failed.
		{"price", failed, "cost_usd", "the plan gives no price (cost_per_hour)"},
		{"price, never ran", Cell{}, "tokens_per_dollar", "no request was sent"},
		{"server wait", ran, "server_cpu_wait_ms", "the server was not launched by this run, or the kernel keeps no scheduler statistics (/proc/PID/task/*/schedstat)"},
		{"psi", ran, "machine_cpu_pressure_pct", "the kernel does not report CPU pressure (/proc/pressure/cpu: Linux with PSI)"},
		{"machine", Cell{}, "machine_late_p99_ms", "the machine probe did not run during the cell (telemetry.machine off, or it could not start: see the notes)"},
		{"first call", failed, "first_call_ms", "the cell's first request failed"},
		{"one sent", Cell{Requests: 1, Status: StatusError}, "sent_req_s", "fewer than two requests were sent"},
		// Two sent: no reason of its own, the shared ones say why.
		{"two sent", Cell{Requests: 2, Status: StatusError}, "sent_req_s", "every request failed"},
		{"not a conversation", ran, "turns", "the cell is not a conversation (the sweep gives no turns)"},
		{"later turns", Cell{Requests: 5, Completed: 5, Turns: &one}, "ttft_later_turns_p50_ms", "no turn after a session's first completed"},
		{"cache", ran, "server_prefix_cache_hit_rate", "the server's metrics have no prefix-cache counters (or were not read)"},
	}
	for _, tc := range cases {
		if got := WhyNull(tc.c, tc.column); got != tc.want {
			t.Errorf("%s: WhyNull(%s) = %q, want %q", tc.name, tc.column, got, tc.want)
		}
	}
}
