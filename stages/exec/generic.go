package exec

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/benchrun/benchrun/internal/suggest"
	"io"
	"reflect"
	"sort"
	"strings"

	"github.com/benchrun/benchrun/internal/results"
)

// The generic parsers read records (a JSON array or object, JSON lines,
// CSV with a header) and put each field in the benchrun column the plan's
// `fields` maps it to, or in the column of its own name; the rest go to
// exec_extra. A value that does not fit its column's type is kept in
// exec_extra too, with a note, so a row is never dropped for one field.

// reservedColumns are the columns benchrun itself stamps on every row:
// a program's value would be overwritten, so vet refuses mapping to them.
var reservedColumns = map[string]string{
	"run_id": "the run's id", "plan": "the plan's name", "stage": "the stage's name",
	"attempt": "the run's attempt", "measurement": "the cell's measurement", "metadata": "the plan's metadata",
	"model_digest": "the model file's digest", "hostname": "this host's name", "hardware": "this host's hardware",
	"benchrun_version": "benchrun's version", "started_at": "the program's start", "program": "the parser's name",
	"exec_extra": "the unmapped fields",
}

// cellColumn is one column of results.Cell a program's field may fill.
type cellColumn struct {
	col  results.Column
	kind reflect.Kind // of the value: Float64, Int64 or String
	ptr  bool
}

var cellColumns = func() map[string]cellColumn {
	out := map[string]cellColumn{}
	for _, c := range results.Columns() {
		ft := c.Type
		if c.Nullable {
			ft = ft.Elem()
		}
		switch ft.Kind() {
		case reflect.Float64, reflect.Int64, reflect.String:
			out[c.Name] = cellColumn{col: c, kind: ft.Kind(), ptr: c.Nullable}
		}
	}
	return out
}()

// columnNames lists every column of a cell row (for a did-you-mean).
func columnNames() []string { return results.ColumnNames() }

// checkColumn says why a program's field cannot go to column ("": it can).
func checkColumn(column string) string {
	if why, ok := reservedColumns[column]; ok {
		return fmt.Sprintf("%s is benchrun's own column (%s): a program's value would be overwritten", column, why)
	}
	if _, ok := cellColumns[column]; ok {
		return ""
	}
	for _, c := range columnNames() {
		if c == column {
			return fmt.Sprintf("%s is not a number or string column", column)
		}
	}
	hint := ""
	if s := suggest.Closest(column, columnNames()); s != "" {
		hint = fmt.Sprintf("; did you mean %q?", s)
	}
	return fmt.Sprintf("%q is not a column of benchrun's rows (docs/RESULTS.md lists them)%s", column, hint)
}

// parseGeneric reads format (json, jsonl, csv) records from out with the
// mapping fields (program name → column).
func parseGeneric(format string, out []byte, fields map[string]string) ([]record, error) {
	var rows []map[string]any
	var perr error
	trimmed := bytes.TrimSpace(out)
	if len(trimmed) == 0 {
		return nil, errors.New("no output on stdout")
	}
	switch format {
	case parserJSON:
		if start, isArray := arrayStart(trimmed); isArray {
			rows, perr = jsonArray(trimmed[start:], "JSON")
		} else {
			dec := json.NewDecoder(bytes.NewReader(trimmed[start:]))
			dec.UseNumber()
			var m map[string]any
			if err := dec.Decode(&m); err != nil {
				perr = fmt.Errorf("JSON: want an object or an array of objects: %w", err)
			} else {
				rows = []map[string]any{m}
			}
		}
	case parserJSONL:
		rows, perr = jsonLines(trimmed, "JSON lines")
	case parserCSV:
		rows, perr = csvRecords(trimmed)
	default:
		return nil, fmt.Errorf("unknown parser %q", format)
	}
	var recs []record
	for _, m := range rows {
		recs = append(recs, genericRecord(format, flatten(m), fields))
	}
	disambiguate(recs, nil)
	if len(recs) == 0 && perr == nil {
		perr = fmt.Errorf("no %s records on stdout", format)
	}
	return recs, perr
}

// csvRecords reads a header line and the records after it (as strings:
// each column's type decides how a value is read).
func csvRecords(b []byte) ([]map[string]any, error) {
	r := csv.NewReader(bytes.NewReader(b))
	r.FieldsPerRecord = -1
	r.TrimLeadingSpace = true
	header, err := r.Read()
	if err != nil {
		return nil, fmt.Errorf("CSV header: %w", err)
	}
	for i := range header {
		header[i] = strings.TrimSpace(header[i])
	}
	var out []map[string]any
	for {
		rec, err := r.Read()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return out, fmt.Errorf("CSV: after %d records: %w", len(out), err)
		}
		m := map[string]any{}
		for i, v := range rec {
			if i < len(header) {
				m[header[i]] = v
			} else {
				m[fmt.Sprintf("field_%d", i+1)] = v
			}
		}
		out = append(out, m)
	}
}

// flatten names a nested JSON object's fields a.b (the form `fields`
// uses); arrays stay values of their own field.
func flatten(m map[string]any) map[string]any {
	out := map[string]any{}
	var walk func(prefix string, m map[string]any)
	walk = func(prefix string, m map[string]any) {
		for k, v := range m {
			if sub, ok := v.(map[string]any); ok && len(sub) > 0 {
				walk(prefix+k+".", sub)
				continue
			}
			out[prefix+k] = v
		}
	}
	walk("", m)
	return out
}

// genericRecord maps one record onto a row.
func genericRecord(format string, m map[string]any, fields map[string]string) record {
	c := results.Cell{Program: format}
	extra := map[string]any{}
	var notes []string
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys) // the same notes, in the same order, every time
	for _, k := range keys {
		v := m[k]
		col, mapped := fields[k]
		if !mapped {
			col = k
		}
		cc, ok := cellColumns[col]
		if !ok || reservedColumns[col] != "" {
			extra[k] = v
			continue
		}
		if !setColumn(&c, cc, v) {
			extra[k] = v
			if mapped {
				notes = append(notes, fmt.Sprintf("%s: %s is not a %s for %s", k, shortJSON(v), kindName(cc.kind), col))
			}
		}
	}
	// A record that says it failed is an error row with its words: a
	// program's "error" field (a string, or an object with a message),
	// or a status that is not ok.
	if e, ok := m["error"]; ok && e != nil && e != false && e != "" {
		c.Status, c.Reason = results.StatusError, errorText(e)
	} else if msg, ok := m["error.message"]; ok && msg != nil && msg != "" {
		c.Status, c.Reason = results.StatusError, errorText(msg) // an object, flattened
	}
	switch c.Status {
	case "", results.StatusOK, results.StatusError, results.StatusSkipped:
	default:
		c.Reason = strings.TrimPrefix(fmt.Sprintf("%s; status %q is not one of ok, error, skipped", c.Reason, c.Status), "; ")
		c.Status = results.StatusError
	}
	c.ExecExtra = extraJSON(extra)
	c.Notes = strings.Join(notes, "; ")
	id := c.CellID
	if id == "" {
		id = c.BenchTest
	}
	if id == "" {
		id = "row"
	}
	c.CellID = ""
	return record{id: id, cell: c}
}

// errorText is a record's error field as a reason: a string as it is, an
// object's message, anything else as JSON.
func errorText(e any) string {
	switch v := e.(type) {
	case string:
		return v
	case map[string]any:
		if msg, ok := v["message"].(string); ok && msg != "" {
			return msg
		}
	}
	b, _ := json.Marshal(e)
	return string(b)
}

// measuredSomething says whether a row holds a measurement: a nullable
// metric column with a value (not the machine's or the GPU's columns,
// which benchrun fills around any program, nor cost, which follows from
// a measurement).
func measuredSomething(c *results.Cell) bool {
	for name, cc := range cellColumns {
		if !cc.ptr || cc.kind == reflect.String || strings.HasPrefix(name, "machine_") || strings.HasPrefix(name, "gpu_") ||
			strings.Contains(name, "cost") || strings.Contains(name, "dollar") {
			continue
		}
		if !cc.col.IsNull(c) {
			return true
		}
	}
	return false
}

func kindName(k reflect.Kind) string {
	if k == reflect.String {
		return "string"
	}
	return "number"
}

func shortJSON(v any) string {
	b, _ := json.Marshal(v)
	if len(b) > 40 {
		return string(b[:40]) + "…"
	}
	return string(b)
}

// setColumn puts v in the column of row c, reading it as the column's
// type; false when it is not one (a null leaves a nullable column NULL).
func setColumn(c *results.Cell, cc cellColumn, v any) bool {
	if v == nil || v == "" && cc.kind != reflect.String {
		return cc.ptr // NULL, or not a number for a required one
	}
	var val any
	ok := false
	switch cc.kind {
	case reflect.Float64:
		val, ok = asFloat(v)
	case reflect.Int64:
		val, ok = asInt(v)
	case reflect.String:
		val, ok = asString(v)
	}
	if !ok {
		return false
	}
	cc.col.Set(c, val)
	return true
}
