package controllers_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/scaleplane/scaleplane/controllers"
	"github.com/scaleplane/scaleplane/e2e/framework"
)

const autoscaled = `
apiVersion: samples.scaleplane.io/v1alpha1
kind: RackedCluster
metadata:
  name: auto
spec:
  replicas: 1
  scaleConfig:
    minReplicas: 2
    maxReplicas: 6
    metrics:
    - type: Resource
      resource:
        name: cpu
        target: {type: Utilization, averageUtilization: 50}
  racks:
  - {name: a, members: 1}
  - {name: b, members: 1}
`

func minMax(lo, hi int32) func(h *autoscalingv2.HorizontalPodAutoscaler) (bool, string) {
	return func(h *autoscalingv2.HorizontalPodAutoscaler) (bool, string) {
		ok := h.Spec.MinReplicas != nil && *h.Spec.MinReplicas == lo && h.Spec.MaxReplicas == hi
		return ok, fmt.Sprintf("HPA %s has min %v max %d, want %d..%d", h.Name, derefInt32(h.Spec.MinReplicas), h.Spec.MaxReplicas, lo, hi)
	}
}

// C4 with the real HPA controller: an HPA owned by the RackedCluster, which
// the HPA controller uses to raise replicas to minReplicas through /scale,
// which the fan-out carries to the racks; updated when the config changes,
// restored when deleted or edited by hand, deleted when the range
// collapses.
func TestHPALifecycle(t *testing.T) {
	startManager(t, controllers.Options{})
	ns := cluster.Namespace(t)
	kubectlApply(t, ns, autoscaled)
	ctx := context.Background()
	u, err := get(ctx, "RackedCluster", ns, "auto")
	if err != nil {
		t.Fatal(err)
	}
	const name = "auto-rackedcluster.samples.scaleplane.io"
	h := waitHPA(t, ns, name, minMax(2, 6))
	if !isControlledBy(h, u) {
		t.Errorf("HPA owner references %v, want controller %s", h.OwnerReferences, u.GetUID())
	}
	want := autoscalingv2.CrossVersionObjectReference{APIVersion: "samples.scaleplane.io/v1alpha1", Kind: "RackedCluster", Name: "auto"}
	if h.Spec.ScaleTargetRef != want {
		t.Errorf("scaleTargetRef = %+v, want %+v", h.Spec.ScaleTargetRef, want)
	}
	if h.Labels["app.kubernetes.io/managed-by"] != "scaleplane" {
		t.Errorf("labels = %v, want managed-by scaleplane", h.Labels)
	}
	waitEvent(t, ns, "auto", "Normal", "HPAApplied", "created", name)

	// The real HPA controller raises 1 to minReplicas 2 through /scale.
	framework.Eventually(t, 0, func(ctx context.Context) (bool, string) {
		u, err := get(ctx, "RackedCluster", ns, "auto")
		if err != nil {
			return false, err.Error()
		}
		r, _, _ := unstructured.NestedInt64(u.Object, "spec", "replicas")
		return r == 2, fmt.Sprintf("spec.replicas %d, want 2 from the HPA controller; its log:\n%s", r, tail(cluster.ControllerManagerLog(), 2000))
	})
	waitRacks(t, ns, "auto", 2)

	kubectl(t, "patch", "-n", ns, "rackedcluster/auto", "--type=merge", "-p", `{"spec":{"scaleConfig":{"maxReplicas":8}}}`)
	waitHPA(t, ns, name, minMax(2, 8))
	waitEvent(t, ns, "auto", "Normal", "HPAApplied", "updated", "2..8")

	old := h.UID
	kubectl(t, "delete", "-n", ns, "hpa", name)
	waitHPA(t, ns, name, func(h *autoscalingv2.HorizontalPodAutoscaler) (bool, string) {
		return h.UID != old, "HPA not recreated after a hand delete"
	})

	kubectl(t, "patch", "-n", ns, "hpa", name, "--type=merge", "-p", `{"spec":{"maxReplicas":3}}`)
	waitHPA(t, ns, name, minMax(2, 8))

	kubectl(t, "patch", "-n", ns, "rackedcluster/auto", "--type=merge", "-p", `{"spec":{"scaleConfig":{"minReplicas":2,"maxReplicas":2}}}`)
	waitNoHPA(t, ns, name)
	waitEvent(t, ns, "auto", "Normal", "HPADeleted", "pinned at 2")
}

func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

// C5: a user's HPA on the same workload means no HPA of ours, a Warning
// naming theirs, and theirs never edited; once theirs is gone, ours comes.
func TestForeignHPA(t *testing.T) {
	startManager(t, controllers.Options{})
	ns := cluster.Namespace(t)
	kubectlApply(t, ns, autoscaled)
	const ours = "auto-rackedcluster.samples.scaleplane.io"
	waitHPA(t, ns, ours, minMax(2, 6))

	kubectlApply(t, ns, `
apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata:
  name: theirs
spec:
  scaleTargetRef: {apiVersion: samples.scaleplane.io/v1alpha1, kind: RackedCluster, name: auto}
  minReplicas: 2
  maxReplicas: 3
  metrics:
  - type: Resource
    resource:
      name: memory
      target: {type: Utilization, averageUtilization: 70}
`)
	waitNoHPA(t, ns, ours)
	waitEvent(t, ns, "auto", "Warning", "ForeignAutoscaler", "HorizontalPodAutoscaler/"+ns+"/theirs")
	waitEvent(t, ns, "auto", "Normal", "HPADeleted", "HorizontalPodAutoscaler/"+ns+"/theirs")

	theirs, err := getHPA(context.Background(), ns, "theirs")
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range theirs.ManagedFields {
		if mf.Manager == "scaleplane" {
			t.Errorf("scaleplane wrote the user's HPA: %+v", mf)
		}
	}
	if theirs.Spec.MaxReplicas != 3 || len(theirs.OwnerReferences) != 0 {
		t.Errorf("user's HPA changed: max %d, owners %v", theirs.Spec.MaxReplicas, theirs.OwnerReferences)
	}

	kubectl(t, "delete", "-n", ns, "hpa", "theirs")
	waitHPA(t, ns, ours, minMax(2, 6))
}

// C4 for a child target (Kyma's Function): the HPA scales the runtime
// Deployment while spec.replicas is absent; setting it switches to
// external mode, which removes the HPA; removing it brings the HPA back.
func TestFunctionHPAFollowsExternalMode(t *testing.T) {
	startManager(t, controllers.Options{})
	ns := cluster.Namespace(t)
	kubectlApply(t, ns, `
apiVersion: samples.scaleplane.io/v1alpha1
kind: Function
metadata:
  name: hello
spec:
  runtime: nodejs22
  source: "module.exports = { main: () => 'hello' }"
  scaleConfig:
    minReplicas: 1
    maxReplicas: 4
`)
	const name = "hello-function.samples.scaleplane.io"
	h := waitHPA(t, ns, name, minMax(1, 4))
	want := autoscalingv2.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "hello"}
	if h.Spec.ScaleTargetRef != want {
		t.Errorf("scaleTargetRef = %+v, want %+v", h.Spec.ScaleTargetRef, want)
	}
	if diff := cmp.Diff([]autoscalingv2.MetricSpec{cpuMetric(50)}, h.Spec.Metrics); diff != "" {
		t.Errorf("metrics are not the profile's defaults (-want +got):\n%s", diff)
	}

	kubectl(t, "patch", "-n", ns, "samplefunction/hello", "--type=merge", "-p", `{"spec":{"replicas":2}}`)
	waitNoHPA(t, ns, name)
	waitEvent(t, ns, "hello", "Normal", "HPADeleted", "external scaling mode")

	kubectl(t, "patch", "-n", ns, "samplefunction/hello", "--type=json", "-p", `[{"op":"remove","path":"/spec/replicas"}]`)
	waitHPA(t, ns, name, minMax(1, 4))
}
