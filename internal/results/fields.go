package results

import (
	"fmt"
	"reflect"
	"strings"
)

// Field is one stored column of a row type as its parquet tag declares
// it: the column's name, the tag's options ("optional", "list",
// "timestamp(microsecond)", ...), and where the value sits in a row.
type Field struct {
	Name   string       // the column's name (parquet-go's: the Go name when untagged)
	Opts   string       // the tag's options after the name
	GoName string       // the struct field's name, for errors
	Type   reflect.Type // the field's Go type
	Offset uintptr      // the field's offset in a row
}

// Fields lists the stored columns of row type t (Cell, Request, Slice,
// ...) in column order, skipping unexported and `parquet:"-"` fields:
// the one walk over a row type's tags that an encoder other than
// parquet-go's (the Arrow sink) builds its layout from.
func Fields(t reflect.Type) ([]Field, error) {
	if t.Kind() != reflect.Struct {
		return nil, fmt.Errorf("rows of %s: want a struct", t)
	}
	var out []Field
	for i := 0; i < t.NumField(); i++ {
		sf := t.Field(i)
		if !sf.IsExported() {
			continue
		}
		tag := sf.Tag.Get("parquet")
		if tag == "-" {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		if name == "" {
			name = sf.Name
		}
		out = append(out, Field{Name: name, Opts: opts, GoName: sf.Name, Type: sf.Type, Offset: sf.Offset})
	}
	return out, nil
}
