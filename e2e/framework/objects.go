package framework

import (
	"fmt"
	"net"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// RackedClusterGVK is the sample RackedCluster's kind, the workload most
// e2e tests drive.
var RackedClusterGVK = schema.GroupVersionKind{Group: "samples.scaleplane.io", Version: "v1alpha1", Kind: "RackedCluster"}

// RackedCluster builds a RackedCluster with replicas and one rack per
// members value, named a, b, c, ...
func RackedCluster(ns, name string, replicas int64, members ...int64) *unstructured.Unstructured {
	racks := make([]any, len(members))
	for i, m := range members {
		racks[i] = map[string]any{"name": string(rune('a' + i)), "members": m}
	}
	u := &unstructured.Unstructured{Object: map[string]any{
		"spec": map[string]any{"replicas": replicas, "racks": racks},
	}}
	u.SetGroupVersionKind(RackedClusterGVK)
	u.SetNamespace(ns)
	u.SetName(name)
	return u
}

// RackMembers returns every rack's members, in order.
func RackMembers(u *unstructured.Unstructured) ([]int64, error) {
	racks, _, err := unstructured.NestedSlice(u.Object, "spec", "racks")
	if err != nil {
		return nil, fmt.Errorf("read racks: %w", err)
	}
	out := make([]int64, 0, len(racks))
	for _, r := range racks {
		item, ok := r.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("rack %v is not an object", r)
		}
		m, _, _ := unstructured.NestedInt64(item, "members")
		out = append(out, m)
	}
	return out, nil
}

// FreePort asks the kernel for a free loopback port. Another process can
// take it before the caller listens; tests use it for servers they start at
// once.
func FreePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("find a free port: %v", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}
