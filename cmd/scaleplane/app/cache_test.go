package app

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// The informers keep no managedFields (no reader uses them; they were
// more than half of a cached workload), and pods only what discovery
// reads.
func TestCacheKeepsNoManagedFields(t *testing.T) {
	opts := cacheOptions()
	u := &unstructured.Unstructured{}
	u.SetAPIVersion("samples.scaleplane.io/v1alpha1")
	u.SetKind("RackedCluster")
	u.SetName("db")
	u.SetManagedFields([]metav1.ManagedFieldsEntry{{Manager: "kubectl", Operation: metav1.ManagedFieldsOperationApply}})
	out, err := opts.DefaultTransform(u)
	if err != nil {
		t.Fatal(err)
	}
	if mf := out.(*unstructured.Unstructured).GetManagedFields(); len(mf) != 0 {
		t.Errorf("a cached workload keeps managedFields %v", mf)
	}
	if _, ok := out.(*unstructured.Unstructured).Object["metadata"].(map[string]any)["managedFields"]; ok {
		t.Error("a cached workload keeps a managedFields key")
	}

	var podTransform func(any) (any, error)
	for obj, by := range opts.ByObject {
		if _, ok := obj.(*corev1.Pod); ok {
			podTransform = by.Transform
		}
	}
	if podTransform == nil {
		t.Fatal("no transform for pods")
	}
	pod, err := podTransform(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kubelet"}}}})
	if err != nil {
		t.Fatal(err)
	}
	if mf := pod.(*corev1.Pod).ManagedFields; len(mf) != 0 {
		t.Errorf("a cached pod keeps managedFields %v", mf)
	}
}
