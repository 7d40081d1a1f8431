package autoscaler

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func TestWorkloadTargets(t *testing.T) {
	fn := &unstructured.Unstructured{}
	fn.SetName("cart")
	cases := []struct {
		kind string
		want []string
	}{
		// Scaled through its own /scale.
		{"RackedCluster", []string{"samples.scaleplane.io/RackedCluster/cart"}},
		// Its HPA would scale the runtime Deployment: an autoscaler there
		// fights over the same count.
		{"Function", []string{"samples.scaleplane.io/Function/cart", "apps/Deployment/cart"}},
	}
	for _, tc := range cases {
		t.Run(tc.kind, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, workloadTargets(viewOf(t, tc.kind), fn)); diff != "" {
				t.Errorf("targets (-want +got):\n%s", diff)
			}
		})
	}
}

func TestAutoscalerTargetKeys(t *testing.T) {
	hpa := func(apiVersion, kind, name string) *autoscalingv2.HorizontalPodAutoscaler {
		return &autoscalingv2.HorizontalPodAutoscaler{Spec: autoscalingv2.HorizontalPodAutoscalerSpec{
			ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{APIVersion: apiVersion, Kind: kind, Name: name}}}
	}
	so := func(ref map[string]any) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{"scaleTargetRef": ref}}}
	}
	cases := []struct {
		name string
		got  []string
		want []string
	}{
		{"HPA on a workload, any version", indexHPATarget(hpa("samples.scaleplane.io/v1beta9", "RackedCluster", "x")), []string{"samples.scaleplane.io/RackedCluster/x"}},
		{"HPA on a core-group kind", indexHPATarget(hpa("v1", "ReplicationController", "x")), []string{"/ReplicationController/x"}},
		{"HPA without a target name", indexHPATarget(hpa("apps/v1", "Deployment", "")), nil},
		{"HPA with a bad apiVersion", indexHPATarget(hpa("a/b/c", "Deployment", "x")), nil},
		{"ScaledObject with KEDA's defaults", []string{targetKey(scaledObjectTarget(so(map[string]any{"name": "cart"})))}, []string{"apps/Deployment/cart"}},
		{"ScaledObject on a workload", []string{targetKey(scaledObjectTarget(so(map[string]any{
			"apiVersion": "samples.scaleplane.io/v1alpha1", "kind": "RackedCluster", "name": "x"})))}, []string{"samples.scaleplane.io/RackedCluster/x"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, tc.got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}
