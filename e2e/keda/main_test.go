// Package keda proves the KEDA integration against the real KEDA: its operator and
// metrics server (built from github.com/kedacore/keda/v2 by make tools) run
// beside etcd, kube-apiserver (with the aggregator's front proxy),
// kube-controller-manager (HPA controller and garbage collector) and the
// whole scaleplane app in this process. KEDA's HPA reads KEDA's external
// metrics through the aggregator and scales RackedClusters through /scale;
// scaleplane carries the count to the racks, stands down beside a
// ScaledObject, and serves KEDA's external scaler protocol.
//
// Every server listens on 127.0.0.1. KEDA's triggers need no external
// system: metrics-api against a test HTTP server, and scaleplane itself.
package keda

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
	os.Exit(framework.Run(m, framework.Options{HPAController: true, Aggregator: true}, &cluster))
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
