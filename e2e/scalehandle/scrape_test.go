package scalehandle_test

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	configv1alpha2 "github.com/scaleplane/scaleplane/api/config/v1alpha2"
	"github.com/scaleplane/scaleplane/api/v1alpha1"
	"github.com/scaleplane/scaleplane/profile"
)

// A trigger on a handle reads metrics scraped from its target's pods: the
// binary's scraper finds them by the handle's spec.pods labels (the
// ScyllaCluster's name, every rack), labels their samples with the
// handle's name, and the trigger's query over them scales every rack.
func TestTriggerOnTheTargetsScrapedPods(t *testing.T) {
	startApp(t, func(c *configv1alpha2.Configuration) {
		c.Profiles = []v1alpha1.ScaleProfileSpec{profile.ScaleHandleProfile()}
		c.Autoscaler.PollingIntervalSeconds = 1
		c.Metrics.ScrapeIntervalSeconds = 1
	})
	ns := cluster.Namespace(t)
	// Two of the ScyllaCluster's pods (racks a and b), each reporting 20
	// units of load: 40 at 10 per replica is 4.
	for _, rack := range []string{"a", "b"} {
		addScyllaPod(t, ns, "db", rack, 20)
	}
	kubectlApply(t, ns, scylla("db", 1, 1, 1))
	kubectlApply(t, ns, handle("db", `  replicas: 1
  scaleConfig:
    minReplicas: 1
    maxReplicas: 6
    triggers:
    - name: load
      type: AverageValue
      threshold: "10"
      query: 'sum(scylla_load{namespace="${namespace}",job="${name}"})'
`))
	waitRacks(t, ns, "db", 4, 4, 4)
}

// addScyllaPod creates a running, ready pod of the ScyllaCluster's rack,
// labelled as scylla-operator labels them, whose metrics a local server
// serves: no kubelet runs, so the test writes the status one would.
func addScyllaPod(t *testing.T, ns, workload, rack string, load float64) {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprintf(w, "# TYPE scylla_load gauge\nscylla_load %g\n", load)
	}))
	t.Cleanup(srv.Close)
	_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	ctx := context.Background()
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: workload + "-dc1-" + rack + "-0",
			Labels:      map[string]string{"scylla/cluster": workload, "scylla/rack": rack},
			Annotations: map[string]string{"prometheus.io/scrape": "true", "prometheus.io/port": port}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "scylla", Image: "example.invalid/scylla"}}},
	}
	if err := cluster.Client.Create(ctx, pod); err != nil {
		t.Fatalf("create pod: %v", err)
	}
	pod.Status = corev1.PodStatus{
		Phase:      corev1.PodRunning,
		PodIP:      "127.0.0.1",
		PodIPs:     []corev1.PodIP{{IP: "127.0.0.1"}},
		Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}},
	}
	if err := cluster.Client.Status().Update(ctx, pod); err != nil {
		t.Fatalf("set pod status: %v", err)
	}
}
