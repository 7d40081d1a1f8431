//go:build !nodev

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	clientcmdv1 "k8s.io/client-go/tools/clientcmd/api/v1"
	"sigs.k8s.io/yaml"

	"github.com/scaleplane/scaleplane/controlplane"
)

// How `scaleplane dev` shares a kubeconfig file with its user, as kind does:
// it adds a cluster, a user and a context, all named devKubeconfigName and
// each marked with devKubeconfigExtension (which run added it), makes that
// context current, and at exit removes exactly the entries its run added and
// puts the previous current context back. A file that holds nothing but
// such entries is dev's own: dev removes it when its entries go. A file it
// cannot read is refused, never rewritten.
//
// The context also carries devServerExtension: the run's metrics address,
// where `scaleplane dev load` in another terminal signals activity without
// being told the address.
const (
	devKubeconfigName      = "scaleplane-dev"
	devKubeconfigExtension = "scaleplane.io/dev"
	devServerExtension     = "scaleplane.io/dev-server"
)

// devServer is the content of devServerExtension.
type devServer struct {
	// MetricsURL is the run's metrics server (http://127.0.0.1:PORT), the
	// address it prints as SCALEPLANE_SERVER.
	MetricsURL string `json:"metricsURL"`
}

// devMarker is the content of devKubeconfigExtension: the run that wrote
// the entry, by pid, start time and boot (which together name one process
// for good). An entry of a run that no longer runs is stale.
type devMarker struct {
	PID       int    `json:"pid"`
	StartTime uint64 `json:"startTime"`
	BootID    string `json:"bootID"`
}

func markerOf(p controlplane.Process) devMarker {
	return devMarker{PID: p.PID, StartTime: p.StartTime, BootID: p.BootID}
}

// running reports whether the run m names still runs.
func (m devMarker) running() bool {
	p, err := controlplane.ReadProcess(m.PID)
	return err == nil && markerOf(p) == m
}

// kubeconfigEdit is what a run records (in its state file) about the
// kubeconfig it changed, so that a later start can undo it after a crash.
type kubeconfigEdit struct {
	// Path is the file as the user named it (kubectl's lock is next to
	// it) and Target the file written, symbolic links resolved.
	Path   string `json:"path"`
	Target string `json:"target"`
	// CreatedFile: no user file was there; the file goes with dev's entries.
	CreatedFile bool `json:"createdFile"`
	// PreviousContext was current before dev made its own context current.
	PreviousContext string `json:"previousContext,omitempty"`
}

// userKubeconfig is a kubeconfig file as dev found it before adding its
// entries.
type userKubeconfig struct {
	// path is the file as the user named it; target has links resolved.
	path, target string
	exists       bool
	// original is the file's content and base its parsed content without
	// the entries of stale runs. restore is original when base is exactly
	// what the file held (no stale entries), so an unchanged file gets its
	// own bytes back: comments, order and formatting included.
	original []byte
	base     *clientcmdapi.Config
	restore  []byte
	mode     os.FileMode
	uid, gid int
	// ownedByDev: the file held only entries of dev runs.
	ownedByDev bool
	// server is the run's metrics address, recorded on its context
	// (devServerExtension) when set before add.
	server string
}

// readUserKubeconfig reads and checks the kubeconfig at path before anything
// starts: a file dev cannot read exactly, or whose dev entries belong to a
// running dev, is refused with what to do.
func readUserKubeconfig(path string, self controlplane.Process) (*userKubeconfig, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("kubeconfig %s: %w", path, err)
	}
	k := &userKubeconfig{path: abs, target: abs, mode: 0o600, uid: -1, gid: -1}
	if target, err := filepath.EvalSymlinks(abs); err == nil {
		k.target = target
	} else if !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("kubeconfig %s: %w", path, err)
	}
	info, err := os.Stat(k.target)
	switch {
	case errors.Is(err, os.ErrNotExist):
		if _, err := os.Lstat(k.target); err == nil {
			return nil, fmt.Errorf("kubeconfig %s is a symbolic link to a missing file; fix the link or pass another --kubeconfig", path)
		}
		if _, err := os.Stat(filepath.Dir(k.target)); err != nil {
			return nil, fmt.Errorf("kubeconfig %s: its folder does not exist; create it or pass another --kubeconfig: %w", path, err)
		}
		k.base = clientcmdapi.NewConfig()
		return k, nil
	case err != nil:
		return nil, fmt.Errorf("kubeconfig %s: %w", path, err)
	case !info.Mode().IsRegular():
		return nil, fmt.Errorf("kubeconfig %s is not a regular file; pass a file path to --kubeconfig", path)
	}
	k.exists, k.mode = true, info.Mode().Perm()
	if st, ok := info.Sys().(*syscall.Stat_t); ok {
		k.uid, k.gid = int(st.Uid), int(st.Gid)
	}
	if k.original, err = os.ReadFile(k.target); err != nil {
		return nil, fmt.Errorf("read kubeconfig %s: %w", path, err)
	}
	cfg, err := parseKubeconfig(k.original)
	if err != nil {
		return nil, fmt.Errorf("kubeconfig %s: %w; scaleplane dev never rewrites a file it cannot read exactly: fix it, or pass --kubeconfig with a new file (the default ./scaleplane-dev.kubeconfig is dev's own)", path, err)
	}
	k.ownedByDev = ownedByDev(cfg)
	if k.base, err = withoutStaleEntries(cfg, self, devMarker.running); err != nil {
		return nil, fmt.Errorf("kubeconfig %s: %w", path, err)
	}
	if sameKubeconfig(cfg, k.base) {
		k.restore = k.original
	}
	return k, nil
}

// parseKubeconfig reads a kubeconfig as client-go does, and refuses one with
// fields client-go does not know: dev's rewrite would drop them.
func parseKubeconfig(data []byte) (*clientcmdapi.Config, error) {
	cfg, err := clientcmd.Load(data)
	if err != nil {
		return nil, fmt.Errorf("cannot be parsed: %w", err)
	}
	if len(bytes.TrimSpace(data)) > 0 {
		if err := yaml.UnmarshalStrict(data, &clientcmdv1.Config{}); err != nil {
			return nil, fmt.Errorf("holds content client-go does not read, which a rewrite would lose: %w", err)
		}
	}
	return cfg, nil
}

// marker returns the run that wrote an entry, if dev wrote it.
func marker(extensions map[string]runtime.Object) (devMarker, bool) {
	obj, ok := extensions[devKubeconfigExtension]
	if !ok {
		return devMarker{}, false
	}
	var raw []byte
	switch o := obj.(type) {
	case *runtime.Unknown:
		raw = o.Raw
	default:
		return devMarker{}, false
	}
	var m devMarker
	if err := json.Unmarshal(raw, &m); err != nil {
		return devMarker{}, false
	}
	return m, true
}

func markerExtension(owner controlplane.Process) map[string]runtime.Object {
	raw, _ := json.Marshal(markerOf(owner))
	return map[string]runtime.Object{devKubeconfigExtension: &runtime.Unknown{Raw: raw, ContentType: runtime.ContentTypeJSON}}
}

// entries calls f with the extensions of every cluster, user and context,
// and deletes the entry when f says so.
func entries(cfg *clientcmdapi.Config, f func(kind, name string, ext map[string]runtime.Object) (remove bool)) {
	for name, c := range cfg.Clusters {
		if f("cluster", name, c.Extensions) {
			delete(cfg.Clusters, name)
		}
	}
	for name, u := range cfg.AuthInfos {
		if f("user", name, u.Extensions) {
			delete(cfg.AuthInfos, name)
		}
	}
	for name, c := range cfg.Contexts {
		if f("context", name, c.Extensions) {
			delete(cfg.Contexts, name)
		}
	}
}

// ownedByDev reports whether cfg holds entries and every one is dev's.
func ownedByDev(cfg *clientcmdapi.Config) bool {
	n, devs := 0, 0
	entries(cfg, func(_, _ string, ext map[string]runtime.Object) bool {
		n++
		if _, ok := marker(ext); ok {
			devs++
		}
		return false
	})
	return n > 0 && n == devs
}

func emptyKubeconfig(cfg *clientcmdapi.Config) bool {
	return len(cfg.Clusters) == 0 && len(cfg.AuthInfos) == 0 && len(cfg.Contexts) == 0
}

// withoutStaleEntries returns a copy of cfg without the entries of dev runs
// that no longer run (running tells), and refuses a file another running
// dev has entries in, or one with entries of dev's names that dev did not
// write.
func withoutStaleEntries(cfg *clientcmdapi.Config, self controlplane.Process, running func(devMarker) bool) (*clientcmdapi.Config, error) {
	out := cfg.DeepCopy()
	var errs []error
	entries(out, func(kind, name string, ext map[string]runtime.Object) bool {
		m, ok := marker(ext)
		switch {
		case !ok && name == devKubeconfigName:
			errs = append(errs, fmt.Errorf("it has a %s named %s that scaleplane dev did not write; rename that entry or pass another --kubeconfig", kind, name))
		case !ok:
		case m == markerOf(self):
		case running(m):
			errs = append(errs, fmt.Errorf("a running scaleplane dev (pid %d) has its %s %s in it; stop that one or pass another --kubeconfig", m.PID, kind, name))
		default:
			return true
		}
		return false
	})
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	if _, ok := out.Contexts[out.CurrentContext]; !ok && out.CurrentContext != "" {
		if _, wasOurs := cfg.Contexts[out.CurrentContext]; wasOurs {
			// The stale run's context was current; which one was before it
			// is in that run's state, which is gone.
			out.CurrentContext = ""
		}
	}
	return out, nil
}

// addDevEntries returns a copy of base with the cluster, user and context of
// cluster (an admin kubeconfig with one context) added under
// devKubeconfigName, marked as owner's, and made current.
func addDevEntries(base, cluster *clientcmdapi.Config, owner controlplane.Process) (*clientcmdapi.Config, error) {
	ctx, ok := cluster.Contexts[cluster.CurrentContext]
	if !ok {
		return nil, fmt.Errorf("the control plane's kubeconfig has no current context")
	}
	c, ok := cluster.Clusters[ctx.Cluster]
	if !ok {
		return nil, fmt.Errorf("the control plane's kubeconfig has no cluster %q", ctx.Cluster)
	}
	u, ok := cluster.AuthInfos[ctx.AuthInfo]
	if !ok {
		return nil, fmt.Errorf("the control plane's kubeconfig has no user %q", ctx.AuthInfo)
	}
	out := base.DeepCopy()
	for _, taken := range []bool{out.Clusters[devKubeconfigName] != nil, out.AuthInfos[devKubeconfigName] != nil, out.Contexts[devKubeconfigName] != nil} {
		if taken {
			return nil, fmt.Errorf("it already has entries named %s", devKubeconfigName)
		}
	}
	c, u = c.DeepCopy(), u.DeepCopy()
	c.Extensions, u.Extensions = markerExtension(owner), markerExtension(owner)
	c.LocationOfOrigin, u.LocationOfOrigin = "", ""
	out.Clusters[devKubeconfigName] = c
	out.AuthInfos[devKubeconfigName] = u
	out.Contexts[devKubeconfigName] = &clientcmdapi.Context{Cluster: devKubeconfigName, AuthInfo: devKubeconfigName, Extensions: markerExtension(owner)}
	out.CurrentContext = devKubeconfigName
	return out, nil
}

// removeDevEntries returns a copy of cfg without the entries owner wrote.
// When owner's context is still current, previous becomes current again if
// it still exists. changed is false when there was nothing of owner's.
func removeDevEntries(cfg *clientcmdapi.Config, owner controlplane.Process, previous string) (out *clientcmdapi.Config, changed bool) {
	out = cfg.DeepCopy()
	removed := map[string]bool{}
	entries(out, func(kind, name string, ext map[string]runtime.Object) bool {
		if m, ok := marker(ext); ok && m == markerOf(owner) {
			changed = true
			if kind == "context" {
				removed[name] = true
			}
			return true
		}
		return false
	})
	if removed[out.CurrentContext] {
		out.CurrentContext = ""
		if _, ok := out.Contexts[previous]; ok {
			out.CurrentContext = previous
		}
	}
	return out, changed
}

// sameKubeconfig compares two configurations as client-go writes them.
func sameKubeconfig(a, b *clientcmdapi.Config) bool {
	x, errX := clientcmd.Write(*a)
	y, errY := clientcmd.Write(*b)
	return errX == nil && errY == nil && bytes.Equal(x, y)
}

// edit is what add changes, to be recorded before it does.
func (k *userKubeconfig) edit() kubeconfigEdit {
	return kubeconfigEdit{Path: k.path, Target: k.target, CreatedFile: !k.exists || k.ownedByDev, PreviousContext: k.base.CurrentContext}
}

// add writes base plus dev's entries for the cluster of clusterKubeconfig.
func (k *userKubeconfig) add(clusterKubeconfig string, owner controlplane.Process) error {
	data, err := os.ReadFile(clusterKubeconfig)
	if err != nil {
		return fmt.Errorf("read the control plane's kubeconfig: %w", err)
	}
	cluster, err := clientcmd.Load(data)
	if err != nil {
		return fmt.Errorf("read the control plane's kubeconfig: %w", err)
	}
	return withKubeconfigLock(k.path, func() error {
		// The file may have changed since it was checked: it is read again
		// under kubectl's lock, and must still be what was checked.
		now, err := os.ReadFile(k.target)
		if err != nil && !(errors.Is(err, os.ErrNotExist) && !k.exists) {
			return fmt.Errorf("read kubeconfig %s: %w", k.path, err)
		}
		if !bytes.Equal(now, k.original) {
			return fmt.Errorf("kubeconfig %s changed while scaleplane dev started; start again", k.path)
		}
		merged, err := addDevEntries(k.base, cluster, owner)
		if err != nil {
			return fmt.Errorf("kubeconfig %s: %w", k.path, err)
		}
		if k.server != "" {
			raw, _ := json.Marshal(devServer{MetricsURL: k.server})
			merged.Contexts[devKubeconfigName].Extensions[devServerExtension] = &runtime.Unknown{Raw: raw, ContentType: runtime.ContentTypeJSON}
		}
		out, err := clientcmd.Write(*merged)
		if err != nil {
			return fmt.Errorf("encode kubeconfig: %w", err)
		}
		return k.write(out)
	})
}

// remove takes owner's entries out of the file again and puts the previous
// current context back.
func (k *userKubeconfig) remove(owner controlplane.Process, edit kubeconfigEdit) error {
	return undoKubeconfig(k, edit, owner)
}

// crashedKubeconfig is the file a crashed run changed, as its state file
// records it; its original bytes are not known.
func crashedKubeconfig(edit kubeconfigEdit) *userKubeconfig {
	k := &userKubeconfig{path: edit.Path, target: edit.Target, mode: 0o600, uid: -1, gid: -1}
	if k.target == "" {
		k.target = k.path
	}
	if info, err := os.Stat(k.target); err == nil {
		k.mode = info.Mode().Perm()
		if st, ok := info.Sys().(*syscall.Stat_t); ok {
			k.uid, k.gid = int(st.Uid), int(st.Gid)
		}
	}
	return k
}

// undoKubeconfig removes owner's entries from k's file. A file that is then
// what dev found gets its original bytes back (when known); one that held
// only dev's entries is removed; one that no longer has them is left alone.
func undoKubeconfig(k *userKubeconfig, edit kubeconfigEdit, owner controlplane.Process) error {
	// A file whose folder is gone (a temporary folder removed since) holds
	// no entries to undo, and has no room for kubectl's lock.
	for _, p := range []string{k.path, k.target} {
		if _, err := os.Stat(filepath.Dir(p)); errors.Is(err, os.ErrNotExist) {
			return nil
		}
	}
	return withKubeconfigLock(k.path, func() error {
		data, err := os.ReadFile(k.target)
		if errors.Is(err, os.ErrNotExist) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("read kubeconfig %s: %w", k.path, err)
		}
		cfg, err := clientcmd.Load(data)
		if err != nil {
			return fmt.Errorf("kubeconfig %s can no longer be parsed, so its %s entries stay; remove them by hand: %w", k.path, devKubeconfigName, err)
		}
		out, changed := removeDevEntries(cfg, owner, edit.PreviousContext)
		switch {
		case !changed:
			return nil
		case edit.CreatedFile && emptyKubeconfig(out):
			if err := os.Remove(k.target); err != nil {
				return fmt.Errorf("remove kubeconfig %s: %w", k.path, err)
			}
			return nil
		case k.restore != nil && sameKubeconfig(out, k.base):
			return k.write(k.restore)
		}
		encoded, err := clientcmd.Write(*out)
		if err != nil {
			return fmt.Errorf("encode kubeconfig: %w", err)
		}
		return k.write(encoded)
	})
}

// write replaces the file in one rename, with the mode and owner it had.
func (k *userKubeconfig) write(data []byte) error {
	dir := filepath.Dir(k.target)
	f, err := os.CreateTemp(dir, "."+filepath.Base(k.target)+".scaleplane-dev-*")
	if err != nil {
		return fmt.Errorf("write kubeconfig %s: %w", k.path, err)
	}
	tmp := f.Name()
	defer func() { _ = os.Remove(tmp) }() // a no-op after the rename
	err = errors.Join(func() error { _, err := f.Write(data); return err }(), f.Chmod(k.mode))
	if err == nil && k.uid >= 0 && (k.uid != os.Getuid() || k.gid != os.Getgid()) {
		err = f.Chown(k.uid, k.gid)
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, k.target)
	}
	if err != nil {
		return fmt.Errorf("write kubeconfig %s: %w", k.path, err)
	}
	return nil
}

// withKubeconfigLock runs f holding the lock kubectl takes before it writes
// a kubeconfig (a file next to it with .lock appended, created
// exclusively), so dev and `kubectl config` never interleave their writes.
// kubectl's lock is empty; dev's holds its devMarker, so that a lock left by
// a dev that was killed while holding it is known as stale (its holder no
// longer runs) and taken over, rather than blocking every later start.
func withKubeconfigLock(path string, f func() error) error {
	lock := path + ".lock"
	me, err := controlplane.Self()
	if err != nil {
		return fmt.Errorf("lock kubeconfig %s: %w", path, err)
	}
	mine, _ := json.Marshal(markerOf(me))
	var holder string
	err = wait.PollUntilContextTimeout(context.Background(), 20*time.Millisecond, 5*time.Second, true, func(context.Context) (bool, error) {
		file, err := os.OpenFile(lock, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
		if errors.Is(err, os.ErrExist) {
			holder = takeStaleLock(lock)
			return false, nil
		}
		if err != nil {
			return false, err
		}
		_, werr := file.Write(mine)
		if err := errors.Join(werr, file.Close()); err != nil {
			_ = os.Remove(lock)
			return false, err
		}
		return true, nil
	})
	switch {
	case errors.Is(err, os.ErrNotExist):
		return fmt.Errorf("lock kubeconfig %s: its folder %s does not exist: %w", path, filepath.Dir(lock), err)
	case err != nil && holder != "":
		return fmt.Errorf("lock kubeconfig %s: %s is held by %s: %w", path, lock, holder, err)
	case err != nil:
		return fmt.Errorf("lock kubeconfig %s: %s is held (by kubectl writing the file, or left by one that crashed: then remove it): %w", path, lock, err)
	}
	defer func() { _ = os.Remove(lock) }()
	return f()
}

// takeStaleLock removes lock when a dev that no longer runs holds it, so
// the next attempt takes it; otherwise it names the holder when the lock
// says who ("" for kubectl's empty lock). A lock whose content is not a
// marker is never removed: it is not dev's.
func takeStaleLock(lock string) (holder string) {
	data, err := os.ReadFile(lock)
	if err != nil || len(bytes.TrimSpace(data)) == 0 {
		return ""
	}
	var m devMarker
	if json.Unmarshal(data, &m) != nil || m.PID == 0 {
		return ""
	}
	if m.running() {
		return fmt.Sprintf("a running scaleplane dev (pid %d)", m.PID)
	}
	// Only the lock as it was read: another start may have taken it over
	// meanwhile.
	if now, err := os.ReadFile(lock); err == nil && bytes.Equal(now, data) {
		_ = os.Remove(lock)
	}
	return ""
}
