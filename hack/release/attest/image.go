package attest

import (
	"archive/tar"
	"bytes"
	"debug/buildinfo"
	"errors"
	"fmt"
	"io"
	"path"
	"runtime/debug"

	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// BinaryBuildInfo reads the build information of the file at file (e.g.
// /scaleplane) in img's layers, the last layer holding it winning.
func BinaryBuildInfo(img v1.Image, file string) (*debug.BuildInfo, error) {
	layers, err := img.Layers()
	if err != nil {
		return nil, err
	}
	var data []byte
	for _, l := range layers {
		rc, err := l.Uncompressed()
		if err != nil {
			return nil, err
		}
		tr := tar.NewReader(rc)
		for {
			h, err := tr.Next()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				rc.Close()
				return nil, err
			}
			if path.Clean("/"+h.Name) == path.Clean(file) {
				if data, err = io.ReadAll(tr); err != nil {
					rc.Close()
					return nil, err
				}
			}
		}
		rc.Close()
	}
	if data == nil {
		return nil, fmt.Errorf("no %s in the image's layers", file)
	}
	return buildinfo.Read(bytes.NewReader(data))
}
