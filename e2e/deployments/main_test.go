// Package deployments holds the e2e tests of built-in kinds scaled by
// scaleplane's trigger autoscaler without any admission webhook: apps/v1
// Deployments configured by SlimFaas's annotations, read as SlimFaas
// documents them, and StatefulSets configured by scaleplane's own
// annotation. The whole app runs in-process against a real API server
// (no kube-controller-manager: the tests create the pods a Deployment
// would, serving /metrics on 127.0.0.1, and read the count scaleplane
// writes through /scale).
package deployments

import (
	"os"
	"testing"

	"github.com/scaleplane/scaleplane/e2e/framework"
)

var cluster *framework.Cluster

func TestMain(m *testing.M) { os.Exit(framework.Run(m, framework.Options{}, &cluster)) }
