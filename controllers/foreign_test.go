package controllers

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

func TestWorkloadTargets(t *testing.T) {
	tests := []struct {
		name string
		kind string
		in   *unstructured.Unstructured
		want []string
	}{
		{"self target", "RackedCluster", rc("demo").obj(), []string{"samples.scaleplane.io/RackedCluster/demo"}},
		{"child target too", "Function", fn("hello").obj(), []string{"samples.scaleplane.io/Function/hello", "apps/Deployment/hello"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, WorkloadTargets(sampleView(t, tt.kind), tt.in)); diff != "" {
				t.Errorf("targets (-want +got):\n%s", diff)
			}
		})
	}
}

func hpaTargeting(apiVersion, kind, name string) *autoscalingv2.HorizontalPodAutoscaler {
	return &autoscalingv2.HorizontalPodAutoscaler{
		ObjectMeta: metav1.ObjectMeta{Name: "theirs", Namespace: "ns"},
		Spec: autoscalingv2.HorizontalPodAutoscalerSpec{
			ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{APIVersion: apiVersion, Kind: kind, Name: name},
		},
	}
}

func TestMapHPA(t *testing.T) {
	req := func(name string) []reconcile.Request {
		return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: "ns", Name: name}}}
	}
	tests := []struct {
		name string
		kind string
		hpa  *autoscalingv2.HorizontalPodAutoscaler
		want []reconcile.Request
	}{
		{"targets the workload", "RackedCluster", hpaTargeting("samples.scaleplane.io/v1alpha1", "RackedCluster", "demo"), req("demo")},
		{"another version of the kind", "RackedCluster", hpaTargeting("samples.scaleplane.io/v2", "RackedCluster", "demo"), req("demo")},
		{"another kind", "RackedCluster", hpaTargeting("apps/v1", "Deployment", "demo"), nil},
		{"a Function's runtime Deployment", "Function", hpaTargeting("apps/v1", "Deployment", "hello"), req("hello")},
		{"a StatefulSet is no Function child", "Function", hpaTargeting("apps/v1", "StatefulSet", "hello"), nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := &Reconciler{view: sampleView(t, tt.kind)}
			if diff := cmp.Diff(tt.want, r.mapHPA(context.Background(), tt.hpa)); diff != "" {
				t.Errorf("requests (-want +got):\n%s", diff)
			}
		})
	}
}

func TestIndexHPATarget(t *testing.T) {
	tests := []struct {
		name string
		hpa  *autoscalingv2.HorizontalPodAutoscaler
		want []string
	}{
		{"version left out", hpaTargeting("samples.scaleplane.io/v2", "RackedCluster", "demo"), []string{"samples.scaleplane.io/RackedCluster/demo"}},
		{"core group", hpaTargeting("v1", "ReplicationController", "rc"), []string{"/ReplicationController/rc"}},
		{"unparsable apiVersion", hpaTargeting("a/b/c", "X", "x"), nil},
		{"no target name", hpaTargeting("apps/v1", "Deployment", ""), nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, IndexHPATarget(tt.hpa)); diff != "" {
				t.Errorf("index (-want +got):\n%s", diff)
			}
		})
	}
}

func TestInvertName(t *testing.T) {
	tests := []struct {
		template, name, want string
		ok                   bool
	}{
		{"${name}", "hello", "hello", true},
		{"${name}-runtime", "hello-runtime", "hello", true},
		{"fn-${name}", "fn-hello", "hello", true},
		{"fn-${name}", "other", "", false},
		{"fn-${name}", "fn-", "", false},
		{"fixed", "fixed", "", false},
	}
	for _, tt := range tests {
		got, ok := invertName(tt.template, tt.name)
		if diff := cmp.Diff(struct {
			Name string
			OK   bool
		}{tt.want, tt.ok}, struct {
			Name string
			OK   bool
		}{got, ok}); diff != "" {
			t.Errorf("invertName(%q, %q) (-want +got):\n%s", tt.template, tt.name, diff)
		}
	}
}

func TestScaledObjectTarget(t *testing.T) {
	so := func(ref map[string]interface{}) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]interface{}{"spec": map[string]interface{}{"scaleTargetRef": ref}}}
	}
	tests := []struct {
		name string
		in   *unstructured.Unstructured
		want string
	}{
		{"KEDA defaults to an apps/v1 Deployment", so(map[string]interface{}{"name": "hello"}), "apps/Deployment/hello"},
		{"a custom resource through /scale", so(map[string]interface{}{"apiVersion": "samples.scaleplane.io/v1alpha1", "kind": "RackedCluster", "name": "demo"}), "samples.scaleplane.io/RackedCluster/demo"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, TargetKey(ScaledObjectTarget(tt.in))); diff != "" {
				t.Errorf("target (-want +got):\n%s", diff)
			}
		})
	}
}

func TestHPAChanged(t *testing.T) {
	base := hpaTargeting("samples.scaleplane.io/v1alpha1", "RackedCluster", "demo")
	tests := []struct {
		name   string
		mutate func(h *autoscalingv2.HorizontalPodAutoscaler)
		want   bool
	}{
		{"status only: the HPA controller's sync", func(h *autoscalingv2.HorizontalPodAutoscaler) { h.Status.DesiredReplicas = 4 }, false},
		{"spec edited", func(h *autoscalingv2.HorizontalPodAutoscaler) { h.Spec.MaxReplicas = 9 }, true},
		{"labels edited", func(h *autoscalingv2.HorizontalPodAutoscaler) { h.Labels = map[string]string{"x": "y"} }, true},
		{"owner removed", func(h *autoscalingv2.HorizontalPodAutoscaler) {
			h.OwnerReferences = []metav1.OwnerReference{{Name: "x"}}
		}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n := base.DeepCopy()
			tt.mutate(n)
			if got := hpaChanged.Update(event.UpdateEvent{ObjectOld: base, ObjectNew: n}); got != tt.want {
				t.Errorf("hpaChanged = %v, want %v", got, tt.want)
			}
		})
	}
}
