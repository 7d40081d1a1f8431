package app

import (
	"strings"
	"testing"

	"k8s.io/client-go/rest"

	configv1alpha2 "github.com/scaleplane/scaleplane/api/config/v1alpha2"
	"github.com/scaleplane/scaleplane/certs"
	"github.com/scaleplane/scaleplane/profile"
)

// TestGitOpsNeedsCertManagerOrFiles: GitOps mode with the
// self-signed CA, which scaleplane would have to write into the
// repository's configurations, is refused before anything starts, saying
// which modes work; cert-manager and files modes are accepted.
func TestGitOpsNeedsCertManagerOrFiles(t *testing.T) {
	cfg := &configv1alpha2.Configuration{}
	cfg.Default()
	for _, tc := range []struct {
		mode CertMode
		ok   bool
	}{{"", false}, {CertSelfSigned, false}, {CertCertManager, true}, {CertFiles, true}} {
		err := Options{Config: cfg, RestConfig: &rest.Config{}, CertMode: tc.mode, GitOps: true}.withDefaults().validate()
		switch {
		case tc.ok && err != nil:
			t.Errorf("GitOps with cert mode %q: %v", tc.mode, err)
		case !tc.ok && (err == nil || !strings.Contains(err.Error(), "--cert-mode=cert-manager") || !strings.Contains(err.Error(), "--cert-mode=files")):
			t.Errorf("GitOps with cert mode %q: got %v, want a refusal naming cert-manager and files modes", tc.mode, err)
		}
	}
}

// TestRenderedConfigurationsCarryTheInjection: in cert-manager
// mode the rendered configurations carry the annotation that has
// cert-manager's CA injector fill caBundle from the rendered serving
// Certificate; in files mode they carry none (the user adds caBundle).
func TestRenderedConfigurationsCarryTheInjection(t *testing.T) {
	cfg := profile.SampleConfiguration()
	views, err := profile.CompileAll(cfg.Profiles)
	if err != nil {
		t.Fatal(err)
	}
	opts := Options{Config: cfg, Namespace: "platform", CertMode: CertCertManager}
	crts, err := RenderCertificates(opts)
	if err != nil {
		t.Fatal(err)
	}
	serving := crts[len(crts)-1]
	for _, obj := range RenderWebhookConfigurations(opts, views) {
		if got, want := obj.GetAnnotations()[certs.InjectCAFromAnnotation], serving.GetNamespace()+"/"+serving.GetName(); got != want {
			t.Errorf("%s: %s = %q, want %q (the rendered serving Certificate)", obj.GetName(), certs.InjectCAFromAnnotation, got, want)
		}
	}
	opts.CertMode = CertFiles
	for _, obj := range RenderWebhookConfigurations(opts, views) {
		if len(obj.GetAnnotations()) != 0 {
			t.Errorf("%s in files mode has annotations %v", obj.GetName(), obj.GetAnnotations())
		}
	}
	if _, err := RenderCertificates(opts); err == nil {
		t.Error("RenderCertificates in files mode: no error")
	}
}
