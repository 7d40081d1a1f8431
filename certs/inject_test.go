package certs

import (
	"context"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
)

func TestInjectionNewer(t *testing.T) {
	in := injection{uid: "u1", revision: 5}
	tests := []struct {
		name    string
		current string
		want    bool
	}{
		{name: "never injected", current: "", want: true},
		{name: "older revision of the same Secret", current: "u1/4", want: true},
		{name: "same revision (caBundle may have been reset)", current: "u1/5", want: true},
		{name: "newer revision written by another replica", current: "u1/6", want: false},
		{name: "another Secret (re-created)", current: "u0/9", want: true},
		{name: "unparsable annotation", current: "u1/x", want: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, in.newer(tt.current)); diff != "" {
				t.Errorf("newer(%q) (-want +got):\n%s", tt.current, diff)
			}
		})
	}
}

// TestInjectOnlyOwnedEntries: a configuration may hold another embedder's
// entry (the webhooks sync keeps foreign entries); it calls its own server
// with its own CA. The injection writes scaleplane's CA into the entries
// Options.OwnsEntry accepts and leaves the other's caBundle as it was.
func TestInjectOnlyOwnedEntries(t *testing.T) {
	s := NewScheme()
	url := "https://127.0.0.1:9/never"
	cfg := &admissionregistrationv1.MutatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "scaleplane-mutating-webhook-configuration"},
		Webhooks: []admissionregistrationv1.MutatingWebhook{
			{Name: "widgets.v1.example.org.scaleplane.scaleplane.io", ClientConfig: admissionregistrationv1.WebhookClientConfig{URL: &url}},
			{Name: "widgets.v1.example.org.other.scaleplane.io", ClientConfig: admissionregistrationv1.WebhookClientConfig{URL: &url, CABundle: []byte("theirs")}},
		},
	}
	c := fake.NewClientBuilder().WithScheme(s).WithObjects(cfg).Build()
	owns := func(name string) bool { return strings.HasSuffix(name, ".scaleplane.scaleplane.io") }
	missing, err := inject(context.Background(), c, injection{bundle: []byte("ours"), uid: "u", revision: 1, owns: owns}, []string{cfg.Name}, nil)
	if err != nil || len(missing) != 0 {
		t.Fatalf("inject: %v, missing %v", err, missing)
	}
	got := &admissionregistrationv1.MutatingWebhookConfiguration{}
	if err := c.Get(context.Background(), client.ObjectKeyFromObject(cfg), got); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"widgets.v1.example.org.scaleplane.scaleplane.io": "ours", "widgets.v1.example.org.other.scaleplane.io": "theirs"}
	have := map[string]string{}
	for _, w := range got.Webhooks {
		have[w.Name] = string(w.ClientConfig.CABundle)
	}
	if diff := cmp.Diff(want, have); diff != "" {
		t.Errorf("caBundle by entry (-want +got):\n%s", diff)
	}
}
