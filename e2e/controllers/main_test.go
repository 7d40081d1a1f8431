// Package controllers_test proves the controllers (C1-C6) against a real control plane:
// etcd, kube-apiserver, the real HPA controller of kube-controller-manager
// and the real kubectl. The manager runs in this process under a user bound
// only to config/rbac/role.yaml and the sample kinds' profiled-kinds role
// (config/samples/deploy), with no webhook server: no webhook
// configuration is installed except in the outage test, where they fail
// open, so every /scale write reaches the racks through the controllers
// alone and objects are written in already-defaulted form.
package controllers_test

import (
	"fmt"
	"os"
	"testing"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/scaleplane/scaleplane/e2e/framework"
)

var cluster *framework.Cluster

func TestMain(m *testing.M) {
	// The controllers' logs are the first thing to read when a test fails;
	// SCALEPLANE_E2E_VERBOSE shows them.
	log := logr.Discard()
	if os.Getenv("SCALEPLANE_E2E_VERBOSE") != "" {
		log = funcr.New(func(prefix, args string) { fmt.Fprintln(os.Stderr, prefix, args) }, funcr.Options{})
	}
	ctrl.SetLogger(log)
	os.Exit(framework.Run(m, framework.Options{HPAController: true}, &cluster))
}
