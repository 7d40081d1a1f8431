package webhooks

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	configv1alpha2 "github.com/scaleplane/scaleplane/api/config/v1alpha2"
	"github.com/scaleplane/scaleplane/profile"
)

// TestMissingDispatchEntries: in GitOps mode scaleplane reads
// the repository's configurations and names, per kind, the entries that do
// not route it to the dispatcher; it counts an entry whatever Service, URL,
// CA or tuning the repository chose, and not one that calls another path or
// matches other resources.
func TestMissingDispatchEntries(t *testing.T) {
	views := testViews(t)
	wc := ConfigurationOptions{}
	rc, fn := views[rackedCluster], views[function]
	both := []*profile.Compiled{rc, fn}
	ctx := context.Background()
	name := func(gvr schema.GroupVersionResource) (m, v, s string) {
		return configv1alpha2.DefaultMutatingConfigurationName + ": " + mutateName(gvr, "scaleplane"),
			configv1alpha2.DefaultValidatingConfigurationName + ": " + validateName(gvr, "scaleplane"),
			configv1alpha2.DefaultValidatingConfigurationName + ": " + scaleName(gvr, "scaleplane")
	}
	rcM, rcV, rcS := name(rc.GVR())
	fnM, fnV, fnS := name(fn.GVR())
	url := func(path string) admissionregistrationv1.WebhookClientConfig {
		u := "https://127.0.0.1:9443" + path
		return admissionregistrationv1.WebhookClientConfig{URL: &u, CABundle: []byte("ca")}
	}

	cases := []struct {
		name string
		objs func() []client.Object
		want map[schema.GroupVersionResource][]string
	}{{
		name: "no configurations",
		objs: func() []client.Object { return nil },
		want: map[schema.GroupVersionResource][]string{rc.GVR(): {rcM, rcV, rcS}, fn.GVR(): {fnM, fnV, fnS}},
	}, {
		name: "rendered for both, by URL, with a CA",
		objs: func() []client.Object { m, v := DispatchConfigurations(both, wc, url); return []client.Object{m, v} },
		want: map[schema.GroupVersionResource][]string{},
	}, {
		name: "rendered for one kind only",
		objs: func() []client.Object {
			m, v := DispatchConfigurations(both[:1], wc, ServiceClientConfig("ns", "svc", 443))
			return []client.Object{m, v}
		},
		want: map[schema.GroupVersionResource][]string{fn.GVR(): {fnM, fnV, fnS}},
	}, {
		name: "an entry calling a per-kind path, another matching an old version",
		objs: func() []client.Object {
			m, v := DispatchConfigurations(both, wc, url)
			m.Webhooks[0].ClientConfig = url(MutatePath(rc.GVR()))
			v.Webhooks[3].Rules[0].APIVersions = []string{"v0"}
			return []client.Object{m, v}
		},
		want: map[schema.GroupVersionResource][]string{rc.GVR(): {rcM}, fn.GVR(): {fnS}},
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := MissingDispatchEntries(ctx, fakeClient(t, tc.objs()...), both, wc)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("missing entries (-want +got):\n%s", diff)
			}
		})
	}
}
