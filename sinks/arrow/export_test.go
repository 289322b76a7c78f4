package arrow

import (
	"reflect"

	"github.com/apache/arrow-go/v18/arrow"
)

// Schema returns the Arrow schema of the rows of type T: one field per
// struct field with a `parquet:"name,..."` tag, with that name, in field
// order, typed as the Parquet column parquet-go writes for it reads in
// Arrow (pqarrow's mapping): int64 → int64, float64 → float64, string →
// utf8, bool → bool, time.Time → timestamp in the tag's unit (UTC), a
// pointer → the same type, nullable; []float64 and []int64 → list of
// non-null elements; map[string]string → map<utf8, utf8> of non-null
// values. A field of any other type is an error: a new kind of column
// needs its mapping written, and the type test compares with pqarrow.
// The sink builds the same layout for each table it writes; the tests
// read its schema here.
func Schema[T any]() (*arrow.Schema, error) {
	l, err := layoutOf(reflect.TypeFor[T](), nil)
	if err != nil {
		return nil, err
	}
	return l.schema, nil
}
