package foundation

import (
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/scaleplane/scaleplane/e2e/framework"
)

var rackedClusterGVK = framework.RackedClusterGVK

func key(ns, name string) types.NamespacedName {
	return types.NamespacedName{Namespace: ns, Name: name}
}

// rackedCluster and freePort are the framework's, named for brevity here.
var (
	rackedCluster = framework.RackedCluster
	freePort      = func(t *testing.T) int { return framework.FreePort(t) }
)

func members(t *testing.T, u *unstructured.Unstructured) []int64 {
	t.Helper()
	m, err := framework.RackMembers(u)
	if err != nil {
		t.Fatal(err)
	}
	return m
}
