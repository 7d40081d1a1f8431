package admission

import (
	"context"
	"net/url"
	"path"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	configv1alpha2 "github.com/scaleplane/scaleplane/api/config/v1alpha2"
	"github.com/scaleplane/scaleplane/webhooks"
)

// TestScaleOutsideRange: S1. kubectl scale never reaches the main
// resource's webhooks; the /scale webhook refuses counts outside the range
// and says how to widen it.
func TestScaleOutsideRange(t *testing.T) {
	ns := namespace(t)
	mustApply(t, manifest{kind: "RackedCluster", name: "db", namespace: ns, spec: obj{
		"replicas": 3, "scaleConfig": obj{"minReplicas": 2, "maxReplicas": 6}, "racks": racks("a", 3, "b", 3),
	}})
	refusals := []struct {
		replicas string
		want     string
	}{
		{"9", "spec.replicas: Invalid value: 9: outside the autoscaling range [2, 6] of spec.scaleConfig; raise spec.scaleConfig.maxReplicas to 9 or more, or pin the config"},
		{"1", "spec.replicas: Invalid value: 1: outside the autoscaling range [2, 6] of spec.scaleConfig; lower spec.scaleConfig.minReplicas to 1 or less, or pin the config"},
		{"1001", "spec.replicas: Invalid value: 1001: must be less than or equal to 1000"},
	}
	for _, r := range refusals {
		_, err := kubectl(t, "scale", "rackedcluster", "db", "-n", ns, "--replicas="+r.replicas)
		if err == nil || !strings.Contains(err.Error(), r.want) {
			t.Errorf("kubectl scale --replicas=%s: %v\nwant a refusal containing %q", r.replicas, err, r.want)
		}
	}
	wantFields(t, get(t, "RackedCluster", ns, "db"), map[string]interface{}{"spec.replicas": i64(3)})

	// Inside the range: allowed; the controller (not running here) fans it
	// out.
	if _, err := kubectl(t, "scale", "rackedcluster", "db", "-n", ns, "--replicas=6"); err != nil {
		t.Fatal(err)
	}
	wantFields(t, get(t, "RackedCluster", ns, "db"), map[string]interface{}{"spec.replicas": i64(6)})

	// Widening the range and scaling at once: the webhook must judge the
	// new range, not a cached copy of the old one.
	if _, err := kubectl(t, "patch", "rackedcluster", "db", "-n", ns, "--type=merge", "-p", `{"spec":{"scaleConfig":{"maxReplicas":12}}}`); err != nil {
		t.Fatal(err)
	}
	if _, err := kubectl(t, "scale", "rackedcluster", "db", "-n", ns, "--replicas=9"); err != nil {
		t.Fatalf("scale within the just widened range: %v", err)
	}

	// A pinned config is "no autoscaling": any count goes (the controller
	// re-pins it).
	mustApply(t, manifest{kind: "WorkerGroup", name: "wg", namespace: ns, spec: obj{"replicas": 2}})
	if _, err := kubectl(t, "scale", "workergroup", "wg", "-n", ns, "--replicas=7"); err != nil {
		t.Fatalf("scale a pinned WorkerGroup: %v", err)
	}
	wantFields(t, get(t, "WorkerGroup", ns, "wg"), map[string]interface{}{"spec.replicas": i64(7)})

	// A Function's range belongs to the HPA on its Deployment; kubectl
	// scale selects external scaling, where the range is ignored (W2).
	mustApply(t, manifest{kind: "Function", name: "fn", namespace: ns, spec: obj{"replicas": 2, "scaleConfig": obj{"minReplicas": 1, "maxReplicas": 3}}})
	if _, err := kubectl(t, "scale", "samplefunction", "fn", "-n", ns, "--replicas=5"); err != nil {
		t.Fatalf("scale a Function in external mode: %v", err)
	}
	wantFields(t, get(t, "Function", ns, "fn"), map[string]interface{}{"spec.replicas": i64(5)})
}

// TestSyncConfigurations runs the start-up sync against the configurations
// the API server holds (with its defaults filled in): in line, it writes
// nothing; after a profile's entries are removed, it puts them back with
// the clientConfig of the others, and admission for that kind works again.
func TestSyncConfigurations(t *testing.T) {
	ns := namespace(t)
	ctx := context.Background()
	mName, vName := configv1alpha2.DefaultMutatingConfigurationName, configv1alpha2.DefaultValidatingConfigurationName
	read := func() (*admissionregistrationv1.MutatingWebhookConfiguration, *admissionregistrationv1.ValidatingWebhookConfiguration) {
		m := &admissionregistrationv1.MutatingWebhookConfiguration{}
		v := &admissionregistrationv1.ValidatingWebhookConfiguration{}
		if err := cluster.Client.Get(ctx, client.ObjectKey{Name: mName}, m); err != nil {
			t.Fatal(err)
		}
		if err := cluster.Client.Get(ctx, client.ObjectKey{Name: vName}, v); err != nil {
			t.Fatal(err)
		}
		return m, v
	}
	m0, v0 := read()
	if err := webhooks.SyncConfigurations(ctx, cluster.Client, views, webhookConfig); err != nil {
		t.Fatal(err)
	}
	m1, v1 := read()
	if m1.ResourceVersion != m0.ResourceVersion || v1.ResourceVersion != v0.ResourceVersion {
		t.Errorf("configurations in line with the profiles were written")
	}

	// The foreign profile is dropped, then comes back.
	samplesOnly := views[:len(views)-1]
	if err := webhooks.SyncConfigurations(ctx, cluster.Client, samplesOnly, webhookConfig); err != nil {
		t.Fatal(err)
	}
	m2, v2 := read()
	if len(m2.Webhooks) != len(samplesOnly) || len(v2.Webhooks) != 2*len(samplesOnly) {
		t.Errorf("after dropping a profile: %d mutating, %d validating entries", len(m2.Webhooks), len(v2.Webhooks))
	}
	if err := webhooks.SyncConfigurations(ctx, cluster.Client, views, webhookConfig); err != nil {
		t.Fatal(err)
	}
	m3, v3 := read()
	summary := func(name string, cc admissionregistrationv1.WebhookClientConfig) string {
		// envtest writes host:port//path; a restored entry gets the clean
		// form of the same address.
		u, err := url.Parse(*cc.URL)
		if err != nil {
			t.Fatal(err)
		}
		return name + " " + u.Host + " " + path.Clean(u.Path) + " " + string(cc.CABundle)
	}
	var want, got []string
	for i := range m0.Webhooks {
		want = append(want, summary(m0.Webhooks[i].Name, m0.Webhooks[i].ClientConfig))
	}
	for i := range v0.Webhooks {
		want = append(want, summary(v0.Webhooks[i].Name, v0.Webhooks[i].ClientConfig))
	}
	for i := range m3.Webhooks {
		got = append(got, summary(m3.Webhooks[i].Name, m3.Webhooks[i].ClientConfig))
	}
	for i := range v3.Webhooks {
		got = append(got, summary(v3.Webhooks[i].Name, v3.Webhooks[i].ClientConfig))
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("entries after restoring the profile (-want +got):\n%s", diff)
	}

	// The API server sees the restored entries: the foreign kind is
	// defaulted and validated again.
	eventually(t, func(context.Context) (bool, string) {
		_, err := apply(t, manifest{kind: "ZonedDatabase", name: "bad", namespace: ns, spec: obj{"topology": obj{"zones": zones("z", 1, "z", 1)}}})
		if err == nil {
			_, _ = kubectl(t, "delete", "zoneddatabase", "bad", "-n", ns)
			return false, "duplicate zones were accepted"
		}
		return strings.Contains(err.Error(), "spec.topology.zones[1].zoneName:"), err.Error()
	})
}
