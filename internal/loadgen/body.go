package loadgen

import (
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// fastBody writes the JSON body of a completions or chat request without
// building a map of it: encoding/json sorts a map's keys through reflect
// and boxes every value, about 35 allocations a request, a third of the
// client's whole per-request count. The bytes are exactly those of
// json.Marshal of the map body builds (keys sorted, HTML-safe escaping;
// TestFastBodyMatchesMarshal holds it to that), so servers, logs and
// recorded requests see no difference. Images, a conversation's
// Messages, embeddings and transcriptions take the general path (ok
// false).
func (t *Target) fastBody(req Request) ([]byte, bool) {
	if t.Endpoint != Completions && t.Endpoint != Chat && t.Endpoint != "" || len(req.Images) > 0 || req.Messages != nil {
		return nil, false
	}
	var kv [24]field
	fs := kv[:0]
	set := func(f field) {
		for i := range fs {
			if fs[i].key == f.key {
				fs[i] = f
				return
			}
		}
		fs = append(fs, f)
	}
	set(field{key: "model", kind: fString, s: t.modelOf(req)})
	if t.Endpoint == Chat {
		set(field{key: "messages", kind: fMessages, s: req.Prompt})
	} else {
		set(field{key: "prompt", kind: fString, s: req.Prompt})
	}
	if req.MaxTokens > 0 {
		set(field{key: "max_tokens", kind: fInt, i: int64(req.MaxTokens)})
	}
	set(field{key: "stream", kind: fBool, b: t.Stream})
	if t.Stream {
		set(field{key: "stream_options", kind: fStreamOptions, b: t.ContinuousUsage})
	}
	if len(t.ExtraBody)+len(req.Body)+len(fs) > len(kv) {
		return nil, false
	}
	for _, m := range []map[string]any{t.ExtraBody, req.Body} {
		for k, v := range m {
			set(field{key: k, kind: fAny, v: v})
		}
	}
	slices.SortFunc(fs, func(a, b field) int { return strings.Compare(a.key, b.key) })
	out := make([]byte, 0, 192+len(req.Prompt)+len(req.Prompt)/8)
	out = append(out, '{')
	for i, f := range fs {
		if i > 0 {
			out = append(out, ',')
		}
		out = appendJSONString(out, f.key)
		out = append(out, ':')
		var ok bool
		if out, ok = f.append(out); !ok {
			return nil, false
		}
	}
	return append(out, '}'), true
}

// mapBodyOnly makes body skip fastBody (tests compare the two).
var mapBodyOnly = false

type fieldKind uint8

const (
	fString fieldKind = iota
	fInt
	fBool
	fMessages      // [{"content":s,"role":"user"}]
	fStreamOptions // {"continuous_usage_stats":true,"include_usage":true} (the first only when b)
	fAny
)

type field struct {
	key  string
	kind fieldKind
	s    string
	i    int64
	b    bool
	v    any
}

func (f field) append(out []byte) ([]byte, bool) {
	switch f.kind {
	case fString:
		return appendJSONString(out, f.s), true
	case fInt:
		return strconv.AppendInt(out, f.i, 10), true
	case fBool:
		return strconv.AppendBool(out, f.b), true
	case fMessages:
		out = append(out, `[{"content":`...)
		out = appendJSONString(out, f.s)
		return append(out, `,"role":"user"}]`...), true
	case fStreamOptions:
		if f.b {
			return append(out, `{"continuous_usage_stats":true,"include_usage":true}`...), true
		}
		return append(out, `{"include_usage":true}`...), true
	}
	switch v := f.v.(type) {
	case nil:
		return append(out, "null"...), true
	case bool:
		return strconv.AppendBool(out, v), true
	case int:
		return strconv.AppendInt(out, int64(v), 10), true
	case int64:
		return strconv.AppendInt(out, v, 10), true
	case string:
		return appendJSONString(out, v), true
	}
	b, err := json.Marshal(f.v)
	if err != nil {
		return out, false // the general path reports it
	}
	return append(out, b...), true
}

const hexDigits = "0123456789abcdef"

// appendJSONString appends s quoted as encoding/json quotes it (with its
// default HTML escaping): control characters, <, > and & as \u00XX (\b,
// \f, \n, \r, \t by name), invalid UTF-8 as \ufffd, and U+2028 and
// U+2029 escaped.
func appendJSONString(out []byte, s string) []byte {
	out = append(out, '"')
	start := 0
	for i := 0; i < len(s); {
		if b := s[i]; b < utf8.RuneSelf {
			if b >= 0x20 && b != '"' && b != '\\' && b != '<' && b != '>' && b != '&' {
				i++
				continue
			}
			out = append(out, s[start:i]...)
			switch b {
			case '\\', '"':
				out = append(out, '\\', b)
			case '\b':
				out = append(out, '\\', 'b')
			case '\f':
				out = append(out, '\\', 'f')
			case '\n':
				out = append(out, '\\', 'n')
			case '\r':
				out = append(out, '\\', 'r')
			case '\t':
				out = append(out, '\\', 't')
			default:
				out = append(out, '\\', 'u', '0', '0', hexDigits[b>>4], hexDigits[b&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			out = append(out, s[start:i]...)
			out = append(out, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			out = append(out, s[start:i]...)
			out = append(out, '\\', 'u', '2', '0', '2', hexDigits[r&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	out = append(out, s[start:]...)
	return append(out, '"')
}

// modelOf is the model req names: its own, else the target's.
func (t *Target) modelOf(req Request) string {
	if req.Model != "" {
		return req.Model
	}
	return t.Model
}
