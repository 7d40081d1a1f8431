package admission

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"strconv"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/scaleplane/scaleplane/controllers/autoscaler"
	"github.com/scaleplane/scaleplane/e2e/framework"
	"github.com/scaleplane/scaleplane/promql"
	"github.com/scaleplane/scaleplane/webhooks"
)

// BenchmarkUpdateLatency weighs admission's one fast path, the view's
// decoder (webhooks.NewReferenceMutator has the switch), where it should
// matter most: an UPDATE, end to end through the real
// kube-apiserver, of a large object. The object (largeRackedCluster) is a
// RackedCluster of about 90 KB: 20 field managers apply 15 annotations and 5
// labels each (21 managedFields entries), and an annotation holds a 40 KB
// pod template; the API server sends it twice per review (object and
// oldObject), to both webhooks.
//
// The sides, each in a namespace only its webhooks select, take turns
// update by update in a rotating order:
//
//   - "fast" is scaleplane's webhooks as webhooks.Setup serves them: only
//     the fields the view reads are decoded, defaulted and diffed;
//   - "reference" is the same handlers on the reference path
//     (NewReferenceMutator, NewReferenceValidator): the whole object
//     decoded, defaulted and diffed;
//   - "noop" is the control webhooks of BenchmarkCreateLatency (allow, no
//     patch), served the same way.
//
// "edit" changes one annotation (no patch); "scale" changes spec.replicas
// between 3 and 4 (M5 fans it out to the three racks: a patch, except on
// the noop side).
//
//	SCALEPLANE_CONTROLPLANE_DIR=bin/controlplane go test -run '^$' -bench UpdateLatency -benchtime 40x ./e2e/admission/
func BenchmarkUpdateLatency(b *testing.B) {
	arms := []string{"reference"}
	startWebhooksWith(b, func(m *framework.Manager) {
		registerNoop(m)
		limits := promql.Limits{}
		sources, err := autoscaler.NewSources(promql.NewEvaluator(promql.NewStore(promql.Options{}), promql.EvaluatorOptions{Limits: limits}), nil, limits)
		if err != nil {
			b.Fatalf("build trigger sources: %v", err)
		}
		allow := admission.HandlerFunc(func(context.Context, admission.Request) admission.Response { return admission.Allowed("") })
		srv := m.GetWebhookServer()
		for _, arm := range arms {
			for _, v := range views {
				gvr := v.GVR()
				srv.Register(noopPath(arm, webhooks.DispatchPath(webhooks.DispatchMutatePrefix, gvr)), &webhook.Admission{Handler: webhooks.NewReferenceMutator(v)})
				srv.Register(noopPath(arm, webhooks.DispatchPath(webhooks.DispatchValidatePrefix, gvr)), &webhook.Admission{Handler: webhooks.NewReferenceValidator(v, sources)})
				srv.Register(noopPath(arm, webhooks.DispatchPath(webhooks.DispatchValidateScalePrefix, gvr)), &webhook.Admission{Handler: allow})
			}
		}
	})
	url := func(path string) admissionregistrationv1.WebhookClientConfig {
		u := "https://" + net.JoinHostPort(cluster.WebhookHost, strconv.Itoa(cluster.WebhookPort)) + path
		return admissionregistrationv1.WebhookClientConfig{URL: &u, CABundle: cluster.CAData}
	}
	for _, arm := range arms {
		mc, vc := noopConfigurations(noopSide{name: arm}, url)
		for _, o := range []client.Object{mc, vc} {
			if err := cluster.Client.Create(context.Background(), o); err != nil {
				b.Fatalf("create %s: %v", o.GetName(), err)
			}
			b.Cleanup(func() { _ = cluster.Client.Delete(context.Background(), o) })
		}
	}
	sides := []*updateSide{{name: "fast"}, {name: "reference"}, {name: "noop"}}
	for _, s := range sides {
		s.setUp(b)
	}
	for _, shape := range []string{"edit", "scale"} {
		b.Run(shape, func(b *testing.B) {
			update := func(s *updateSide) {
				s.n++
				patch := fmt.Sprintf(`{"metadata":{"annotations":{"tooling-00.example.com/setting-00":"revision %d"}}}`, s.n)
				if shape == "scale" {
					patch = fmt.Sprintf(`{"spec":{"replicas":%d}}`, 3+s.n%2)
				}
				start := time.Now()
				if err := cluster.Client.Patch(context.Background(), s.obj, client.RawPatch(types.MergePatchType, []byte(patch)), client.FieldOwner("tooling-00")); err != nil {
					b.Fatalf("update in %s: %v", s.namespace, err)
				}
				s.latencies = append(s.latencies, time.Since(start))
			}
			// Warm connections, TLS sessions and caches on every side.
			for range 5 {
				for _, s := range sides {
					update(s)
				}
			}
			for _, s := range sides {
				s.latencies = s.latencies[:0]
				s.served0, s.reviews0 = s.served(b)
			}
			b.ResetTimer()
			for i := range b.N {
				for j := range sides {
					update(sides[(i+j)%len(sides)])
				}
			}
			b.StopTimer()
			for _, s := range sides {
				s.report(b, shape, sides[len(sides)-1])
			}
		})
	}
}

// updateSide is one set of webhooks under BenchmarkUpdateLatency, and the
// large object it updates.
type updateSide struct {
	name, namespace string
	obj             *unstructured.Unstructured
	n               int
	latencies       []time.Duration
	// served0 and reviews0 are the webhook server's totals before the
	// measured updates.
	served0  float64
	reviews0 uint64
}

// setUp makes the side's namespace and large object, and waits until the
// side's webhooks review its updates.
func (s *updateSide) setUp(b *testing.B) {
	labels := map[string]string{webhooksOffLabel: "true", noopLabel: s.name}
	if s.name == "fast" {
		labels = nil
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "bench-update-" + s.name + "-", Labels: labels}}
	if err := cluster.Client.Create(context.Background(), ns); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = cluster.Client.Delete(context.Background(), ns) })
	s.namespace = ns.Name
	s.obj = largeRackedCluster(b, s.namespace)
	if s.name == "fast" || s.name == "noop" {
		return
	}
	// The side's configurations were created at run time: wait until the
	// API server calls them.
	framework.Eventually(b, 0, func(ctx context.Context) (bool, string) {
		_, before := s.served(b)
		patch := fmt.Sprintf(`{"metadata":{"annotations":{"bench/probe":"%d"}}}`, time.Now().UnixNano())
		if err := cluster.Client.Patch(ctx, s.obj, client.RawPatch(types.MergePatchType, []byte(patch))); err != nil {
			return false, err.Error()
		}
		_, after := s.served(b)
		return after > before, s.name + "'s webhooks are not called yet"
	})
}

// largeRackedCluster creates BenchmarkUpdateLatency's object in ns: created
// with its spec and the pod template, then applied by 20 field managers.
func largeRackedCluster(b *testing.B, ns string) *unstructured.Unstructured {
	ctx := context.Background()
	u := &unstructured.Unstructured{}
	body := manifest{kind: "RackedCluster", name: "large", namespace: ns, spec: obj{
		"replicas": 3, "scaleConfig": fullConfig(), "racks": racks("rack-a", 3, "rack-b", 3, "rack-c", 3),
	}, annotations: map[string]string{"operator.example.com/pod-template": podTemplateJSON()}}.json()
	if err := u.UnmarshalJSON([]byte(body)); err != nil {
		b.Fatal(err)
	}
	if err := cluster.Client.Create(ctx, u); err != nil {
		b.Fatalf("create the large object in %s: %v", ns, err)
	}
	for m := range 20 {
		ann, lab := obj{}, obj{}
		for i := range 15 {
			ann[fmt.Sprintf("tooling-%02d.example.com/setting-%02d", m, i)] = fmt.Sprintf("value of setting %d written by manager %d", i, m)
		}
		for i := range 5 {
			lab[fmt.Sprintf("tooling-%02d.example.com/label-%d", m, i)] = fmt.Sprintf("v%d", i)
		}
		// Applied, as tools apply: the API server keeps at most ten
		// managers of Update operations and merges the rest.
		patch, err := json.Marshal(obj{"apiVersion": u.GetAPIVersion(), "kind": u.GetKind(),
			"metadata": obj{"name": u.GetName(), "annotations": ann, "labels": lab}})
		if err != nil {
			b.Fatal(err)
		}
		if err := cluster.Client.Patch(ctx, u, client.RawPatch(types.ApplyPatchType, patch), client.FieldOwner(fmt.Sprintf("tooling-%02d", m)), client.ForceOwnership); err != nil {
			b.Fatalf("write the large object as manager %d: %v", m, err)
		}
	}
	data, err := u.MarshalJSON()
	if err != nil {
		b.Fatal(err)
	}
	if len(u.GetManagedFields()) < 21 || len(data) < 85_000 {
		b.Fatalf("the large object has %d managedFields entries and %d bytes, want 21 and about 90 KB", len(u.GetManagedFields()), len(data))
	}
	return u
}

// podTemplateJSON is a pod template of seven containers with 60 variables,
// mounts and resources each: about 40 KB (webhooks' BenchmarkLargeObject
// uses the same).
func podTemplateJSON() string {
	var containers list
	for c := range 7 {
		var env, mounts list
		for i := range 60 {
			env = append(env, obj{"name": fmt.Sprintf("SETTING_%d_%02d", c, i), "value": fmt.Sprintf("value-%02d-of-container-%d-with-some-length", i, c)})
		}
		for i := range 8 {
			mounts = append(mounts, obj{"name": fmt.Sprintf("volume-%d", i), "mountPath": fmt.Sprintf("/var/lib/data/volume-%d", i), "readOnly": i%2 == 0})
		}
		containers = append(containers, obj{"name": fmt.Sprintf("container-%d", c), "image": "registry.example.com/db/server:6.2.1",
			"env": env, "volumeMounts": mounts, "ports": list{obj{"name": "cql", "containerPort": 9042}, obj{"name": "metrics", "containerPort": 9180}},
			"resources": obj{"requests": obj{"cpu": "2", "memory": "8Gi"}, "limits": obj{"cpu": "4", "memory": "8Gi"}}})
	}
	data, err := json.Marshal(obj{"spec": obj{"containers": containers}})
	if err != nil {
		panic(err)
	}
	return string(data)
}

// paths are the webhook server paths of the side's two reviews of a
// RackedCluster update.
func (s *updateSide) paths() []string {
	var gvr = gvks["RackedCluster"]
	for _, v := range views {
		if v.GVK() != gvr {
			continue
		}
		return reviewPaths(s.name == "fast", s.name, v.GVR())
	}
	return nil
}

// served is the webhook server's time on the side's reviews, and how many.
func (s *updateSide) served(b *testing.B) (seconds float64, reviews uint64) {
	return servedOn(b, s.paths())
}

// report gives the side's p50, p90 and mean update (ms), the webhook
// server's time per update (µs, both reviews) and the p50 against noop's.
func (s *updateSide) report(b *testing.B, shape string, noop *updateSide) {
	p50, p90 := percentiles(s.latencies)
	var sum time.Duration
	for _, d := range s.latencies {
		sum += d
	}
	updates := float64(len(s.latencies))
	b.ReportMetric(ms(p50), s.name+"-p50-ms")
	b.ReportMetric(ms(p90), s.name+"-p90-ms")
	b.ReportMetric(ms(sum)/updates, s.name+"-mean-ms")
	seconds, reviews := s.served(b)
	if reviews <= s.reviews0 {
		b.Fatalf("%s side: its webhooks served no review of %s", s.name, shape)
	}
	b.ReportMetric((seconds-s.served0)*1e6/updates, s.name+"-served-µs/update")
	if shape == "scale" && s != noop {
		replicas, _, _ := unstructured.NestedInt64(s.obj.Object, "spec", "replicas")
		if got, want := fmt.Sprint(groupSizes(s.obj, "spec.racks", "members")), fmt.Sprint([]interface{}{replicas, replicas, replicas}); got != want {
			b.Fatalf("%s side: racks %s after the last update, want %s", s.name, got, want)
		}
	}
	if s != noop {
		n50, _ := percentiles(noop.latencies)
		b.ReportMetric(float64(p50)/float64(n50), s.name+"/noop-p50")
	}
}
