package scalehandle_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/scaleplane/scaleplane/e2e/framework"
)

// A KEDA ScaledObject accepts the handle as its scaleTargetRef: the real
// KEDA operator makes its HPA on the handle, the real HPA controller scales
// the handle through /scale from KEDA's external metric, and every rack
// follows.
func TestKEDAScaledObjectScalesTheHandle(t *testing.T) {
	ctx := context.Background()
	k, err := framework.StartKEDA(ctx, cluster)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(k.Stop)
	startManager(t)
	ns := cluster.Namespace(t)
	// KEDA's metrics-api trigger reads {"value": 35}, 10 per replica: 4.
	metric := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_ = json.NewEncoder(w).Encode(map[string]float64{"value": 35})
	}))
	t.Cleanup(metric.Close)
	kubectlApply(t, ns, scylla("db", 1, 1, 1))
	kubectlApply(t, ns, handle("db", "  replicas: 1\n"))
	kubectlApply(t, ns, fmt.Sprintf(`
apiVersion: keda.sh/v1alpha1
kind: ScaledObject
metadata:
  name: db
spec:
  scaleTargetRef: {apiVersion: scaleplane.io/v1alpha1, kind: ScaleHandle, name: db}
  pollingInterval: 1
  minReplicaCount: 1
  maxReplicaCount: 10
  triggers:
  - type: metrics-api
    metadata: {url: "%s/value", valueLocation: value, targetValue: "10"}
`, metric.URL))
	waitRacks(t, ns, "db", 4, 4, 4)
}
