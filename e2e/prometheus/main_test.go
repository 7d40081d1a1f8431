// Package prometheus proves the remote Prometheus source against a real Prometheus
// server (built from github.com/prometheus/prometheus by make tools): it
// scrapes the same test pods as scaleplane's embedded store, and a workload
// whose triggers read the remote source decides exactly as an identical
// workload reading the embedded store. The whole scaleplane app runs in
// this process against etcd and kube-apiserver; every server listens on
// 127.0.0.1.
package prometheus

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
	setLogger()
	os.Exit(framework.Run(m, framework.Options{}, &cluster))
}

// setLogger sends scaleplane's logs to stderr when SCALEPLANE_E2E_VERBOSE is
// set, and nowhere otherwise.
func setLogger() {
	log := logr.Discard()
	if os.Getenv("SCALEPLANE_E2E_VERBOSE") != "" {
		log = funcr.New(func(prefix, args string) { fmt.Fprintln(os.Stderr, prefix, args) }, funcr.Options{})
	}
	ctrl.SetLogger(log)
}
