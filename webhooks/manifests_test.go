package webhooks

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/yaml"

	"github.com/scaleplane/scaleplane/profile"
)

// The Service config/webhook/service.yaml defines.
const (
	serviceNamespace = "scaleplane-system"
	serviceName      = "scaleplane-webhook-service"
	servicePort      = 443
)

var manifestsPath = filepath.Join("..", "config", "webhook", "manifests.yaml")

// TestManifests keeps config/webhook/manifests.yaml equal to what
// Configurations makes of the sample profiles, so the kustomize manifests
// and the webhook server's paths never drift. Regenerate with
// UPDATE_GOLDEN=1 go test ./webhooks -run TestManifests.
func TestManifests(t *testing.T) {
	got := renderManifests(t)
	if os.Getenv("UPDATE_GOLDEN") != "" {
		if err := os.WriteFile(manifestsPath, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(manifestsPath)
	if err != nil {
		t.Fatalf("read %s: %v; regenerate it with UPDATE_GOLDEN=1", manifestsPath, err)
	}
	if diff := cmp.Diff(string(want), string(got)); diff != "" {
		t.Errorf("%s is not what Configurations makes of profile.Samples(); regenerate it with UPDATE_GOLDEN=1 go test ./webhooks -run TestManifests (-want +got):\n%s", manifestsPath, diff)
	}
}

func renderManifests(t *testing.T) []byte {
	t.Helper()
	m, v := Configurations(sampleViews(t), profile.SampleConfiguration().Webhook,
		ServiceClientConfig(serviceNamespace, serviceName, servicePort))
	var buf bytes.Buffer
	buf.WriteString("# Generated from profile.Samples() by webhooks.Configurations; do not edit.\n" +
		"# Regenerate with: UPDATE_GOLDEN=1 go test ./webhooks -run TestManifests\n")
	for i, obj := range []interface{}{m, v} {
		data, err := yaml.Marshal(obj)
		if err != nil {
			t.Fatal(err)
		}
		if i > 0 {
			buf.WriteString("---\n")
		}
		buf.Write(data)
	}
	return buf.Bytes()
}

func sampleViews(t testing.TB) []*profile.Compiled {
	t.Helper()
	var views []*profile.Compiled
	for _, p := range profile.Samples() {
		v, err := profile.Compile(p)
		if err != nil {
			t.Fatal(err)
		}
		views = append(views, v)
	}
	return views
}
