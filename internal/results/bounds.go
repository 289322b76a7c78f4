package results

import (
	"fmt"
	"math"
	"reflect"
	"slices"
	"sync"
)

// BoundConf is the two-sided confidence of the percentile bounds the
// cells table stores (docs/METRICS.md, Confidence bounds of a
// percentile).
const BoundConf = 0.95

// The suffixes that name a bounded percentile's bound columns after it:
// ttft_p99_ms_lo, ttft_p99_ms_hi.
const (
	boundLoSuffix = "_lo"
	boundHiSuffix = "_hi"
)

// allEntries is the catalogue as declared with each bounded percentile's
// two bound columns right after it: an entry's Bounds is the one place
// that says a percentile has them. (Set in init: a bound's null reason
// reads the catalogue this builds.)
var allEntries func() []Column

func init() { allEntries = sync.OnceValue(withBounds) }

func withBounds() []Column {
	out := make([]Column, 0, len(entries)+48)
	for _, e := range entries {
		out = append(out, e)
		if e.Bounds {
			out = append(out, boundEntry(e, false), boundEntry(e, true))
		}
	}
	return out
}

// boundEntry is the catalogue entry of percentile p's lower or upper
// bound column: the percentile's unit and lateness rule (the machine's
// lateness moves an order statistic as it moves the percentile); no
// direction (a bound is better neither higher nor lower: narrower), no
// label, SLO or regression check of its own.
func boundEntry(p Column, upper bool) Column {
	side, suffix := "lower", boundLoSuffix
	if upper {
		side, suffix = "upper", boundHiSuffix
	}
	count := ColCompleted
	for _, e := range entries {
		if slices.Contains(e.Counts, p.Sample) {
			count = e.Name
		}
	}
	null := fmt.Sprintf("**NULL** when `%s` is", p.Name)
	if need := SamplesToBoundSide(p.Quantile*100, BoundConf, upper); need > 1 {
		null = fmt.Sprintf("**NULL** with fewer than %d samples (`%s`), too few to bound that side, or when `%s` is", need, count, p.Name)
	}
	return Column{
		Name: p.Name + suffix, Unit: p.Unit, Better: Neither, Late: p.Late,
		BoundOf: p.Name, Upper: upper, why: whyNoBound,
		Doc: fmt.Sprintf("%s end of the 95 %% distribution-free confidence interval of `%s`: one of the same sample's order statistics (docs/METRICS.md, Confidence bounds of a percentile); %s", side, p.Name, null),
	}
}

// SamplesToBoundSide is the smallest sample size at which the conf
// two-sided bound of the p-th percentile (0..100) has its lower (or
// upper) side: n with (1−q)^n ≤ (1−conf)/2 for the lower, q^n for the
// upper (stats.SortedQuantileBound's rule; stats.SamplesToBound is the
// larger of the two).
func SamplesToBoundSide(p, conf float64, upper bool) int {
	if p <= 0 || p >= 100 || conf <= 0 || conf >= 1 {
		return 0
	}
	q := p / 100
	if !upper {
		q = 1 - q
	}
	return int(math.Ceil(math.Log((1-conf)/2) / math.Log(q)))
}

// BoundsOf returns the bound columns of the percentile column name; false
// when the catalogue stores no bounds for it.
func BoundsOf(name string) (lo, hi Column, ok bool) {
	c, found := Lookup(name)
	if !found || !c.Bounds {
		return Column{}, Column{}, false
	}
	lo, okLo := Lookup(name + boundLoSuffix)
	hi, okHi := Lookup(name + boundHiSuffix)
	return lo, hi, okLo && okHi
}

// Bound is a bounded percentile as a row holds it: its value, its 95 %
// bounds (nil: too few samples to bound that side, or not measured) and
// the number of samples behind it (N < 0: not known, a row older than
// the bounds).
type Bound struct {
	Value, Lo, Hi *float64
	N             int64
}

// BoundIn reads percentile column c's value, bounds and sample size from
// row r; false when the catalogue stores no bounds for c.
func BoundIn(r *Cell, c Column) (Bound, bool) {
	lo, hi, ok := BoundsOf(c.Name)
	if !ok {
		return Bound{}, false
	}
	n, known := SampleSize(r, c)
	if !known {
		n = -1
	}
	return Bound{Value: c.Float(r), Lo: lo.Float(r), Hi: hi.Float(r), N: n}, true
}

// SampleSize is how many samples stand behind column c in row r: the
// count column whose Counts names c's sample (the percentile's, for a
// bound column); false when the catalogue has none for it or the row
// predates it.
func SampleSize(r *Cell, c Column) (int64, bool) {
	sample := c.Sample
	if c.BoundOf != "" {
		if p, ok := Lookup(c.BoundOf); ok {
			sample = p.Sample
		}
	}
	if sample == "" {
		return 0, false
	}
	for _, k := range Columns() {
		if !slices.Contains(k.Counts, sample) {
			continue
		}
		switch v := k.Value(r).(type) {
		case int64:
			return v, true
		}
		return 0, false
	}
	return 0, false
}

// BoundedColumns lists the columns whose bounds the catalogue stores, in
// column order: what FillCell fills beside each percentile.
func BoundedColumns() []Column {
	var out []Column
	for _, c := range Columns() {
		if c.Bounds {
			out = append(out, c)
		}
	}
	return out
}

// whyNoBound: a bound is NULL where its percentile is, or when the
// sample is too small to reach that side.
func whyNoBound(c *Cell, column string) string {
	b, _ := Lookup(column)
	p, ok := Lookup(b.BoundOf)
	if !ok {
		return ""
	}
	if p.IsNull(c) {
		return WhyNull(*c, p.Name)
	}
	from := "below"
	if b.Upper {
		from = "above"
	}
	n, _ := SampleSize(c, p)
	return fmt.Sprintf("%d samples cannot bound %s from %s at 95 %%: that side needs %d", n, p.Name, from, SamplesToBoundSide(p.Quantile*100, BoundConf, b.Upper))
}

// SetBound sets the bound columns of percentile column c in row r to lo
// and hi (nil: that side unbounded); a column without bounds is left as
// it is.
func SetBound(r *Cell, c Column, lo, hi *float64) {
	l, h, ok := BoundsOf(c.Name)
	if !ok {
		return
	}
	l.Field(r).Set(reflect.ValueOf(lo))
	h.Field(r).Set(reflect.ValueOf(hi))
}

// SamplesPerRequest is how many samples of percentile column c's sample a
// completed request of osl output tokens adds at most: one TTFT, E2EL,
// TPOT or TTFO each, and up to osl − 1 gaps to the ITL (fewer when a
// server packs several tokens into one event).
func SamplesPerRequest(c Column, osl int) int {
	if c.Sample == "itl" {
		return max(osl-1, 0)
	}
	return 1
}
