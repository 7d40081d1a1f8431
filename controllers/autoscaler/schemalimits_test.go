package autoscaler

import (
	"context"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/scaleplane/scaleplane/config"
)

// TestTickNeverWritesWhatTheSchemaRefuses: a range stored before its
// limits were enforced at admission (or a schema tightened since) asks for
// more replicas than the CRD's schema allows; the tick writes the highest
// count the schema accepts, not one the API server refuses on every poll.
func TestTickNeverWritesWhatTheSchemaRefuses(t *testing.T) {
	now := time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)
	a := newTestAutoscaler(t, now)
	k := a.byResource["rackedclusters"]
	crds, err := config.SampleCRDs()
	if err != nil {
		t.Fatal(err)
	}
	for _, crd := range crds {
		if crd.Spec.Names.Kind != "RackedCluster" {
			continue
		}
		eight := float64(8)
		spec := crd.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"]
		r := spec.Properties["replicas"]
		r.Maximum = &eight
		spec.Properties["replicas"] = r
		crd.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"] = spec
		if k.view, err = k.view.WithCRD(crd); err != nil {
			t.Fatal(err)
		}
	}
	var writes []int64
	writer := interceptor.NewClient(fake.NewClientBuilder().Build(), interceptor.Funcs{
		SubResourceUpdate: func(_ context.Context, _ client.Client, _ string, _ client.Object, opts ...client.SubResourceUpdateOption) error {
			o := &client.SubResourceUpdateOptions{}
			o.ApplyOptions(opts)
			n, _, _ := unstructured.NestedInt64(o.SubResourceBody.(*unstructured.Unstructured).Object, "spec", "replicas")
			writes = append(writes, n)
			return nil
		},
	})
	fixedValue = 500 // 50 replicas at 10 per replica; the range allows 10
	st := k.get(types.NamespacedName{Namespace: "shop", Name: "cart"})
	if _, err := k.reconcile(context.Background(), &env{writer: writer, events: &recorder{}}, autoscaled(6, nil), st); err != nil {
		t.Fatalf("reconcile: %v", err)
	}
	if len(writes) != 1 || writes[0] != 8 {
		t.Errorf("writes %v, want one of 8, the schema's maximum", writes)
	}
	if d := st.explain(k).Decisions; len(d) == 0 || d[len(d)-1].Desired != 8 {
		t.Errorf("decisions %+v, want one for 8", d)
	}
}
