package arrow

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/benchrun/benchrun/internal/results"
	"github.com/benchrun/benchrun/internal/results/resultstest"
	"github.com/benchrun/benchrun/internal/rundir"
	pqs "github.com/benchrun/benchrun/sinks/parquet"
)

// cellOf is one cell of the test run: its row and its requests.
type cellOf struct {
	cell results.Cell
	reqs []results.Request
}

// testCells are the rows the value tests write: the fixture's cells
// (every metric measured), its cell whose every request failed (NULL
// metrics, measured zeros), one of edge cases (non-ASCII strings, maps
// empty and nil, times before 1970, in another zone, with nanoseconds;
// zeros and -0 that are measurements, extremes, lists nil and empty) and
// a skipped one without requests. The zero time.Time has its own test
// (TestZeroTime).
func testCells() []cellOf {
	var out []cellOf
	for _, p := range resultstest.Points() {
		out = append(out, cellOf{p.Cell, p.Requests})
	}
	u := resultstest.Unmeasured()
	out = append(out, cellOf{u.Cell, u.Requests})

	tokyo := time.FixedZone("JST", 9*3600)
	some := results.Some[float64]
	edge := results.Cell{
		RunID: resultstest.RunID, Plan: "fïxture—ünïcode", Stage: "sweep", CellID: "sweep/模型/c1", Attempt: 2,
		StartedAt: time.Date(2026, 12, 1, 13, 0, 0, 123456789, tokyo), // 04:00:00.123456 UTC, ns dropped
		Model:     "llama-3 🦙 «Q4»", Engine: "sim", EngineVersion: "", Endpoint: "chat",
		Metadata: map[string]string{"ключ": "значение", "empty": "", "emoji": "🚀🚀", "z": "last", "a": "first"},
		Hostname: "höst", Hardware: "tab\there, newline\nthere, quote \" and \\ backslash",
		ISL: 0, OSL: 1, Concurrency: 1, Rate: 0, Requests: 3, Completed: 2, Failed: 1,
		FirstCallMs: some(0), TTFTMs: some(0), ITLP50Ms: some(math.Copysign(0, -1)), DecodeTokS: some(math.MaxFloat64),
		PrefillTokS: some(math.SmallestNonzeroFloat64), SpeedupVsC1: some(1), TTFTP99Ms: some(1e-300),
		MaxModelLen: results.Some[int64](0), ConnRetries: math.MaxInt64, AdmittedTok: math.MinInt64,
		CostUSD: some(0), Arrival: "poisson", Burstiness: 0.5, MaxInflight: 0,
		Status: results.StatusError, Reason: "1 of 3 requests failed; first: «timeout»", Notes: "",
	}
	edgeReqs := []results.Request{
		{RunID: edge.RunID, Plan: edge.Plan, Stage: "sweep", CellID: edge.CellID, Attempt: 2, Seq: 0,
			ResponseID: "chatcmpl-äöü", SentAt: time.Date(1969, 7, 20, 20, 17, 40, 999999000, time.UTC),
			SendLagMs: 0, TTFTMs: some(0), E2ELMs: some(0), InputTokens: 0, OutputTokens: 1, Chunks: 1,
			ChunkGapsMs: []float64{}, ChunkTokens: []int64{}, Status: "ok", UsageReported: true,
			TTFTSchedMs: some(0), E2ELSchedMs: some(0)},
		{RunID: edge.RunID, Plan: edge.Plan, Stage: "sweep", CellID: edge.CellID, Attempt: 2, Seq: 1,
			SentAt: time.Date(1900, 1, 1, 0, 0, 0, 0, time.UTC), SendLagMs: -1.5, Status: "error", Error: "context deadline exceeded — 超时",
			ConnRetries: 2},
		{RunID: edge.RunID, Plan: edge.Plan, Stage: "sweep", CellID: edge.CellID, Attempt: 2, Seq: 2,
			SentAt: time.Date(2026, 12, 1, 4, 0, 1, 1, tokyo), TTFTMs: some(12.25), E2ELMs: some(40),
			ChunkGapsMs: []float64{0, 1.5, 1e9, 3.14159}, ChunkTokens: []int64{1, 0, 7, math.MaxInt64},
			InputTokens: 5, OutputTokens: 8, Chunks: 4, Status: "ok", TTFTSchedMs: some(13), E2ELSchedMs: nil},
	}
	out = append(out, cellOf{edge, edgeReqs})
	// A cell with no requests (skipped): no request batch for it.
	out = append(out, cellOf{results.Cell{RunID: resultstest.RunID, Plan: "fixture", Stage: "sweep", CellID: "sweep/x/c2",
		StartedAt: resultstest.T0, Metadata: map[string]string{}, Status: results.StatusSkipped, Reason: "skipped"}, nil})
	return out
}

// flatten lists the cell rows and the request rows of cells, in order.
func flatten(cells []cellOf) ([]results.Cell, []results.Request) {
	var cs []results.Cell
	var rs []results.Request
	for _, c := range cells {
		cs = append(cs, c.cell)
		rs = append(rs, c.reqs...)
	}
	return cs, rs
}

// writeArrow writes cells with Tables into dir and returns the two paths.
func writeArrow(t testing.TB, dir string, cells []cellOf) (cellsPath, reqsPath string) {
	t.Helper()
	tb, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cells {
		if err := tb.Cell(c.cell, results.AsRequests(c.reqs)); err != nil {
			t.Fatal(err)
		}
	}
	if err := tb.Close(); err != nil {
		t.Fatal(err)
	}
	return filepath.Join(dir, CellsFile), filepath.Join(dir, RequestsFile)
}

// writeParquet writes cells as the Parquet output does (a part file per
// cell and table) under dir and returns the rows ReadTable reads back.
func writeParquet(t testing.TB, dir string, cells []cellOf) ([]results.Cell, []results.Request) {
	t.Helper()
	for _, table := range []string{results.TableCells, results.TableRequests} {
		if err := os.MkdirAll(filepath.Join(dir, table), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for i, c := range cells {
		name := rundir.PartName(1, i+1)
		if len(c.reqs) > 0 {
			if err := pqs.WriteFile(filepath.Join(dir, results.TableRequests, name), c.reqs); err != nil {
				t.Fatal(err)
			}
		}
		if err := pqs.WriteFile(filepath.Join(dir, results.TableCells, name), []results.Cell{c.cell}); err != nil {
			t.Fatal(err)
		}
	}
	cs, err := resultstest.ReadTable[results.Cell](dir, results.TableCells)
	if err != nil {
		t.Fatal(err)
	}
	rs, err := resultstest.ReadTable[results.Request](dir, results.TableRequests)
	if err != nil {
		t.Fatal(err)
	}
	return cs, rs
}

// readIPC reads every record batch of an Arrow IPC file.
func readIPC(t testing.TB, path string) (*arrow.Schema, []arrow.RecordBatch) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	r, err := ipc.NewFileReader(f, ipc.WithAllocator(memory.NewGoAllocator()))
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	t.Cleanup(func() { r.Close() })
	var recs []arrow.RecordBatch
	for i := 0; i < r.NumRecords(); i++ {
		rec, err := r.RecordBatch(i)
		if err != nil {
			t.Fatalf("%s: batch %d: %v", path, i, err)
		}
		rec.Retain()
		t.Cleanup(rec.Release)
		recs = append(recs, rec)
	}
	return r.Schema(), recs
}

// decode reads the rows of an Arrow IPC file back into Go structs,
// matching columns to fields by their parquet names.
func decode[T any](t testing.TB, path string) []T {
	t.Helper()
	schema, recs := readIPC(t, path)
	typ := reflect.TypeFor[T]()
	var out []T
	for _, rec := range recs {
		rows := make([]T, rec.NumRows())
		for fi := 0; fi < typ.NumField(); fi++ {
			name, ok := columnName(typ.Field(fi))
			if !ok {
				continue
			}
			idx := schema.FieldIndices(name)
			if len(idx) != 1 {
				t.Fatalf("%s: column %s found %d times", path, name, len(idx))
			}
			col := rec.Column(idx[0])
			for i := range rows {
				dst := reflect.ValueOf(&rows[i]).Elem().Field(fi)
				if err := setValue(dst, col, i); err != nil {
					t.Fatalf("%s: column %s row %d: %v", path, name, i, err)
				}
			}
		}
		out = append(out, rows...)
	}
	return out
}

func setValue(dst reflect.Value, col arrow.Array, i int) error {
	if dst.Kind() == reflect.Pointer {
		if col.IsNull(i) {
			return nil
		}
		p := reflect.New(dst.Type().Elem())
		dst.Set(p)
		dst = p.Elem()
	} else if col.IsNull(i) {
		return fmt.Errorf("NULL in a column that cannot be null")
	}
	switch a := col.(type) {
	case *array.String:
		dst.SetString(a.Value(i))
	case *array.Int64:
		dst.SetInt(a.Value(i))
	case *array.Float64:
		dst.SetFloat(a.Value(i))
	case *array.Boolean:
		dst.SetBool(a.Value(i))
	case *array.Timestamp:
		unit := a.DataType().(*arrow.TimestampType).Unit
		dst.Set(reflect.ValueOf(a.Value(i).ToTime(unit)))
	case *array.Map: // before *array.List: a Map is a List
		keys, items := a.Keys().(*array.String), a.Items().(*array.String)
		start, end := a.ValueOffsets(i)
		m := map[string]string{}
		for j := start; j < end; j++ {
			m[keys.Value(int(j))] = items.Value(int(j))
		}
		dst.Set(reflect.ValueOf(m))
	case *array.List:
		start, end := a.ValueOffsets(i)
		s := reflect.MakeSlice(dst.Type(), int(end-start), int(end-start))
		for j := start; j < end; j++ {
			if err := setValue(s.Index(int(j-start)), a.ListValues(), int(j)); err != nil {
				return err
			}
		}
		dst.Set(s)
	default:
		return fmt.Errorf("unexpected array %T", col)
	}
	return nil
}

// canon is a row as comparable plain values, keyed by column name: int64
// as decimal strings (JavaScript reads them as BigInt), floats as float64
// (nil when NULL), times as microseconds since the epoch (decimal), lists
// and maps with nil and empty alike. Rows of the Go structs, of Arrow and
// of node's JSON all become this.
func canon(row any) map[string]any {
	v := reflect.ValueOf(row)
	t := v.Type()
	out := map[string]any{}
	for i := 0; i < t.NumField(); i++ {
		if name, ok := columnName(t.Field(i)); ok {
			out[name] = canonValue(v.Field(i))
		}
	}
	return out
}

// columnName is the column of a struct field, as parquet-go names it:
// its tag's name, else the field's; false for a field it skips.
func columnName(sf reflect.StructField) (string, bool) {
	tag := sf.Tag.Get("parquet")
	if tag == "-" || !sf.IsExported() {
		return "", false
	}
	name, _, _ := strings.Cut(tag, ",")
	if name == "" {
		name = sf.Name
	}
	return name, true
}

func canonValue(v reflect.Value) any {
	if v.Kind() == reflect.Pointer {
		if v.IsNil() {
			return nil
		}
		v = v.Elem()
	}
	if tm, ok := v.Interface().(time.Time); ok {
		return strconv.FormatInt(tm.UnixMicro(), 10)
	}
	switch v.Kind() {
	case reflect.String:
		return v.String()
	case reflect.Int64:
		return strconv.FormatInt(v.Int(), 10)
	case reflect.Float64:
		return v.Float()
	case reflect.Bool:
		return v.Bool()
	case reflect.Slice:
		s := []any{}
		for i := 0; i < v.Len(); i++ {
			s = append(s, canonValue(v.Index(i)))
		}
		return s
	case reflect.Map:
		m := map[string]any{}
		for _, k := range v.MapKeys() {
			m[k.String()] = v.MapIndex(k).String()
		}
		return m
	}
	panic("canon: unexpected " + v.Type().String())
}

// compareRows reports every value that differs between want and got
// (rows already in canon form), naming row and column.
func compareRows(t *testing.T, what string, want, got []map[string]any) {
	t.Helper()
	if len(want) != len(got) {
		t.Errorf("%s: %d rows, want %d", what, len(got), len(want))
		return
	}
	bad := 0
	for i := range want {
		for col, w := range want[i] {
			g, ok := got[i][col]
			if !ok {
				t.Errorf("%s: row %d has no column %s", what, i, col)
				bad++
			} else if !sameValue(w, g) {
				t.Errorf("%s: row %d column %s = %#v, want %#v", what, i, col, g, w)
				bad++
			}
			if bad > 20 {
				t.Fatalf("%s: too many differences", what)
			}
		}
		if len(got[i]) != len(want[i]) {
			t.Errorf("%s: row %d has %d columns, want %d", what, i, len(got[i]), len(want[i]))
		}
	}
}

// sameValue is reflect.DeepEqual, except that -0 differs from 0 (both are
// float64 0 to ==), as a reader must keep the sign bit.
func sameValue(a, b any) bool {
	if fa, ok := a.(float64); ok {
		fb, ok := b.(float64)
		return ok && math.Float64bits(fa) == math.Float64bits(fb)
	}
	if sa, ok := a.([]any); ok {
		sb, ok := b.([]any)
		if !ok || len(sa) != len(sb) {
			return false
		}
		for i := range sa {
			if !sameValue(sa[i], sb[i]) {
				return false
			}
		}
		return true
	}
	return reflect.DeepEqual(a, b)
}

func canonAll[T any](rows []T) []map[string]any {
	out := make([]map[string]any, len(rows))
	for i, r := range rows {
		out[i] = canon(r)
	}
	return out
}
