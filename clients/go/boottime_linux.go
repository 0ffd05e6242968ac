package snowflaked

import (
	"syscall"
	"time"
	"unsafe"
)

const clockBoottime = 7 // CLOCK_BOOTTIME: counts a suspended host's sleep

// bootNow reads CLOCK_BOOTTIME: a lease's deadline is counted on it, so a
// host that was suspended does not think its lease still runs (Go's
// monotonic reading stops during a suspend).
func bootNow() time.Duration {
	var ts syscall.Timespec
	if _, _, errno := syscall.Syscall(syscall.SYS_CLOCK_GETTIME, clockBoottime, uintptr(unsafe.Pointer(&ts)), 0); errno != 0 {
		panic("clock_gettime(CLOCK_BOOTTIME): " + errno.Error())
	}
	return time.Duration(ts.Nano())
}
