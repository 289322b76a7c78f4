package loadgen

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/benchrun/benchrun/internal/sim"
)

func TestCalibrateAgainstSimulator(t *testing.T) {
	_, url := startSim(t, nil)
	for _, tc := range []struct {
		method, want string
		ep           Endpoint
	}{
		{CalibrateAuto, "tokenize(prompt)+probe", Completions},
		{CalibrateTokenize, "tokenize(prompt)", Completions},
		{CalibrateProbe, CalibrateProbe, Completions},
		{CalibrateProbe, CalibrateProbe, Chat},
		{CalibrateTokenize, "tokenize(prompt)", Chat},
		{CalibrateAuto, "tokenize(prompt)+probe", Chat},
	} {
		t.Run(tc.method+"/"+string(tc.ep), func(t *testing.T) {
			tg := newTarget(url, 4)
			tg.Endpoint = tc.ep
			v, err := Calibrate(context.Background(), tg, tc.method, ServerInfo{})
			if err != nil {
				t.Fatal(err)
			}
			if v.Method != tc.want || len(v.Words) < calibrationWantWords {
				t.Fatalf("method %s with %d words", v.Method, len(v.Words))
			}
			if v.Requests > 50 {
				t.Fatalf("calibration cost %d requests, want tens", v.Requests)
			}
			// Every prompt is exactly isl tokens as the server counts them.
			src := &PromptSource{ISL: 100, SharedPrefix: 20, Seed: 3, CellKey: 9, Vocab: v}
			src.Prepare()
			for i := 0; i < 3; i++ {
				r := tg.Do(context.Background(), Request{Prompt: src.Prompt(0, i), MaxTokens: 1})
				if r.Err != nil {
					t.Fatal(r.Err)
				}
				if r.InputTokens != 100 {
					t.Errorf("prompt %d is %d tokens as served, want 100 (overhead %d)", i, r.InputTokens, v.Overhead)
				}
			}
		})
	}
	t.Run("a server without /tokenize or usage", func(t *testing.T) {
		tg := newTarget(fakeServer(t, "data: [DONE]\n\n"), 1)
		if _, err := Calibrate(context.Background(), tg, CalibrateAuto, ServerInfo{}); err == nil || !strings.Contains(err.Error(), "probe") {
			t.Fatalf("err = %v, want a probe failure", err)
		}
		v, err := Calibrate(context.Background(), tg, CalibrateOff, ServerInfo{})
		if err != nil || v.Method != "assumed" {
			t.Fatalf("off: %v %v", v, err)
		}
	})
}

func TestPromptSourceDeterminism(t *testing.T) {
	mk := func(warm bool) *PromptSource {
		p := &PromptSource{ISL: 50, SharedPrefix: 10, Warm: warm, WarmSet: 4, Seed: 1, CellKey: 7}
		p.Prepare()
		return p
	}
	a, b := mk(false), mk(false)
	seen := map[string]bool{}
	for pass := 0; pass < 2; pass++ {
		for i := 0; i < 8; i++ {
			pa := a.Prompt(pass, i)
			if pa != b.Prompt(pass, i) {
				t.Fatal("the same seed gave other prompts")
			}
			if seen[pa] {
				t.Fatalf("cold mode repeated a prompt (pass %d, request %d)", pass, i)
			}
			seen[pa] = true
			if n := len(strings.Fields(pa)); n != 50 {
				t.Fatalf("prompt has %d words, want 50", n)
			}
			if !strings.HasPrefix(pa, strings.Join(strings.Fields(a.Prompt(0, 0))[:10], " ")) {
				t.Fatal("the shared prefix differs between prompts")
			}
		}
	}
	w := mk(true)
	if w.Prompt(0, 1) != w.Prompt(3, 5) || w.Prompt(0, 1) == w.Prompt(0, 2) {
		t.Fatal("warm mode must reuse a fixed set, indexed modulo its size")
	}
	other := &PromptSource{ISL: 50, Seed: 2, CellKey: 7}
	if other.Prompt(0, 0) == a.Prompt(0, 0) {
		t.Fatal("another seed gave the same prompt")
	}
}

func TestLoadDataset(t *testing.T) {
	for _, tc := range []struct {
		spec DatasetSpec
		want []string
	}{
		{DatasetSpec{Path: "testdata/sharegpt.json"}, []string{"What is a KV cache?", "Explain paged attention.", "Why does batching raise throughput?"}},
		{DatasetSpec{Path: "testdata/prompts.jsonl"}, []string{"first prompt", "second prompt", "third prompt"}},
		{DatasetSpec{Path: "testdata/docs"}, []string{"The first document talks about GPUs.", "The second document talks about tokens.", "A text file."}},
		{DatasetSpec{Path: "testdata/docs/*.md"}, []string{"The first document talks about GPUs.", "The second document talks about tokens."}},
	} {
		got, err := LoadDataset(tc.spec)
		if err != nil {
			t.Fatalf("%s: %v", tc.spec.Path, err)
		}
		if strings.Join(got, "|") != strings.Join(tc.want, "|") {
			t.Errorf("%s: got %q, want %q", tc.spec.Path, got, tc.want)
		}
	}
	s1, _ := LoadDataset(DatasetSpec{Path: "testdata/prompts.jsonl", Limit: 2, Seed: 5})
	s2, _ := LoadDataset(DatasetSpec{Path: "testdata/prompts.jsonl", Limit: 2, Seed: 5})
	if len(s1) != 2 || strings.Join(s1, "|") != strings.Join(s2, "|") {
		t.Errorf("sampling with a seed: %q vs %q", s1, s2)
	}
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.jsonl")
	os.WriteFile(bad, []byte("{\"prompt\":\"ok\"}\n{\"other\":1}\n"), 0o644)
	for _, tc := range []struct {
		spec DatasetSpec
		want string
	}{
		{DatasetSpec{Path: bad}, "bad.jsonl:2: no field \"prompt\""},
		{DatasetSpec{Path: bad, Field: "other"}, "bad.jsonl:1: no field \"other\""},
		{DatasetSpec{Path: filepath.Join(dir, "none", "*.md")}, "no such file"},
		{DatasetSpec{Path: "testdata/prompts.jsonl", Format: "csv"}, "want sharegpt, jsonl, text, conversations or hf"},
		{DatasetSpec{Path: "testdata/prompts.jsonl", Format: FormatShareGPT}, "not a ShareGPT JSON array"},
	} {
		if _, err := LoadDataset(tc.spec); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: err = %v, want %q", tc.spec, err, tc.want)
		}
	}
}

func TestLoadConversations(t *testing.T) {
	convs, err := LoadConversations(DatasetSpec{Path: "testdata/conversations.jsonl"})
	if err != nil {
		t.Fatal(err)
	}
	var lens []int
	for _, c := range convs {
		lens = append(lens, len(c))
	}
	// Human turns only: the system message and the answers are not sent.
	if fmt.Sprint(lens) != "[3 2 4 2 1 3]" || convs[3][0] != "Translate 'good morning' to French." || convs[0][1] != "Why does it help a chat?" {
		t.Fatalf("conversations %v: %q", lens, convs)
	}
	dir := t.TempDir()
	for name, tc := range map[string]struct{ body, want string }{
		"openai.jsonl": {`{"messages":[{"role":"user","content":"a"},{"role":"assistant","content":"b"},{"role":"user","content":"c"}]}`, "[[a c]]"},
		"array.json":   {`[{"conversations":[{"from":"human","value":"x"}]},{"conversations":[{"from":"gpt","value":"only an answer"}]}]`, "[[x]]"},
	} {
		p := filepath.Join(dir, name)
		os.WriteFile(p, []byte(tc.body), 0o644)
		got, err := LoadConversations(DatasetSpec{Path: p})
		if err != nil || fmt.Sprint(got) != tc.want {
			t.Errorf("%s: %q, %v; want %s", name, got, err, tc.want)
		}
	}
	bad := filepath.Join(dir, "bad.jsonl")
	os.WriteFile(bad, []byte(`{"conversations":[{"from":"human","value":"x"}]}`+"\n"+`{"prompt":"y"}`+"\n"), 0o644)
	if _, err := LoadConversations(DatasetSpec{Path: bad}); err == nil || !strings.Contains(err.Error(), `bad.jsonl:2: no "conversations" or "messages" list`) {
		t.Errorf("bad line: %v", err)
	}
}

// TestPromptSourceTurns: a session's turns are distinct texts of isl
// tokens (the shared prefix opens the first only), the same for the same
// pass, session and turn; a conversations dataset gives a session its
// conversation's human turns in order.
func TestPromptSourceTurns(t *testing.T) {
	src := &PromptSource{ISL: 20, SharedPrefix: 8, Seed: 1, CellKey: 3, PointKey: 5, Turns: 3}
	src.Prepare()
	seen := map[string]bool{}
	for s := range 4 {
		for k := 1; k <= 3; k++ {
			u := src.Turn(0, s, k)
			if seen[u] || len(strings.Fields(u)) != 20 || u != src.Turn(0, s, k) {
				t.Fatalf("session %d turn %d: %q", s, k, u)
			}
			seen[u] = true
			if opens := strings.HasPrefix(u, strings.Join(strings.Fields(src.Turn(0, 0, 1))[:8], " ")); opens != (k == 1) {
				t.Fatalf("session %d turn %d: shared prefix %v", s, k, opens)
			}
		}
		if src.TurnsOf(0, s) != 3 {
			t.Fatal("turns")
		}
	}
	if src.Turn(1, 0, 1) == src.Turn(0, 0, 1) {
		t.Fatal("cold: a later pass repeated a conversation")
	}
	convs, _ := LoadConversations(DatasetSpec{Path: "testdata/conversations.jsonl"})
	ds := &PromptSource{Conversations: convs, Turns: 2, Seed: 1, CellKey: 3, PointKey: 5}
	ds.Prepare()
	for s := range 12 {
		n := ds.TurnsOf(0, s)
		c := ds.conversation(0, s)
		if n != min(len(c), 2) || ds.Turn(0, s, 1) != c[0] || n == 2 && ds.Turn(0, s, 2) != c[1] {
			t.Fatalf("session %d: %d turns of %q", s, n, c)
		}
	}
}

// TestPromptSourceShards: the shards of a sharded run draw cold prompts
// of their own (the same "cold" prompt sent by two shards is warm for the
// second), shard 0 draws what an unsharded run draws, and warm prompts,
// the shared prefix and dataset-less turns follow the same rule.
func TestPromptSourceShards(t *testing.T) {
	base := PromptSource{ISL: 32, SharedPrefix: 8, Seed: 7, CellKey: 32<<32 | 16, PointKey: PointKey("s", 8, 0)}
	for _, tc := range []struct {
		name string
		mod  func(*PromptSource)
	}{
		{"synthetic", func(*PromptSource) {}},
		{"dataset", func(p *PromptSource) {
			for i := range 500 {
				p.Dataset = append(p.Dataset, fmt.Sprintf("document %d", i))
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := func(shard int) *PromptSource {
				p := base
				p.Shard = shard
				tc.mod(&p)
				p.Prepare()
				return &p
			}
			unsharded, s0, s1 := src(0), src(0), src(1)
			seen := map[string]bool{}
			same := 0
			for i := range 40 {
				if a, b := unsharded.Prompt(0, i), s0.Prompt(0, i); a != b {
					t.Fatalf("shard 0 prompt %d differs from the unsharded run's", i)
				}
				seen[s0.Prompt(0, i)] = true
			}
			for i := range 40 {
				if seen[s1.Prompt(0, i)] {
					same++
				}
			}
			// Synthetic prompts never repeat; 40 of 500 documents drawn
			// twice meet by chance about 3 times.
			limit := 0
			if tc.name == "dataset" {
				limit = 10
			}
			if same > limit {
				t.Errorf("shard 1 sent %d of shard 0's 40 cold prompts", same)
			}
		})
	}
	w0, w1 := base, base
	w0.Warm, w1.Warm, w1.Shard = true, true, 1
	if w0.Prompt(1, 3) != w1.Prompt(1, 3) {
		t.Error("warm prompts differ between shards: a warm cell measures the cache every shard shares")
	}
	p1 := base
	p1.Shard = 1
	if !strings.HasPrefix(p1.Prompt(0, 0), base.Prompt(0, 0)[:20]) {
		t.Error("the shared prefix differs between shards")
	}
}

// TestCalibrationProbeIsBounded: a server that answers the max_tokens=1
// probe 200 and then trickles a byte every 50 ms (so no stall timer fires)
// costs calibration the stall timeout, not forever, and the error names
// the probe; with auto, the tokenizer gives the overhead instead and the
// note says why.
func TestCalibrationProbeIsBounded(t *testing.T) {
	_, url := startSim(t, nil)
	for _, tc := range []struct{ method, want string }{
		{CalibrateProbe, ""},
		{CalibrateAuto, "tokenize(prompt)"},
	} {
		t.Run(tc.method, func(t *testing.T) {
			tg := newTarget(url, 2)
			tg.StallTimeout = 300 * time.Millisecond
			tg.Headers = map[string]string{sim.FaultHeader: "trickle=50ms"}
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			start := time.Now()
			v, err := Calibrate(ctx, tg, tc.method, ServerInfo{})
			took := time.Since(start)
			if ctx.Err() != nil {
				t.Fatalf("calibration hung until the test's deadline (%v)", took)
			}
			if tc.want == "" {
				if err == nil || !strings.Contains(err.Error(), "max_tokens=1 probe") || strings.Contains(err.Error(), "/tokenize") {
					t.Fatalf("err = %v; want the probe's own error", err)
				}
				var te *TimeoutError
				if !errors.As(err, &te) {
					t.Errorf("err = %v; want a TimeoutError in it", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if v.Method != tc.want || !strings.Contains(v.Fallback, "max_tokens=1 probe") {
				t.Fatalf("method %q, fallback %q", v.Method, v.Fallback)
			}
		})
	}
}

// Inputs that are no such file are refused before any is read: a device
// that never ends (/dev/zero: 2 GB in 2 s), a FIFO nobody writes (it would
// block forever), and a model file a glob caught (the repository's real
// GGUF), each named; a trace too.
func TestInputsThatAreNoFile(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "prompts.jsonl")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	models, _ := filepath.Abs("../../testdata/models")
	for _, tc := range []struct {
		spec DatasetSpec
		want string
	}{
		{DatasetSpec{Path: "/dev/zero", Format: FormatText}, "/dev/zero is not a regular file"},
		{DatasetSpec{Path: fifo}, "is not a regular file"},
		{DatasetSpec{Path: filepath.Join(models, "*"), Format: FormatText}, "is a GGUF model file, not a dataset"},
		{DatasetSpec{Path: filepath.Join(models, "stories260K.gguf"), Format: FormatShareGPT}, "is a GGUF model file"},
	} {
		done := make(chan error, 1)
		go func() { _, err := LoadDataset(tc.spec); done <- err }()
		select {
		case err := <-done:
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("%s: err = %v, want %q", tc.spec.Path, err, tc.want)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("%s: still reading after 10 s", tc.spec.Path)
		}
	}
	if _, err := LoadTrace(TraceSpec{Path: "/dev/zero"}); err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Errorf("a trace from /dev/zero: %v", err)
	}
}
