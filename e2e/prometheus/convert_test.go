package prometheus

import (
	"encoding/json"
	"fmt"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/scaleplane/scaleplane/api/v1alpha1"
	"github.com/scaleplane/scaleplane/cmd/scaleplane/convert"
	"github.com/scaleplane/scaleplane/e2e/framework"
)

// A KEDA ScaledObject on the Prometheus server of autoscaler.prometheusURL,
// converted by scaleplane convert's mapping, is admitted by the real
// webhook as converted and scales as KEDA's HPA would: 35 messages at an
// AverageValue target of 10 per replica is ceil(35 / 10) = 4 replicas.
func TestConvertedScaledObjectScalesAsKEDA(t *testing.T) {
	e := start(t)
	ns := cluster.Namespace(t)
	ex := framework.NewExporter(t, 0)
	ex.SetQueue(35)
	if err := e.prom.SetTargets([]framework.PrometheusTarget{{
		Targets: []string{ex.Addr()},
		Labels:  map[string]string{"namespace": ns, "job": "orders-exporter"},
	}}); err != nil {
		t.Fatal(err)
	}
	doc := fmt.Sprintf(`apiVersion: keda.sh/v1alpha1
kind: ScaledObject
metadata: {name: orders, namespace: %s}
spec:
  scaleTargetRef: {apiVersion: samples.scaleplane.io/v1alpha1, kind: RackedCluster, name: orders}
  minReplicaCount: 1
  maxReplicaCount: 8
  pollingInterval: 1
  triggers:
  - type: prometheus
    metadata:
      serverAddress: %s
      query: sum(queue_messages{namespace="%s",job="orders-exporter"})
      threshold: "10"
      activationThreshold: "1"
      ignoreNullValues: "false"
`, ns, e.prom.URL, ns)
	var so convert.ScaledObject
	if err := yaml.UnmarshalStrict([]byte(doc), &so); err != nil {
		t.Fatal(err)
	}
	res := convert.Convert(&so, convert.Options{PrometheusURL: e.prom.URL, Configured: true})
	if len(res.NotConverted) > 0 {
		t.Fatalf("not converted: %+v", res.NotConverted)
	}
	raw, err := json.Marshal(res.Config)
	if err != nil {
		t.Fatal(err)
	}
	var sc map[string]any
	if err := json.Unmarshal(raw, &sc); err != nil {
		t.Fatal(err)
	}
	rackedCluster(t, ns, "orders", 1, sc)
	framework.WaitScale(t, cluster, ns, "orders", "4", func(r int64) bool { return r == 4 })
	findEvent(t, ns, "orders", v1alpha1.ReasonScaled, "Scaled up from 1 to 4: prometheus=35 > 10 per replica")
}
