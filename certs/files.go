package certs

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
)

// dataLink is the symlink that names the current generation of files, as in
// a kubelet Secret volume. Every visible file is a symlink through it, so one
// rename swaps certificate and key together: a reader never pairs a new
// certificate with an old key.
const dataLink = "..data"

// writeDir makes dir hold exactly files, atomically, and reports whether
// anything changed. Unchanged content is not rewritten so that the webhook
// server's certwatcher does not reload for nothing.
func writeDir(dir string, files map[string][]byte) (bool, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return false, fmt.Errorf("create cert dir: %w", err)
	}
	if same, err := dirHolds(dir, files); err != nil {
		return false, err
	} else if same {
		return false, nil
	}

	gen, err := os.MkdirTemp(dir, "..gen-")
	if err != nil {
		return false, fmt.Errorf("create generation dir: %w", err)
	}
	for name, content := range files {
		if err := writeSynced(filepath.Join(gen, name), content); err != nil {
			_ = os.RemoveAll(gen)
			return false, err
		}
	}

	old, _ := os.Readlink(filepath.Join(dir, dataLink))
	tmpLink := filepath.Join(dir, dataLink+"_tmp")
	_ = os.Remove(tmpLink)
	if err := os.Symlink(filepath.Base(gen), tmpLink); err != nil {
		_ = os.RemoveAll(gen)
		return false, fmt.Errorf("link new generation: %w", err)
	}
	// rename(2) over an existing symlink is atomic: this is the commit point.
	if err := os.Rename(tmpLink, filepath.Join(dir, dataLink)); err != nil {
		_ = os.RemoveAll(gen)
		return false, fmt.Errorf("switch to new generation: %w", err)
	}

	names := make([]string, 0, len(files))
	for name := range files {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		if err := ensureLink(dir, name); err != nil {
			return true, err
		}
	}
	if old != "" && old != filepath.Base(gen) {
		// Removing the old generation is what wakes watchers holding an
		// inotify watch on the old file (certwatcher re-adds and re-reads).
		if err := os.RemoveAll(filepath.Join(dir, old)); err != nil {
			return true, fmt.Errorf("remove old generation: %w", err)
		}
	}
	return true, nil
}

// ensureLink makes dir/name a symlink to ..data/name, replacing a regular
// file atomically if one is there.
func ensureLink(dir, name string) error {
	path := filepath.Join(dir, name)
	want := filepath.Join(dataLink, name)
	if got, err := os.Readlink(path); err == nil && got == want {
		return nil
	}
	tmp := path + ".link_tmp"
	_ = os.Remove(tmp)
	if err := os.Symlink(want, tmp); err != nil {
		return fmt.Errorf("link %s: %w", name, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("link %s: %w", name, err)
	}
	return nil
}

func dirHolds(dir string, files map[string][]byte) (bool, error) {
	for name, want := range files {
		got, err := os.ReadFile(filepath.Join(dir, name))
		if errors.Is(err, fs.ErrNotExist) {
			return false, nil
		}
		if err != nil {
			return false, fmt.Errorf("read %s: %w", name, err)
		}
		if !bytes.Equal(got, want) {
			return false, nil
		}
		if target, err := os.Readlink(filepath.Join(dir, name)); err != nil || target != filepath.Join(dataLink, name) {
			return false, nil
		}
	}
	return true, nil
}

func writeSynced(path string, content []byte) error {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600)
	if err != nil {
		return fmt.Errorf("write %s: %w", filepath.Base(path), err)
	}
	if _, err := f.Write(content); err != nil {
		_ = f.Close()
		return fmt.Errorf("write %s: %w", filepath.Base(path), err)
	}
	if err := f.Sync(); err != nil {
		_ = f.Close()
		return fmt.Errorf("sync %s: %w", filepath.Base(path), err)
	}
	return f.Close()
}

func readFile(path string) ([]byte, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	return b, nil
}
