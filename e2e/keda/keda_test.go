package keda

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/scaleplane/scaleplane/api/v1alpha1"
	"github.com/scaleplane/scaleplane/e2e/framework"
)

const cpuRange = `    minReplicas: 1
    maxReplicas: 10
    metrics:
    - type: Resource
      resource: {name: cpu, target: {type: Utilization, averageUtilization: 50}}
`

// With the real KEDA: a ScaledObject on a RackedCluster
// whose scale config asks for scaleplane's HPA. scaleplane stands down (its
// HPA deleted, a Warning naming the ScaledObject, C5); KEDA's HPA scales
// the workload through /scale from KEDA's external metrics and scaleplane
// carries every count to both racks (C1); KEDA's pause annotations hold
// the count without scaleplane taking over; deleting the ScaledObject
// hands the workload back to scaleplane's HPA.
func TestKEDAScalesAndScaleplaneStandsDown(t *testing.T) {
	start(t)
	ns := cluster.Namespace(t)
	apply(t, ns, rackedCluster("web", 1, cpuRange))
	waitHPA(t, ns, ours("web"))

	metric := newValueServer(t, 35)
	apply(t, ns, scaledObject("web", "web", 1, 10, metric.trigger()))
	waitNoHPA(t, ns, ours("web"))
	waitEvent(t, ns, "web", "Warning", v1alpha1.ReasonForeignAutoscaler, "ScaledObject/"+ns+"/web")
	waitHPA(t, ns, kedas("web"))
	// 35 at 10 per replica: KEDA's HPA asks for 4 through /scale.
	framework.WaitScale(t, cluster, ns, "web", "4", exactly(4))
	metric.set(72)
	framework.WaitScale(t, cluster, ns, "web", "8", exactly(8))
	if _, err := getHPA(context.Background(), ns, ours("web")); err == nil {
		t.Errorf("scaleplane's HPA exists beside KEDA's")
	}

	t.Run("paused-replicas", func(t *testing.T) {
		// KEDA deletes its HPA and scales to the paused count; the
		// ScaledObject still exists, so scaleplane's HPA stays away.
		kubectl(t, ns, "annotate", "scaledobject/web", "autoscaling.keda.sh/paused-replicas=2")
		soCondition(t, ns, "web", "Paused", "True")
		waitNoHPA(t, ns, kedas("web"))
		framework.WaitScale(t, cluster, ns, "web", "2 (paused)", exactly(2))
		// The metric now asks for 9; nobody acts on it.
		metric.set(90)
		framework.WaitScale(t, cluster, ns, "web", "2 (paused)", exactly(2))
		if _, err := getHPA(context.Background(), ns, ours("web")); err == nil {
			t.Errorf("scaleplane created its HPA while KEDA is paused")
		}
	})

	t.Run("paused", func(t *testing.T) {
		// paused=true freezes the count where it is; kubectl scale still
		// reaches the racks, and nobody scales it back.
		kubectl(t, ns, "annotate", "scaledobject/web", "autoscaling.keda.sh/paused-replicas-", "autoscaling.keda.sh/paused=true")
		soCondition(t, ns, "web", "Paused", "True")
		kubectl(t, ns, "scale", "rackedclusters.samples.scaleplane.io/web", "--replicas=3")
		framework.WaitScale(t, cluster, ns, "web", "3 (kubectl, KEDA paused)", exactly(3))
		if _, err := getHPA(context.Background(), ns, ours("web")); err == nil {
			t.Errorf("scaleplane created its HPA while KEDA is paused")
		}
		if m := managedBy(t, ns, "web"); !m[v1alpha1.AutoscalerFieldManager].IsZero() {
			t.Errorf("scaleplane's trigger autoscaler wrote the workload: managers %v", m)
		}
	})

	t.Run("unpaused", func(t *testing.T) {
		kubectl(t, ns, "annotate", "scaledobject/web", "autoscaling.keda.sh/paused-")
		soCondition(t, ns, "web", "Paused", "False")
		waitHPA(t, ns, kedas("web"))
		framework.WaitScale(t, cluster, ns, "web", "9", exactly(9))
	})

	t.Run("deleted", func(t *testing.T) {
		kubectl(t, ns, "delete", "scaledobject/web")
		// KEDA's HPA is owned by the ScaledObject: the garbage collector
		// removes it; scaleplane's comes back.
		waitNoHPA(t, ns, kedas("web"))
		h := waitHPA(t, ns, ours("web"))
		if h.Spec.MaxReplicas != 10 {
			t.Errorf("scaleplane's HPA after KEDA left: max %d, want 10", h.Spec.MaxReplicas)
		}
	})
}

// Beside a ScaledObject, scaleplane's own trigger
// autoscaler stands down too (a Warning, no write through /scale while
// KEDA scales), and takes over again when the ScaledObject goes.
func TestKEDAStandsDownTheTriggerAutoscaler(t *testing.T) {
	start(t)
	ns := cluster.Namespace(t)
	ex := framework.NewExporter(t, 45)
	framework.AddPod(t, cluster, ns, "shop-a-0", map[string]string{"samples.scaleplane.io/cluster": "shop", "samples.scaleplane.io/rack": "a"}, ex)
	apply(t, ns, rackedCluster("shop", 1, `    minReplicas: 1
    maxReplicas: 10
    triggers:
    - name: rps
      type: AverageValue
      query: sum(rate(http_requests_total{namespace="${namespace}",job="${name}"}[5s]))
      threshold: 10
`))
	// 45 requests/s at 10 per replica: scaleplane scales to about 5.
	framework.WaitScale(t, cluster, ns, "shop", ">= 4 (scaleplane)", atLeast(4))

	metric := newValueServer(t, 10)
	apply(t, ns, scaledObject("shop", "shop", 1, 10, metric.trigger()))
	waitEvent(t, ns, "shop", "Warning", v1alpha1.ReasonForeignAutoscaler, "trigger autoscaler standing down", "ScaledObject/"+ns+"/shop")
	// KEDA's metric asks for 1 while scaleplane's trigger still reads 45.
	framework.WaitScale(t, cluster, ns, "shop", "1 (KEDA)", exactly(1))
	before := len(events(t, ns, "shop", v1alpha1.ReasonScaled))
	metric.set(20)
	framework.WaitScale(t, cluster, ns, "shop", "2 (KEDA)", exactly(2))
	if after := len(events(t, ns, "shop", v1alpha1.ReasonScaled)); after != before {
		t.Errorf("scaleplane scaled the workload beside KEDA: %d Scaled events, %d before", after, before)
	}

	kubectl(t, ns, "delete", "scaledobject/shop")
	waitNoHPA(t, ns, kedas("shop"))
	framework.WaitScale(t, cluster, ns, "shop", ">= 4 (scaleplane again)", atLeast(4))
}

// Cluster-scoped targets: KEDA's ScaledObject is
// namespaced and looks its target's /scale up in its own namespace, so it
// cannot scale a cluster-scoped kind (kedacore/keda#6798): it reports the
// target as not found and creates no HPA. scaleplane's own HPA cannot
// either (see e2e/controllers); its trigger autoscaler, which writes
// /scale directly, is the autoscaler for such kinds.
func TestKEDACannotScaleAClusterScopedKind(t *testing.T) {
	start(t)
	ns := cluster.Namespace(t)
	crd := clusterScopedCRD()
	if _, err := cluster.KubectlWithInput(context.Background(), crd, "apply", "--server-side", "-f", "-"); err != nil {
		t.Fatal(err)
	}
	kubectl(t, "", "wait", "--for=condition=Established", "crd/clusterracks.e2e.scaleplane.io")
	name := strings.ToLower("global-" + ns[len(ns)-5:])
	if _, err := cluster.KubectlWithInput(context.Background(), fmt.Sprintf(`apiVersion: e2e.scaleplane.io/v1alpha1
kind: ClusterRack
metadata: {name: %s}
spec:
  replicas: 1
  racks: [{name: a, members: 1}]
`, name), "apply", "-f", "-"); err != nil {
		t.Fatal(err)
	}
	apply(t, ns, strings.Replace(scaledObject("global", name, 1, 5, newValueServer(t, 30).trigger()),
		"apiVersion: samples.scaleplane.io/v1alpha1, kind: RackedCluster", "apiVersion: e2e.scaleplane.io/v1alpha1, kind: ClusterRack", 1))
	msg := soCondition(t, ns, "global", "Ready", "False")
	t.Logf("KEDA on a cluster-scoped target: Ready=False: %s", msg)
	if _, err := getHPA(context.Background(), ns, kedas("global")); err == nil {
		t.Errorf("KEDA created an HPA for a cluster-scoped target")
	}
}

func clusterScopedCRD() string {
	return `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: clusterracks.e2e.scaleplane.io}
spec:
  group: e2e.scaleplane.io
  names: {kind: ClusterRack, listKind: ClusterRackList, plural: clusterracks, singular: clusterrack}
  scope: Cluster
  versions:
  - name: v1alpha1
    served: true
    storage: true
    subresources:
      status: {}
      scale: {specReplicasPath: .spec.replicas, statusReplicasPath: .status.replicas}
    schema:
      openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}
`
}
