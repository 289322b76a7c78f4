package redact

import (
	"bytes"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestStringAndShortSecrets(t *testing.T) {
	Reset()
	t.Cleanup(Reset)
	Add("a")    // too short: would destroy every row
	Add("ACT")  // too short, and inside the mask
	Add("DACT") // inside the mask: masking would never end
	Add("  sk-test-123456\n")
	Add("sk-test-123456-long") // contains the other: replaced whole
	got := String(`{"error":"invalid key Bearer sk-test-123456 and sk-test-123456-long, a DACT"}`)
	if want := `{"error":"invalid key Bearer [REDACTED] and [REDACTED], a DACT"}`; got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
	if String("a cat") != "a cat" {
		t.Error("a one-letter secret was registered")
	}
}

func TestEscapedForms(t *testing.T) {
	Reset()
	t.Cleanup(Reset)
	Add(`p&ss/wo"rd+1`)
	for _, s := range []string{`p&ss/wo"rd+1`, `p\u0026ss/wo\"rd+1`, `p%26ss%2Fwo%22rd%2B1`} {
		if got := String("x " + s + " y"); got != "x [REDACTED] y" {
			t.Errorf("%s → %s", s, got)
		}
	}
}

func TestHeaders(t *testing.T) {
	Reset()
	t.Cleanup(Reset)
	t.Setenv("RTOKEN", "tok-abcdef")
	Headers(map[string]string{"Authorization": "Bearer ${RTOKEN}", "X-Plain": "literal-value"},
		map[string]string{"Authorization": "Bearer tok-abcdef", "X-Plain": "literal-value"})
	if got := String("Bearer tok-abcdef / tok-abcdef / literal-value"); got != "[REDACTED] / [REDACTED] / literal-value" {
		t.Error(got)
	}
}

func TestURLs(t *testing.T) {
	Reset()
	t.Cleanup(Reset)
	s := `target: "http://bench:hunter2%21x@10.0.0.1:8000/v1" and https://host/x and http://user@h`
	URLSecrets(s)
	if got, want := URLs(s), `target: "http://bench:xxxxx@10.0.0.1:8000/v1" and https://host/x and http://user@h`; got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
	if got := String("dial hunter2!x failed"); got != "dial [REDACTED] failed" {
		t.Error(got)
	}
}

func TestWriterSplitSecret(t *testing.T) {
	Reset()
	t.Cleanup(Reset)
	Add("sk-test-123456")
	var buf bytes.Buffer
	w := NewWriter(&buf)
	for _, part := range []string{"line one sk-te", "st-12", "3456 end\nsk", "-not-it\nlast s"} {
		if n, err := w.Write([]byte(part)); err != nil || n != len(part) {
			t.Fatalf("Write = %d, %v", n, err)
		}
	}
	if strings.Contains(buf.String(), "last s") {
		t.Errorf("a possible secret start was written before it was known: %q", buf.String())
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	if got, want := buf.String(), "line one [REDACTED] end\nsk-not-it\nlast s"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

type inner struct {
	Note string
	N    []float64
}

type row struct {
	Reason   string
	Count    int
	Metadata map[string]string
	Tags     []string
	Ptr      *inner
	Val      *float64
	Any      any
	At       time.Time
	private  string
}

func TestValueCopiesWhatChanges(t *testing.T) {
	Reset()
	t.Cleanup(Reset)
	x := 1.5
	meta := map[string]string{"k": "v sk-secret-1", "sk-secret-1": "key"}
	tags := []string{"a", "sk-secret-1"}
	in := row{Reason: "401 sk-secret-1", Count: 3, Metadata: meta, Tags: tags, Ptr: &inner{Note: "sk-secret-1"}, Val: &x, Any: "x sk-secret-1", At: time.Unix(5, 0), private: "sk-secret-1"}
	if got := Value(in); got.Reason != in.Reason {
		t.Fatal("redacted with no secret registered")
	}
	Add("sk-secret-1")
	got := Value(in)
	if got.Reason != "401 [REDACTED]" || got.Metadata["k"] != "v [REDACTED]" || got.Metadata["[REDACTED]"] != "key" ||
		got.Tags[1] != "[REDACTED]" || got.Ptr.Note != "[REDACTED]" || got.Any != "x [REDACTED]" {
		t.Errorf("not redacted: %+v %+v", got, got.Ptr)
	}
	if got.Count != 3 || got.Val != &x || !got.At.Equal(in.At) || got.private != "sk-secret-1" {
		t.Errorf("unchanged fields changed: %+v", got)
	}
	if meta["k"] != "v sk-secret-1" || tags[1] != "sk-secret-1" || in.Ptr.Note != "sk-secret-1" {
		t.Error("the input's shared map, slice or pointee was modified")
	}
	rows := []row{{Reason: "ok"}, {Reason: "sk-secret-1"}}
	out := Value(rows)
	if out[1].Reason != "[REDACTED]" || rows[1].Reason != "sk-secret-1" || out[0].Reason != "ok" {
		t.Errorf("slice: %+v (input %+v)", out, rows)
	}
}

func TestConcurrentUse(t *testing.T) {
	Reset()
	t.Cleanup(Reset)
	var wg sync.WaitGroup
	var buf bytes.Buffer
	w := NewWriter(&buf)
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			Add(strings.Repeat("z", 4+i))
			_ = String("zzzzzzzzzzzz")
			_, _ = w.Write([]byte("line\n"))
		}()
	}
	wg.Wait()
	if got := String("zzzzzzzzzzz"); got != "[REDACTED]" {
		t.Error(got)
	}
}

// TestWeakSecretsMaskWholeTokens: a secret short enough to be a word
// ("llama") is masked where it stands alone, never inside a model's name
// ("sim-llama" once became "sim-[REDACTED]"); a strong one wherever it
// appears; Weak reports the short one for a warning.
func TestWeakSecretsMaskWholeTokens(t *testing.T) {
	Reset()
	defer Reset()
	Add("llama")
	Add("sk-0123456789abcdefXYZ")
	for in, want := range map[string]string{
		"model sim-llama":               "model sim-llama",
		"llama3.2":                      "llama3.2",
		"key llama sent":                "key " + Mask + " sent",
		`{"api_key":"llama"}`:           `{"api_key":"` + Mask + `"}`,
		"Bearer llama":                  "Bearer " + Mask,
		"Bearersk-0123456789abcdefXYZ!": "Bearer" + Mask + "!",
		"x=sk-0123456789abcdefXYZ":      "x=" + Mask,
	} {
		if got := String(in); got != want {
			t.Errorf("String(%q) = %q, want %q", in, got, want)
		}
		if Contains(in) != (in != want) {
			t.Errorf("Contains(%q) = %v", in, Contains(in))
		}
	}
	if w := Weak(); len(w) == 0 || slices.Min(w) != 5 {
		t.Errorf("Weak() = %v, want the 5-character secret", w)
	}
}
