package runview

import (
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/benchrun/benchrun/internal/results"
)

// FormatValues is what a verdict read, for people: each value as
// "name = value", names in order, numbers short (ShortNum), and the
// compared side of a comparison with the limit it was held to
// ("ttft_p50_ms = 12.3 (limit 150)"). The report and the SiYuan document
// both list verdicts with it, so a check reads the same in each; the raw
// "name=value" text (Verdict.FormatValues) is the terminal's.
func FormatValues(v results.Verdict) string {
	keys := make([]string, 0, len(v.Values))
	for k := range v.Values {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	limitOf := ""
	var limit float64
	if _, rhs, _, _, ok := CheckMargin(v); ok {
		// Only a side that is one column gets the limit beside it: for
		// `2*itl_p50_ms > itl_p99_ms` there is no one value to hold to it.
		if l := strings.TrimSpace(lhsOf(v.Assertion)); v.Values[l] != "" {
			limitOf, limit = l, rhs
		}
	}
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		s := k + " = " + ValueText(v.Values[k])
		if k == limitOf {
			s += " (limit " + ShortNum(limit) + ")"
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, ", ")
}

// lhsOf is a comparison's left side ("" for none).
func lhsOf(expr string) string {
	for _, op := range []string{"<=", ">=", "<", ">"} {
		if l, _, ok := strings.Cut(expr, op); ok {
			return l
		}
	}
	return ""
}

// ValueText is a verdict's value as text: a number shortened (ShortNum),
// anything else as it is ("ok", "null").
func ValueText(s string) string {
	if f, err := strconv.ParseFloat(s, 64); err == nil && !math.IsNaN(f) && !math.IsInf(f, 0) {
		return ShortNum(f)
	}
	return s
}

// ShortNum formats a measurement for people: whole numbers from 100 up,
// one decimal from 10, two from 1, three significant digits below; 0 is
// 0. Latencies in ms and rates in tok/s both read well so, and no value
// loses a digit that matters at its size.
func ShortNum(v float64) string {
	a := math.Abs(v)
	switch {
	case v == 0:
		return "0"
	case a >= 100:
		return strconv.FormatFloat(v, 'f', 0, 64)
	case a >= 10:
		return strconv.FormatFloat(v, 'f', 1, 64)
	case a >= 1:
		return strconv.FormatFloat(v, 'f', 2, 64)
	}
	return strconv.FormatFloat(v, 'g', 3, 64)
}

// CheckMargin says by how much a failed comparison missed, from the values
// its verdict recorded, relative to the limit: for `lhs < rhs` (or <=),
// how far lhs is over rhs; for `lhs > rhs` (or >=), how far under. Each
// side is a number, a column the values hold, or a product of the two
// (`2*itl_p50_ms`). Anything else (a conjunction, a function, a column
// the values lack) gives no margin.
func CheckMargin(v results.Verdict) (lhs, rhs, miss float64, op string, ok bool) {
	expr := strings.TrimSpace(v.Assertion)
	for _, op := range []string{"<=", ">=", "<", ">"} {
		l, r, found := strings.Cut(expr, op)
		if !found || strings.ContainsAny(r, "<>=!&|()") {
			continue
		}
		lv, lok := marginTerm(l, v.Values)
		rv, rok := marginTerm(r, v.Values)
		if !lok || !rok || rv == 0 {
			return 0, 0, 0, "", false
		}
		if op == "<" || op == "<=" {
			return lv, rv, (lv - rv) / math.Abs(rv), op, true
		}
		return lv, rv, (rv - lv) / math.Abs(rv), op, true
	}
	return 0, 0, 0, "", false
}

// marginTerm evaluates a number, a column of values, or a product of them.
func marginTerm(s string, values map[string]string) (float64, bool) {
	p := 1.0
	for _, f := range strings.Split(s, "*") {
		f = strings.TrimSpace(f)
		if x, err := strconv.ParseFloat(f, 64); err == nil {
			p *= x
			continue
		}
		raw, ok := values[f]
		if !ok {
			return 0, false
		}
		x, err := strconv.ParseFloat(raw, 64)
		if err != nil || math.IsNaN(x) || math.IsInf(x, 0) {
			return 0, false
		}
		p *= x
	}
	return p, true
}
