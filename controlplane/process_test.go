package controlplane

import (
	"errors"
	"os/exec"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestParseStat(t *testing.T) {
	// Fields 5 to 21, then the start time (field 22), then more.
	tail := " 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 987654 23 24\n"
	tests := []struct {
		name    string
		in      string
		want    stat
		wantErr bool
	}{
		{name: "plain", in: "42 (etcd) S 7" + tail, want: stat{state: 'S', ppid: 7, startTime: 987654}},
		// A command name may hold spaces and parentheses; only the last ')'
		// ends it.
		{name: "name with ) and spaces", in: "42 (a) R 9 (b) Z 3" + tail, want: stat{state: 'Z', ppid: 3, startTime: 987654}},
		{name: "zombie", in: "42 (kube-apiserver) Z 1" + tail, want: stat{state: 'Z', ppid: 1, startTime: 987654}},
		{name: "truncated", in: "42 (etcd) S 7 1 2", wantErr: true},
		{name: "no name", in: "42 etcd S 7" + tail, wantErr: true},
		{name: "bad ppid", in: "42 (etcd) S x" + tail, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseStat([]byte(tt.in))
			if (err != nil) != tt.wantErr {
				t.Fatalf("parseStat error = %v, want error %v", err, tt.wantErr)
			}
			if diff := cmp.Diff(tt.want, got, cmp.AllowUnexported(stat{})); !tt.wantErr && diff != "" {
				t.Errorf("parseStat (-want +got):\n%s", diff)
			}
		})
	}
}

func TestSameProcess(t *testing.T) {
	rec := Process{Name: "etcd", PID: 10, StartTime: 500, BootID: "b1", Cmdline: []string{"/d/bin/etcd", "--data-dir=/d/etcd"}}
	tests := []struct {
		name   string
		change func(*Process)
		want   bool
	}{
		{name: "same", change: func(*Process) {}, want: true},
		{name: "pid reused later", change: func(p *Process) { p.StartTime = 900 }, want: false},
		{name: "other boot", change: func(p *Process) { p.BootID = "b2" }, want: false},
		{name: "other command", change: func(p *Process) { p.Cmdline = []string{"/usr/bin/vim"} }, want: false},
		{name: "other arguments", change: func(p *Process) { p.Cmdline = []string{"/d/bin/etcd", "--data-dir=/e/etcd"} }, want: false},
		{name: "other pid", change: func(p *Process) { p.PID = 11 }, want: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			seen := rec
			seen.Cmdline = append([]string(nil), rec.Cmdline...)
			tt.change(&seen)
			if got := rec.Same(seen); got != tt.want {
				t.Errorf("Same = %v, want %v", got, tt.want)
			}
		})
	}
}

// TestKillOnlyTheRecordedProcess: a record whose start time or
// command line differs from the running process with that pid (a reused
// pid) is never signalled; the true record is killed.
func TestKillOnlyTheRecordedProcess(t *testing.T) {
	cmd := exec.Command("sleep", "120")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(exited)
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-exited
	})
	rec, err := readStarted(cmd.Process.Pid, "sleep", 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"sleep", "120"}, rec.Cmdline); diff != "" {
		t.Fatalf("cmdline (-want +got):\n%s", diff)
	}
	older := rec
	older.StartTime--
	other := rec
	other.Cmdline = []string{"sleep", "121"}
	for _, r := range []Process{older, other} {
		if err := r.Kill(5 * time.Second); !errors.Is(err, ErrNotSame) {
			t.Errorf("Kill of a record that is not the running process = %v, want ErrNotSame", err)
		}
	}
	select {
	case <-exited:
		t.Fatal("the running process was killed through a record of another one")
	default:
	}
	if !rec.Running() {
		t.Fatal("Running = false for the running process")
	}
	if err := rec.Kill(10 * time.Second); err != nil {
		t.Fatalf("Kill: %v", err)
	}
	select {
	case <-exited:
	case <-time.After(10 * time.Second):
		t.Fatal("the process did not exit after Kill")
	}
	if rec.Running() {
		t.Error("Running = true after Kill")
	}
	if err := rec.Kill(time.Second); err != nil {
		t.Errorf("Kill of a process that is gone = %v, want nil", err)
	}
}

func TestExtraFlagsComeSortedAsNameEqualsValue(t *testing.T) {
	got := extraFlags(map[string]string{"kube-api-qps": "500", "horizontal-pod-autoscaler-sync-period": "15s"})
	want := []string{"--horizontal-pod-autoscaler-sync-period=15s", "--kube-api-qps=500"}
	if !slices.Equal(got, want) {
		t.Errorf("extraFlags = %q, want %q", got, want)
	}
	if got := extraFlags(nil); len(got) != 0 {
		t.Errorf("extraFlags(nil) = %q, want none", got)
	}
}
