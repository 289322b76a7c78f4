//go:build !linux

package sim

func newAlarm() alarm { return newTimerAlarm() }
