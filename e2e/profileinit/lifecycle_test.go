package profileinit_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/scaleplane/scaleplane/controllers"
	"github.com/scaleplane/scaleplane/controllers/autoscaler"
	"github.com/scaleplane/scaleplane/e2e/framework"
	"github.com/scaleplane/scaleplane/profile"
	"github.com/scaleplane/scaleplane/promql"
	"github.com/scaleplane/scaleplane/webhooks"
)

// startScaleplane runs scaleplane's webhooks and controllers for the
// inferred profiles until the test ends.
func startScaleplane(t *testing.T) {
	t.Helper()
	m, err := cluster.NewManager(framework.ManagerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	limits := promql.Limits{}
	sources, err := autoscaler.NewSources(promql.NewEvaluator(promql.NewStore(promql.Options{}), promql.EvaluatorOptions{Limits: limits}), nil, limits)
	if err != nil {
		t.Fatal(err)
	}
	if err := webhooks.Setup(m, inferred, webhooks.Options{Sources: sources}); err != nil {
		t.Fatal(err)
	}
	if err := controllers.Setup(m, inferred, controllers.Options{SkipNameValidation: true, KEDADiscoveryInterval: -1}); err != nil {
		t.Fatal(err)
	}
	if err := m.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := m.Stop(); err != nil {
			t.Errorf("stop the manager: %v", err)
		}
	})
}

func view(t *testing.T, kind string) *profile.Compiled {
	t.Helper()
	for _, v := range inferred {
		if v.GVK().Kind == kind {
			return v
		}
	}
	t.Fatalf("no inferred profile for %s", kind)
	return nil
}

// TestInferredProfilesScale: each profile profile init infers,
// with no hand edit, scales its kind through the real API server and
// kubectl: create (defaulted), kubectl scale up (fanned out to the member
// groups and the pin), kubectl scale to 0 (allowed, or refused naming the
// schema limit where the schema's minimum forbids the pin), autoscale (a
// range with a metric: scaleplane's HPA, run by the real HPA controller),
// delete.
func TestInferredProfilesScale(t *testing.T) {
	startScaleplane(t)
	ns := cluster.Namespace(t)
	cases := []struct {
		kind     string
		resource string
		body     string // the object's spec, YAML flow style
		// want are fields read after each step (path -> value) at 2, 3
		// and 0 replicas; %d is the count.
		want      map[string]string
		refuses0  string // substring of the refusal of kubectl scale --replicas=0; "" means allowed
		clustered bool
		// autoscale is a merge patch giving the object an autoscaling
		// range [4, 6] with a CPU metric; empty where the kind cannot
		// have one here (see the case).
		autoscale string
	}{{
		kind: "LeaderWorkerSet", resource: "leaderworkersets.leaderworkerset.x-k8s.io",
		body:      "{replicas: 2, leaderWorkerTemplate: {size: 3}}",
		want:      map[string]string{".spec.replicas": "%d", ".spec.leaderWorkerTemplate.size": "3"},
		autoscale: annotationRange(),
	}, {
		kind: "Function", resource: "functions.serverless.example.org",
		body:     "{runtime: python312, replicas: 2}",
		want:     map[string]string{".spec.replicas": "%d", ".spec.scaleConfig.minReplicas": "%d", ".spec.scaleConfig.maxReplicas": "%d"},
		refuses0: "scaling to 0 needs spec.scaleConfig.minReplicas := 0, but the CRD's schema requires a value of at least 1 (minimum)",
	}, {
		kind: "CassandraCluster", resource: "cassandraclusters.db.example.org",
		body:      "{topology: {nodesPerRack: 2, racks: [{rackName: a}, {rackName: b}]}}",
		want:      map[string]string{".spec.topology.nodesPerRack": "%d", ".spec.topology.racks[*].nodes": "%d %d", ".spec.operations.autoscaling.minReplicas": "%d"},
		autoscale: `{"spec":{"operations":{"autoscaling":{"minReplicas":4,"maxReplicas":6,"metrics":[{"type":"Resource","resource":{"name":"cpu","target":{"type":"Utilization","averageUtilization":50}}}]}}}}`,
	}, {
		kind: "Worker", resource: "workers.batch.example.org",
		body:      "{replicas: 2, queue: jobs}",
		want:      map[string]string{".spec.replicas": "%d"},
		autoscale: annotationRange(),
	}, {
		kind: "EdgePool", resource: "edgepools.infra.example.org",
		body: "{size: 2, region: west}", clustered: true,
		want: map[string]string{".spec.size": "%d"},
	}}
	for _, tc := range cases {
		t.Run(tc.kind, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancel()
			v := view(t, tc.kind)
			nsArgs := []string{"-n", ns}
			meta := fmt.Sprintf("{name: demo, namespace: %s}", ns)
			if tc.clustered {
				nsArgs, meta = nil, "{name: demo-"+ns+"}"
			}
			name := "demo"
			if tc.clustered {
				name = "demo-" + ns
			}
			manifest := fmt.Sprintf("apiVersion: %s\nkind: %s\nmetadata: %s\nspec: %s\n", v.GVK().GroupVersion(), tc.kind, meta, tc.body)
			if out, err := cluster.KubectlWithInput(ctx, manifest, "apply", "--server-side", "-f", "-"); err != nil {
				t.Fatalf("create: %v\n%s", err, out)
			}
			key := client.ObjectKey{Name: name}
			if !tc.clustered {
				key.Namespace = ns
			}
			check := func(n int) {
				t.Helper()
				framework.EventuallyFields(t, cluster.Client, v.GVK(), key, n, tc.want, jsonpath)
			}
			check(2)
			scale := func(n int) (string, error) {
				return cluster.Kubectl(ctx, append([]string{"scale", tc.resource + "/" + name, fmt.Sprintf("--replicas=%d", n)}, nsArgs...)...)
			}
			if out, err := scale(3); err != nil {
				t.Fatalf("kubectl scale --replicas=3: %v\n%s", err, out)
			}
			check(3)
			out, err := scale(0)
			switch {
			case tc.refuses0 == "" && err != nil:
				t.Fatalf("kubectl scale --replicas=0: %v\n%s", err, out)
			case tc.refuses0 == "":
				check(0)
			case err == nil || !strings.Contains(out+err.Error(), tc.refuses0):
				t.Fatalf("kubectl scale --replicas=0: %v\n%s\nwant a refusal containing %q", err, out, tc.refuses0)
			default:
				check(3)
			}
			// Autoscale: a range with a metric makes scaleplane create an
			// HPA (C4); the real HPA controller raises the workload to
			// minReplicas through /scale and scaleplane carries it to the
			// member groups (C1). The Function's scaleConfig has no room
			// for metrics and profile init infers no default metrics; the
			// cluster-scoped EdgePool has no HPA: an HPA cannot scale a cluster-scoped kind.
			if tc.autoscale != "" {
				if out, err := scale(2); err != nil {
					t.Fatalf("kubectl scale --replicas=2: %v\n%s", err, out)
				}
				check(2)
				if out, err := cluster.Kubectl(ctx, append([]string{"patch", tc.resource, name, "--type=merge", "-p", tc.autoscale}, nsArgs...)...); err != nil {
					t.Fatalf("kubectl patch (autoscaling range): %v\n%s", err, out)
				}
				check(4)
				// Raised by the HPA scaleplane made, not by anything else.
				var hpas autoscalingv2.HorizontalPodAutoscalerList
				if err := cluster.Client.List(ctx, &hpas, client.InNamespace(ns)); err != nil {
					t.Fatal(err)
				}
				found := false
				for _, h := range hpas.Items {
					if h.Spec.ScaleTargetRef.Name == name && h.Spec.ScaleTargetRef.Kind == tc.kind {
						found = h.Spec.MinReplicas != nil && *h.Spec.MinReplicas == 4 && h.Spec.MaxReplicas == 6
					}
				}
				if !found {
					t.Errorf("no HPA [4, 6] for %s %s among %d", tc.kind, name, len(hpas.Items))
				}
			}
			if out, err := cluster.Kubectl(ctx, append([]string{"delete", tc.resource, name, "--wait=true"}, nsArgs...)...); err != nil {
				t.Fatalf("delete: %v\n%s", err, out)
			}
		})
	}
}

// jsonpath reads path (".a.b", ".a[*].b") from u as kubectl's jsonpath
// output would print it: values separated by spaces.
func jsonpath(u *unstructured.Unstructured, path string) (string, error) {
	segs := strings.Split(strings.TrimPrefix(path, "."), ".")
	vals := []interface{}{u.Object}
	for _, seg := range segs {
		all := strings.HasSuffix(seg, "[*]")
		seg = strings.TrimSuffix(seg, "[*]")
		var next []interface{}
		for _, v := range vals {
			m, ok := v.(map[string]interface{})
			if !ok {
				return "", fmt.Errorf("%s: not an object at %s", path, seg)
			}
			x, ok := m[seg]
			if !ok {
				return "<absent>", nil
			}
			if all {
				l, _ := x.([]interface{})
				next = append(next, l...)
			} else {
				next = append(next, x)
			}
		}
		vals = next
	}
	parts := make([]string, len(vals))
	for i, v := range vals {
		parts[i] = fmt.Sprint(v)
	}
	return strings.Join(parts, " "), nil
}

// annotationRange is a merge patch setting the scale config annotation to
// the range [4, 6] with a CPU metric.
func annotationRange() string {
	cfg := `{"minReplicas":4,"maxReplicas":6,"metrics":[{"type":"Resource","resource":{"name":"cpu","target":{"type":"Utilization","averageUtilization":50}}}]}`
	patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]string{"scaleplane.io/scale-config": cfg}}})
	return string(patch)
}
