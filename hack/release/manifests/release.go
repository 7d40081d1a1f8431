package manifests

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
)

// ReleaseOptions says what `make release` writes.
type ReleaseOptions struct {
	// Root is the repository.
	Root string
	// Dist receives install.yaml and the packaged chart.
	Dist string
	// Repository and Digest name the image (sha256:...).
	Repository, Digest string
	// Version and Commit are the release's.
	Version, Commit string
	// ChartVersion is Version as SemVer without the v.
	ChartVersion string
}

var digestPattern = regexp.MustCompile(`^sha256:[a-f0-9]{64}$`)

// Release writes Dist/install.yaml (config/default with the image pinned
// by digest) and Dist/scaleplane-<ChartVersion>.tgz (the chart with the
// same image pinned in its values), and returns their paths.
func Release(o ReleaseOptions) (install, chart string, err error) {
	if !digestPattern.MatchString(o.Digest) {
		return "", "", fmt.Errorf("image digest %q is not sha256:<64 hex>", o.Digest)
	}
	if o.Repository == "" {
		return "", "", errors.New("an image repository is required")
	}
	ref := o.Repository + "@" + o.Digest
	objs, err := Kustomize(filepath.Join(o.Root, DefaultDir))
	if err != nil {
		return "", "", err
	}
	if err := PinImage(objs, ref); err != nil {
		return "", "", err
	}
	body, err := Encode(objs)
	if err != nil {
		return "", "", err
	}
	var buf bytes.Buffer
	fmt.Fprintf(&buf, "# scaleplane %s (commit %s): config/default with the image pinned by digest.\n", o.Version, o.Commit)
	fmt.Fprintf(&buf, "# Install: kubectl apply --server-side -f install.yaml\n# Image: %s\n---\n", ref)
	buf.Write(body)
	if err := os.MkdirAll(o.Dist, 0o755); err != nil {
		return "", "", err
	}
	install = filepath.Join(o.Dist, "install.yaml")
	if err := os.WriteFile(install, buf.Bytes(), 0o644); err != nil {
		return "", "", err
	}
	chart, err = PackageChart(filepath.Join(o.Root, ChartDir), o.Dist, o.ChartVersion, o.Version, o.Repository, o.Digest)
	if err != nil {
		return "", "", err
	}
	return install, chart, nil
}
