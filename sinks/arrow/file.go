package arrow

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/benchrun/benchrun/internal/results"
)

// File is an Arrow IPC file of rows of type T being written: each Write is
// one record batch, streamed to a hidden temporary file beside the path
// (".cells.arrow.tmp-123", which no `*.arrow` glob matches); Close writes
// the footer, syncs the file and renames it into place. Until then the
// path does not exist (or keeps the file an earlier writer put there).
type File[T any] struct {
	path string
	tmp  *os.File
	bw   *bufio.Writer
	w    *ipc.FileWriter
	l    *layout
	rb   *array.RecordBuilder
	rows int64
	err  error // the first failure; every later call returns it
	done bool
}

// Create starts an Arrow IPC file of rows of type T at path. The schema
// is Schema[T]'s, with the metadata the Parquet files carry
// (benchrun.schema_version, and benchrun.table = table).
func Create[T any](path, table string) (f *File[T], err error) {
	meta := arrow.NewMetadata(
		[]string{"benchrun.schema_version", "benchrun.table"},
		[]string{strconv.Itoa(results.SchemaVersion), table},
	)
	l, err := layoutOf(reflect.TypeFor[T](), &meta)
	if err != nil {
		return nil, err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return nil, fmt.Errorf("writing %s: %w", path, err)
	}
	f = &File[T]{path: path, tmp: tmp, bw: bufio.NewWriterSize(tmp, 1<<20), l: l}
	mem := memory.NewGoAllocator()
	f.w, err = ipc.NewFileWriter(f.bw, ipc.WithSchema(l.schema), ipc.WithAllocator(mem))
	if err != nil {
		f.Abort()
		return nil, fmt.Errorf("writing %s: %w", path, err)
	}
	f.rb = array.NewRecordBuilder(mem, l.schema)
	return f, nil
}

// Path is the file's final path.
func (f *File[T]) Path() string { return f.path }

// Rows counts the rows written so far.
func (f *File[T]) Rows() int64 { return f.rows }

var errDone = errors.New("the file is closed")

// Write appends rows as one record batch (nothing for no rows). After a
// failure the file is unusable: every later call returns that error, and
// Close removes the temporary file instead of renaming it.
func (f *File[T]) Write(rows []T) error {
	if f.err != nil {
		return f.err
	}
	if f.done {
		return fmt.Errorf("writing %s: %w", f.path, errDone)
	}
	if len(rows) == 0 {
		return nil
	}
	f.rb.Reserve(len(rows))
	base := unsafe.Pointer(unsafe.SliceData(rows))
	for i, c := range f.l.cols {
		c.fill(f.rb.Field(i), unsafe.Add(base, c.off), len(rows), f.l.stride)
	}
	rec := f.rb.NewRecordBatch()
	defer rec.Release()
	if err := f.w.Write(rec); err != nil {
		f.err = fmt.Errorf("writing %s: %w", f.path, err)
		return f.err
	}
	f.rows += int64(len(rows))
	return nil
}

// Close writes the footer, syncs the temporary file and renames it to the
// path. After a failed Write it removes the temporary file and returns
// that failure: a file missing rows is never put in place.
func (f *File[T]) Close() error {
	if err := f.finish(); err != nil {
		return err
	}
	return f.commit()
}

// finish writes the footer and syncs and closes the temporary file; on
// failure it removes it.
func (f *File[T]) finish() error {
	if f.done {
		if f.err == nil {
			return fmt.Errorf("writing %s: %w", f.path, errDone)
		}
		return f.err
	}
	if f.err != nil {
		f.Abort()
		return f.err
	}
	f.done = true
	f.rb.Release()
	err := f.w.Close()
	if err == nil {
		err = f.bw.Flush()
	}
	if err == nil {
		// CreateTemp makes the file private; results are for every analyst.
		err = f.tmp.Chmod(0o644)
	}
	if err == nil {
		err = f.tmp.Sync()
	}
	if cerr := f.tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(f.tmp.Name())
		f.err = fmt.Errorf("writing %s: %w", f.path, err)
	}
	return f.err
}

// commit renames the finished temporary file into place.
func (f *File[T]) commit() error {
	if err := os.Rename(f.tmp.Name(), f.path); err != nil {
		os.Remove(f.tmp.Name())
		f.err = fmt.Errorf("writing %s: %w", f.path, err)
	}
	return f.err
}

// Abort gives the file up: the temporary file is removed, the path left
// as it was. Calling it after Close does nothing.
func (f *File[T]) Abort() {
	if f.done {
		return
	}
	f.done = true
	if f.err == nil {
		f.err = fmt.Errorf("writing %s: %w", f.path, errDone)
	}
	if f.rb != nil {
		f.rb.Release()
	}
	f.tmp.Close()
	os.Remove(f.tmp.Name())
}

// discard removes the temporary file, finished or not.
func (f *File[T]) discard() {
	f.Abort()
	os.Remove(f.tmp.Name())
}
