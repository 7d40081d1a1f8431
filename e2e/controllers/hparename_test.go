package controllers_test

import (
	"context"
	"strings"
	"testing"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/scaleplane/scaleplane/controllers"
)

// C4 across an upgrade, with a real API server: the HPA an older release
// made under "<workload>-<kind>" is replaced by one under the name with
// the group when the controller starts; a user's HPA that holds another
// workload's old name is left alone, and that workload gets its HPA under
// the new name beside it.
func TestHPARenamedFromTheLegacyName(t *testing.T) {
	ns := cluster.Namespace(t)
	kubectlApply(t, ns, autoscaled)
	kubectlApply(t, ns, strings.Replace(autoscaled, "name: auto", "name: other", 1))
	ctx := context.Background()
	u, err := get(ctx, "RackedCluster", ns, "auto")
	if err != nil {
		t.Fatal(err)
	}
	cpu := []autoscalingv2.MetricSpec{{Type: autoscalingv2.ResourceMetricSourceType, Resource: &autoscalingv2.ResourceMetricSource{
		Name: "cpu", Target: autoscalingv2.MetricTarget{Type: autoscalingv2.UtilizationMetricType, AverageUtilization: ptr.To[int32](50)}}}}
	// What an older release of scaleplane made for auto.
	legacy := &autoscalingv2.HorizontalPodAutoscaler{
		ObjectMeta: metav1.ObjectMeta{
			Name: "auto-rackedcluster", Namespace: ns,
			Labels: map[string]string{
				"app.kubernetes.io/managed-by": "scaleplane", "scaleplane.io/owner": "scaleplane",
				"scaleplane.io/workload-kind": "RackedCluster", "scaleplane.io/workload-name": "auto",
			},
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: u.GetAPIVersion(), Kind: "RackedCluster", Name: "auto", UID: u.GetUID(),
				Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true),
			}},
		},
		Spec: autoscalingv2.HorizontalPodAutoscalerSpec{
			ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{APIVersion: u.GetAPIVersion(), Kind: "RackedCluster", Name: "auto"},
			MinReplicas:    ptr.To[int32](2), MaxReplicas: 6, Metrics: cpu,
		},
	}
	// A user's HPA that happens to hold other's old name.
	users := &autoscalingv2.HorizontalPodAutoscaler{
		ObjectMeta: metav1.ObjectMeta{Name: "other-rackedcluster", Namespace: ns},
		Spec: autoscalingv2.HorizontalPodAutoscalerSpec{
			ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "web"},
			MinReplicas:    ptr.To[int32](1), MaxReplicas: 3, Metrics: cpu,
		},
	}
	for _, h := range []*autoscalingv2.HorizontalPodAutoscaler{legacy, users} {
		if err := cluster.Client.Create(ctx, h); err != nil {
			t.Fatal(err)
		}
	}

	startManager(t, controllers.Options{})
	const name = "auto-rackedcluster.samples.scaleplane.io"
	h := waitHPA(t, ns, name, minMax(2, 6))
	if !isControlledBy(h, u) {
		t.Errorf("HPA owner references %v, want controller %s", h.OwnerReferences, u.GetUID())
	}
	waitNoHPA(t, ns, "auto-rackedcluster")
	waitEvent(t, ns, "auto", "Normal", "HPADeleted", "deleted HorizontalPodAutoscaler auto-rackedcluster: renamed to "+name)
	waitHPA(t, ns, "other-rackedcluster.samples.scaleplane.io", minMax(2, 6))

	after, err := getHPA(ctx, ns, "other-rackedcluster")
	if err != nil {
		t.Fatalf("the user's HPA: %v", err)
	}
	if after.ResourceVersion != users.ResourceVersion {
		// The HPA controller writes its status; nothing else may write it.
		for _, mf := range after.ManagedFields {
			if mf.Manager == "scaleplane" {
				t.Errorf("scaleplane wrote the user's HPA: %+v", mf)
			}
		}
	}
	if after.Spec.MaxReplicas != 3 || len(after.OwnerReferences) != 0 || len(after.Labels) != 0 {
		t.Errorf("the user's HPA changed: max %d, owners %v, labels %v", after.Spec.MaxReplicas, after.OwnerReferences, after.Labels)
	}
}
