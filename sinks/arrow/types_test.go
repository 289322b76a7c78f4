package arrow

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

	"github.com/benchrun/benchrun/internal/results"
	"github.com/benchrun/benchrun/internal/results/resultstest"
	pqs "github.com/benchrun/benchrun/sinks/parquet"
)

// pqarrowSchema writes rows with the Parquet output's own WriteFile and
// returns the Arrow schema arrow-go's pqarrow reads that file as, with the
// file's key-value metadata.
func pqarrowSchema[T any](t *testing.T, table string, rows []T) (*arrow.Schema, map[string]string) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), table)
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "part.parquet")
	if err := pqs.WriteFile(path, rows); err != nil {
		t.Fatal(err)
	}
	r, err := file.OpenParquetFile(path, false)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	kv := map[string]string{}
	for _, e := range r.MetaData().KeyValueMetadata() {
		if e.Value != nil {
			kv[e.Key] = *e.Value
		}
	}
	fr, err := pqarrow.NewFileReader(r, pqarrow.ArrowReadProperties{}, memory.NewGoAllocator())
	if err != nil {
		t.Fatal(err)
	}
	s, err := fr.Schema()
	if err != nil {
		t.Fatal(err)
	}
	return s, kv
}

// sameSchema reports every field where got differs from want in name,
// type or nullability, in order. Field metadata is not compared: pqarrow
// gives every field "PARQUET:field_id": "-1", the Parquet field id
// parquet-go leaves unset, which means nothing outside a Parquet file
// (and pyarrow drops it the same way when it writes IPC from Parquet).
func sameSchema(t *testing.T, what string, want, got *arrow.Schema) {
	t.Helper()
	if want.NumFields() != got.NumFields() {
		t.Errorf("%s: %d fields, pqarrow reads %d", what, got.NumFields(), want.NumFields())
	}
	for i := 0; i < min(want.NumFields(), got.NumFields()); i++ {
		w, g := want.Field(i), got.Field(i)
		if w.Name != g.Name {
			t.Errorf("%s: field %d is %s, pqarrow reads %s", what, i, g.Name, w.Name)
		}
		// TypeEqual compares nested types field by field, their names,
		// types and nullability included (a list's element, a map's
		// key and value).
		if !arrow.TypeEqual(w.Type, g.Type) || w.Type.String() != g.Type.String() {
			t.Errorf("%s: %s is %s, pqarrow reads %s", what, g.Name, g.Type, w.Type)
		}
		if w.Nullable != g.Nullable {
			t.Errorf("%s: %s nullable=%v, pqarrow reads nullable=%v", what, g.Name, g.Nullable, w.Nullable)
		}
	}
}

// TestSchemaIsPqarrows checks the reflection mapping against an
// independent one: for every table's row type, Schema equals (names,
// order, types, nullability) the schema arrow-go's pqarrow gives the
// Parquet file the Parquet output writes of the same rows. For the two
// tables this package writes, the schema read back from the .arrow files
// is checked too, with their metadata (the Parquet file's benchrun keys).
func TestSchemaIsPqarrows(t *testing.T) {
	now := time.Now()
	m := map[string]string{"k": "v"}
	check := func(what string, want *arrow.Schema, got *arrow.Schema, err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		sameSchema(t, what, want, got)
	}
	cellWant, cellKV := pqarrowSchema(t, results.TableCells, []results.Cell{{StartedAt: now, Metadata: m}})
	s, err := Schema[results.Cell]()
	check("Schema[Cell]", cellWant, s, err)
	reqWant, reqKV := pqarrowSchema(t, results.TableRequests, []results.Request{{SentAt: now, ChunkGapsMs: []float64{1}, ChunkTokens: []int64{1}}})
	s, err = Schema[results.Request]()
	check("Schema[Request]", reqWant, s, err)
	// The tables this package does not write map as well: the mapping is
	// of Go types, whichever row carries them.
	want, _ := pqarrowSchema(t, results.TableAssertions, []results.Verdict{{JudgedAt: now, Values: m}})
	s, err = Schema[results.Verdict]()
	check("Schema[Verdict]", want, s, err)
	want, _ = pqarrowSchema(t, results.TableSamples, []results.Sample{{At: now, Labels: m}})
	s, err = Schema[results.Sample]()
	check("Schema[Sample]", want, s, err)

	// What the files hold.
	cellsPath, reqsPath := writeArrow(t, t.TempDir(), testCells())
	for _, f := range []struct {
		path string
		want *arrow.Schema
		kv   map[string]string
	}{{cellsPath, cellWant, cellKV}, {reqsPath, reqWant, reqKV}} {
		got, _ := readIPC(t, f.path)
		sameSchema(t, f.path, f.want, got)
		for _, key := range []string{"benchrun.schema_version", "benchrun.table"} {
			v, ok := got.Metadata().GetValue(key)
			if ok2 := f.kv[key] != ""; !ok || !ok2 || v != f.kv[key] {
				t.Errorf("%s: metadata %s = %q (present %v); the Parquet file has %q", f.path, key, v, ok, f.kv[key])
			}
		}
	}

	// The mapping, spelled out for a reader of this test (pqarrow agreed
	// with each above; these pin what agreeing means).
	byName := func(s *arrow.Schema, name string) arrow.Field {
		t.Helper()
		f, ok := s.FieldsByName(name)
		if !ok {
			t.Fatalf("no field %s", name)
		}
		return f[0]
	}
	for _, c := range []struct {
		s          *arrow.Schema
		name, want string
		nullable   bool
	}{
		{cellWant, "run_id", "utf8", false}, // plain UTF-8 strings: parquet-go writes no dictionary or enum type
		{cellWant, "attempt", "int64", false},
		{cellWant, "started_at", "timestamp[us, tz=UTC]", false},
		{cellWant, "metadata", "map<utf8, utf8, items_non_nullable>", false},
		{cellWant, "rate", "float64", false},
		{cellWant, "ttft_p99_ms", "float64", true},
		{cellWant, "max_model_len", "int64", true},
		{reqWant, "chunk_gaps_ms", "list<element: float64>", false},
		{reqWant, "chunk_tokens", "list<element: int64>", false},
		{reqWant, "usage_reported", "bool", false},
	} {
		f := byName(c.s, c.name)
		if f.Type.String() != c.want || f.Nullable != c.nullable {
			t.Errorf("pqarrow reads %s as %s nullable=%v; this test expects %s nullable=%v", c.name, f.Type, f.Nullable, c.want, c.nullable)
		}
	}
}

// otherRow has the Go types no table uses yet: an untagged time, other
// units, pointers to every scalar, an untagged name, a skipped field.
type otherRow struct {
	Plain     time.Time  `parquet:"plain"`
	Milli     time.Time  `parquet:"milli,timestamp(millisecond)"`
	Nano      time.Time  `parquet:"nano,timestamp(nanosecond)"`
	MaybeTime *time.Time `parquet:"maybe_time,timestamp(microsecond)"`
	MaybeInt  *int64     `parquet:"maybe_int"`
	MaybeBool *bool      `parquet:"maybe_bool"`
	MaybeStr  *string    `parquet:"maybe_str"`
	Flag      bool       `parquet:"flag"`
	Compress  string     `parquet:"compress,zstd"`
	Untagged  int64
	Skipped   string `parquet:"-"`
}

func otherRows() []otherRow {
	now := time.Date(2026, 12, 1, 4, 0, 0, 123456789, time.UTC)
	return []otherRow{
		{Plain: now, Milli: now, Nano: now, Flag: true, Compress: "zstd", Untagged: -7, Skipped: "never written"},
		{Plain: now.Add(time.Hour), Milli: now, Nano: now, MaybeTime: &now, MaybeInt: results.Some[int64](0),
			MaybeBool: results.Some(false), MaybeStr: results.Some(""), Untagged: 1},
	}
}

// TestSchemaOtherTypes: their mapping also agrees with pqarrow's reading
// of the file parquet-go writes, and their values read back as Parquet
// reads them (NULL and zero apart), so a new column of such a type is
// right the day it is added.
func TestSchemaOtherTypes(t *testing.T) {
	rows := otherRows()
	want, _ := pqarrowSchema(t, "other", rows)
	got, err := Schema[otherRow]()
	if err != nil {
		t.Fatal(err)
	}
	sameSchema(t, "Schema[otherRow]", want, got)

	dir := t.TempDir()
	f, err := Create[otherRow](filepath.Join(dir, "other.arrow"), "other")
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Write(rows); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if err := pqs.WriteFile(filepath.Join(dir, "other.parquet"), rows); err != nil {
		t.Fatal(err)
	}
	fromParquet, err := resultstest.ReadFile[otherRow](filepath.Join(dir, "other.parquet"))
	if err != nil {
		t.Fatal(err)
	}
	back := decode[otherRow](t, filepath.Join(dir, "other.arrow"))
	compareRows(t, "other.arrow vs Parquet", canonAll(fromParquet), canonAll(back))
	for i := range back {
		for _, p := range [][2]time.Time{{back[i].Milli, rows[i].Milli.Truncate(time.Millisecond)}, {back[i].Nano, rows[i].Nano}} {
			if !p[0].Equal(p[1]) {
				t.Errorf("row %d: time %v read back, want %v (the column's unit)", i, p[0], p[1])
			}
		}
	}
}

// TestSchemaRefusesUnmapped: a field type without a mapping is an error
// naming the field, never a silently wrong column.
func TestSchemaRefusesUnmapped(t *testing.T) {
	type row struct {
		A int64            `parquet:"a"`
		B int32            `parquet:"b"`
		C map[string]int64 `parquet:"c"`
	}
	if _, err := Schema[row](); err == nil {
		t.Error("Schema of an int32 field: no error")
	} else {
		t.Log(err)
	}
	type opt struct {
		A string `parquet:"a,optional"`
	}
	if _, err := Schema[opt](); err == nil {
		t.Error("Schema of an optional non-pointer: no error")
	}
	type enum struct {
		A string `parquet:"a,enum"`
	}
	if _, err := Schema[enum](); err == nil {
		t.Error("Schema of an enum string: no error")
	}
}
