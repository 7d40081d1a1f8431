package foundation

import (
	"net"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
)

var rackedClusterGVK = schema.GroupVersionKind{Group: "samples.scaleplane.io", Version: "v1alpha1", Kind: "RackedCluster"}

func key(ns, name string) types.NamespacedName {
	return types.NamespacedName{Namespace: ns, Name: name}
}

// rackedCluster builds a RackedCluster with replicas and one rack per
// members value.
func rackedCluster(ns, name string, replicas int64, members ...int64) *unstructured.Unstructured {
	racks := make([]any, len(members))
	for i, m := range members {
		racks[i] = map[string]any{"name": string(rune('a' + i)), "members": m}
	}
	u := &unstructured.Unstructured{Object: map[string]any{
		"spec": map[string]any{"replicas": replicas, "racks": racks},
	}}
	u.SetGroupVersionKind(rackedClusterGVK)
	u.SetNamespace(ns)
	u.SetName(name)
	return u
}

func members(t *testing.T, u *unstructured.Unstructured) []int64 {
	t.Helper()
	racks, _, err := unstructured.NestedSlice(u.Object, "spec", "racks")
	if err != nil {
		t.Fatalf("read racks: %v", err)
	}
	var out []int64
	for _, r := range racks {
		m, _, _ := unstructured.NestedInt64(r.(map[string]any), "members")
		out = append(out, m)
	}
	return out
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("find a free port: %v", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}
