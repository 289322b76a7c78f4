package results

import (
	"reflect"
	"strings"
	"testing"
	"time"
)

// Every timestamp column of every table is one Stored rounds: a time
// column added to a row type without its line in Stored fails here, as
// does a column stored at another precision than StoredTime's, or a table
// (results.Tables) without its row type here.
func TestStoredCoversEveryTimestamp(t *testing.T) {
	at := time.Date(2026, 12, 1, 4, 0, 0, 123456789, time.FixedZone("X", 3600))
	want := StoredTime(at)
	if want.Nanosecond() != 123456000 || want.Location() != time.UTC || !want.Equal(at.Truncate(time.Microsecond)) {
		t.Fatalf("StoredTime(%v) = %v", at, want)
	}
	check := func(name string, row any, stored func(any) any) {
		t.Helper()
		v := reflect.ValueOf(row).Elem()
		var times []string
		for i := range v.NumField() {
			f := v.Type().Field(i)
			if f.Type != reflect.TypeFor[time.Time]() {
				continue
			}
			if tag := f.Tag.Get("parquet"); !strings.Contains(tag, "timestamp(microsecond)") {
				t.Errorf("%s.%s is stored as %q, not at StoredTime's precision", name, f.Name, tag)
			}
			v.Field(i).Set(reflect.ValueOf(at))
			times = append(times, f.Name)
		}
		if len(times) == 0 {
			t.Errorf("%s has no timestamp column", name)
		}
		got := reflect.ValueOf(stored(v.Interface()))
		for _, f := range times {
			if tm := got.FieldByName(f).Interface().(time.Time); tm != want {
				t.Errorf("Stored(%s).%s = %v, want %v", name, f, tm, want)
			}
		}
	}
	check("Cell", &Cell{}, func(r any) any { return Stored(r.(Cell)) })
	check("Request", &Request{}, func(r any) any { return Stored(r.(Request)) })
	check("Slice", &Slice{}, func(r any) any { return Stored(r.(Slice)) })
	check("Verdict", &Verdict{}, func(r any) any { return Stored(r.(Verdict)) })
	check("Sample", &Sample{}, func(r any) any { return Stored(r.(Sample)) })
	if len(Tables) != 5 {
		t.Errorf("the tables are %v: check each one's row type here", Tables)
	}
	if StoredRows[Request](nil) != nil {
		t.Error("StoredRows(nil) is not nil")
	}
	in := []Request{{SentAt: at}}
	if out := StoredRows(in); out[0].SentAt != want || in[0].SentAt != at {
		t.Errorf("StoredRows: %v, and its input %v; want a stored copy", out[0].SentAt, in[0].SentAt)
	}
}
