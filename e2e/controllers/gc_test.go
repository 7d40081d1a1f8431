package controllers_test

import (
	"context"
	"crypto/rand"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/scaleplane/scaleplane/api/v1alpha1"
	"github.com/scaleplane/scaleplane/controllers"
	"github.com/scaleplane/scaleplane/e2e/framework"
	"github.com/scaleplane/scaleplane/profile"
)

// C4's owner reference at work: kube-controller-manager's garbage collector
// deletes scaleplane's HPA when its workload is deleted. scaleplane's
// manager is stopped before the deletion, so nothing but the garbage
// collector can remove the HPA: with background cascading (kubectl's
// default) the workload goes first and the HPA after it; with foreground
// cascading the workload waits for the HPA (blockOwnerDeletion).
func TestGarbageCollectorDeletesTheHPA(t *testing.T) {
	for _, cascade := range []string{"background", "foreground"} {
		t.Run(cascade, func(t *testing.T) {
			stop := startManager(t, controllers.Options{})
			ns := cluster.Namespace(t)
			kubectlApply(t, ns, autoscaled)
			const ours = "auto-rackedcluster.samples.scaleplane.io"
			waitHPA(t, ns, ours, minMax(2, 6))
			stop()

			kubectl(t, "delete", "-n", ns, "--cascade="+cascade, "--wait=false", "rackedclusters.samples.scaleplane.io", "auto")
			waitNoHPA(t, ns, ours)
			framework.Eventually(t, 0, func(ctx context.Context) (bool, string) {
				_, err := get(ctx, "RackedCluster", ns, "auto")
				return apierrors.IsNotFound(err), fmt.Sprintf("RackedCluster auto: %v", err)
			})
		})
	}
}

// clusterScopedRackedCluster is the sample RackedCluster CRD served
// cluster-scoped as e2e.scaleplane.io/v1alpha1 ClusterRack, and its profile.
func clusterScopedRackedCluster(t *testing.T) (*apiextensionsv1.CustomResourceDefinition, v1alpha1.ScaleProfileSpec) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(framework.RepoRoot(), "config", "samples", "crd", "samples.scaleplane.io_rackedclusters.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := yaml.Unmarshal(data, crd); err != nil {
		t.Fatal(err)
	}
	crd.Name = "clusterracks.e2e.scaleplane.io"
	crd.Spec.Group = "e2e.scaleplane.io"
	crd.Spec.Scope = apiextensionsv1.ClusterScoped
	crd.Spec.Names = apiextensionsv1.CustomResourceDefinitionNames{Kind: "ClusterRack", ListKind: "ClusterRackList", Plural: "clusterracks", Singular: "clusterrack"}
	p := profile.Samples()[0]
	if p.Target.Kind != "RackedCluster" {
		t.Fatalf("first sample profile is %s, want RackedCluster", p.Target.Kind)
	}
	p.Target = v1alpha1.TargetKind{APIVersion: crd.Spec.Group + "/" + crd.Spec.Versions[0].Name, Kind: crd.Spec.Names.Kind, Resource: crd.Spec.Names.Plural}
	return crd, p
}

// TestClusterScopedWorkload: a cluster-scoped workload with a
// metrics range. An HPA is namespaced and reads its target's /scale in its
// own namespace, so no HPA can scale a cluster-scoped object (and KEDA's
// namespaced ScaledObject cannot either, kedacore/keda#6798): scaleplane
// creates none and says why in one Warning, instead of failing to write one
// with no namespace. The fan-out (C1) works as for any kind: kubectl scale
// reaches the racks. (An owner reference from a namespaced object to a
// cluster-scoped owner is allowed; the reverse is not, so the question of
// garbage-collecting such an HPA never arises.)
func TestClusterScopedWorkload(t *testing.T) {
	crd, p := clusterScopedRackedCluster(t)
	installCRD(t, crd)
	v, err := profile.Compile(p)
	if err != nil {
		t.Fatal(err)
	}
	// The shipped role names the sample kinds only; this kind is the test's.
	startManagerFor(t, rest.CopyConfig(cluster.Config), []*profile.Compiled{v}, controllers.Options{})
	name := "global-" + strings.ToLower(rand.Text()[:6])
	kubectlApply(t, "", strings.NewReplacer(
		"apiVersion: samples.scaleplane.io/v1alpha1", "apiVersion: e2e.scaleplane.io/v1alpha1",
		"kind: RackedCluster", "kind: ClusterRack",
		"name: auto", "name: "+name).Replace(autoscaled))
	t.Cleanup(func() { _, _ = cluster.Kubectl(context.Background(), "delete", "clusterracks.e2e.scaleplane.io", name) })

	// Events about cluster-scoped objects live in the default namespace.
	waitEvent(t, "default", name, "Warning", controllers.ReasonHPANotPossible, "cluster-scoped", "use triggers instead of metrics")
	kubectl(t, "scale", "clusterracks.e2e.scaleplane.io/"+name, "--replicas=3")
	framework.Eventually(t, 0, func(ctx context.Context) (bool, string) {
		u := &unstructured.Unstructured{}
		u.SetAPIVersion("e2e.scaleplane.io/v1alpha1")
		u.SetKind("ClusterRack")
		if err := cluster.Client.Get(ctx, types.NamespacedName{Name: name}, u); err != nil {
			return false, err.Error()
		}
		return allEqual(members(u), 3), fmt.Sprintf("racks %v, want all 3", members(u))
	})
	var list autoscalingv2.HorizontalPodAutoscalerList
	if err := cluster.Client.List(context.Background(), &list, client.MatchingLabels{v1alpha1.LabelWorkloadName: name}); err != nil {
		t.Fatal(err)
	}
	if len(list.Items) != 0 {
		t.Errorf("HPAs for a cluster-scoped workload: %d, want none", len(list.Items))
	}
	var events corev1.EventList
	if err := cluster.Client.List(context.Background(), &events, client.InNamespace("default")); err != nil {
		t.Fatal(err)
	}
	for _, e := range events.Items {
		if e.InvolvedObject.Name == name && e.Reason == v1alpha1.ReasonWriteFailed {
			t.Errorf("write failed for a cluster-scoped workload: %s", e.Message)
		}
	}
}
