// Package csv writes cell rows as CSV: to stdout as each cell finishes (a
// table that pastes into a spreadsheet) and to cells.csv in the run directory.
package csv

import (
	"encoding/csv"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"time"

	"github.com/benchrun/benchrun/internal/results"
	"github.com/benchrun/benchrun/pipeline"
)

// DefaultColumns are the seed `bench` command's columns.
var DefaultColumns = []string{
	"isl", "osl", "concurrency", "first_call_ms", "ttft_ms", "prefill_tok_s", "itl_p50_ms", "itl_p99_ms",
	"decode_tok_s", "speedup_vs_c1", "batching_efficiency", "status", "reason", "notes",
}

// Output writes CSV rows to W and to cells.csv in the run directory.
type Output struct {
	W       io.Writer // usually stdout; nil for none
	Columns []string

	writers []*csv.Writer
	file    *os.File
	index   []int
}

// New returns a CSV output writing to w with the given columns (nil: DefaultColumns).
func New(w io.Writer, columns []string) (*Output, error) {
	if len(columns) == 0 {
		columns = DefaultColumns
	}
	o := &Output{W: w, Columns: columns}
	idx, err := columnIndex(columns)
	if err != nil {
		return nil, err
	}
	o.index = idx
	return o, nil
}

// Columns lists every column a cell row has, in order.
func Columns() []string {
	t := reflect.TypeOf(results.Cell{})
	var out []string
	for i := 0; i < t.NumField(); i++ {
		out = append(out, fieldName(t.Field(i)))
	}
	return out
}

func fieldName(f reflect.StructField) string {
	name, _, _ := strings.Cut(f.Tag.Get("parquet"), ",")
	return name
}

func columnIndex(columns []string) ([]int, error) {
	t := reflect.TypeOf(results.Cell{})
	byName := map[string]int{}
	for i := 0; i < t.NumField(); i++ {
		byName[fieldName(t.Field(i))] = i
	}
	var idx []int
	for _, c := range columns {
		i, ok := byName[c]
		if !ok {
			return nil, fmt.Errorf("unknown column %q (columns: %s)", c, strings.Join(Columns(), ","))
		}
		idx = append(idx, i)
	}
	return idx, nil
}

// Name implements pipeline.Output.
func (o *Output) Name() string { return "csv" }

// Start opens cells.csv and writes the headers.
func (o *Output) Start(run *pipeline.RunInfo) error {
	f, err := os.Create(filepath.Join(run.Dir, "cells.csv"))
	if err != nil {
		return fmt.Errorf("creating cells.csv: %w", err)
	}
	o.file = f
	o.writers = []*csv.Writer{csv.NewWriter(f)}
	if o.W != nil {
		o.writers = append(o.writers, csv.NewWriter(o.W))
	}
	for _, w := range o.writers {
		if err := w.Write(o.Columns); err != nil {
			return err
		}
		w.Flush()
	}
	return nil
}

// Cell writes one row and flushes, so each row appears as its cell finishes.
func (o *Output) Cell(c results.Cell, _ []results.Request) error {
	rec := Record(c, o.index)
	for _, w := range o.writers {
		if err := w.Write(rec); err != nil {
			return err
		}
		w.Flush()
		if err := w.Error(); err != nil {
			return err
		}
	}
	return nil
}

// Stop closes cells.csv.
func (o *Output) Stop(*pipeline.Summary) error {
	if o.file == nil {
		return nil
	}
	return o.file.Close()
}

// Record formats the given fields of a cell row.
func Record(c results.Cell, index []int) []string {
	v := reflect.ValueOf(c)
	rec := make([]string, len(index))
	for i, fi := range index {
		rec[i] = format(v.Field(fi))
	}
	return rec
}

func format(v reflect.Value) string {
	switch v.Kind() {
	case reflect.Float64:
		return strconv.FormatFloat(v.Float(), 'g', 8, 64)
	case reflect.Int64, reflect.Int:
		return strconv.FormatInt(v.Int(), 10)
	case reflect.String:
		return v.String()
	case reflect.Map:
		keys := v.MapKeys()
		var parts []string
		for _, k := range keys {
			parts = append(parts, k.String()+"="+v.MapIndex(k).String())
		}
		return strings.Join(parts, ";")
	}
	if t, ok := v.Interface().(time.Time); ok {
		return t.UTC().Format(time.RFC3339Nano)
	}
	return fmt.Sprint(v.Interface())
}
