//go:build !nodev

package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/scaleplane/scaleplane/controlplane"
)

// A data folder of `scaleplane dev` holds etcd's data, every credential of
// its control plane, and devStateFile. The state file marks the folder as
// dev's (a non-empty folder without it is refused) and records what the
// run using it started and changed, so that the next start can undo what a
// killed run left: its processes, its kubeconfig entries, and the webhook
// configurations it left in etcd's data.
const (
	devStateFile = "scaleplane-dev.json"
	devStateKind = "scaleplane-dev-data-folder"
	// devTempPattern names the temporary data folders dev makes; a start
	// looks among them for the leftovers of killed runs.
	devTempPattern = "scaleplane-dev-"
	// devCertsFolder holds scaleplane's own webhook serving certificates.
	devCertsFolder = "certs"
	// devLogFile receives controller-runtime's logs (-v: also stderr).
	devLogFile = "scaleplane.log"
	// killTimeout bounds the wait for a leftover process to exit after
	// SIGKILL.
	killTimeout = 10 * time.Second
)

// devState is the content of devStateFile.
type devState struct {
	// Kind marks the file as dev's.
	Kind string `json:"kind"`
	// CreatedFolder: dev made the folder, so the folder is dev's to remove.
	CreatedFolder bool `json:"createdFolder"`
	// Keep: the run was asked to keep the folder (--keep).
	Keep bool `json:"keep"`
	// Owner is the run using the folder; nil once it has exited cleanly.
	Owner *controlplane.Process `json:"owner,omitempty"`
	// Processes are the control-plane programs the owner started.
	Processes []controlplane.Process `json:"processes,omitempty"`
	// Kubeconfig is the kubeconfig file the owner added its entries to.
	Kubeconfig *kubeconfigEdit `json:"kubeconfig,omitempty"`
	// Webhooks are the webhook configurations the owner's scaleplane
	// serves. They stay in etcd's data when the folder is kept, failing
	// closed at an address nobody serves once the run is over.
	Webhooks *webhookRecord `json:"webhooks,omitempty"`
}

type webhookRecord struct {
	// URL is where the webhooks pointed (https://127.0.0.1:<port>).
	URL        string `json:"url"`
	Mutating   string `json:"mutating"`
	Validating string `json:"validating"`
}

// dataFolder is the data folder of the running dev.
type dataFolder struct {
	path  string
	state devState
	// previous is what the last run using a reused folder recorded; its
	// webhook configurations are removed once the API server is up.
	previous *devState
}

// readState reads a folder's state file; ok is false when there is none.
func readState(dir string) (st devState, ok bool, err error) {
	data, err := os.ReadFile(filepath.Join(dir, devStateFile))
	if errors.Is(err, os.ErrNotExist) {
		return devState{}, false, nil
	}
	if err != nil {
		return devState{}, false, err
	}
	if err := json.Unmarshal(data, &st); err != nil {
		return devState{}, false, fmt.Errorf("parse %s: %w", devStateFile, err)
	}
	if st.Kind != devStateKind {
		return devState{}, false, fmt.Errorf("%s is not scaleplane dev's (kind %q)", devStateFile, st.Kind)
	}
	return st, true, nil
}

func (f *dataFolder) save() error {
	data, err := json.MarshalIndent(f.state, "", "  ")
	if err != nil {
		return err
	}
	if err := writeFileAtomic(filepath.Join(f.path, devStateFile), data, 0o600); err != nil {
		return fmt.Errorf("write %s: %w", devStateFile, err)
	}
	return nil
}

// openDataFolder makes or takes the data folder: a new temporary folder
// when path is empty; else path, made when missing, taken when empty or
// when it is dev's own (its state file) and no running dev uses it. A
// non-empty folder dev did not make is refused. What a killed run left in
// a folder of dev's is undone first. The state file is written, with self
// as its owner, before anything starts.
func openDataFolder(path string, keep bool, self controlplane.Process, log func(string)) (*dataFolder, error) {
	f := &dataFolder{}
	if path == "" {
		dir, err := os.MkdirTemp("", devTempPattern)
		if err != nil {
			return nil, fmt.Errorf("create data folder: %w", err)
		}
		f.path, f.state.CreatedFolder = dir, true
	} else {
		abs, err := filepath.Abs(path)
		if err != nil {
			return nil, fmt.Errorf("data folder %s: %w", path, err)
		}
		f.path = abs
		if err := f.take(self, log); err != nil {
			return nil, err
		}
	}
	f.state.Kind, f.state.Keep, f.state.Owner = devStateKind, keep, &self
	if f.previous != nil {
		f.state.Webhooks = f.previous.Webhooks
	}
	if err := f.save(); err != nil {
		if f.state.CreatedFolder {
			_ = os.Remove(f.path)
		}
		return nil, err
	}
	return f, nil
}

// take checks a data folder the user named and decides who owns it.
func (f *dataFolder) take(self controlplane.Process, log func(string)) error {
	info, err := os.Stat(f.path)
	switch {
	case errors.Is(err, os.ErrNotExist):
		// Only the folder itself is made: a mistyped parent is better
		// reported than created.
		if err := os.Mkdir(f.path, 0o700); err != nil {
			return fmt.Errorf("create data folder: %w", err)
		}
		f.state.CreatedFolder = true
		return nil
	case err != nil:
		return fmt.Errorf("data folder %s: %w", f.path, err)
	case !info.IsDir():
		return fmt.Errorf("data folder %s is not a folder; pass a new or empty folder to --data-dir", f.path)
	}
	st, ok, err := readState(f.path)
	if err != nil {
		return fmt.Errorf("data folder %s: %w; scaleplane dev only reuses a folder it made: pass a new or empty folder to --data-dir", f.path, err)
	}
	if !ok {
		names, err := os.ReadDir(f.path)
		if err != nil {
			return fmt.Errorf("data folder %s: %w", f.path, err)
		}
		if len(names) > 0 {
			return fmt.Errorf("data folder %s is not empty and scaleplane dev did not make it (it has no %s); nothing in it was changed. Pass a new or empty folder to --data-dir, or leave --data-dir out for a temporary folder", f.path, devStateFile)
		}
		return nil
	}
	if st.Owner != nil && st.Owner.Running() {
		if st.Owner.Same(self) {
			return fmt.Errorf("data folder %s: already in use by this process", f.path)
		}
		return fmt.Errorf("data folder %s is in use by a running scaleplane dev (pid %d); stop it or pass another --data-dir", f.path, st.Owner.PID)
	}
	if err := undoRun(st, log); err != nil {
		return fmt.Errorf("data folder %s: undo what a killed scaleplane dev left: %w", f.path, err)
	}
	f.state.CreatedFolder = st.CreatedFolder
	if !st.Keep {
		// A run without --keep was to leave nothing behind; killed, it
		// could not. Its data is not this run's to start from.
		if err := removeEntries(f.path); err != nil {
			return err
		}
		log(fmt.Sprintf("removed what killed scaleplane dev (pid %d) left in %s", st.Owner.PID, f.path))
		return nil
	}
	f.previous = &st
	return nil
}

// removeEntries removes what dev made in a data folder, the state file
// last, so that a kill halfway leaves a folder still recognisably dev's.
func removeEntries(dir string) error {
	var errs []error
	for _, name := range folderEntries() {
		if err := os.RemoveAll(filepath.Join(dir, name)); err != nil {
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("clean data folder %s: %w", dir, err)
	}
	// Temporary files of a state write that a kill interrupted.
	partial, _ := filepath.Glob(filepath.Join(dir, "."+devStateFile+".tmp-*"))
	for _, name := range append(partial, filepath.Join(dir, devStateFile)) {
		if err := os.Remove(name); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("clean data folder %s: %w", dir, err)
		}
	}
	return nil
}

// leftovers are the recorded processes that still run, same pid, start
// time, boot and command line; a pid now used by another process is not
// one of them. read is controlplane.ReadProcess outside tests.
func leftovers(recorded []controlplane.Process, read func(pid int) (controlplane.Process, error)) []controlplane.Process {
	var out []controlplane.Process
	for _, p := range recorded {
		if now, err := read(p.PID); err == nil && p.Same(now) {
			out = append(out, p)
		}
	}
	return out
}

// undoRun undoes what the run that recorded st left outside etcd's data:
// the processes it started that still run (each checked to be the same
// process before it is killed) and its kubeconfig entries. Its webhook
// configurations are etcd's data: removeStaleWebhooks.
func undoRun(st devState, log func(string)) error {
	if st.Owner == nil {
		return nil // a clean exit left nothing to undo
	}
	var errs []error
	for _, p := range leftovers(st.Processes, controlplane.ReadProcess) {
		log(fmt.Sprintf("stopping %s left by scaleplane dev (pid %d), which is gone", p, st.Owner.PID))
		if err := p.Kill(killTimeout); err != nil && !errors.Is(err, controlplane.ErrNotSame) {
			errs = append(errs, err)
		}
	}
	if st.Kubeconfig != nil {
		if err := undoKubeconfig(crashedKubeconfig(*st.Kubeconfig), *st.Kubeconfig, *st.Owner); err != nil {
			errs = append(errs, err)
		} else {
			log(fmt.Sprintf("removed the %s entries of scaleplane dev (pid %d) from %s", devKubeconfigName, st.Owner.PID, st.Kubeconfig.Path))
		}
	}
	return errors.Join(errs...)
}

// cleanCrashedRuns finds the temporary data folders in tmp of dev runs
// that were killed, undoes what they left, and removes the folders (or,
// for runs with --keep, clears their state so the folder can be reused).
// Folders of running devs and folders without a state file are not
// touched.
func cleanCrashedRuns(tmp string, log func(string)) error {
	dirs, err := filepath.Glob(filepath.Join(tmp, devTempPattern+"*"))
	if err != nil {
		return err
	}
	var errs []error
	for _, dir := range dirs {
		st, ok, err := readState(dir)
		if err != nil || !ok || st.Owner == nil || st.Owner.Running() {
			continue
		}
		if err := undoRun(st, log); err != nil {
			errs = append(errs, fmt.Errorf("undo what scaleplane dev (pid %d) left in %s: %w", st.Owner.PID, dir, err))
			continue
		}
		f := &dataFolder{path: dir, state: st}
		if err := f.close(); err != nil {
			errs = append(errs, err)
			continue
		}
		if st.Keep {
			log(fmt.Sprintf("cleared the state of killed scaleplane dev (pid %d) in %s (kept: --keep)", st.Owner.PID, dir))
		} else {
			log(fmt.Sprintf("removed %s, left by killed scaleplane dev (pid %d)", dir, st.Owner.PID))
		}
	}
	return errors.Join(errs...)
}

// folderEntries are the names dev and its control plane create in a data
// folder; removing them removes everything dev made there.
func folderEntries() []string {
	return append(controlplane.DirEntries(), devCertsFolder, devLogFile, devPluginFolder)
}

// close ends the run's use of the folder: with --keep, the state loses
// everything but the webhook record (etcd keeps those configurations);
// otherwise what dev made in it is removed, the state file last, and the
// folder too when dev made it and nothing else is in it.
func (f *dataFolder) close() error {
	if f.state.Keep {
		f.state.Owner, f.state.Processes, f.state.Kubeconfig = nil, nil, nil
		return f.save()
	}
	if err := removeEntries(f.path); err != nil {
		return err
	}
	if !f.state.CreatedFolder {
		return nil
	}
	if err := os.Remove(f.path); err != nil {
		left, _ := os.ReadDir(f.path)
		var names []string
		for _, e := range left {
			names = append(names, e.Name())
		}
		return fmt.Errorf("data folder %s was left: it holds files scaleplane dev did not make (%s)", f.path, strings.Join(names, ", "))
	}
	return nil
}

// removeStaleWebhooks deletes the webhook configurations the last run in
// a reused folder left in etcd's data, each only while every webhook in it
// still calls that run's address: fail-closed webhooks at a dead address
// would refuse every write of the kinds they match.
func removeStaleWebhooks(ctx context.Context, c client.Client, rec *webhookRecord) error {
	if rec == nil {
		return nil
	}
	stale := func(urls []*string) bool {
		return len(urls) > 0 && !slices.ContainsFunc(urls, func(u *string) bool {
			return u == nil || !strings.HasPrefix(*u, rec.URL+"/")
		})
	}
	var errs []error
	m := &admissionregistrationv1.MutatingWebhookConfiguration{}
	switch err := c.Get(ctx, client.ObjectKey{Name: rec.Mutating}, m); {
	case apierrors.IsNotFound(err):
	case err != nil:
		errs = append(errs, err)
	default:
		var urls []*string
		for _, w := range m.Webhooks {
			urls = append(urls, w.ClientConfig.URL)
		}
		if stale(urls) {
			errs = append(errs, client.IgnoreNotFound(c.Delete(ctx, m, client.Preconditions{UID: &m.UID})))
		}
	}
	v := &admissionregistrationv1.ValidatingWebhookConfiguration{}
	switch err := c.Get(ctx, client.ObjectKey{Name: rec.Validating}, v); {
	case apierrors.IsNotFound(err):
	case err != nil:
		errs = append(errs, err)
	default:
		var urls []*string
		for _, w := range v.Webhooks {
			urls = append(urls, w.ClientConfig.URL)
		}
		if stale(urls) {
			errs = append(errs, client.IgnoreNotFound(c.Delete(ctx, v, client.Preconditions{UID: &v.UID})))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("remove webhook configurations of the last run (they call %s, which nobody serves): %w", rec.URL, err)
	}
	return nil
}

// writeFileAtomic replaces path with data in one rename, so a reader (a
// later start after a crash) never sees half a file.
func writeFileAtomic(path string, data []byte, perm os.FileMode) error {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	defer func() { _ = os.Remove(tmp) }() // a no-op after the rename
	err = errors.Join(func() error { _, err := f.Write(data); return err }(), f.Chmod(perm), f.Sync())
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	return os.Rename(tmp, path)
}
