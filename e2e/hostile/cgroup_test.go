package hostile

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// memoryRoot is where cgroup v1 mounts its memory controller: on this
// project's machines and CI (Debian, root, cgroup v1 hybrid).
const memoryRoot = "/sys/fs/cgroup/memory"

// cgroupPrefix names the cgroups this suite creates, so that a run can
// remove what a killed run left.
const cgroupPrefix = "scaleplane-hostile-"

// memoryCgroup is a cgroup v1 memory cgroup made for the binary under test,
// a child of this test process's own memory cgroup, so that every limit
// above it still applies.
type memoryCgroup struct {
	dir   string
	limit int64
}

// newMemoryCgroup creates the cgroup with a hard limit of limit bytes and
// removes it when the test ends (after the process in it, whose cleanup is
// registered later, has exited). Without root, or without cgroup v1's
// memory controller, the test is skipped: it says so, and why.
func newMemoryCgroup(t *testing.T, limit int64) *memoryCgroup {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skipf("the hostile suite runs the binary in a memory cgroup it creates under %s, which needs root (euid %d)", memoryRoot, os.Geteuid())
	}
	if _, err := os.Stat(filepath.Join(memoryRoot, "memory.limit_in_bytes")); err != nil {
		t.Skipf("the hostile suite needs cgroup v1's memory controller at %s: %v", memoryRoot, err)
	}
	own, err := ownMemoryCgroup()
	if err != nil {
		t.Fatal(err)
	}
	parent := filepath.Join(memoryRoot, own)
	removeDeadCgroups(parent)
	c := &memoryCgroup{dir: filepath.Join(parent, cgroupPrefix+strconv.Itoa(os.Getpid())), limit: limit}
	if err := os.Mkdir(c.dir, 0o755); err != nil {
		t.Fatalf("create memory cgroup: %v", err)
	}
	t.Cleanup(func() {
		// A cgroup is removed with rmdir once no process is left in it.
		if err := syscall.Rmdir(c.dir); err != nil {
			t.Errorf("remove memory cgroup %s: %v", c.dir, err)
		}
	})
	if err := c.write("memory.limit_in_bytes", strconv.FormatInt(limit, 10)); err != nil {
		t.Fatal(err)
	}
	return c
}

// ownMemoryCgroup is this process's memory cgroup, relative to memoryRoot.
func ownMemoryCgroup() (string, error) {
	data, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return "", fmt.Errorf("read own cgroups: %w", err)
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		// hierarchy-ID:controller-list:path
		parts := strings.SplitN(sc.Text(), ":", 3)
		if len(parts) != 3 {
			continue
		}
		for _, ctl := range strings.Split(parts[1], ",") {
			if ctl == "memory" {
				return parts[2], nil
			}
		}
	}
	return "", errors.New("this process is in no cgroup v1 memory cgroup (see /proc/self/cgroup)")
}

// removeDeadCgroups removes this suite's cgroups whose test process no
// longer runs. rmdir fails on a cgroup that still has a process, so a live
// one is never removed.
func removeDeadCgroups(parent string) {
	entries, _ := os.ReadDir(parent)
	for _, e := range entries {
		pid, err := strconv.Atoi(strings.TrimPrefix(e.Name(), cgroupPrefix))
		if !e.IsDir() || !strings.HasPrefix(e.Name(), cgroupPrefix) || err != nil {
			continue
		}
		if syscall.Kill(pid, 0) == nil {
			continue
		}
		_ = syscall.Rmdir(filepath.Join(parent, e.Name()))
	}
}

func (c *memoryCgroup) write(name, value string) error {
	if err := os.WriteFile(filepath.Join(c.dir, name), []byte(value), 0o644); err != nil {
		return fmt.Errorf("set %s of memory cgroup: %w", name, err)
	}
	return nil
}

func (c *memoryCgroup) read(name string) (int64, error) {
	data, err := os.ReadFile(filepath.Join(c.dir, name))
	if err != nil {
		return 0, fmt.Errorf("read %s of memory cgroup: %w", name, err)
	}
	return strconv.ParseInt(strings.TrimSpace(string(data)), 10, 64)
}

// procsFile is where a process writes its pid to join the cgroup.
func (c *memoryCgroup) procsFile() string { return filepath.Join(c.dir, "cgroup.procs") }

// memoryStats is what the cgroup says about the memory its processes used.
type memoryStats struct {
	// Peak is memory.max_usage_in_bytes: the most the cgroup was charged
	// (anonymous memory and page cache) since it was made.
	Peak int64
	// Failcnt is memory.failcnt: how often a charge hit the limit (the
	// kernel then reclaimed page cache or, failing that, OOM-killed).
	Failcnt int64
	// OOMKills is oom_kill of memory.oom_control.
	OOMKills int64
}

func (c *memoryCgroup) stats() (memoryStats, error) {
	var s memoryStats
	var err error
	if s.Peak, err = c.read("memory.max_usage_in_bytes"); err != nil {
		return s, err
	}
	if s.Failcnt, err = c.read("memory.failcnt"); err != nil {
		return s, err
	}
	data, err := os.ReadFile(filepath.Join(c.dir, "memory.oom_control"))
	if err != nil {
		return s, fmt.Errorf("read memory.oom_control of memory cgroup: %w", err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, "oom_kill "); ok {
			s.OOMKills, _ = strconv.ParseInt(v, 10, 64)
		}
	}
	return s, nil
}

// vmHWM is a process's peak resident set size (VmHWM in
// /proc/<pid>/status), in bytes.
func vmHWM(pid int) (int64, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return kb << 10, err
		}
	}
	return 0, fmt.Errorf("no VmHWM in /proc/%d/status", pid)
}
