//go:build unix

package autoscaler

import "syscall"

// processCPU is the CPU time the process has used (user and system), in
// nanoseconds: on a shared machine, a benchmark's CPU time varies less
// than its wall time.
func processCPU() int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}
