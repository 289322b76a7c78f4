package loadgen

import (
	"bytes"
	"math/rand/v2"
	"testing"
	"unicode/utf8"
)

// TestFastBodyMatchesMarshal: the hand-written body is byte for byte
// what json.Marshal of the map gives, for every endpoint shape it takes,
// with extra fields of every kind overriding and interleaving, and
// prompts full of what JSON must escape.
func TestFastBodyMatchesMarshal(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	pieces := []string{"a", " ", "<", ">", "&", `"`, `\`, "\n", "\r", "\t", "\b", "\f", "\x00", "\x1f", "\x7f", "é", "日本",
		"\u2028", "\u2029", "\xff", "\xe2\x82", "😀", "\ufffd", "</script>", "U+2028"}
	prompt := func() string {
		var b []byte
		for range rng.IntN(12) {
			b = append(b, pieces[rng.IntN(len(pieces))]...)
		}
		return string(b)
	}
	extras := []map[string]any{
		nil,
		{"ignore_eos": true, "min_tokens": 128},
		{"temperature": 0.7, "top_p": 1.0, "seed": int64(42), "stop": []string{"\n", "<|end|>"}, "logit_bias": map[string]any{"50256": -100}},
		{"stream": true, "model": "override", "max_tokens": 3.0, "x": nil, "aaa": "first", "zzz": map[string]int{"b": 1, "a": 2}},
		{"tiny": 1e-7, "huge": 1e21, "neg": -2.5, "u": uint8(7)},
	}
	n := 0
	for _, ep := range []Endpoint{Completions, Chat, ""} {
		for _, stream := range []bool{false, true} {
			for _, cont := range []bool{false, true} {
				for _, extra := range extras {
					for _, body := range extras {
						for range 8 {
							tg := &Target{Model: prompt() + "m", Endpoint: ep, Stream: stream, ContinuousUsage: cont, ExtraBody: extra}
							req := Request{Prompt: prompt(), MaxTokens: rng.IntN(3) * 64, Body: body}
							fast, ok := tg.fastBody(req)
							if !ok {
								t.Fatalf("fastBody refused %+v %+v", tg, req)
							}
							mapBodyOnly = true
							want, _, err := tg.body(req)
							mapBodyOnly = false
							if err != nil {
								t.Fatal(err)
							}
							if !bytes.Equal(fast, want) {
								t.Fatalf("fast body differs:\n got %s\nwant %s", fast, want)
							}
							n++
						}
					}
				}
			}
		}
	}
	// Every single byte and rune class, one at a time.
	for r := rune(0); r < 0x3000; r++ {
		s := string(r)
		if !utf8.ValidString(s) {
			continue
		}
		tg := &Target{Model: "m"}
		req := Request{Prompt: "x" + s + "y"}
		fast, _ := tg.fastBody(req)
		mapBodyOnly = true
		want, _, _ := tg.body(req)
		mapBodyOnly = false
		if !bytes.Equal(fast, want) {
			t.Fatalf("rune %U: got %s want %s", r, fast, want)
		}
	}
	// Shapes it leaves to the general path.
	for _, tg := range []*Target{{Endpoint: Embeddings}, {Endpoint: Transcriptions}} {
		if _, ok := tg.fastBody(Request{Prompt: "x"}); ok {
			t.Errorf("%s: fastBody took it", tg.Endpoint)
		}
	}
	if _, ok := (&Target{Endpoint: Chat}).fastBody(Request{Prompt: "x", Images: []string{"data:image/png;base64,AA=="}}); ok {
		t.Error("images: fastBody took it")
	}
	if _, ok := (&Target{Endpoint: Chat}).fastBody(Request{Messages: []Message{{Role: "user", Content: "x"}}}); ok {
		t.Error("messages: fastBody took it")
	}
	if _, ok := (&Target{}).fastBody(Request{Body: map[string]any{"bad": make(chan int)}}); ok {
		t.Error("an unencodable value: fastBody took it")
	}
	t.Logf("%d bodies compared", n)
}

func BenchmarkRequestBody(b *testing.B) {
	tg := &Target{Model: "sim-llama", Stream: true, ExtraBody: map[string]any{}}
	req := Request{Prompt: "one two three four five six seven eight", MaxTokens: 128, Body: map[string]any{"ignore_eos": true, "min_tokens": 128}}
	for _, fast := range []bool{false, true} {
		b.Run(map[bool]string{true: "fast", false: "map"}[fast], func(b *testing.B) {
			mapBodyOnly = !fast
			defer func() { mapBodyOnly = false }()
			b.ReportAllocs()
			for b.Loop() {
				if _, _, err := tg.body(req); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
