package controlplane

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
	"k8s.io/apimachinery/pkg/util/wait"
)

// Process identifies one process beyond its pid, which the kernel hands out
// again once the process is gone. A record written by one run lets a later
// run tell whether the pid still belongs to the same process: pid, start
// time and boot all match, and it runs the same command line.
type Process struct {
	Name string `json:"name"`
	PID  int    `json:"pid"`
	// StartTime is field 22 of /proc/<pid>/stat: clock ticks after boot.
	StartTime uint64 `json:"startTime"`
	// BootID is /proc/sys/kernel/random/boot_id; start times restart with
	// every boot.
	BootID  string   `json:"bootID"`
	Cmdline []string `json:"cmdline"`
}

func (p Process) String() string {
	return fmt.Sprintf("%s (pid %d)", p.Name, p.PID)
}

// Same reports whether q is the process p recorded.
func (p Process) Same(q Process) bool {
	return p.PID == q.PID && p.StartTime == q.StartTime && p.BootID == q.BootID && slices.Equal(p.Cmdline, q.Cmdline)
}

// ReadProcess reads the identity of a running process from /proc. A zombie
// (exited, not yet reaped) is reported as not running.
func ReadProcess(pid int) (Process, error) {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return Process{}, err
	}
	st, err := parseStat(stat)
	if err != nil {
		return Process{}, fmt.Errorf("read /proc/%d/stat: %w", pid, err)
	}
	if st.state == 'Z' || st.state == 'X' {
		return Process{}, fmt.Errorf("process %d has exited: %w", pid, os.ErrNotExist)
	}
	cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil {
		return Process{}, err
	}
	boot, err := bootID()
	if err != nil {
		return Process{}, err
	}
	p := Process{PID: pid, StartTime: st.startTime, BootID: boot, Cmdline: splitCmdline(cmdline)}
	if len(p.Cmdline) > 0 {
		p.Name = filepath.Base(p.Cmdline[0])
	}
	return p, nil
}

// readStarted reads the identity of a process just started with argv0 as
// its first argument. For a moment after execve the kernel shows an empty
// command line; a record taken then would never match the process again.
func readStarted(pid int, argv0 string, timeout time.Duration) (Process, error) {
	var p Process
	var err error
	poll := wait.PollUntilContextTimeout(context.Background(), 5*time.Millisecond, timeout, true, func(context.Context) (bool, error) {
		p, err = ReadProcess(pid)
		return err == nil && len(p.Cmdline) > 0 && p.Cmdline[0] == argv0, nil
	})
	if poll != nil {
		return Process{}, fmt.Errorf("read process %d (%s): %w", pid, argv0, errors.Join(err, poll))
	}
	return p, nil
}

// Self is the identity of the calling process.
func Self() (Process, error) { return ReadProcess(os.Getpid()) }

// Running reports whether the process p recorded still runs.
func (p Process) Running() bool {
	q, err := ReadProcess(p.PID)
	return err == nil && p.Same(q)
}

// ErrNotSame is returned by Kill when the pid now belongs to another process.
var ErrNotSame = errors.New("the pid belongs to another process now")

// Kill sends SIGKILL to the process p recorded and waits up to timeout for
// it to exit. It never signals another process: the pid is pinned with a
// pidfd before its identity is checked, so a pid reused between the check
// and the signal cannot be hit. A process that is already gone is not an
// error; one whose pid was reused gives ErrNotSame and is left alone.
func (p Process) Kill(timeout time.Duration) error {
	fd, err := unix.PidfdOpen(p.PID, 0)
	if errors.Is(err, unix.ESRCH) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("open pidfd of %s: %w", p, err)
	}
	defer func() { _ = unix.Close(fd) }()
	q, err := ReadProcess(p.PID)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if !p.Same(q) {
		return fmt.Errorf("%s: %w", p, ErrNotSame)
	}
	if err := unix.PidfdSendSignal(fd, unix.SIGKILL, nil, 0); err != nil {
		if errors.Is(err, unix.ESRCH) {
			return nil
		}
		return fmt.Errorf("kill %s: %w", p, err)
	}
	// A pidfd becomes readable when its process exits, child of ours or not.
	fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
	deadline := time.Now().Add(timeout)
	for {
		left := time.Until(deadline)
		if left <= 0 {
			return fmt.Errorf("%s did not exit within %s of SIGKILL", p, timeout)
		}
		n, err := unix.Poll(fds, int(left.Milliseconds())+1)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return fmt.Errorf("wait for %s: %w", p, err)
		}
		if n > 0 {
			return nil
		}
	}
}

type stat struct {
	state     byte
	ppid      int
	startTime uint64
}

// parseStat reads the fields of /proc/<pid>/stat that identify a process.
// The command name (field 2) may hold spaces and parentheses; every field
// after its last ')' is fixed.
func parseStat(data []byte) (stat, error) {
	i := bytes.LastIndexByte(data, ')')
	if i < 0 {
		return stat{}, errors.New("no command name")
	}
	fields := strings.Fields(string(data[i+1:]))
	// fields[0] is field 3 (state), so field n is fields[n-3].
	if len(fields) < 20 || len(fields[0]) != 1 {
		return stat{}, fmt.Errorf("%d fields after the command name, want at least 20", len(fields))
	}
	ppid, err := strconv.Atoi(fields[1])
	if err != nil {
		return stat{}, fmt.Errorf("ppid: %w", err)
	}
	start, err := strconv.ParseUint(fields[19], 10, 64)
	if err != nil {
		return stat{}, fmt.Errorf("start time: %w", err)
	}
	return stat{state: fields[0][0], ppid: ppid, startTime: start}, nil
}

func splitCmdline(data []byte) []string {
	data = bytes.TrimSuffix(data, []byte{0})
	if len(data) == 0 {
		return nil
	}
	return strings.Split(string(data), "\x00")
}

func bootID() (string, error) {
	data, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		return "", fmt.Errorf("read boot id: %w", err)
	}
	return strings.TrimSpace(string(data)), nil
}

// children lists the running child processes of parent whose first
// argument is one of argv0s.
func children(parent int, argv0s ...string) ([]Process, error) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil, err
	}
	var out []Process
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		data, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		st, err := parseStat(data)
		if err != nil || st.ppid != parent {
			continue
		}
		p, err := ReadProcess(pid)
		if err != nil || len(p.Cmdline) == 0 || !slices.Contains(argv0s, p.Cmdline[0]) {
			continue
		}
		out = append(out, p)
	}
	return out, nil
}
