package manifests

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	configv1alpha2 "github.com/scaleplane/scaleplane/api/config/v1alpha2"
)

// TestRelease: dist/install.yaml is config/default with the
// image pinned by digest, installs scaleplane only (no CRD, no profile),
// and the packaged chart carries the version and the same pinned image.
func TestRelease(t *testing.T) {
	dist := t.TempDir()
	digest := "sha256:" + strings.Repeat("0f", 32)
	install, chartPath, err := Release(ReleaseOptions{
		Root: repoRoot(t), Dist: dist, Repository: "ghcr.io/scaleplane/scaleplane", Digest: digest,
		Version: "v1.2.3", Commit: strings.Repeat("a", 40), ChartVersion: "1.2.3",
	})
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(install)
	if err != nil {
		t.Fatal(err)
	}
	objs, err := Decode(data)
	if err != nil {
		t.Fatal(err)
	}
	var kinds []string
	for _, o := range objs {
		if o.GetKind() == "CustomResourceDefinition" {
			kinds = append(kinds, o.GetName())
		}
	}
	// scaleplane's own CRDs (config/crd), no workload kind's.
	if diff := cmp.Diff([]string{"scalehandles.scaleplane.io", "scaleprofiles.scaleplane.io", "scalings.scaleplane.io"}, kinds); diff != "" {
		t.Errorf("install.yaml's CRDs (-want +got); it should install scaleplane only:\n%s", diff)
	}
	dep := Find(objs, "Deployment", ManagerName)
	containers, _, _ := unstructured.NestedSlice(dep.Object, "spec", "template", "spec", "containers")
	if diff := cmp.Diff("ghcr.io/scaleplane/scaleplane@"+digest, containers[0].(map[string]any)["image"]); diff != "" {
		t.Errorf("install.yaml image (-want +got):\n%s", diff)
	}
	for _, o := range objs {
		if o.GetKind() == "ConfigMap" && strings.HasPrefix(o.GetName(), "scaleplane-config") {
			s, _, _ := unstructured.NestedString(o.Object, "data", "scaleplane-config.yaml")
			c, _, err := configv1alpha2.Parse([]byte(s))
			if err != nil {
				t.Fatal(err)
			}
			if len(c.Profiles) != 0 {
				t.Errorf("install.yaml's configuration has %d profiles; it should have none", len(c.Profiles))
			}
		}
	}
	if !strings.HasPrefix(string(data), "# scaleplane v1.2.3 (commit aaaa") {
		t.Errorf("install.yaml header: %.80q", data)
	}
	if filepath.Base(chartPath) != "scaleplane-1.2.3.tgz" {
		t.Errorf("chart package %s, want scaleplane-1.2.3.tgz", chartPath)
	}
	c, err := LoadChart(chartPath)
	if err != nil {
		t.Fatal(err)
	}
	if c.Metadata.Version != "1.2.3" || c.Metadata.AppVersion != "v1.2.3" {
		t.Errorf("chart version %s appVersion %s, want 1.2.3 and v1.2.3", c.Metadata.Version, c.Metadata.AppVersion)
	}
	rendered, err := RenderChart(c, nil, Namespace)
	if err != nil {
		t.Fatal(err)
	}
	containers, _, _ = unstructured.NestedSlice(Find(rendered, "Deployment", ManagerName).Object, "spec", "template", "spec", "containers")
	if diff := cmp.Diff("ghcr.io/scaleplane/scaleplane@"+digest, containers[0].(map[string]any)["image"]); diff != "" {
		t.Errorf("packaged chart's image (-want +got):\n%s", diff)
	}
	// The packaged values keep their comments.
	for _, f := range c.Raw {
		if f.Name == "values.yaml" && !strings.Contains(string(f.Data), "# sha256:... pins the image") {
			t.Errorf("packaged values.yaml lost its comments:\n%.300s", f.Data)
		}
	}

	if _, _, err := Release(ReleaseOptions{Root: repoRoot(t), Dist: dist, Repository: "r", Digest: "latest"}); err == nil || !strings.Contains(err.Error(), "sha256") {
		t.Errorf("Release with a tag for a digest: %v; want a refusal", err)
	}
}
