//go:build !nodev

package main

import (
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/scaleplane/scaleplane/controlplane"
)

// snapshot maps every path under dir to its content (folders to "/").
func snapshot(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		if d.IsDir() {
			out[rel] = "/"
			return nil
		}
		data, err := os.ReadFile(path)
		out[rel] = string(data)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func writeState(t *testing.T, dir string, st devState) {
	t.Helper()
	st.Kind = devStateKind
	data, err := json.Marshal(st)
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(dir, devStateFile), string(data), 0o600)
}

func noLog(string) {}

// TestDataFolder: what --data-dir dev takes, what it refuses
// (leaving it exactly as it was), and what it removes at exit.
func TestDataFolder(t *testing.T) {
	me := self(t)
	dead, other := deadRun(t), runningOther(t)
	tests := []struct {
		name string
		// setup prepares the folder in root and returns the --data-dir.
		setup func(t *testing.T, root string) string
		// wantErr is part of the refusal, or "" when the folder is taken.
		wantErr string
		// wantCreated and wantLeft (whether the folder exists after a
		// normal exit) when it is taken.
		wantCreated, wantLeft, wantPrevious bool
		// afterOpen checks the folder once it is taken.
		afterOpen func(t *testing.T, path string)
	}{
		{name: "missing", setup: func(_ *testing.T, root string) string { return filepath.Join(root, "new") }, wantCreated: true},
		{name: "missing parent", setup: func(_ *testing.T, root string) string { return filepath.Join(root, "no", "new") }, wantErr: "create data folder"},
		{name: "empty", setup: func(t *testing.T, root string) string {
			dir := filepath.Join(root, "empty")
			if err := os.Mkdir(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			return dir
		}, wantLeft: true},
		{name: "user's files", setup: func(t *testing.T, root string) string {
			writeFile(t, filepath.Join(root, "notes.txt"), "mine", 0o644)
			if err := os.Mkdir(filepath.Join(root, "etcd"), 0o755); err != nil {
				t.Fatal(err)
			}
			writeFile(t, filepath.Join(root, "etcd", "member"), "also mine", 0o600)
			return root
		}, wantErr: "is not empty and scaleplane dev did not make it"},
		{name: "a file", setup: func(t *testing.T, root string) string {
			writeFile(t, filepath.Join(root, "f"), "x", 0o644)
			return filepath.Join(root, "f")
		}, wantErr: "is not a folder"},
		{name: "state file of something else", setup: func(t *testing.T, root string) string {
			writeFile(t, filepath.Join(root, devStateFile), `{"kind":"other"}`, 0o644)
			return root
		}, wantErr: "only reuses a folder it made"},
		{name: "unreadable state file", setup: func(t *testing.T, root string) string {
			writeFile(t, filepath.Join(root, devStateFile), `{"kind":`, 0o644)
			return root
		}, wantErr: "only reuses a folder it made"},
		{name: "dev's, in use by a running dev", setup: func(t *testing.T, root string) string {
			writeState(t, root, devState{CreatedFolder: true, Owner: &other})
			return root
		}, wantErr: "in use by a running scaleplane dev"},
		{name: "dev's, kept by a clean exit", setup: func(t *testing.T, root string) string {
			dir := filepath.Join(root, "kept")
			if err := os.MkdirAll(filepath.Join(dir, "etcd"), 0o700); err != nil {
				t.Fatal(err)
			}
			writeState(t, dir, devState{CreatedFolder: true, Keep: true})
			return dir
		}, wantCreated: true, wantPrevious: true},
		{name: "dev's, left by a killed run", setup: func(t *testing.T, root string) string {
			dir := filepath.Join(root, "killed")
			if err := os.MkdirAll(filepath.Join(dir, "apiserver"), 0o700); err != nil {
				t.Fatal(err)
			}
			writeState(t, dir, devState{CreatedFolder: false, Keep: true, Owner: &dead})
			return dir
		}, wantCreated: false, wantLeft: true, wantPrevious: true},
		{name: "dev's, left by a killed run without --keep", setup: func(t *testing.T, root string) string {
			dir := filepath.Join(root, "killed")
			if err := os.MkdirAll(filepath.Join(dir, "etcd"), 0o700); err != nil {
				t.Fatal(err)
			}
			writeFile(t, filepath.Join(dir, "etcd", "member"), "old data", 0o600)
			writeState(t, dir, devState{CreatedFolder: true, Owner: &dead, Webhooks: &webhookRecord{URL: "https://127.0.0.1:1"}})
			return dir
		}, wantCreated: true, afterOpen: func(t *testing.T, path string) {
			// That run was to leave nothing; its data is not reused.
			if _, err := os.Stat(filepath.Join(path, "etcd")); !os.IsNotExist(err) {
				t.Errorf("the killed run's etcd data is still there: %v", err)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := t.TempDir()
			path := tt.setup(t, root)
			before := snapshot(t, root)
			f, err := openDataFolder(path, false, me, noLog)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("openDataFolder error = %v, want one saying %q", err, tt.wantErr)
				}
				if diff := cmp.Diff(before, snapshot(t, root)); diff != "" {
					t.Errorf("a refused folder changed (-before +after):\n%s", diff)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if f.state.CreatedFolder != tt.wantCreated {
				t.Errorf("CreatedFolder = %v, want %v", f.state.CreatedFolder, tt.wantCreated)
			}
			if (f.previous != nil) != tt.wantPrevious {
				t.Errorf("previous = %+v, want one: %v", f.previous, tt.wantPrevious)
			}
			if tt.afterOpen != nil {
				tt.afterOpen(t, path)
			}
			st, ok, err := readState(path)
			if err != nil || !ok || st.Owner == nil || !st.Owner.Same(me) {
				t.Fatalf("state file does not name this run as owner: %+v %v %v", st, ok, err)
			}
			// What the control plane would make, and a file of the user's
			// when dev did not make the folder.
			for _, name := range folderEntries() {
				if err := os.MkdirAll(filepath.Join(path, name), 0o700); err != nil {
					t.Fatal(err)
				}
				writeFile(t, filepath.Join(path, name, "x"), "x", 0o600)
			}
			if err := f.close(); err != nil {
				t.Fatal(err)
			}
			entries, err := os.ReadDir(path)
			if left := err == nil; left != tt.wantLeft {
				t.Fatalf("folder left after exit = %v, want %v", left, tt.wantLeft)
			}
			if len(entries) > 0 {
				t.Errorf("dev's files left after exit: %v", entries)
			}
		})
	}
}

// TestDataFolderKeepsWhatItDidNotMake: files the user put in
// an empty folder during the run stay at exit, and so does the folder dev
// made to hold them.
func TestDataFolderKeepsWhatItDidNotMake(t *testing.T) {
	path := filepath.Join(t.TempDir(), "data")
	f, err := openDataFolder(path, false, self(t), noLog)
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(path, "etcd"), "dev's", 0o600)
	writeFile(t, filepath.Join(path, "mine.txt"), "user's", 0o600)
	err = f.close()
	if err == nil || !strings.Contains(err.Error(), "mine.txt") {
		t.Errorf("close error = %v, want one naming the file it left", err)
	}
	if diff := cmp.Diff(map[string]string{".": "/", "mine.txt": "user's"}, snapshot(t, path)); diff != "" {
		t.Errorf("folder after exit (-want +got):\n%s", diff)
	}
}

func TestLeftovers(t *testing.T) {
	etcd := controlplane.Process{Name: "etcd", PID: 10, StartTime: 100, BootID: "b", Cmdline: []string{"/d/bin/etcd"}}
	apiserver := controlplane.Process{Name: "kube-apiserver", PID: 11, StartTime: 101, BootID: "b", Cmdline: []string{"/d/bin/kube-apiserver"}}
	kcm := controlplane.Process{Name: "kube-controller-manager", PID: 12, StartTime: 102, BootID: "b", Cmdline: []string{"/bin/kube-controller-manager"}}
	now := map[int]controlplane.Process{
		10: etcd,
		// pid 11 was given to another process after kube-apiserver exited
		11: {Name: "bash", PID: 11, StartTime: 900, BootID: "b", Cmdline: []string{"bash"}},
		// pid 12 is gone
	}
	read := func(pid int) (controlplane.Process, error) {
		p, ok := now[pid]
		if !ok {
			return controlplane.Process{}, os.ErrNotExist
		}
		return p, nil
	}
	got := leftovers([]controlplane.Process{etcd, apiserver, kcm}, read)
	if diff := cmp.Diff([]controlplane.Process{etcd}, got); diff != "" {
		t.Errorf("leftovers (-want +got):\n%s", diff)
	}
}

// TestCleanCrashedRuns: a start undoes what killed runs left in
// their temporary folders (processes, kubeconfig entries, the folder with
// its credentials) and touches nothing else: folders of running devs,
// folders without a state file, processes whose pid now belongs to another
// process.
func TestCleanCrashedRuns(t *testing.T) {
	tmp := t.TempDir()
	dead := deadRun(t)
	start := func() (controlplane.Process, chan struct{}) {
		cmd, p := startSleep(t)
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		t.Cleanup(func() { _ = cmd.Process.Kill(); <-done })
		return p, done
	}
	leftover, leftoverDone := start()
	reused, reusedDone := start()
	reusedRecord := reused
	reusedRecord.StartTime-- // the record is of an earlier process with this pid

	// A user kubeconfig the killed run added its entries to.
	kubeconfig := filepath.Join(tmp, "config")
	writeFile(t, kubeconfig, userKubeconfigYAML, 0o600)
	k, err := readUserKubeconfig(kubeconfig, dead)
	if err != nil {
		t.Fatal(err)
	}
	edit := k.edit()
	if err := k.add(clusterKubeconfig(t), dead); err != nil {
		t.Fatal(err)
	}

	mk := func(name string, st *devState) string {
		dir := filepath.Join(tmp, name)
		if err := os.MkdirAll(filepath.Join(dir, "apiserver"), 0o700); err != nil {
			t.Fatal(err)
		}
		writeFile(t, filepath.Join(dir, "apiserver", "ca.key"), "secret", 0o600)
		if st != nil {
			writeState(t, dir, *st)
		}
		return dir
	}
	killed := mk(devTempPattern+"killed", &devState{CreatedFolder: true, Owner: &dead, Processes: []controlplane.Process{leftover, reusedRecord}, Kubeconfig: &edit})
	me := self(t)
	live := mk(devTempPattern+"live", &devState{CreatedFolder: true, Owner: &me})
	unmarked := mk(devTempPattern+"unmarked", nil)
	kept := mk(devTempPattern+"kept", &devState{CreatedFolder: true, Keep: true, Owner: &dead, Webhooks: &webhookRecord{URL: "https://127.0.0.1:1", Mutating: "m", Validating: "v"}})
	notOurs := mk("other-tool-x", &devState{CreatedFolder: true, Owner: &dead})
	untouched := map[string]map[string]string{}
	for _, dir := range []string{live, unmarked, notOurs} {
		untouched[dir] = snapshot(t, dir)
	}

	var logged []string
	if err := cleanCrashedRuns(tmp, func(s string) { logged = append(logged, s) }); err != nil {
		t.Fatal(err)
	}
	t.Logf("logged:\n%s", strings.Join(logged, "\n"))

	if _, err := os.Stat(killed); !os.IsNotExist(err) {
		t.Errorf("the killed run's folder is still there: %v", err)
	}
	select {
	case <-leftoverDone:
	case <-time.After(10 * time.Second):
		t.Error("the killed run's leftover process still runs")
	}
	select {
	case <-reusedDone:
		t.Error("a process whose pid was recorded by an earlier process was killed")
	default:
	}
	want, _ := readUserKubeconfig(kubeconfig, me)
	if want.base.Contexts[devKubeconfigName] != nil || want.base.CurrentContext != "prod" {
		t.Errorf("the killed run's kubeconfig entries were not undone: current %q", want.base.CurrentContext)
	}
	for dir, before := range untouched {
		if diff := cmp.Diff(before, snapshot(t, dir)); diff != "" {
			t.Errorf("%s changed (-before +after):\n%s", dir, diff)
		}
	}
	st, ok, err := readState(kept)
	if err != nil || !ok {
		t.Fatalf("the kept folder's state: %v %v", ok, err)
	}
	if diff := cmp.Diff(devState{Kind: devStateKind, CreatedFolder: true, Keep: true, Webhooks: &webhookRecord{URL: "https://127.0.0.1:1", Mutating: "m", Validating: "v"}}, st); diff != "" {
		t.Errorf("the kept folder's state after cleaning (-want +got):\n%s", diff)
	}
	if _, err := os.Stat(filepath.Join(kept, "apiserver", "ca.key")); err != nil {
		t.Errorf("the kept folder lost its data: %v", err)
	}
}

// TestCleanCrashedRunsKubeconfigFolderGone: a killed run edited a
// kubeconfig in a folder that has been removed since (a temporary folder of
// a test or a CI job). Nothing is left to undo there, so the next start
// removes the run's data folder, credentials included, rather than
// reporting a lock it cannot take and leaving the folder behind.
func TestCleanCrashedRunsKubeconfigFolderGone(t *testing.T) {
	tmp := t.TempDir()
	dead := deadRun(t)
	gone := filepath.Join(t.TempDir(), "ci-job")
	if err := os.Mkdir(gone, 0o700); err != nil {
		t.Fatal(err)
	}
	kubeconfig := filepath.Join(gone, "config")
	writeFile(t, kubeconfig, userKubeconfigYAML, 0o600)
	k, err := readUserKubeconfig(kubeconfig, dead)
	if err != nil {
		t.Fatal(err)
	}
	edit := k.edit()
	if err := k.add(clusterKubeconfig(t), dead); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(gone); err != nil {
		t.Fatal(err)
	}
	killed := filepath.Join(tmp, devTempPattern+"killed")
	if err := os.MkdirAll(filepath.Join(killed, "apiserver"), 0o700); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(killed, "apiserver", "ca.key"), "secret", 0o600)
	writeState(t, killed, devState{CreatedFolder: true, Owner: &dead, Kubeconfig: &edit})

	if err := cleanCrashedRuns(tmp, noLog); err != nil {
		t.Fatalf("clean: %v", err)
	}
	if _, err := os.Stat(killed); !os.IsNotExist(err) {
		t.Errorf("the killed run's folder, with its credentials, is still there: %v", err)
	}
	if _, err := os.Stat(gone); !os.IsNotExist(err) {
		t.Errorf("the removed kubeconfig folder was made again: %v", err)
	}
}

// TestKubeconfigStaleLock: a dev killed while it held the kubeconfig's lock
// left the lock, with its marker; the lock of a dev that no longer runs is
// taken over. The lock of a running dev, and kubectl's (empty), are waited
// for and never removed.
func TestKubeconfigStaleLock(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "config")
	writeFile(t, path, userKubeconfigYAML, 0o600)
	crashed := deadRun(t)
	k, err := readUserKubeconfig(path, crashed)
	if err != nil {
		t.Fatal(err)
	}
	edit := k.edit()
	if err := k.add(clusterKubeconfig(t), crashed); err != nil {
		t.Fatal(err)
	}
	marker := func(p controlplane.Process) string {
		data, err := json.Marshal(markerOf(p))
		if err != nil {
			t.Fatal(err)
		}
		return string(data)
	}
	writeFile(t, path+".lock", marker(crashed), 0o600)
	if err := undoKubeconfig(crashedKubeconfig(edit), edit, crashed); err != nil {
		t.Fatalf("undo with the lock of a killed dev left: %v", err)
	}
	if cfg := load(t, path); cfg.Contexts[devKubeconfigName] != nil {
		t.Error("the killed run's entries are still in the kubeconfig")
	}
	if _, err := os.Stat(path + ".lock"); !os.IsNotExist(err) {
		t.Errorf("the lock is still there after the undo: %v", err)
	}

	other := runningOther(t)
	writeFile(t, path+".lock", marker(other), 0o600)
	err = withKubeconfigLock(path, func() error { t.Error("ran under a lock a running dev holds"); return nil })
	if err == nil || !strings.Contains(err.Error(), "is held by a running scaleplane dev") {
		t.Errorf("error %v, want one naming the running dev", err)
	}
	if data, err := os.ReadFile(path + ".lock"); err != nil || string(data) != marker(other) {
		t.Errorf("the running dev's lock was changed: %q %v", data, err)
	}
}
