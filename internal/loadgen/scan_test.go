package loadgen

import (
	"encoding/json"
	"testing"
)

// refScan is the reference semantics of scanChunk: decode into generic
// values with encoding/json and look keys up exactly.
func refScan(data []byte) (chunkInfo, bool) {
	var top any
	if err := json.Unmarshal(data, &top); err != nil {
		return chunkInfo{}, false
	}
	obj, ok := top.(map[string]any)
	if !ok {
		return chunkInfo{}, false
	}
	var info chunkInfo
	if id, ok := obj["id"].(string); ok {
		info.ID = []byte(id)
	}
	if e, ok := obj["error"]; ok && e != nil {
		info.HasError = true
	}
	if u, ok := obj["usage"].(map[string]any); ok {
		info.HasUsage = true
		num := func(k string) int {
			if f, ok := u[k].(float64); ok && f <= 1<<53 && f >= -(1<<53) {
				return int(f)
			}
			return 0
		}
		info.PromptTokens, info.CompletionTokens = num("prompt_tokens"), num("completion_tokens")
		if d, ok := u["prompt_tokens_details"].(map[string]any); ok {
			if f, ok := d["cached_tokens"].(float64); ok {
				info.HasCached = true
				if f <= 1<<53 && f >= -(1<<53) {
					info.CachedTokens = int(f)
				}
			}
		}
		if d, ok := u["completion_tokens_details"].(map[string]any); ok {
			if f, ok := d["reasoning_tokens"].(float64); ok {
				info.HasReasoningTokens = true
				if f <= 1<<53 && f >= -(1<<53) {
					info.ReasoningTokens = int(f)
				}
			}
		}
	}
	nonEmptyList := func(m map[string]any, k string) bool {
		l, ok := m[k].([]any)
		return ok && len(l) > 0
	}
	nonEmpty := func(m map[string]any, k string) bool {
		s, ok := m[k].(string)
		return ok && s != ""
	}
	if chs, ok := obj["choices"].([]any); ok {
		for _, c := range chs {
			ch, ok := c.(map[string]any)
			if !ok {
				continue
			}
			if nonEmpty(ch, "text") {
				info.HasAnswer = true
			}
			// The answer text: the first choice's text, delta.content or
			// message.content that is not empty.
			var text string
			if d, ok := ch["delta"].(map[string]any); ok && nonEmpty(d, "content") {
				text = d["content"].(string)
			}
			if m, ok := ch["message"].(map[string]any); ok && nonEmpty(m, "content") && text == "" {
				text = m["content"].(string)
			}
			if nonEmpty(ch, "text") {
				text = ch["text"].(string)
			}
			if info.Text == nil && text != "" {
				info.Text = []byte(text)
			}
			if nonEmpty(ch, "finish_reason") {
				info.HasFinish = true
			}
			if d, ok := ch["delta"].(map[string]any); ok {
				info.HasAnswer = info.HasAnswer || nonEmpty(d, "content") || nonEmptyList(d, "tool_calls")
				info.HasToolCall = info.HasToolCall || nonEmptyList(d, "tool_calls")
				info.HasReasoning = info.HasReasoning || nonEmpty(d, "reasoning_content") || nonEmpty(d, "reasoning")
			}
			if m, ok := ch["message"].(map[string]any); ok {
				info.HasAnswer = info.HasAnswer || nonEmpty(m, "content") || nonEmptyList(m, "tool_calls")
				info.HasToolCall = info.HasToolCall || nonEmptyList(m, "tool_calls")
				info.HasReasoning = info.HasReasoning || nonEmpty(m, "reasoning_content") || nonEmpty(m, "reasoning")
			}
		}
	}
	info.HasText = info.HasAnswer || info.HasReasoning
	return info, true
}

func sameInfo(t *testing.T, data []byte, got, want chunkInfo) {
	t.Helper()
	id := string(got.ID)
	if got.IDEscaped {
		var err error
		id, err = unquoteJSON(got.ID)
		if err != nil {
			t.Fatalf("%q: id %q does not unquote: %v", data, got.ID, err)
		}
	}
	text := string(got.Text)
	if got.TextEscaped {
		var err error
		text, err = unquoteJSON(got.Text)
		if err != nil {
			t.Fatalf("%q: text %q does not unquote: %v", data, got.Text, err)
		}
	}
	if id != string(want.ID) || got.HasText != want.HasText || got.HasUsage != want.HasUsage ||
		got.PromptTokens != want.PromptTokens || got.CompletionTokens != want.CompletionTokens || got.HasError != want.HasError || got.HasFinish != want.HasFinish ||
		got.HasCached != want.HasCached || got.CachedTokens != want.CachedTokens ||
		got.HasReasoning != want.HasReasoning || got.HasAnswer != want.HasAnswer || got.HasToolCall != want.HasToolCall ||
		got.HasReasoningTokens != want.HasReasoningTokens || got.ReasoningTokens != want.ReasoningTokens || text != string(want.Text) || (got.Text == nil) != (want.Text == nil) {
		t.Fatalf("%q:\n got  %+v (id %q, text %q)\n want %+v (id %q, text %q)", data, got, id, text, want, want.ID, want.Text)
	}
}

var scanCases = []struct {
	name string
	data string
	text bool
}{
	{"completion text", `{"id":"cmpl-1","choices":[{"index":0,"text":" hello","finish_reason":null}]}`, true},
	{"empty text", `{"id":"cmpl-1","choices":[{"index":0,"text":""}]}`, false},
	{"chat content", `{"id":"c","choices":[{"delta":{"content":"hi"}}]}`, true},
	{"role only", `{"id":"c","choices":[{"index":0,"delta":{"role":"assistant"},"logprobs":null,"finish_reason":null}]}`, false},
	{"role with empty content", `{"choices":[{"delta":{"role":"assistant","content":""}}]}`, false},
	{"null content", `{"choices":[{"delta":{"content":null}}]}`, false},
	{"reasoning_content", `{"choices":[{"delta":{"reasoning_content":"think"}}]}`, true},
	{"reasoning", `{"choices":[{"delta":{"content":null,"reasoning":"hmm"}}]}`, true},
	{"message content (non-streamed)", `{"choices":[{"message":{"role":"assistant","content":"x"}}]}`, true},
	{"usage only", `{"id":"c","choices":[],"usage":{"prompt_tokens":12,"total_tokens":20,"completion_tokens":8}}`, false},
	{"zero usage each chunk", `{"choices":[{"text":"a"}],"usage":{"prompt_tokens":0,"completion_tokens":0}}`, true},
	{"null usage", `{"choices":[{"text":"a"}],"usage":null}`, true},
	{"usage floats", `{"usage":{"prompt_tokens":1.5e1,"completion_tokens":-0}}`, false},
	{"error object", `{"error":{"message":"boom","type":"x"}}`, false},
	{"error null", `{"error":null,"choices":[{"text":"a"}]}`, true},
	{"escaped key", `{"choices":[{"t\u0065xt":"a"}]}`, true},
	{"escaped id", `{"id":"a\"b\u00e9","choices":[]}`, false},
	{"duplicate text, last empty", `{"choices":[{"text":"a","text":""}]}`, false},
	{"duplicate choices", `{"choices":[{"text":"a"}],"choices":[]}`, false},
	{"nested noise", `{"x":[1,2,{"y":[true,false,null,"s\n"]}],"choices":[{"logprobs":{"content":[{"token":"a"}]},"text":"b"}]}`, true},
	{"unicode text", `{"choices":[{"text":"\ud83d\ude00"}]}`, true},
	{"whitespace", " {\n\"choices\" : [ { \"text\" : \"a\" } ] } \n", true},
	{"cached tokens", `{"choices":[],"usage":{"prompt_tokens":80,"completion_tokens":16,"prompt_tokens_details":{"cached_tokens":32}}}`, false},
	{"cached tokens zero", `{"usage":{"prompt_tokens":8,"prompt_tokens_details":{"cached_tokens":0}}}`, false},
	{"cached tokens null", `{"usage":{"prompt_tokens":8,"prompt_tokens_details":{"cached_tokens":null}}}`, false},
	{"details null", `{"usage":{"prompt_tokens":8,"prompt_tokens_details":null}}`, false},
	{"details before counts", `{"usage":{"prompt_tokens_details":{"audio_tokens":0,"cached_tokens":7},"prompt_tokens":8}}`, false},
	{"duplicate details, last empty", `{"usage":{"prompt_tokens_details":{"cached_tokens":7},"prompt_tokens_details":{}}}`, false},
	{"second choice text", `{"choices":[{"text":""},{"text":"b"}]}`, true},
	{"escaped text", `{"choices":[{"delta":{"content":" a\"b\u00e9\n"}}]}`, true},
	{"text wins over delta", `{"choices":[{"delta":{"content":"d"},"text":"t"}]}`, true},
	{"message text", `{"choices":[{"message":{"content":"m"},"delta":{"content":""}}]}`, true},
	{"reasoning is no text", `{"choices":[{"delta":{"reasoning_content":"r"}}]}`, true},
	{"tool call", `{"choices":[{"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{"}}]}}]}`, true},
	{"empty tool calls", `{"choices":[{"delta":{"content":null,"tool_calls":[ ]}}]}`, false},
	{"message reasoning", `{"choices":[{"message":{"content":"","reasoning":"hmm"}}]}`, true},
	{"message reasoning_content", `{"choices":[{"message":{"content":null,"reasoning_content":"hmm"}}],"usage":{"prompt_tokens":3,"completion_tokens":1}}`, true},
	{"reasoning tokens", `{"choices":[],"usage":{"prompt_tokens":3,"completion_tokens":9,"completion_tokens_details":{"reasoning_tokens":7}}}`, false},
	{"reasoning tokens null", `{"choices":[],"usage":{"completion_tokens":9,"completion_tokens_details":{"reasoning_tokens":null}}}`, false},
}

func TestScanChunkMatchesReference(t *testing.T) {
	for _, tc := range scanCases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := scanChunk([]byte(tc.data))
			if err != nil {
				t.Fatalf("scan: %v", err)
			}
			want, ok := refScan([]byte(tc.data))
			if !ok {
				t.Fatal("reference rejects the case")
			}
			sameInfo(t, []byte(tc.data), got, want)
			if got.HasText != tc.text {
				t.Fatalf("HasText = %v, want %v", got.HasText, tc.text)
			}
		})
	}
}

func TestScanChunkRejectsMalformed(t *testing.T) {
	for _, bad := range []string{
		``, `{`, `{"choices":[{"text":"a"}]`, `{"text":"a"`, `{"a":1,}`, `{"a":tru}`, `{"a":01}`, `{"a":"\x"}`,
		`{"a":"` + "\x01" + `"}`, `[]`, `"s"`, `{"a":1} x`, `{"index":0,"text":"`, `{"a":-}`, `{"a":1.}`, `{"a":1e}`,
	} {
		if _, err := scanChunk([]byte(bad)); err == nil {
			t.Errorf("%q: accepted", bad)
		}
		if json.Valid([]byte(bad)) && bad != `[]` && bad != `"s"` {
			t.Errorf("%q: test case is valid JSON", bad)
		}
	}
}

func TestScanChunkAllocatesNothing(t *testing.T) {
	data := []byte(`{"id":"cmpl-42","object":"text_completion","created":1,"model":"m","choices":[{"index":0,"text":" bado","logprobs":null,"finish_reason":null,"stop_reason":null}],"usage":{"prompt_tokens":12,"completion_tokens":3}}`)
	allocs := testing.AllocsPerRun(1000, func() {
		if _, err := scanChunk(data); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Fatalf("scanChunk allocates %.1f times per event, want 0", allocs)
	}
}

// FuzzScanChunk holds the scanner to encoding/json's answer on valid JSON
// objects and to "an error, never a panic" on anything else.
func FuzzScanChunk(f *testing.F) {
	for _, tc := range scanCases {
		f.Add([]byte(tc.data))
	}
	f.Add([]byte(`{"choices":[{"delta":{"content":"a","content":""}}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		got, err := scanChunk(data)
		want, ok := refScan(data)
		if !ok {
			if err == nil && json.Valid(data) {
				t.Fatalf("%q: scanner accepts a non-object", data)
			}
			if err == nil && !json.Valid(data) {
				t.Fatalf("%q: scanner accepts invalid JSON", data)
			}
			return
		}
		if err != nil {
			t.Fatalf("%q: scanner rejects valid JSON: %v", data, err)
		}
		sameInfo(t, data, got, want)
	})
}
