package scalehandle_test

import (
	"context"
	"strings"
	"testing"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/scaleplane/scaleplane/api/v1alpha1"
	"github.com/scaleplane/scaleplane/controllers"
	"github.com/scaleplane/scaleplane/controllers/autoscaler"
	"github.com/scaleplane/scaleplane/e2e/framework"
)

// kubectl scale works on the handle of a kind that has no /scale, and every
// rack of the target follows (C1).
func TestKubectlScaleOnHandleSizesEveryRack(t *testing.T) {
	startManager(t)
	ns := cluster.Namespace(t)
	kubectlApply(t, ns, scylla("db", 1, 2, 1))
	kubectlApply(t, ns, handle("db", ""))

	// No R yet: the racks keep their own sizes.
	waitHandle(t, ns, "db", "a selector of rack a", func(h *v1alpha1.ScaleHandle) bool {
		return h.Status.Selector == "scylla/cluster=db,scylla/rack=a"
	})
	waitRacks(t, ns, "db", 1, 2, 1)

	kubectl(t, "scale", "-n", ns, "scalehandle/db", "--replicas=3")
	waitRacks(t, ns, "db", 3, 3, 3)
	kubectl(t, "scale", "-n", ns, "scalehandle/db", "--replicas=5")
	waitRacks(t, ns, "db", 5, 5, 5)

	// kubectl get shows the target and the count.
	if out := kubectl(t, "get", "-n", ns, "scalehandle/db", "--no-headers", "-o", "custom-columns=K:.spec.targetRef.kind,T:.spec.targetRef.name,R:.spec.replicas"); strings.Join(strings.Fields(out), " ") != "ScyllaCluster db 5" {
		t.Errorf("kubectl get scalehandle/db = %q, want ScyllaCluster db 5", out)
	}
	if out := kubectl(t, "get", "-n", ns, "shandle"); !strings.Contains(out, "TARGET KIND") || !strings.Contains(out, "ScyllaCluster") {
		t.Errorf("kubectl get shandle (the short name, with the kind's columns) = %q", out)
	}
	// /scale reads back what kubectl wrote, with the selector of one rack.
	out := kubectl(t, "get", "--raw", "/apis/scaleplane.io/v1alpha1/namespaces/"+ns+"/scalehandles/db/scale")
	for _, want := range []string{`"replicas":5`, `"selector":"scylla/cluster=db,scylla/rack=a"`} {
		if !strings.Contains(out, want) {
			t.Errorf("/scale of the handle = %s, want it to contain %s", out, want)
		}
	}
}

// A rack set by hand to another count is put back while the handle holds
// R ("the number should always match Replicas"); once R is removed the
// racks are their own again.
func TestRackEditedByHandIsPutBack(t *testing.T) {
	startManager(t)
	ns := cluster.Namespace(t)
	kubectlApply(t, ns, scylla("db", 2, 2, 2))
	kubectlApply(t, ns, handle("db", "  replicas: 2\n"))
	waitRacks(t, ns, "db", 2, 2, 2)

	setRack(t, ns, "db", 1, 4)
	waitRacks(t, ns, "db", 2, 2, 2)

	// R removed: a rack edited by hand keeps its count. The handle's
	// status catching up with a later status write proves the controller
	// saw the edit before it.
	kubectl(t, "patch", "-n", ns, "scalehandle/db", "--type=json", "-p", `[{"op":"remove","path":"/spec/replicas"}]`)
	setRack(t, ns, "db", 1, 4)
	setReady(t, ns, "db", map[string]int64{"a": 2, "b": 2, "c": 2})
	waitHandle(t, ns, "db", "status.replicas 2", func(h *v1alpha1.ScaleHandle) bool {
		return h.Status.Replicas != nil && *h.Status.Replicas == 2
	})
	waitRacks(t, ns, "db", 2, 4, 2)
}

// C2: the handle's status.replicas is the racks' common ready count, and
// stays as it was while they disagree.
func TestHandleStatusReplicasOnlyWhenRacksAgree(t *testing.T) {
	startManager(t)
	ns := cluster.Namespace(t)
	kubectlApply(t, ns, scylla("db", 3, 3, 3))
	kubectlApply(t, ns, handle("db", "  replicas: 3\n"))

	setReady(t, ns, "db", map[string]int64{"a": 2, "b": 2, "c": 2})
	waitHandle(t, ns, "db", "status.replicas 2", func(h *v1alpha1.ScaleHandle) bool {
		return h.Status.Replicas != nil && *h.Status.Replicas == 2
	})

	// The racks disagree; a rack edited by hand and put back afterwards
	// proves the controller has seen that status.
	setReady(t, ns, "db", map[string]int64{"a": 3, "b": 2, "c": 3})
	setRack(t, ns, "db", 2, 7)
	waitRacks(t, ns, "db", 3, 3, 3)
	h, err := getHandle(context.Background(), ns, "db")
	if err != nil {
		t.Fatal(err)
	}
	if h.Status.Replicas == nil || *h.Status.Replicas != 2 {
		t.Fatalf("status.replicas = %s while the racks report 3, 2, 3 ready; want it left at 2", ptrString(h.Status.Replicas))
	}

	setReady(t, ns, "db", map[string]int64{"a": 3, "b": 3, "c": 3})
	waitHandle(t, ns, "db", "status.replicas 3", func(h *v1alpha1.ScaleHandle) bool {
		return h.Status.Replicas != nil && *h.Status.Replicas == 3
	})
	// The operator's own status fields are untouched.
	u, err := getScylla(context.Background(), ns, "db")
	if err != nil {
		t.Fatal(err)
	}
	if m := u.Object["status"].(map[string]interface{}); len(m) != 1 {
		t.Errorf("ScyllaCluster status = %v, want only the racks the test wrote", m)
	}
}

// A user's autoscaling/v2 HPA takes the handle as its scaleTargetRef; the
// real HPA controller raises it to minReplicas through /scale, and the
// racks follow.
func TestHPAOnHandleRaisesRacks(t *testing.T) {
	startManager(t)
	ns := cluster.Namespace(t)
	kubectlApply(t, ns, scylla("db", 2, 2, 2))
	kubectlApply(t, ns, handle("db", "  replicas: 2\n"))
	kubectlApply(t, ns, `
apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata:
  name: db
spec:
  scaleTargetRef: {apiVersion: scaleplane.io/v1alpha1, kind: ScaleHandle, name: db}
  minReplicas: 4
  maxReplicas: 6
  metrics:
  - type: Resource
    resource: {name: cpu, target: {type: Utilization, averageUtilization: 60}}
`)
	waitRacks(t, ns, "db", 4, 4, 4)
	waitHandle(t, ns, "db", "spec.replicas 4", func(h *v1alpha1.ScaleHandle) bool {
		return h.Spec.Replicas != nil && *h.Spec.Replicas == 4
	})
}

// The scale config on the handle works as on any profiled kind: a range
// with metrics gets the built-in HPA (C4), targeting the handle, and the
// real HPA controller raises R into the range.
func TestBuiltInHPAOnHandleFromItsScaleConfig(t *testing.T) {
	startManager(t)
	ns := cluster.Namespace(t)
	kubectlApply(t, ns, scylla("db", 1, 1, 1))
	kubectlApply(t, ns, handle("db", `  replicas: 1
  scaleConfig:
    minReplicas: 3
    maxReplicas: 5
    metrics:
    - type: Resource
      resource: {name: cpu, target: {type: Utilization, averageUtilization: 60}}
`))
	var hpa autoscalingv2.HorizontalPodAutoscaler
	framework.Eventually(t, 0, func(ctx context.Context) (bool, string) {
		var list autoscalingv2.HorizontalPodAutoscalerList
		if err := cluster.Client.List(ctx, &list, client.InNamespace(ns)); err != nil {
			return false, err.Error()
		}
		if len(list.Items) != 1 {
			return false, "want one built-in HPA"
		}
		hpa = list.Items[0]
		return true, ""
	})
	if ref := hpa.Spec.ScaleTargetRef; ref.Kind != v1alpha1.ScaleHandleKind || ref.Name != "db" {
		t.Errorf("built-in HPA targets %s %s, want the ScaleHandle db", ref.Kind, ref.Name)
	}
	waitRacks(t, ns, "db", 3, 3, 3)
}

// Deleting the handle gives the racks back: the target is not deleted and
// a later edit of a rack stays.
func TestDeletedHandleLeavesTheTargetAlone(t *testing.T) {
	startManager(t)
	ns := cluster.Namespace(t)
	kubectlApply(t, ns, scylla("db", 2, 2, 2))
	kubectlApply(t, ns, scylla("other", 2, 2, 2))
	kubectlApply(t, ns, handle("db", "  replicas: 2\n"))
	kubectlApply(t, ns, handle("other", "  replicas: 2\n"))
	waitRacks(t, ns, "db", 2, 2, 2)

	kubectl(t, "delete", "-n", ns, "scalehandle/db", "--wait=true")
	setRack(t, ns, "db", 0, 5)
	// The controller still watches ScyllaClusters: it puts back a rack of
	// the other cluster edited after db's, so it has seen db's edit too.
	setRack(t, ns, "other", 0, 5)
	waitRacks(t, ns, "other", 2, 2, 2)
	waitRacks(t, ns, "db", 5, 2, 2)
	if _, err := getScylla(context.Background(), ns, "db"); apierrors.IsNotFound(err) {
		t.Fatal("deleting the handle deleted its target")
	}
}

// scaleplane's trigger autoscaler drives a handle as any profiled kind: a
// trigger in the handle's scale config writes R through the handle's
// /scale, the racks follow, and the handle's Scaling records it.
func TestTriggerOnHandleScalesRacks(t *testing.T) {
	startManager(t)
	ns := cluster.Namespace(t)
	kubectlApply(t, ns, scylla("db", 1, 1, 1))
	// 12 units of load, 4 per replica: 3 replicas.
	kubectlApply(t, ns, handle("db", `  replicas: 1
  scaleConfig:
    minReplicas: 1
    maxReplicas: 5
    triggers:
    - {name: load, type: AverageValue, query: "vector(12)", threshold: "4"}
`))
	waitRacks(t, ns, "db", 3, 3, 3)
	framework.Eventually(t, 0, func(ctx context.Context) (bool, string) {
		var s v1alpha1.Scaling
		if err := cluster.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: autoscaler.ScalingName("db", v1alpha1.GroupVersion.WithKind(v1alpha1.ScaleHandleKind).GroupKind())}, &s); err != nil {
			return false, "the handle's Scaling: " + err.Error()
		}
		return s.Status.Mode == v1alpha1.ScalingModeTriggers, "the handle's Scaling has mode " + string(s.Status.Mode) + ", want triggers"
	})
	out := kubectl(t, "get", "scalings", "-n", ns)
	if !strings.Contains(out, "ScaleHandle/db") {
		t.Errorf("kubectl get scalings = %s, want the handle's, target ScaleHandle/db", out)
	}
}

// Two handles on one target would put back each other's count forever:
// the older sizes the racks, the newer waits with a Warning, and takes
// over when the older is deleted.
func TestSecondHandleOnATargetWaits(t *testing.T) {
	startManager(t)
	ns := cluster.Namespace(t)
	kubectlApply(t, ns, scylla("db", 1, 1, 1))
	kubectlApply(t, ns, handle("db", "  replicas: 2\n"))
	waitRacks(t, ns, "db", 2, 2, 2)
	second := strings.Replace(handle("db", "  replicas: 4\n"), "  name: db\nspec:", "  name: db-second\nspec:", 1)
	kubectlApply(t, ns, second)
	framework.Eventually(t, 0, func(ctx context.Context) (bool, string) {
		out, err := cluster.Kubectl(ctx, "get", "events", "-n", ns, "--field-selector", "reason=ScaleHandleConflict,involvedObject.name=db-second", "-o", "name")
		return err == nil && out != "", "a ScaleHandleConflict event on db-second"
	})
	waitRacks(t, ns, "db", 2, 2, 2)
	kubectl(t, "delete", "-n", ns, "scalehandle/db")
	waitRacks(t, ns, "db", 4, 4, 4)
}

// A handle whose target kind is not served, or that scaleplane may not
// read and patch, gets a Warning saying what to install or grant, and
// holds up no other handle (an informer that cannot list would never
// sync).
func TestHandleOfAnUnreadableTargetWarnsAndBlocksNothing(t *testing.T) {
	t.Run("not served", func(t *testing.T) {
		startManager(t)
		ns := cluster.Namespace(t)
		kubectlApply(t, ns, strings.Replace(handle("ghost", "  replicas: 2\n"), "apiVersion: scylla.scylladb.com/v1, kind: ScyllaCluster", "apiVersion: example.org/v1, kind: Ghost", 1))
		waitWarning(t, ns, "ghost", controllers.ReasonTargetNotReadable, "example.org/v1, Kind=Ghost is not served", "install its CRD")
		kubectlApply(t, ns, scylla("db", 1, 1, 1))
		kubectlApply(t, ns, handle("db", "  replicas: 2\n"))
		waitRacks(t, ns, "db", 2, 2, 2)
	})
	t.Run("not granted", func(t *testing.T) {
		startManagerAs(t, managerWithoutTargetRBAC(t))
		ns := cluster.Namespace(t)
		kubectlApply(t, ns, scylla("db", 1, 1, 1))
		kubectlApply(t, ns, handle("db", "  replicas: 2\n"))
		waitWarning(t, ns, "db", controllers.ReasonTargetNotReadable, "may not get, list, watch, patch scyllaclusters.scylla.scylladb.com", "profile init prints the ClusterRole")
	})
}

// C3 at the API server, webhook or not: a handle naming its target's pod
// labels must name the member group label too, or its /scale selector
// would count every group's pods.
func TestHandleWithPodLabelsNeedsTheGroupLabel(t *testing.T) {
	ns := cluster.Namespace(t)
	bad := strings.Replace(handle("db", ""), "    memberGroupLabel: scylla/rack\n", "", 1)
	out, err := cluster.KubectlWithInput(context.Background(), bad, "apply", "-n", ns, "-f", "-")
	if err == nil || !strings.Contains(out+err.Error(), "spec.pods.memberGroupLabel") {
		t.Fatalf("a handle with pods.labels and no memberGroupLabel: %v %s; want it refused at spec.pods.memberGroupLabel", err, out)
	}
}
