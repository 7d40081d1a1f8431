package prometheus

import (
	"fmt"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/scaleplane/scaleplane/api/v1alpha1"
	"github.com/scaleplane/scaleplane/cmd/scaleplane/app"
	"github.com/scaleplane/scaleplane/cmd/scaleplane/convert"
	"github.com/scaleplane/scaleplane/e2e/framework"
	"github.com/scaleplane/scaleplane/profile"
)

// A KEDA ScaledObject on the Prometheus server of autoscaler.prometheusURL,
// converted as scaleplane convert prints it, is admitted by the real
// webhook and scales as KEDA's HPA would: 35 messages at an
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
	// The object scaleplane convert prints, checked against the RackedCluster
	// profile and the sources of an autoscaler with this server.
	cfg := profile.SampleConfiguration()
	cfg.Autoscaler.PrometheusURL = e.prom.URL
	views, err := profile.CompileAll(cfg.Profiles)
	if err != nil {
		t.Fatal(err)
	}
	sources, err := app.ValidationSources(cfg, false)
	if err != nil {
		t.Fatal(err)
	}
	var view *profile.Compiled
	for _, v := range views {
		if v.GVK().Kind == "RackedCluster" {
			view = v
		}
	}
	obj, errs := convert.Render(res, view, sources)
	if len(errs) > 0 {
		t.Fatalf("rendered config refused: %v", errs)
	}
	sc, found, err := unstructured.NestedMap(obj.Object, "spec", "scaleConfig")
	if !found || err != nil {
		t.Fatalf("no spec.scaleConfig in %v (%v)", obj.Object, err)
	}
	rackedCluster(t, ns, "orders", 1, sc)
	framework.WaitScale(t, cluster, ns, "orders", "4", func(r int64) bool { return r == 4 })
	findEvent(t, ns, "orders", v1alpha1.ReasonScaled, "Scaled up from 1 to 4: prometheus=35 over 1 replica is 35 per replica, above the target 10: asks for ceil(35 / 10) = 4")
}
