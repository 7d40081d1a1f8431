package attest

import (
	"os"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"

	"github.com/scaleplane/scaleplane/hack/release/image"
)

// TestBinaryBuildInfoFromTheImage: the SBOM is read from the binary inside
// the image, not from the machine that packs the release: a layer holding
// a Go binary at the entrypoint gives that binary's build information, and
// an image without it says so.
func TestBinaryBuildInfoFromTheImage(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(self)
	if err != nil {
		t.Fatal(err)
	}
	layer, err := image.Layer([]image.File{{Path: image.Entrypoint, Mode: 0o755, Data: data}}, time.Unix(0, 0))
	if err != nil {
		t.Fatal(err)
	}
	img, err := mutate.AppendLayers(empty.Image, layer)
	if err != nil {
		t.Fatal(err)
	}
	bi, err := BinaryBuildInfo(img, image.Entrypoint)
	if err != nil {
		t.Fatal(err)
	}
	if bi.Main.Path != "github.com/scaleplane/scaleplane/hack/release" {
		t.Errorf("main module %q, want this test binary's", bi.Main.Path)
	}
	if _, err := BinaryBuildInfo(empty.Image, image.Entrypoint); err == nil {
		t.Error("an image without the binary gave build information")
	}
}
