package results

import (
	"iter"
	"sync"
)

// Requests is a cell's request rows as its stage hands them on: to the
// assertions and to every sink. Each reads them in stored order as often
// as it needs, and none may assume they are all in memory: a long cell's
// rows are not (issue 50; a sweep spools them to its run directory as its
// requests finish, and a consumer reads them back a batch at a time).
//
// A row All yields is the consumer's until it asks for the next one: a
// consumer that keeps a row copies the struct (its slices stay valid, and
// are not to be written: they may be shared with other readers).
type Requests interface {
	// Len is how many rows All yields.
	Len() int
	// All yields every row in stored order.
	All() iter.Seq[*Request]
	// Err is why the last All stopped before its last row (rows that could
	// not be read back); nil when it yielded every row it was asked for.
	Err() error
}

// RequestSlice is rows held in memory as Requests. All yields the
// slice's own elements: a consumer that writes one writes the slice.
type RequestSlice []Request

func (s RequestSlice) Len() int { return len(s) }

func (s RequestSlice) All() iter.Seq[*Request] {
	return func(yield func(*Request) bool) {
		for i := range s {
			if !yield(&s[i]) {
				return
			}
		}
	}
}

func (RequestSlice) Err() error { return nil }

// AsRequests is rows as Requests: nil (no rows known) for nil.
func AsRequests(rows []Request) Requests {
	if rows == nil {
		return nil
	}
	return RequestSlice(rows)
}

// CollectRequests is reqs as a slice: the very slice when they are held
// in memory, else a copy of each row (which holds a long cell's rows in
// memory: a consumer that can read them as they come does). nil for nil.
func CollectRequests(reqs Requests) ([]Request, error) {
	switch r := reqs.(type) {
	case nil:
		return nil, nil
	case RequestSlice:
		return r, nil
	}
	out := make([]Request, 0, reqs.Len())
	for r := range reqs.All() {
		out = append(out, *r)
	}
	return out, reqs.Err()
}

// MapRequests is reqs with fix applied to each row as it is read (stamps
// an emitter leaves to the run, masking secrets, times as stored): rows
// on disk are fixed on each reading, rows in memory in place. fix must give
// the same row however often it runs on it.
func MapRequests(reqs Requests, fix func(*Request)) Requests {
	switch r := reqs.(type) {
	case nil:
		return nil
	case RequestSlice:
		for i := range r {
			fix(&r[i])
		}
		return r
	}
	return mappedRequests{reqs, fix}
}

type mappedRequests struct {
	Requests
	fix func(*Request)
}

func (m mappedRequests) All() iter.Seq[*Request] {
	return func(yield func(*Request) bool) {
		var row Request
		for r := range m.Requests.All() {
			row = *r
			m.fix(&row)
			if !yield(&row) {
				return
			}
		}
	}
}

// WatchRequests is reqs remembering the first error any reading of them
// met: a consumer that reads them several times checks once, at its end.
func WatchRequests(reqs Requests) *WatchedRequests { return &WatchedRequests{Requests: reqs} }

// WatchedRequests are Requests whose Err is the first error of any
// reading, not only the last one's.
type WatchedRequests struct {
	Requests
	first error
}

func (w *WatchedRequests) All() iter.Seq[*Request] {
	return func(yield func(*Request) bool) {
		for r := range w.Requests.All() {
			if !yield(r) {
				break
			}
		}
		if err := w.Requests.Err(); err != nil && w.first == nil {
			w.first = err
		}
	}
}

func (w *WatchedRequests) Err() error { return w.first }

// FilterRequests is the rows of reqs that keep holds for, read from reqs
// at each reading (counting them reads reqs once now).
func FilterRequests(reqs Requests, keep func(*Request) bool) Requests {
	n := 0
	for r := range reqs.All() {
		if keep(r) {
			n++
		}
	}
	return filteredRequests{reqs, keep, n}
}

type filteredRequests struct {
	Requests
	keep func(*Request) bool
	n    int
}

func (f filteredRequests) Len() int { return f.n }

func (f filteredRequests) All() iter.Seq[*Request] {
	return func(yield func(*Request) bool) {
		for r := range f.Requests.All() {
			if f.keep(r) && !yield(r) {
				return
			}
		}
	}
}

// Memoize is reqs keeping what their consumers derive from them alike
// (measure.Slices: the Parquet sink and the report both cut a cell's
// windows), so the second consumer does not read a long cell's rows
// again. nil for nil.
func Memoize(reqs Requests) Requests {
	if reqs == nil {
		return nil
	}
	return &MemoRequests{Requests: reqs}
}

// MemoRequests are Requests with a memo (Memoize).
type MemoRequests struct {
	Requests
	mu   sync.Mutex
	memo map[any]any
}

// Memo is the value kept under key, made by build the first time it is
// asked for (one at a time: a second asker waits for the first).
func (m *MemoRequests) Memo(key any, build func() any) any {
	m.mu.Lock()
	defer m.mu.Unlock()
	if v, ok := m.memo[key]; ok {
		return v
	}
	v := build()
	if m.memo == nil {
		m.memo = map[any]any{}
	}
	m.memo[key] = v
	return v
}
