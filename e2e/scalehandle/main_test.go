// Package scalehandle_test proves the ScaleHandle against a real control
// plane (etcd, kube-apiserver, the HPA controller of
// kube-controller-manager, and the real KEDA in one test) and the real
// kubectl, on the upstream ScyllaCluster CRD exactly as published
// (testdata/README.md): a kind with no /scale subresource and no replicas
// field. The manager runs in this process under a user bound only to
// config/rbac/role.yaml and a role for scyllaclusters, with scaleplane's
// controllers and trigger autoscaler for the ScaleHandle profile and no
// webhooks; TestProfileInitHandleThroughTheBinary runs the binary's own
// wiring instead, with what `scaleplane profile init` prints applied by
// kubectl. The tests write the ScyllaCluster's status.racks themselves,
// standing in for scylla-operator.
package scalehandle_test

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	"k8s.io/apimachinery/pkg/runtime"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/scaleplane/scaleplane/api/v1alpha1"
	"github.com/scaleplane/scaleplane/e2e/framework"
)

var cluster *framework.Cluster

func TestMain(m *testing.M) {
	log := logr.Discard()
	if os.Getenv("SCALEPLANE_E2E_VERBOSE") != "" {
		log = funcr.New(func(prefix, args string) { fmt.Fprintln(os.Stderr, prefix, args) }, funcr.Options{})
	}
	ctrl.SetLogger(log)
	scheme := runtime.NewScheme()
	if err := v1alpha1.AddToScheme(scheme); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Exit(framework.Run(m, framework.Options{
		HPAController: true,
		// KEDA's metrics server is served through the aggregator.
		Aggregator: true,
		Scheme:     scheme,
		// scaleplane's own CRDs, the ScaleHandle's among them, are
		// always installed.
		CRDPaths: []string{filepath.Join(framework.RepoRoot(), "e2e", "scalehandle", "testdata", "scylla.scylladb.com_scyllaclusters.yaml")},
	}, &cluster))
}
