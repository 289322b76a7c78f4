//go:build linux

package sim

import (
	"os"
	"time"

	"golang.org/x/sys/unix"
)

// fdAlarm is an alarm on a timerfd that Go's network poller watches: its
// expiry wakes the poller at once, with the kernel timer's precision.
type fdAlarm struct {
	fd   int
	file *os.File // fd, registered with the poller (it is non-blocking)
}

// newAlarm is a timerfd alarm, or a Go timer's where no timerfd can be
// made (a seccomp profile that refuses it).
func newAlarm() alarm {
	fd, err := unix.TimerfdCreate(unix.CLOCK_MONOTONIC, unix.TFD_NONBLOCK|unix.TFD_CLOEXEC)
	if err != nil {
		return newTimerAlarm()
	}
	return &fdAlarm{fd: fd, file: os.NewFile(uintptr(fd), "sim-pacer-timerfd")}
}

func (a *fdAlarm) set(d time.Duration) {
	spec := unix.ItimerSpec{Value: unix.NsecToTimespec(int64(d))}
	_ = unix.TimerfdSettime(a.fd, 0, &spec, nil) // EINVAL only for a bad spec, which d > 0 is not
}

func (a *fdAlarm) wait() {
	var buf [8]byte // the number of expiries since the last read
	for {
		n, err := a.file.Read(buf[:])
		if err != nil {
			// Not seen: the file lives as long as the process. Fire
			// rather than block for good; the pacer wakes what is due
			// and sets the alarm again.
			time.Sleep(100 * time.Microsecond)
			return
		}
		if n == 8 {
			return
		}
	}
}
