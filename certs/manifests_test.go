package certs

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	cmapi "github.com/cert-manager/cert-manager/pkg/apis/certmanager/v1"
)

// TestManifestsMatchBuilders keeps config/certmanager and the objects
// `scaleplane --cert-mode=cert-manager` creates from drifting apart.
func TestManifestsMatchBuilders(t *testing.T) {
	o := Options{
		Mode:            ModeCertManager,
		SecretNamespace: "scaleplane-system",
		SecretName:      "scaleplane-webhook-server-cert",
		DNSNames:        ServiceDNSNames("scaleplane-webhook-service", "scaleplane-system"),
	}.Default()

	var got []client.Object
	for _, file := range []string{"issuer.yaml", filepath.Join("serving", "certificate.yaml")} {
		data, err := os.ReadFile(filepath.Join("..", "config", "certmanager", file))
		if err != nil {
			t.Fatal(err)
		}
		for _, doc := range bytes.Split(data, []byte("\n---\n")) {
			var meta struct{ Kind string }
			if err := yaml.Unmarshal(doc, &meta); err != nil {
				t.Fatalf("%s: %v", file, err)
			}
			var obj client.Object
			switch meta.Kind {
			case cmapi.IssuerKind:
				obj = &cmapi.Issuer{}
			case cmapi.CertificateKind:
				obj = &cmapi.Certificate{}
			default:
				t.Fatalf("%s: unexpected kind %q", file, meta.Kind)
			}
			if err := yaml.UnmarshalStrict(doc, obj); err != nil {
				t.Fatalf("%s: %v", file, err)
			}
			got = append(got, obj)
		}
	}
	if diff := cmp.Diff(CertManagerObjects(o), got); diff != "" {
		t.Errorf("config/certmanager differs from CertManagerObjects (-want +got):\n%s", diff)
	}

	injection, err := os.ReadFile(filepath.Join("..", "config", "certmanager", "injection", "kustomization.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	want := InjectCAFromAnnotation + ": " + InjectCAFrom(o)
	if diff := cmp.Diff(2, bytes.Count(injection, []byte(want))); diff != "" {
		t.Errorf("injection component should set %q on both configuration kinds (-want +got):\n%s", want, diff)
	}
}
