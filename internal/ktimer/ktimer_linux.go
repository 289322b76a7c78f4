//go:build linux

package ktimer

import (
	"context"
	"errors"
	"os"
	"time"

	"golang.org/x/sys/unix"
)

// timerfd is a CLOCK_MONOTONIC timerfd registered with the runtime's
// poller (os.NewFile of a non-blocking descriptor): a read parks the
// goroutine until the timer expires, and the context's end sets a read
// deadline in the past, which wakes it.
type timerfd struct {
	fd   int
	file *os.File
	stop func() bool
}

func newKernelTimer(ctx context.Context) kernelTimer {
	fd, err := unix.TimerfdCreate(unix.CLOCK_MONOTONIC, unix.TFD_NONBLOCK|unix.TFD_CLOEXEC)
	if err != nil {
		return nil
	}
	t := &timerfd{fd: fd, file: os.NewFile(uintptr(fd), "ktimer-timerfd")}
	t.stop = context.AfterFunc(ctx, func() { _ = t.file.SetReadDeadline(time.Unix(1, 0)) })
	return t
}

// wait arms the timer for d and reads its expiry. A read cut short by
// the context's deadline, or one that returns nothing, is a wake the
// caller checks again.
func (t *timerfd) wait(d time.Duration) bool {
	spec := unix.ItimerSpec{Value: unix.NsecToTimespec(int64(d))}
	if unix.TimerfdSettime(t.fd, 0, &spec, nil) != nil {
		return false
	}
	var buf [8]byte
	_, err := t.file.Read(buf[:])
	return err == nil || errors.Is(err, os.ErrDeadlineExceeded)
}

func (t *timerfd) close() {
	t.stop()
	t.file.Close()
}
