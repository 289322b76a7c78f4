package stats

import (
	"cmp"
	"math"
	"math/bits"
	"slices"
)

// A Pass yields a sample's values, the same values each time it is called
// (a long cell's chunk gaps read back from its spool): Rank reads it a few
// times instead of holding every value.
type Pass func(yield func(float64))

// Ranked is a sample's count, exact sum and the values at the ranks asked
// for (0-based, in ascending order), found by Rank without holding the
// sample: what Summary, Percentile and Bound need of it.
type Ranked struct {
	N   int
	Sum float64
	at  map[int]float64
}

// MaxHeld is how many values Rank holds at most (8 MB): a sample of at most
// this many is held whole after one reading, a larger one is narrowed.
const MaxHeld = 1 << 20

// Rank reads pass until it knows the sample's values at the ranks ranks(n)
// names (n the sample's size), holding at most maxHeld values and
// 65,536-bucket histograms: the first reading counts the values and sums
// them exactly (and keeps them all when they are at most maxHeld); each
// later one narrows every wanted rank to the bucket of order keys it falls
// in, 16 bits of the key at a time, until the buckets' values fit, which
// are then kept and sorted. The values are those sorting the whole sample
// would give, exactly; a sample of 57 million gaps (a 30-minute soak of
// streamed requests of 64 tokens) is read 2 to 5 times instead of held
// as 456 MB.
func Rank(pass Pass, ranks func(n int) []int, maxHeld int) Ranked {
	return RankEach(func(yield func(int, float64)) {
		pass(func(x float64) { yield(0, x) })
	}, 1, func(_, n int) []int { return ranks(n) }, maxHeld)[0]
}

// A FamilyPass yields the values of several samples read together (a
// long cell's time slices' chunk gaps), each with its sample's index, the
// same values each time it is called.
type FamilyPass func(yield func(fam int, x float64))

// rankWindow is a key range holding wanted ranks of one sample: prefix is
// the key's top bits (shift bits below them are free), below the values
// under it.
type rankWindow struct {
	prefix uint64
	shift  uint
	below  int
	count  int
	ranks  []int
}

// maxHistBytes bounds the histograms one reading of RankEach holds: 16
// bits a window while they fit (a single sample's wanted ranks: a summary
// and two bounds, up to 32 windows), 12 or 8 for many samples' windows
// at once.
const maxHistBytes = 16 << 20

// histBits is the bits a reading narrows each of windows windows by.
func histBits(windows int) uint {
	for _, b := range []uint{16, 12} {
		if windows*(1<<b)*8 <= maxHistBytes {
			return b
		}
	}
	return 8
}

// RankEach is Rank for fams samples read together: every reading of pass
// serves all of them, so that ranking the chunk gaps of each of a long
// cell's many time slices reads its rows a few times in all rather than a
// few times a slice. What it holds is at most maxHeld values over all the
// samples and maxHistBytes of histograms; each sample's values are
// exactly those sorting it would give. Its first call of pass, always
// made, is the first reading, which a caller may use to read the rest of
// what it needs of the same rows (measure.FillCell): the rows are then
// read once more only where the samples are more than maxHeld.
func RankEach(pass FamilyPass, fams int, ranks func(fam, n int) []int, maxHeld int) []Ranked {
	accs := make([]exactSum, fams)
	ns := make([]int, fams)
	held := make([][]float64, fams)
	// Each sample's lowest and highest order keys: the bits they share
	// are every value's, so narrowing starts below them (a simulator's
	// gaps of 1 ms and a few µs share their top 25 bits: a reading less).
	lo, hi := make([]uint64, fams), make([]uint64, fams)
	for f := range lo {
		lo[f] = math.MaxUint64
	}
	total, holding := 0, true
	pass(func(f int, x float64) {
		if f < 0 || f >= fams {
			return
		}
		ns[f]++
		accs[f].add(x)
		k := orderKey(x)
		lo[f], hi[f] = min(lo[f], k), max(hi[f], k)
		total++
		if holding && total > maxHeld {
			holding, held = false, make([][]float64, fams)
		}
		if holding {
			held[f] = append(held[f], x)
		}
	})
	out := make([]Ranked, fams)
	windows := make([][]rankWindow, fams)
	narrowing := false
	for f := range out {
		out[f] = Ranked{N: ns[f], Sum: accs[f].value(), at: map[int]float64{}}
		want := wantedRanks(func(n int) []int { return ranks(f, n) }, ns[f])
		switch {
		case len(want) == 0:
		case holding:
			slices.Sort(held[f])
			for _, k := range want {
				out[f].at[k] = held[f][k]
			}
		default:
			shift := uint(bits.Len64(lo[f] ^ hi[f]))
			windows[f] = []rankWindow{{prefix: lo[f] >> shift, shift: shift, below: 0, count: ns[f], ranks: want}}
			if shift == 0 { // one value, however often
				for _, k := range want {
					out[f].at[k] = keyValue(lo[f])
				}
				windows[f] = nil
				continue
			}
			narrowing = true
		}
	}
	if !narrowing {
		return out
	}
	held = nil
	for {
		total, open := 0, 0
		for f := range windows {
			for _, w := range windows[f] {
				total += w.count
				if w.shift > 0 {
					open++
				}
			}
		}
		if total <= maxHeld || open == 0 {
			// Few enough to hold, or every window is one key.
			break
		}
		narrow(pass, windows, histBits(open))
	}
	collect(pass, windows, out)
	return out
}

// narrow reads pass once more, narrowing each sample's windows by up to
// bits bits of the key: each wanted rank goes to the sub-window of the
// histogram bucket it falls in.
func narrow(pass FamilyPass, windows [][]rankWindow, bits uint) {
	fams := len(windows)
	hists := make([][][]int, fams)
	sub := make([]uint, fams)
	for f, ws := range windows {
		if len(ws) == 0 || ws[0].shift == 0 {
			continue // a sample's windows share their shift
		}
		sub[f] = ws[0].shift - min(bits, ws[0].shift)
		hists[f] = make([][]int, len(ws))
		for i := range ws {
			hists[f][i] = make([]int, 1<<(ws[0].shift-sub[f]))
		}
	}
	pass(func(f int, x float64) {
		if f < 0 || f >= fams || hists[f] == nil {
			return
		}
		k := orderKey(x)
		if i := windowOf(windows[f], k); i >= 0 {
			hists[f][i][(k>>sub[f])&(uint64(len(hists[f][i]))-1)]++
		}
	})
	for f, ws := range windows {
		if hists[f] == nil {
			continue
		}
		var next []rankWindow
		width := ws[0].shift - sub[f]
		for i, w := range ws {
			below, b := w.below, 0
			for _, rank := range w.ranks {
				for below+hists[f][i][b] <= rank {
					below += hists[f][i][b]
					b++
				}
				prefix := uint64(b)
				if w.shift < 64 {
					prefix |= w.prefix << width
				}
				if len(next) > 0 && next[len(next)-1].prefix == prefix && next[len(next)-1].shift == sub[f] {
					next[len(next)-1].ranks = append(next[len(next)-1].ranks, rank)
					continue
				}
				next = append(next, rankWindow{prefix: prefix, shift: sub[f], below: below, count: hists[f][i][b], ranks: []int{rank}})
			}
		}
		windows[f] = next
	}
}

// collect reads pass a last time for the values of the windows that are
// more than one key, sorts each window and reads its ranks off it; a
// window of one key gives its value without them.
func collect(pass FamilyPass, windows [][]rankWindow, out []Ranked) {
	fams := len(windows)
	// A window narrowed to one key holds one value however often it
	// occurs (a simulator's fixed gaps): it is read off its key.
	vals := make([][][]float64, fams)
	for f, ws := range windows {
		vals[f] = make([][]float64, len(ws))
		for _, w := range ws {
			if w.shift == 0 {
				for _, rank := range w.ranks {
					out[f].at[rank] = keyValue(w.prefix)
				}
			}
		}
	}
	pass(func(f int, x float64) {
		if f < 0 || f >= fams {
			return
		}
		k := orderKey(x)
		if i := windowOf(windows[f], k); i >= 0 && windows[f][i].shift != 0 {
			vals[f][i] = append(vals[f][i], x)
		}
	})
	for f, ws := range windows {
		for i, w := range ws {
			if w.shift == 0 {
				continue
			}
			slices.Sort(vals[f][i])
			for _, rank := range w.ranks {
				out[f].at[rank] = vals[f][i][rank-w.below]
			}
		}
	}
}

// windowOf is the index of the window of ws that key k falls in, -1 for
// none. A sample's windows share their shift and are in ascending order
// of prefix (each narrowing keeps its parents' order and its ranks'), so
// it is a binary search: a distribution's 101 levels are as many windows,
// which a scan walked for every value.
func windowOf(ws []rankWindow, k uint64) int {
	if len(ws) == 0 {
		return -1
	}
	if ws[0].shift == 64 {
		return 0
	}
	i, found := slices.BinarySearchFunc(ws, k>>ws[0].shift, func(w rankWindow, p uint64) int { return cmp.Compare(w.prefix, p) })
	if !found {
		return -1
	}
	return i
}

// wantedRanks is ranks(n), sorted, without repeats or ranks outside the
// sample.
func wantedRanks(ranks func(n int) []int, n int) []int {
	if n == 0 || ranks == nil {
		return nil
	}
	var want []int
	for _, k := range ranks(n) {
		if k >= 0 && k < n {
			want = append(want, k)
		}
	}
	slices.Sort(want)
	return slices.Compact(want)
}

// orderKey maps a float64 to a uint64 in the same order (negative values
// below positive ones, -0 just below +0).
func orderKey(x float64) uint64 {
	b := math.Float64bits(x)
	if b>>63 == 1 {
		return ^b
	}
	return b | 1<<63
}

// At is the value at rank k (0-based, ascending); NaN when it was not
// asked for.
func (r Ranked) At(k int) float64 {
	if v, ok := r.at[k]; ok {
		return v
	}
	return math.NaN()
}

// percentileRanks are the ranks SortedPercentile reads for p.
func percentileRanks(n int, p float64) []int {
	if p <= 0 {
		return []int{0}
	}
	if p >= 100 {
		return []int{n - 1}
	}
	lo := int(math.Floor(p / 100 * float64(n-1)))
	return []int{lo, lo + 1}
}

// SummaryRanks are the ranks Summary reads of a sample of n values.
func SummaryRanks(n int) []int {
	out := []int{0, n - 1}
	for _, p := range summaryLevels {
		out = append(out, percentileRanks(n, p)...)
	}
	return out
}

var summaryLevels = []float64{50, 90, 95, 99, 99.9}

// PercentileRanks are the ranks Percentile reads for each of ps.
func PercentileRanks(n int, ps ...float64) []int {
	var out []int
	for _, p := range ps {
		out = append(out, percentileRanks(n, p)...)
	}
	return out
}

// Percentile is SortedPercentile of the whole sample (its ranks asked for:
// PercentileRanks).
func (r Ranked) Percentile(p float64) float64 {
	n := r.N
	if n == 0 {
		return math.NaN()
	}
	if p <= 0 {
		return r.At(0)
	}
	if p >= 100 {
		return r.At(n - 1)
	}
	rank := p / 100 * float64(n-1)
	lo := int(math.Floor(rank))
	if lo+1 >= n {
		return r.At(lo)
	}
	frac := rank - float64(lo)
	a, b := r.At(lo), r.At(lo+1)
	return a + frac*(b-a)
}

// Summary is SummarizeInPlace of the whole sample (its ranks asked for:
// SummaryRanks).
func (r Ranked) Summary() Summary {
	if r.N == 0 {
		return Summary{}
	}
	return Summary{
		N: r.N, Mean: r.Sum / float64(r.N), Min: r.At(0), Max: r.At(r.N - 1),
		P50: r.Percentile(50), P90: r.Percentile(90), P95: r.Percentile(95), P99: r.Percentile(99), P999: r.Percentile(99.9),
	}
}

// BoundRanks are the ranks QuantileBound reads for the conf bound of the
// p-th percentile of n values.
func BoundRanks(n int, p, conf float64) []int {
	b := quantileBoundRanks(n, p, conf)
	var out []int
	if b.LoRank >= 1 {
		out = append(out, b.LoRank-1)
	}
	if b.HiRank <= n {
		out = append(out, b.HiRank-1)
	}
	return out
}

// Bound is SortedQuantileBound of the whole sample (its ranks asked for:
// BoundRanks).
func (r Ranked) Bound(p, conf float64) QuantileBound {
	b := quantileBoundRanks(r.N, p, conf)
	if b.LoRank >= 1 {
		b.Lo = r.At(b.LoRank - 1)
	}
	if b.HiRank <= r.N {
		b.Hi = r.At(b.HiRank - 1)
	}
	return b
}

// exactSum adds float64 values without rounding (Shewchuk's partials, as
// Python's math.fsum), so a sum does not depend on the order the values
// come in: value is the exact sum correctly rounded.
type exactSum struct{ partials []float64 }

func (s *exactSum) add(x float64) {
	i := 0
	for _, y := range s.partials {
		if math.Abs(x) < math.Abs(y) {
			x, y = y, x
		}
		hi := x + y
		lo := y - (hi - x)
		if lo != 0 {
			s.partials[i] = lo
			i++
		}
		x = hi
	}
	s.partials = append(s.partials[:i], x)
}

func (s *exactSum) value() float64 {
	p := s.partials
	if len(p) == 0 {
		return 0
	}
	n := len(p) - 1
	hi := p[n]
	lo := 0.0
	for n > 0 {
		x, y := hi, p[n-1]
		n--
		hi = x + y
		yr := hi - x
		lo = y - yr
		if lo != 0 {
			break
		}
	}
	// Round half-even across the remaining partials, as fsum does.
	if n > 0 && (lo < 0 && p[n-1] < 0 || lo > 0 && p[n-1] > 0) {
		y := lo * 2
		x := hi + y
		if y == x-hi {
			hi = x
		}
	}
	return hi
}

// ExactSum is the exact sum of xs correctly rounded, whatever their order.
func ExactSum(xs []float64) float64 {
	var s exactSum
	for _, x := range xs {
		s.add(x)
	}
	return s.value()
}

// keyValue is the float64 whose orderKey is k.
func keyValue(k uint64) float64 {
	if k>>63 == 1 {
		return math.Float64frombits(k &^ (1 << 63))
	}
	return math.Float64frombits(^k)
}
