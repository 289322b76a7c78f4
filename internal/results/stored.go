package results

import "time"

// StoredTime is t as the tables store a timestamp: the UTC instant, to
// the microsecond (the timestamp(microsecond) columns). The pipeline hands
// rows to sinks already so (Stored), live and replayed alike, so that what
// a sink writes is a function of the stored row and no sink rounds a time
// of its own.
func StoredTime(t time.Time) time.Time { return t.UTC().Truncate(time.Microsecond) }

// Stored is the cell row as the cells table stores it.
func (c Cell) Stored() Cell {
	c.StartedAt = StoredTime(c.StartedAt)
	return c
}

// Stored is the request row as the requests table stores it.
func (r Request) Stored() Request {
	r.SentAt = StoredTime(r.SentAt)
	return r
}

// Stored is the verdict row as the assertions table stores it.
func (v Verdict) Stored() Verdict {
	v.JudgedAt = StoredTime(v.JudgedAt)
	return v
}

// Stored is the sample row as the samples table stores it.
func (s Sample) Stored() Sample {
	s.At = StoredTime(s.At)
	return s
}

// Stored is the slice row as the slices table stores it.
func (s Slice) Stored() Slice {
	s.StartedAt = StoredTime(s.StartedAt)
	return s
}

// StoredRows is a copy of rows, each as its table stores it (nil for nil).
func StoredRows[T interface{ Stored() T }](rows []T) []T {
	if rows == nil {
		return nil
	}
	out := make([]T, len(rows))
	for i, r := range rows {
		out[i] = r.Stored()
	}
	return out
}
