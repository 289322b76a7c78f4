package arrow

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
	"time"
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/benchrun/benchrun/internal/results"
)

// layout is how the rows of one Go type become Arrow columns: the schema,
// and for each column the offset of its field in the row and a function
// that appends that field of many rows to the column's builder.
type layout struct {
	schema *arrow.Schema
	cols   []column
	stride uintptr // size of one row
}

type column struct {
	off  uintptr
	fill fillFunc
}

// A fillFunc appends one field of n rows to b: first is the field's
// address in the first row, each next row's stride bytes further. b is
// the builder of the field's Arrow type (the layout built both).
type fillFunc func(b array.Builder, first unsafe.Pointer, n int, stride uintptr)

func layoutOf(t reflect.Type, meta *arrow.Metadata) (*layout, error) {
	rowFields, err := results.Fields(t)
	if err != nil {
		return nil, fmt.Errorf("arrow: %w", err)
	}
	l := &layout{stride: t.Size()}
	var fields []arrow.Field
	for _, rf := range rowFields {
		f, fill, err := fieldOf(rf.Type, rf.Opts)
		if err != nil {
			return nil, fmt.Errorf("arrow: %s.%s (column %s): %w", t, rf.GoName, rf.Name, err)
		}
		f.Name = rf.Name
		fields = append(fields, f)
		l.cols = append(l.cols, column{off: rf.Offset, fill: fill})
	}
	l.schema = arrow.NewSchema(fields, meta)
	return l, nil
}

// at is the address of the field in row i, given its address in row 0.
func at(first unsafe.Pointer, i int, stride uintptr) unsafe.Pointer {
	return unsafe.Add(first, uintptr(i)*stride)
}

// Options of a parquet tag that change neither the column's type nor its
// nullability: encodings and compression codecs.
var neutralOpts = []string{"plain", "dict", "delta", "split", "snappy", "gzip", "brotli", "lz4", "zstd", "uncompressed"}

type tagOpts struct {
	list     bool
	optional bool
	unit     arrow.TimeUnit
	hasUnit  bool
}

func parseOpts(opts string) (tagOpts, error) {
	var o tagOpts
	if opts == "" {
		return o, nil
	}
	for _, opt := range strings.Split(opts, ",") {
		switch {
		case opt == "list":
			o.list = true
		case opt == "optional":
			o.optional = true
		case strings.HasPrefix(opt, "timestamp(") && strings.HasSuffix(opt, ")"):
			unit, utc, _ := strings.Cut(strings.TrimSuffix(strings.TrimPrefix(opt, "timestamp("), ")"), ":")
			if utc != "" && utc != "utc" {
				return o, fmt.Errorf("tag option %q: only UTC-adjusted timestamps are mapped", opt)
			}
			switch unit {
			case "millisecond":
				o.unit = arrow.Millisecond
			case "microsecond":
				o.unit = arrow.Microsecond
			case "nanosecond":
				o.unit = arrow.Nanosecond
			default:
				return o, fmt.Errorf("tag option %q: unit not mapped (millisecond, microsecond or nanosecond)", opt)
			}
			o.hasUnit = true
		case slices.Contains(neutralOpts, opt):
		default:
			return o, fmt.Errorf("tag option %q has no Arrow mapping here", opt)
		}
	}
	return o, nil
}

var (
	timeType   = reflect.TypeFor[time.Time]()
	stringType = reflect.TypeFor[string]()
	int64Type  = reflect.TypeFor[int64]()
	floatType  = reflect.TypeFor[float64]()
	boolType   = reflect.TypeFor[bool]()
)

// fieldOf maps one Go field type (with its tag options) to an Arrow field
// (name left empty) and the function that fills its column.
func fieldOf(t reflect.Type, opts string) (arrow.Field, fillFunc, error) {
	o, err := parseOpts(opts)
	if err != nil {
		return arrow.Field{}, nil, err
	}
	if o.hasUnit && t != timeType && t != reflect.PointerTo(timeType) {
		return arrow.Field{}, nil, fmt.Errorf("a timestamp option on a %s", t)
	}
	if o.list && t.Kind() != reflect.Slice {
		return arrow.Field{}, nil, fmt.Errorf("the list option on a %s", t)
	}
	unit := arrow.Nanosecond // parquet-go's unit for an untagged time.Time
	if o.hasUnit {
		unit = o.unit
	}
	switch {
	case t.Kind() == reflect.Pointer:
		typ, fill, err := nullable(t.Elem(), unit)
		if err != nil {
			return arrow.Field{}, nil, err
		}
		return arrow.Field{Type: typ, Nullable: true}, fill, nil
	case o.optional:
		// parquet-go writes the zero value of an optional field as NULL;
		// nothing here needs that, so it is not mapped.
		return arrow.Field{}, nil, fmt.Errorf("the optional option on a non-pointer %s is not mapped (use a pointer)", t)
	case t == stringType:
		return arrow.Field{Type: arrow.BinaryTypes.String}, func(b array.Builder, first unsafe.Pointer, n int, stride uintptr) {
			sb := b.(*array.StringBuilder)
			size := 0
			for i := 0; i < n; i++ {
				size += len(*(*string)(at(first, i, stride)))
			}
			sb.ReserveData(size)
			for i := 0; i < n; i++ {
				sb.Append(*(*string)(at(first, i, stride)))
			}
		}, nil
	case t == int64Type:
		return arrow.Field{Type: arrow.PrimitiveTypes.Int64}, func(b array.Builder, first unsafe.Pointer, n int, stride uintptr) {
			ib := b.(*array.Int64Builder)
			for i := 0; i < n; i++ {
				ib.UnsafeAppend(*(*int64)(at(first, i, stride)))
			}
		}, nil
	case t == floatType:
		return arrow.Field{Type: arrow.PrimitiveTypes.Float64}, func(b array.Builder, first unsafe.Pointer, n int, stride uintptr) {
			fb := b.(*array.Float64Builder)
			for i := 0; i < n; i++ {
				fb.UnsafeAppend(*(*float64)(at(first, i, stride)))
			}
		}, nil
	case t == boolType:
		return arrow.Field{Type: arrow.FixedWidthTypes.Boolean}, func(b array.Builder, first unsafe.Pointer, n int, stride uintptr) {
			bb := b.(*array.BooleanBuilder)
			for i := 0; i < n; i++ {
				bb.UnsafeAppend(*(*bool)(at(first, i, stride)))
			}
		}, nil
	case t == timeType:
		return arrow.Field{Type: timestampType(unit)}, func(b array.Builder, first unsafe.Pointer, n int, stride uintptr) {
			tb := b.(*array.TimestampBuilder)
			for i := 0; i < n; i++ {
				tb.UnsafeAppend(timestamp(*(*time.Time)(at(first, i, stride)), unit))
			}
		}, nil
	case t == reflect.TypeFor[[]float64]():
		return listField(arrow.PrimitiveTypes.Float64), func(b array.Builder, first unsafe.Pointer, n int, stride uintptr) {
			lb := b.(*array.ListBuilder)
			vb := lb.ValueBuilder().(*array.Float64Builder)
			for i := 0; i < n; i++ {
				lb.Append(true)
				vb.AppendValues(*(*[]float64)(at(first, i, stride)), nil)
			}
		}, nil
	case t == reflect.TypeFor[[]int64]():
		return listField(arrow.PrimitiveTypes.Int64), func(b array.Builder, first unsafe.Pointer, n int, stride uintptr) {
			lb := b.(*array.ListBuilder)
			vb := lb.ValueBuilder().(*array.Int64Builder)
			for i := 0; i < n; i++ {
				lb.Append(true)
				vb.AppendValues(*(*[]int64)(at(first, i, stride)), nil)
			}
		}, nil
	case t == reflect.TypeFor[map[string]string]():
		mt := arrow.MapOfFields(arrow.Field{Type: arrow.BinaryTypes.String}, arrow.Field{Type: arrow.BinaryTypes.String})
		return arrow.Field{Type: mt}, func(b array.Builder, first unsafe.Pointer, n int, stride uintptr) {
			mb := b.(*array.MapBuilder)
			kb := mb.KeyBuilder().(*array.StringBuilder)
			vb := mb.ItemBuilder().(*array.StringBuilder)
			var keys []string
			for i := 0; i < n; i++ {
				m := *(*map[string]string)(at(first, i, stride))
				mb.Append(true)
				// Sorted, so the same rows always make the same file.
				keys = keys[:0]
				for k := range m {
					keys = append(keys, k)
				}
				slices.Sort(keys)
				for _, k := range keys {
					kb.Append(k)
					vb.Append(m[k])
				}
			}
		}, nil
	}
	return arrow.Field{}, nil, fmt.Errorf("type %s has no Arrow mapping here", t)
}

// nullable maps the element type of a pointer field: nil is NULL.
func nullable(t reflect.Type, unit arrow.TimeUnit) (arrow.DataType, fillFunc, error) {
	switch t {
	case floatType:
		return arrow.PrimitiveTypes.Float64, func(b array.Builder, first unsafe.Pointer, n int, stride uintptr) {
			fb := b.(*array.Float64Builder)
			for i := 0; i < n; i++ {
				if p := *(**float64)(at(first, i, stride)); p != nil {
					fb.UnsafeAppend(*p)
				} else {
					fb.UnsafeAppendBoolToBitmap(false)
				}
			}
		}, nil
	case int64Type:
		return arrow.PrimitiveTypes.Int64, func(b array.Builder, first unsafe.Pointer, n int, stride uintptr) {
			ib := b.(*array.Int64Builder)
			for i := 0; i < n; i++ {
				if p := *(**int64)(at(first, i, stride)); p != nil {
					ib.UnsafeAppend(*p)
				} else {
					ib.UnsafeAppendBoolToBitmap(false)
				}
			}
		}, nil
	case boolType:
		return arrow.FixedWidthTypes.Boolean, func(b array.Builder, first unsafe.Pointer, n int, stride uintptr) {
			bb := b.(*array.BooleanBuilder)
			for i := 0; i < n; i++ {
				if p := *(**bool)(at(first, i, stride)); p != nil {
					bb.UnsafeAppend(*p)
				} else {
					bb.UnsafeAppendBoolToBitmap(false)
				}
			}
		}, nil
	case stringType:
		return arrow.BinaryTypes.String, func(b array.Builder, first unsafe.Pointer, n int, stride uintptr) {
			sb := b.(*array.StringBuilder)
			for i := 0; i < n; i++ {
				if p := *(**string)(at(first, i, stride)); p != nil {
					sb.Append(*p)
				} else {
					sb.AppendNull()
				}
			}
		}, nil
	case timeType:
		return timestampType(unit), func(b array.Builder, first unsafe.Pointer, n int, stride uintptr) {
			tb := b.(*array.TimestampBuilder)
			for i := 0; i < n; i++ {
				if p := *(**time.Time)(at(first, i, stride)); p != nil {
					tb.UnsafeAppend(timestamp(*p, unit))
				} else {
					tb.UnsafeAppendBoolToBitmap(false)
				}
			}
		}, nil
	}
	return nil, nil, fmt.Errorf("pointer to %s has no Arrow mapping here", t)
}

func timestampType(unit arrow.TimeUnit) *arrow.TimestampType {
	// Parquet's isAdjustedToUTC=true is Arrow's time zone "UTC".
	return &arrow.TimestampType{Unit: unit, TimeZone: "UTC"}
}

// timestamp is t in unit since the Unix epoch, as parquet-go writes it.
func timestamp(t time.Time, unit arrow.TimeUnit) arrow.Timestamp {
	switch unit {
	case arrow.Millisecond:
		return arrow.Timestamp(t.UnixMilli())
	case arrow.Microsecond:
		return arrow.Timestamp(t.UnixMicro())
	}
	return arrow.Timestamp(t.UnixNano())
}

// listField is a list of non-null elements named "element", as a Parquet
// LIST of required elements reads in Arrow.
func listField(elem arrow.DataType) arrow.Field {
	return arrow.Field{Type: arrow.ListOfField(arrow.Field{Name: "element", Type: elem})}
}
