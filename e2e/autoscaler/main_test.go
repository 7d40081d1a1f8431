// Package autoscaler holds the e2e tests of the trigger autoscaler: the
// whole scaleplane app runs in-process against a real API server, scrapes
// Pod objects whose IP is 127.0.0.1 and whose /metrics are served by each
// test, and scales RackedClusters through /scale; the fan-out carries the
// count to the racks. The activity and explain endpoints are called over
// HTTPS with service-account tokens the API server authenticates and
// authorizes, as in a cluster.
package autoscaler

import (
	"os"
	"testing"

	"github.com/scaleplane/scaleplane/e2e/framework"
)

var cluster *framework.Cluster

func TestMain(m *testing.M) { os.Exit(framework.Run(m, framework.Options{}, &cluster)) }
