package results

import (
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
)

// The column catalogue: every column of the cells table declared once
// (catalogue_table.go), with what each consumer needs to know of it: its
// unit and direction (docs/RESULTS.md, the regression checks), its label
// (the reports, SiYuan, CSV), the per-request sample it summarizes and
// its statistic (the regression bootstrap), its machine-lateness rule
// (internal/machine), whether an SLO may bound it (the sweep's search),
// its default regression threshold and floor (internal/regress), why it
// can be null (WhyNull) and its documentation line. The Cell field holds
// the value; adding a metric is the field, one entry, the code that
// computes it, and its test.

// Direction says which way a column improves.
type Direction int8

const (
	// DirectionUnset is an entry that did not say; a test fails on it.
	DirectionUnset Direction = iota
	// Neither: an identity, a parameter, a label (–).
	Neither
	// LowerBetter: latencies, lags, costs (↓).
	LowerBetter
	// HigherBetter: throughputs, ratios (↑).
	HigherBetter
)

// Arrow is the mark docs/RESULTS.md uses: ↑, ↓ or –.
func (d Direction) Arrow() string {
	switch d {
	case LowerBetter:
		return "↓"
	case HigherBetter:
		return "↑"
	}
	return "–"
}

// String is "lower", "higher" or "neither" (better).
func (d Direction) String() string {
	switch d {
	case LowerBetter:
		return "lower"
	case HigherBetter:
		return "higher"
	}
	return "neither"
}

// Lateness is how far a machine that ran threads late (by `late` ms,
// internal/machine's Allowance) may have moved a column's value, and
// whether a stall of the machine (machine_late_max_ms) delays it.
type Lateness int8

const (
	// LateUnset is an entry that did not say; a metric without a rule
	// fails a test.
	LateUnset Lateness = iota
	// LateNone: the machine's lateness does not explain it (counts,
	// ratios, GPU telemetry, quality).
	LateNone
	// LateSend: a latency from the send (ttft, e2el) ends with the
	// server's write, which a late wake delays: up to late below; a stall
	// delays it.
	LateSend
	// LateFirstCall: as LateSend, for the one request first_call_ms is.
	LateFirstCall
	// LateSchedule: from the schedule (the _sched columns) the client's
	// send may be late too: up to twice late below; a stall delays it.
	LateSchedule
	// LateGap: a gap between two events (itl) has a late wake at either
	// end: late either way; a stall delays it.
	LateGap
	// LateTPOT: a request's two ends spread over its N_out − 1 gaps:
	// late / (N_out − 1) either way; a stall delays it.
	LateTPOT
	// LateNTPOT: as LateTPOT over N_out.
	LateNTPOT
	// LateOwn: the client's own lateness (send_lag, stamp_delay), the
	// server's own latencies and the ratios of a send latency: up to late
	// below; a stall does not reach it.
	LateOwn
	// LateThroughput: a throughput over requests lasting e2el_p50_ms each
	// may be up to value × late / e2el_p50_ms above.
	LateThroughput
	// LatePrefill: as LateThroughput over requests lasting ttft_ms.
	LatePrefill
	// LateGapRatio: a validate row's itl_ratio, bounded as a gap is
	// (as the name rules had it), which no stall reaches.
	LateGapRatio
	// LateTPOTRatio: a validate row's tpot_ratio, bounded as TPOT is.
	LateTPOTRatio
)

// Stall says whether a stall of the machine delays the column's values.
func (l Lateness) Stall() bool {
	switch l {
	case LateSend, LateFirstCall, LateSchedule, LateGap, LateTPOT, LateNTPOT:
		return true
	}
	return false
}

// Column is one column of the cells table, as every output names it, with
// its catalogue entry.
type Column struct {
	Name     string       // Parquet, CSV and JSON name
	Expr     string       // its name in assertions ("" when expressions cannot read it)
	Index    int          // the Cell field's index (reflect)
	Type     reflect.Type // the field's Go type
	Nullable bool         // a metric a cell can fail to measure (a pointer field)

	Unit   string    // "ms", "tok/s", ...; "–" for none
	Better Direction // which way it improves
	// Label is the short name the reports, SiYuan and CSV heads show
	// ("TTFT p99 ms"); "" for a column they do not label.
	Label string
	// Sample is the request-level sample the column summarizes ("ttft",
	// "e2el", "tpot", "itl", "ttft_sched", "e2el_sched") as the
	// regression bootstrap recomputes it from request rows; "" for a
	// column that is one number per cell.
	Sample string
	// Quantile is the column's statistic over its values: 0.5 for p50,
	// 0.99 for p99, 1 for the max; 0 for the mean or anything else.
	Quantile float64
	// Late is the column's machine-lateness rule.
	Late Lateness
	// SLO says whether an SLO search's objective may bound it.
	SLO bool
	// Threshold and Floor are the default smallest relative and absolute
	// changes a regression check counts (0: no regression check reads
	// the column); Default marks the columns checked when none is named.
	Threshold, Floor float64
	Default          bool
	// Doc is the column's definition in docs/RESULTS.md.
	Doc string
	// Bounds marks a percentile whose two-sided 95 % distribution-free
	// confidence bounds are stored beside it, in the columns Name+"_lo"
	// and Name+"_hi", which the catalogue derives from this one entry
	// (bounds.go; docs/METRICS.md, Confidence bounds of a percentile).
	Bounds bool
	// BoundOf is, on such a derived column, the percentile it bounds, and
	// Upper says which end (false: the lower).
	BoundOf string
	Upper   bool
	// Counts lists the samples ("ttft", "itl", ...) whose size this
	// count column is: the n behind their percentiles (SampleSize).
	Counts []string

	why nullReason // why it can be null beyond the reasons every metric shares
}

// floatMetric is the type of a metric column: a float a cell can fail to
// measure.
var floatMetric = reflect.TypeFor[*float64]()

// IsMetric says whether the column is a nullable float: a metric, which
// assertions, baselines and searches read.
func (c Column) IsMetric() bool { return c.Type == floatMetric }

// Float is the metric's value in row r; nil when it was not measured
// (NULL) or the column is not a metric.
func (c Column) Float(r *Cell) *float64 {
	if r == nil || !c.IsMetric() {
		return nil
	}
	return reflect.ValueOf(r).Elem().Field(c.Index).Interface().(*float64)
}

// Value is the column's value in row r: the field's value, or the value
// its pointer holds; nil when a nullable column was not measured.
func (c Column) Value(r *Cell) any {
	f := reflect.ValueOf(r).Elem().Field(c.Index)
	if f.Kind() == reflect.Pointer {
		if f.IsNil() {
			return nil
		}
		f = f.Elem()
	}
	return f.Interface()
}

// Field is the column's field in row r, to set (a program's output onto
// its columns).
func (c Column) Field(r *Cell) reflect.Value { return reflect.ValueOf(r).Elem().Field(c.Index) }

// Number is a float column's value in row r (a nullable one's, followed);
// false for a null, or a column that is not a float.
func (c Column) Number(r *Cell) (float64, bool) {
	switch v := c.Value(r).(type) {
	case float64:
		return v, true
	}
	return 0, false
}

// SetNumber sets a float column of row r (a nullable one to a value of
// its own) to x.
func (c Column) SetNumber(r *Cell, x float64) {
	f := c.Field(r)
	if f.Kind() == reflect.Pointer {
		f.Set(reflect.ValueOf(&x))
		return
	}
	f.SetFloat(x)
}

// Set sets the column of row r to v, a value of the field's type (of
// the type a nullable field points to).
func (c Column) Set(r *Cell, v any) {
	f, val := c.Field(r), reflect.ValueOf(v)
	if f.Kind() == reflect.Pointer {
		p := reflect.New(val.Type())
		p.Elem().Set(val)
		val = p
	}
	f.Set(val)
}

// IsNull says whether the column is nullable and null in row r.
func (c Column) IsNull(r *Cell) bool {
	f := reflect.ValueOf(r).Elem().Field(c.Index)
	return f.Kind() == reflect.Pointer && f.IsNil()
}

// catalogue holds the columns in force: the declared ones, or a test's
// (SwapCatalogue).
var catalogue atomic.Pointer[catalogueIndex]

type catalogueIndex struct {
	cols   []Column
	byName map[string]int
	byExpr map[string]int
}

var declared = sync.OnceValue(func() *catalogueIndex { return indexOf(Build(reflect.TypeOf(Cell{}), allEntries())) })

func current() *catalogueIndex {
	if c := catalogue.Load(); c != nil {
		return c
	}
	return declared()
}

func indexOf(cols []Column) *catalogueIndex {
	x := &catalogueIndex{cols: cols, byName: map[string]int{}, byExpr: map[string]int{}}
	for i, c := range cols {
		x.byName[c.Name] = i
		if c.Expr != "" {
			x.byExpr[c.Expr] = i
		}
	}
	return x
}

// Build joins the row type t's fields (in field order) with their
// catalogue entries, by name. A field without an entry has only what
// its tags say (TestCatalogueComplete fails on it); an entry without a
// field is dropped (the same test fails on it).
func Build(t reflect.Type, entries []Column) []Column {
	byName := make(map[string]Column, len(entries))
	for _, e := range entries {
		byName[e.Name] = e
	}
	out := make([]Column, 0, t.NumField())
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("parquet"), ",")
		expr := f.Tag.Get("expr")
		if expr == "-" {
			expr = ""
		}
		c := byName[name]
		c.Name, c.Expr, c.Index, c.Type, c.Nullable = name, expr, i, f.Type, f.Type.Kind() == reflect.Pointer
		out = append(out, c)
	}
	return out
}

// SwapCatalogue puts cols in force in place of the declared catalogue
// and returns what restores it: how a test adds a scratch column and sees
// it wherever the catalogue is read. Not for use outside tests.
func SwapCatalogue(cols []Column) (restore func()) {
	prev := catalogue.Swap(indexOf(cols))
	return func() { catalogue.Store(prev) }
}

// Columns lists the cells table's columns in column order: the one walk
// over Cell's tags that sinks, kinds and assertions share.
func Columns() []Column { return current().cols }

// Ordered lists the columns in catalogue order (the declared entries'
// order, a test's columns after them): the order the regression table
// keeps.
func Ordered() []Column {
	x := current()
	all := allEntries()
	seen := make(map[string]bool, len(all))
	out := make([]Column, 0, len(x.cols))
	for _, e := range all {
		if i, ok := x.byName[e.Name]; ok {
			out = append(out, x.cols[i])
			seen[e.Name] = true
		}
	}
	for _, c := range x.cols {
		if !seen[c.Name] {
			out = append(out, c)
		}
	}
	return out
}

// ColumnNames lists the cells table's column names in column order.
func ColumnNames() []string {
	cols := Columns()
	out := make([]string, 0, len(cols))
	for _, c := range cols {
		out = append(out, c.Name)
	}
	return out
}

// Lookup returns the column of that name.
func Lookup(name string) (Column, bool) {
	x := current()
	i, ok := x.byName[name]
	if !ok {
		return Column{}, false
	}
	return x.cols[i], true
}

// LookupExpr returns the column an expression names.
func LookupExpr(expr string) (Column, bool) {
	x := current()
	i, ok := x.byExpr[expr]
	if !ok {
		return Column{}, false
	}
	return x.cols[i], true
}

// MustLookup is Lookup of a column the code names by its constant: a
// missing one is a programming error.
func MustLookup(name string) Column {
	c, ok := Lookup(name)
	if !ok {
		panic("results: no column " + name)
	}
	return c
}

// LabelOf is the column's label, or its name where it has none.
func LabelOf(name string) string {
	if c, ok := Lookup(name); ok && c.Label != "" {
		return c.Label
	}
	return name
}

// CheckCatalogue says what is wrong with cols as a catalogue ("" lines
// for nothing): every column says its unit and direction, and every
// metric (a nullable float) its machine-lateness rule; a regression
// threshold needs a direction and a floor.
func CheckCatalogue(cols []Column) []string {
	var out []string
	for _, c := range cols {
		if c.Unit == "" {
			out = append(out, c.Name+": no unit (write – for none)")
		}
		if c.Better == DirectionUnset {
			out = append(out, c.Name+": no direction (LowerBetter, HigherBetter or Neither)")
		}
		if c.IsMetric() && c.Late == LateUnset {
			out = append(out, c.Name+": a metric without a machine-lateness rule (LateNone when the machine's lateness cannot move it)")
		}
		if c.Doc == "" {
			out = append(out, c.Name+": no documentation line")
		}
		if c.Threshold > 0 && (c.Better == Neither || c.Floor <= 0 || !c.IsMetric()) {
			out = append(out, c.Name+": a regression threshold needs a nullable float metric with a direction and a floor")
		}
	}
	return out
}
