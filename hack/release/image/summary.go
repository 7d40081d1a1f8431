package image

import (
	"fmt"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// Summarize describes idx for people: the index digest, then each
// platform's manifest digest and compressed size.
func Summarize(idx v1.ImageIndex) (string, error) {
	d, err := idx.Digest()
	if err != nil {
		return "", err
	}
	im, err := idx.IndexManifest()
	if err != nil {
		return "", err
	}
	var b strings.Builder
	fmt.Fprintf(&b, "index %s\n", d)
	for _, m := range im.Manifests {
		img, err := idx.Image(m.Digest)
		if err != nil {
			return "", err
		}
		size, err := CompressedSize(img)
		if err != nil {
			return "", err
		}
		fmt.Fprintf(&b, "  %s/%s %s %.1f MiB compressed\n", m.Platform.OS, m.Platform.Architecture, m.Digest, float64(size)/(1<<20))
	}
	return b.String(), nil
}

// CompressedSize is what a registry stores for img: its layers, config
// and manifest.
func CompressedSize(img v1.Image) (int64, error) {
	m, err := img.Manifest()
	if err != nil {
		return 0, err
	}
	total := m.Config.Size
	for _, l := range m.Layers {
		total += l.Size
	}
	raw, err := img.RawManifest()
	if err != nil {
		return 0, err
	}
	return total + int64(len(raw)), nil
}
