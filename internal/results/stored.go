package results

import "time"

// StoredTime is t as the tables store a timestamp: the UTC instant, to
// the microsecond (the timestamp(microsecond) columns). The pipeline hands
// rows to sinks already so (Stored), live and replayed alike, so that what
// a sink writes is a function of the stored row and no sink rounds a time
// of its own.
func StoredTime(t time.Time) time.Time { return t.UTC().Truncate(time.Microsecond) }

// Row is a row of one of a run directory's tables.
type Row interface {
	Cell | Request | Slice | Verdict | Sample
}

// Stored is row as its table stores it: each of its timestamp columns at
// StoredTime.
func Stored[T Row](row T) T {
	switch r := any(&row).(type) {
	case *Cell:
		r.StartedAt = StoredTime(r.StartedAt)
	case *Request:
		r.SentAt = StoredTime(r.SentAt)
	case *Slice:
		r.StartedAt = StoredTime(r.StartedAt)
	case *Verdict:
		r.JudgedAt = StoredTime(r.JudgedAt)
	case *Sample:
		r.At = StoredTime(r.At)
	}
	return row
}

// StoreRows makes each of rows as its table stores it, in place: a
// cell's request rows are not copied once more on their way to the sinks.
func StoreRows[T Row](rows []T) {
	for i := range rows {
		rows[i] = Stored(rows[i])
	}
}

// StoredRows is a copy of rows, each as its table stores it (nil for nil).
func StoredRows[T Row](rows []T) []T {
	if rows == nil {
		return nil
	}
	out := make([]T, len(rows))
	for i, r := range rows {
		out[i] = Stored(r)
	}
	return out
}
