package pod

import (
	"archive/tar"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
)

// Unpack writes img's file system (its layers applied in order, whiteouts
// honoured) into dir, with each entry's mode, owner and time, as a
// runtime's snapshotter does. It is meant for images a test built.
func Unpack(img v1.Image, dir string) error {
	rc := mutate.Extract(img)
	defer rc.Close()
	tr := tar.NewReader(rc)
	var dirTimes []*tar.Header
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return fmt.Errorf("read image layers: %w", err)
		}
		// Cleaned under "/", a name cannot climb out of dir. Symbolic links
		// are created, never followed: the images are the tests' own.
		path := filepath.Join(dir, filepath.Clean("/"+h.Name))
		mode := os.FileMode(h.Mode).Perm() | specialBits(h.Mode)
		switch h.Typeflag {
		case tar.TypeDir:
			if err := os.MkdirAll(path, 0o755); err != nil {
				return err
			}
			dirTimes = append(dirTimes, h)
		case tar.TypeReg:
			if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
				return err
			}
			f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600)
			if err != nil {
				return err
			}
			if _, err := io.Copy(f, tr); err != nil {
				f.Close()
				return err
			}
			if err := f.Close(); err != nil {
				return err
			}
		case tar.TypeSymlink:
			if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
				return err
			}
			if err := os.Symlink(h.Linkname, path); err != nil {
				return err
			}
			if err := os.Lchown(path, h.Uid, h.Gid); err != nil {
				return err
			}
			continue
		case tar.TypeLink:
			if err := os.Link(filepath.Join(dir, filepath.Clean("/"+h.Linkname)), path); err != nil {
				return err
			}
			continue
		default:
			return fmt.Errorf("image entry %q has type %q, which this runner does not create", h.Name, h.Typeflag)
		}
		if err := os.Chown(path, h.Uid, h.Gid); err != nil {
			return err
		}
		// After chown, which clears set-id bits.
		if err := os.Chmod(path, mode); err != nil {
			return err
		}
		if err := os.Chtimes(path, time.Time{}, h.ModTime); err != nil {
			return err
		}
	}
	for _, h := range dirTimes {
		_ = os.Chtimes(filepath.Join(dir, filepath.Clean("/"+h.Name)), time.Time{}, h.ModTime)
	}
	return nil
}

func specialBits(mode int64) os.FileMode {
	var m os.FileMode
	if mode&0o4000 != 0 {
		m |= os.ModeSetuid
	}
	if mode&0o2000 != 0 {
		m |= os.ModeSetgid
	}
	if mode&0o1000 != 0 {
		m |= os.ModeSticky
	}
	return m
}
