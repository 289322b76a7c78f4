package sim

import (
	"strings"
	"testing"
	"time"
)

func TestCountTokens(t *testing.T) {
	tests := []struct {
		in   string
		want int
	}{
		{"", 0},
		{"   ", 0},
		{"hello", 1},
		{"hello world", 2},
		{"  leading and trailing  ", 3},
		{"tabs\tand\nnewlines\r\nmixed", 4},
		{"punctuation, counts. with words!", 4},
		{"unicode: héllo wörld 你好", 4},
		{"non\u00a0breaking space", 3}, // U+00A0 is a space for unicode.IsSpace
		{" bado kemi", 2},
	}
	for _, tt := range tests {
		if got := CountTokens(tt.in); got != tt.want {
			t.Errorf("CountTokens(%q) = %d, want %d", tt.in, got, tt.want)
		}
		if got := len(Tokenize(tt.in)); got != tt.want {
			t.Errorf("len(Tokenize(%q)) = %d, want %d", tt.in, got, tt.want)
		}
	}
}

func TestTokenizeRoundTrip(t *testing.T) {
	ids := []int{0, 1, 63, 64, 4095, 17}
	text := Detokenize(ids)
	got := Tokenize(text)
	if len(got) != len(ids) {
		t.Fatalf("Tokenize(Detokenize(%v)) has %d ids", ids, len(got))
	}
	for i := range ids {
		if got[i] != ids[i] {
			t.Fatalf("round trip %v -> %q -> %v", ids, text, got)
		}
	}
	// Out-of-vocabulary ids keep their count, not their text.
	oov := Detokenize([]int{VocabSize + 5, -1})
	if CountTokens(oov) != 2 || !strings.HasPrefix(oov, "tok") {
		t.Fatalf("Detokenize(oov) = %q", oov)
	}
	// Ids are deterministic and words outside the vocabulary land above it.
	a, b := Tokenize("zebra bado zebra"), Tokenize("zebra bado zebra")
	if a[0] != b[0] || a[0] != a[2] || a[0] < VocabSize || a[1] != vocabIndex["bado"] {
		t.Fatalf("ids not deterministic or misplaced: %v %v", a, b)
	}
	if len(vocabIndex) != VocabSize {
		t.Fatalf("vocabulary has duplicates: %d unique of %d", len(vocabIndex), VocabSize)
	}
}

func TestChatTemplateCount(t *testing.T) {
	tests := []struct {
		msgs []chatMessage
		want int
	}{
		{[]chatMessage{{"user", "hi"}}, 1 + 2 + 1},
		{[]chatMessage{{"system", "be brief"}, {"user", "one two three"}}, 2 + 2 + 3 + 2 + 1},
		{[]chatMessage{{"user", ""}}, 0 + 2 + 1},
	}
	for _, tt := range tests {
		if got := chatTokenCount(tt.msgs); got != tt.want {
			t.Errorf("chatTokenCount(%v) = %d, want %d", tt.msgs, got, tt.want)
		}
		if got := len(Tokenize(renderChat(tt.msgs))); got != tt.want {
			t.Errorf("tokens of renderChat(%v) = %d, want %d", tt.msgs, got, tt.want)
		}
	}
}

// TestCostModel checks the step cost formula on hand-built engine states.
func TestCostModel(t *testing.T) {
	base := EngineConfig{
		MaxNumSeqs: 8, KVCacheTokens: 1 << 16, BlockSize: 16, ChunkedPrefill: true,
		MaxBatchedTokens: 100, StepBase: time.Millisecond, PerSeq: 100 * time.Microsecond,
		PerPrefillToken: 10 * time.Microsecond, PerContextToken: 10 * time.Nanosecond,
	}
	tests := []struct {
		name    string
		mod     func(*EngineConfig)
		prompts []int // waiting prompts, admitted this step
		decodes []int // running sequences in decode, with this many computed tokens
		want    time.Duration
	}{
		{name: "one prefill", prompts: []int{40}, want: time.Millisecond + 40*10*time.Microsecond},
		{name: "chunked to budget", prompts: []int{60, 60}, want: time.Millisecond + 100*10*time.Microsecond},
		{name: "unchunked takes whole first prompt", mod: func(c *EngineConfig) { c.ChunkedPrefill = false },
			prompts: []int{150, 10}, want: time.Millisecond + 150*10*time.Microsecond},
		{name: "decodes", decodes: []int{100, 300}, want: time.Millisecond + 2*100*time.Microsecond + 400*10*time.Nanosecond},
		{name: "mixed, decode first", decodes: []int{50}, prompts: []int{200},
			want: time.Millisecond + 100*time.Microsecond + 50*10*time.Nanosecond + 99*10*time.Microsecond},
		{name: "seq limit", mod: func(c *EngineConfig) { c.MaxNumSeqs = 1; c.PerPrefillToken = 0 },
			decodes: []int{10}, prompts: []int{5}, want: time.Millisecond + 100*time.Microsecond + 10*10*time.Nanosecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := base
			if tt.mod != nil {
				tt.mod(&cfg)
			}
			e := newEngine(cfg, 1, 1, newMetrics())
			for _, c := range tt.decodes {
				q := newSeq(c, nil, 1000)
				q.computed, q.generated, q.inRunning = c, 1, true
				q.blocks = e.blocksFor(c)
				e.free -= q.blocks
				e.running = append(e.running, q)
			}
			for _, p := range tt.prompts {
				q := newSeq(p, nil, 10)
				q.inWaiting = true
				e.waiting = append(e.waiting, q)
			}
			if got := e.schedule(); got != tt.want {
				t.Fatalf("cost = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestJitterDeterministic(t *testing.T) {
	cfg := DefaultEngine()
	cfg.Jitter = 0.2
	costs := func(seed int64) []time.Duration {
		e := newEngine(cfg, 1, seed, newMetrics())
		var out []time.Duration
		for range 5 {
			q := newSeq(10, nil, 1)
			e.waiting = append(e.waiting, q)
			q.inWaiting = true
			out = append(out, e.schedule())
			e.running, e.free = nil, e.total
		}
		return out
	}
	a, b, c := costs(7), costs(7), costs(8)
	same, differ := true, false
	for i := range a {
		same = same && a[i] == b[i]
		differ = differ || a[i] != c[i]
	}
	if !same || !differ {
		t.Fatalf("jitter: seed 7 twice %v %v, seed 8 %v", a, b, c)
	}
}

func TestPrefixCacheLRU(t *testing.T) {
	ids := make([]int, 64)
	for i := range ids {
		ids[i] = i
	}
	h := blockHashes(ids, 16)
	if len(h) != 4 {
		t.Fatalf("blocks = %d", len(h))
	}
	other := append([]int{999}, ids[1:]...)
	if blockHashes(other, 16)[3] == h[3] {
		t.Fatal("a different first token must change every later block hash")
	}
	p := newPrefixCache(4)
	p.insert(h[:2])
	if n := p.lookup(h); n != 2 {
		t.Fatalf("lookup = %d, want 2", n)
	}
	p.insert(blockHashes(other, 16)) // 4 new blocks evict the old ones
	if n := p.lookup(h); n != 0 {
		t.Fatalf("after eviction lookup = %d, want 0", n)
	}
}

func TestConfigValidate(t *testing.T) {
	if err := DefaultConfig().Validate(); err != nil {
		t.Fatalf("default config: %v", err)
	}
	for _, p := range Presets() {
		cfg := DefaultConfig()
		if err := ApplyPreset(&cfg, p.Name); err != nil {
			t.Fatal(err)
		}
		if err := cfg.Validate(); err != nil {
			t.Errorf("preset %s: %v", p.Name, err)
		}
	}
	bad := []func(*Config){
		func(c *Config) { c.Models = nil },
		func(c *Config) { c.Mode = "turbo" },
		func(c *Config) { c.TokensPerChunk = 0 },
		func(c *Config) { c.Mode = ModeEngine; c.Engine.KVCacheTokens = 100 },
		func(c *Config) { c.Faults.ErrorRate = 2 },
		func(c *Config) { c.Faults.ErrorCodes = []int{200} },
		func(c *Config) { c.Metrics = "statsd" },
	}
	for i, f := range bad {
		cfg := DefaultConfig()
		f(&cfg)
		if cfg.Validate() == nil {
			t.Errorf("bad config %d accepted", i)
		}
	}
	cfg := DefaultConfig()
	if err := ApplyPreset(&cfg, "nope"); err == nil {
		t.Error("unknown preset accepted")
	}
}
