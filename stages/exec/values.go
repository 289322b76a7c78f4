package exec

import (
	"encoding/json"
	"math"
	"sort"
	"strconv"
	"strings"
)

// Lenient readers of a program's JSON values. A field's type drifts
// between releases (llama-bench's flash_attn was a bool, then -1/0/1, then
// a word; use_mmap became load_mode), so each reader accepts every form a
// value plausibly takes and says whether it could read it; a field it
// cannot read is kept in exec_extra, never a reason to drop the record.

// asInt reads an integer from a JSON number (integral), a numeric string
// or a bool (0/1).
func asInt(v any) (int64, bool) {
	switch x := v.(type) {
	case json.Number:
		if n, err := x.Int64(); err == nil {
			return n, true
		}
		if f, err := x.Float64(); err == nil && f == math.Trunc(f) && math.Abs(f) < 1<<62 {
			return int64(f), true
		}
	case float64:
		if x == math.Trunc(x) && math.Abs(x) < 1<<62 {
			return int64(x), true
		}
	case string:
		s := strings.TrimSpace(x)
		if n, err := strconv.ParseInt(s, 10, 64); err == nil {
			return n, true
		}
		if f, err := strconv.ParseFloat(s, 64); err == nil && f == math.Trunc(f) && math.Abs(f) < 1<<62 {
			return int64(f), true
		}
	case bool:
		if x {
			return 1, true
		}
		return 0, true
	}
	return 0, false
}

// asFloat reads a finite number from a JSON number or a numeric string.
func asFloat(v any) (float64, bool) {
	var f float64
	var err error
	switch x := v.(type) {
	case json.Number:
		f, err = x.Float64()
	case float64:
		f = x
	case string:
		f, err = strconv.ParseFloat(strings.TrimSpace(x), 64)
	default:
		return 0, false
	}
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
		return 0, false
	}
	return f, true
}

// asString reads a string; numbers and bools are written as JSON writes
// them (a release that turned a string field into a number keeps its
// column).
func asString(v any) (string, bool) {
	switch x := v.(type) {
	case string:
		return x, true
	case json.Number:
		return x.String(), true
	case bool:
		return strconv.FormatBool(x), true
	case nil:
		return "", true
	}
	return "", false
}

// asFloats reads a list of numbers (llama-bench's samples_ns, samples_ts).
func asFloats(v any) ([]float64, bool) {
	list, ok := v.([]any)
	if !ok {
		return nil, false
	}
	out := make([]float64, 0, len(list))
	for _, e := range list {
		f, ok := asFloat(e)
		if !ok {
			return nil, false
		}
		out = append(out, f)
	}
	return out, true
}

// flashAttn normalises every form llama-bench has written flash_attn in
// to on, off or auto: a bool (true/false, older releases), an int mode
// (-1 auto, 0 off, 1 on) and the words of `-fa on|off|auto` and their
// spellings. An unknown word is kept as written (lower case).
func flashAttn(v any) (string, bool) {
	switch x := v.(type) {
	case bool:
		if x {
			return "on", true
		}
		return "off", true
	case nil:
		return "", false
	}
	if n, ok := asInt(v); ok {
		switch {
		case n < 0:
			return "auto", true
		case n == 0:
			return "off", true
		default:
			return "on", true
		}
	}
	s, ok := v.(string)
	if !ok {
		return "", false
	}
	switch w := strings.ToLower(strings.TrimSpace(s)); w {
	case "on", "true", "yes", "enabled", "enable":
		return "on", true
	case "off", "false", "no", "disabled", "disable":
		return "off", true
	case "auto", "":
		return w, true
	default:
		return w, true
	}
}

// extraJSON is the fields no column took, as one JSON object with sorted
// keys (encoding/json sorts map keys), numbers as the program wrote them;
// "" when there are none.
func extraJSON(m map[string]any) string {
	if len(m) == 0 {
		return ""
	}
	b, err := json.Marshal(m)
	if err != nil {
		// Only a value JSON cannot hold fails (none comes from a decoder);
		// say which keys were lost rather than nothing.
		keys := make([]string, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		return `{"benchrun_unencodable":"` + strings.Join(keys, ",") + `"}`
	}
	return string(b)
}
