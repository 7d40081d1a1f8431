package controlplane

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"syscall"
	"time"
)

// Program is a program a test started beside the control plane (KEDA,
// Prometheus), logging to a file and bound to the lifetime of the process
// that started it. (Process is a running program's identity.)
type Program struct {
	// Name is the program's name in messages.
	Name string
	// LogPath is the file its output goes to.
	LogPath string

	cmd  *exec.Cmd
	done chan struct{}
}

// ProgramOptions says how StartProgram runs a program.
type ProgramOptions struct {
	// Path is the program; Args its arguments; Env extra environment
	// entries ("K=V") on top of this process' environment.
	Path string
	Args []string
	Env  []string
	// LogPath receives standard output and error; Out, when set, receives
	// them instead (a developer watching a run).
	LogPath string
	Out     io.Writer
}

// StartProgram starts a program that must not outlive its parent: it gets
// PDEATHSIG (SIGKILL), so a killed test binary or demo takes it along, and
// its own process group.
func StartProgram(name string, opts ProgramOptions) (*Program, error) {
	logFile, err := os.Create(opts.LogPath)
	if err != nil {
		return nil, fmt.Errorf("create %s log: %w", name, err)
	}
	cmd := exec.Command(opts.Path, opts.Args...)
	cmd.Env = append(os.Environ(), opts.Env...)
	if opts.Out != nil {
		cmd.Stdout, cmd.Stderr = opts.Out, opts.Out
	} else {
		cmd.Stdout, cmd.Stderr = logFile, logFile
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
	if err := cmd.Start(); err != nil {
		logFile.Close()
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	p := &Program{Name: name, LogPath: opts.LogPath, cmd: cmd, done: make(chan struct{})}
	go func() {
		_ = cmd.Wait()
		logFile.Close()
		close(p.done)
	}()
	return p, nil
}

// Pid is the program's process id, for measuring it through /proc.
func (p *Program) Pid() int { return p.cmd.Process.Pid }

// Exited reports whether the program has ended, and its exit status.
func (p *Program) Exited() (bool, string) {
	select {
	case <-p.done:
		return true, p.cmd.ProcessState.String()
	default:
		return false, ""
	}
}

// Stop sends SIGTERM, waits up to grace, then kills. Its exit status after
// our SIGTERM says nothing a caller could act on, so Stop returns nothing.
func (p *Program) Stop(grace time.Duration) {
	if p == nil || p.cmd.Process == nil {
		return
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(grace):
		_ = p.cmd.Process.Kill()
		<-p.done
	}
}

// Log returns what the program has logged (the last max bytes when max >
// 0), for failure messages.
func (p *Program) Log(max int) string {
	data, _ := os.ReadFile(p.LogPath)
	if max > 0 && len(data) > max {
		data = data[len(data)-max:]
	}
	return string(data)
}
