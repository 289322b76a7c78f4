package turns

import (
	"strings"
	"testing"

	"github.com/benchrun/benchrun/internal/results"
)

func req(turn int64, in int64, cached *int64, ttft float64) results.Request {
	r := results.Request{Status: results.StatusOK, TTFTMs: results.Some(ttft), InputTokens: in, CachedTokens: cached}
	if turn > 0 {
		r.Session, r.Turn = results.Some(int64(0)), results.Some(turn)
	}
	return r
}

// TestFillHitRate: the usage figure where any answer said, else the
// server's; a note says which, and one more when they are over 5 points
// apart; cached_tokens is NULL when no answer said.
func TestFillHitRate(t *testing.T) {
	c := results.Some[int64]
	for _, tc := range []struct {
		name   string
		reqs   []results.Request
		server *float64
		rate   *float64
		cached *int64
		notes  []string
		absent []string
	}{
		{"usage only", []results.Request{req(0, 100, c(25), 1), req(0, 100, c(75), 1)}, nil, results.Some(0.5), c(100),
			[]string{"prefix_cache_hit_rate from usage cached_tokens"}, []string{"apart", "server's counters"}},
		{"server only", []results.Request{req(0, 100, nil, 1)}, results.Some(0.4), results.Some(0.4), nil,
			[]string{"prefix_cache_hit_rate from the server's counters (no answer carried usage cached_tokens)"}, []string{"apart"}},
		{"both, close", []results.Request{req(0, 100, c(50), 1)}, results.Some(0.53), results.Some(0.5), c(50), nil, []string{"apart"}},
		{"both, apart", []results.Request{req(0, 100, c(50), 1)}, results.Some(0.6), results.Some(0.5), c(50),
			[]string{"prefix_cache_hit_rate 0.500 by usage, 0.600 by the server's counters: 10.0 points apart"}, nil},
		{"some did not say", []results.Request{req(0, 100, c(50), 1), req(0, 100, nil, 1)}, nil, results.Some(0.5), c(50),
			[]string{"which 1 of 2 completed requests reported"}, nil},
		{"neither", []results.Request{req(0, 100, nil, 1)}, nil, nil, nil, nil, []string{"prefix_cache_hit_rate"}},
		{"failed requests do not count", []results.Request{req(0, 100, c(50), 1), {Status: results.StatusError, InputTokens: 100, CachedTokens: c(0)}}, nil, results.Some(0.5), c(50), nil, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			row := results.Cell{ServerPrefixCacheHitRate: tc.server}
			Fill(&row, results.AsRequests(tc.reqs), ExpectNothing)
			if (row.PrefixCacheHitRate == nil) != (tc.rate == nil) || tc.rate != nil && *row.PrefixCacheHitRate != *tc.rate {
				t.Errorf("hit rate %v, want %v", results.ValueOr(row.PrefixCacheHitRate, -1), results.ValueOr(tc.rate, -1))
			}
			if (row.CachedTokens == nil) != (tc.cached == nil) || tc.cached != nil && *row.CachedTokens != *tc.cached {
				t.Errorf("cached %v, want %v", results.ValueOr(row.CachedTokens, -1), results.ValueOr(tc.cached, -1))
			}
			for _, n := range tc.notes {
				if !strings.Contains(row.Notes, n) {
					t.Errorf("notes lack %q: %s", n, row.Notes)
				}
			}
			for _, n := range tc.absent {
				if strings.Contains(row.Notes, n) {
					t.Errorf("notes say %q: %s", n, row.Notes)
				}
			}
			if row.TTFTTurn1P50Ms != nil || row.TTFTLaterTurnsP50Ms != nil {
				t.Error("ttft by turn on a cell that is not a conversation")
			}
		})
	}
}

// TestFillEngagement: a conversation whose later turns got nothing cached,
// or whose server's counters show no hit, says so; one whose later turns
// hit does not; a shared-prefix cell likewise; a plain cell never.
func TestFillEngagement(t *testing.T) {
	c := results.Some[int64]
	conv := func(later *int64) []results.Request {
		return []results.Request{req(1, 40, c(0), 30), req(2, 100, later, 10), req(3, 160, later, 12)}
	}
	for _, tc := range []struct {
		name    string
		reqs    []results.Request
		expect  Expect
		server  *float64
		engaged bool
	}{
		{"history cached", conv(c(48)), ExpectHistory, nil, true},
		{"history not cached", conv(c(0)), ExpectHistory, nil, false},
		{"server saw no hit", conv(nil), ExpectHistory, results.Some(0.0), false},
		{"server saw hits", conv(nil), ExpectHistory, results.Some(0.3), true},
		{"shared prefix cached", []results.Request{req(0, 40, c(0), 1), req(0, 40, c(16), 1)}, ExpectSharedPrefix, nil, true},
		{"shared prefix not cached", []results.Request{req(0, 40, c(0), 1), req(0, 40, c(0), 1)}, ExpectSharedPrefix, nil, false},
		{"shared prefix, server saw no hit", []results.Request{req(0, 40, nil, 1), req(0, 40, nil, 1)}, ExpectSharedPrefix, results.Some(0.0), false},
		{"fresh prompts", []results.Request{req(0, 40, c(0), 1), req(0, 40, c(0), 1)}, ExpectNothing, nil, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			row := results.Cell{ServerPrefixCacheHitRate: tc.server}
			if tc.reqs[0].Turn != nil {
				row.Turns = results.Some(int64(3))
			}
			Fill(&row, results.AsRequests(tc.reqs), tc.expect)
			if got := !strings.Contains(row.Notes, "prefix cache did not engage"); got != tc.engaged {
				t.Errorf("engaged %v, want %v: %s", got, tc.engaged, row.Notes)
			}
			if row.Turns != nil && (results.ValueOr(row.TTFTTurn1P50Ms, -1) != 30 || results.ValueOr(row.TTFTLaterTurnsP50Ms, -1) != 11) {
				t.Errorf("ttft by turn %v / %v", row.TTFTTurn1P50Ms, row.TTFTLaterTurnsP50Ms)
			}
		})
	}
	if ExpectOf(results.Cell{Notes: "prompts=cold (a fresh prompt every request); " + SharedPrefixNote(10)}) != ExpectSharedPrefix ||
		ExpectOf(results.Cell{Turns: results.Some(int64(1))}) != ExpectNothing || ExpectOf(results.Cell{Turns: results.Some(int64(2))}) != ExpectHistory {
		t.Error("ExpectOf")
	}
	for _, n := range []string{"conversations: 4 sessions", "prefix_cache_hit_rate from usage cached_tokens", "prefix cache did not engage: x"} {
		if !IsNote(n) {
			t.Errorf("IsNote(%q)", n)
		}
	}
	if IsNote("prompts=cold (a fresh prompt every request)") {
		t.Error("IsNote claims the sweep's own note")
	}
}
