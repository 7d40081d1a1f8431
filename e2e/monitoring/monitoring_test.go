// Package monitoring proves that the monitoring scaleplane ships plugs in:
// every expression of the alerts (config/prometheus/prometheus_rule.yaml,
// the chart's PrometheusRule) and of the Grafana dashboard parses with
// Prometheus' own parser and selects only metrics the binary's real
// /metrics exports, read from the whole app running against a real control
// plane with every subsystem exercised (admission, fan-out, status, HPA,
// scraping, the autoscaler's /scale writes, certificates, leader
// election). hack/release keeps the chart's copies equal to these files.
package monitoring

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/promql/parser"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	dto "github.com/prometheus/client_model/go"

	"github.com/scaleplane/scaleplane/cmd/scaleplane/app"
	"github.com/scaleplane/scaleplane/e2e/framework"
	"github.com/scaleplane/scaleplane/profile"
)

var cluster *framework.Cluster

func TestMain(m *testing.M) { os.Exit(framework.Run(m, framework.Options{}, &cluster)) }

// notExported are names the expressions may use that no scaleplane
// binary exports: Prometheus' own per-target series.
var notExported = map[string]string{
	"up": "Prometheus' scrape health of each target",
}

// TestMonitoringNamesExportedMetrics runs the app, drives
// every subsystem once, and checks each expression's metric names against
// the metric families its /metrics serves.
func TestMonitoringNamesExportedMetrics(t *testing.T) {
	exprs := expressions(t)
	used := map[string][]string{}
	for where, e := range exprs {
		// Prometheus' defaults: what a Prometheus server evaluating the rules
		// accepts.
		ast, err := parser.NewParser(parser.Options{}).ParseExpr(grafanaVariables.Replace(e))
		if err != nil {
			t.Errorf("%s: %q does not parse: %v", where, e, err)
			continue
		}
		for _, name := range metricNames(ast) {
			used[name] = append(used[name], where)
		}
	}
	if len(exprs) < 20 {
		t.Fatalf("only %d expressions found; the files moved?", len(exprs))
	}

	metricsURL := startApp(t)
	ns := cluster.Namespace(t)
	drive(t, ns)

	var exported map[string]bool
	var missing []string
	framework.Eventually(t, 2*framework.DefaultTimeout, func(ctx context.Context) (bool, string) {
		exported = scrape(ctx, t, metricsURL)
		missing = missing[:0]
		for name := range used {
			if !exported[name] && notExported[name] == "" {
				missing = append(missing, name)
			}
		}
		sort.Strings(missing)
		return len(missing) == 0, fmt.Sprintf("names used by the alerts or the dashboard that /metrics does not serve: %v", missing)
	})
	var names []string
	for name := range used {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		switch {
		case exported[name]:
		case notExported[name] != "":
			t.Logf("%s: not exported by scaleplane (%s)", name, notExported[name])
		}
	}
	t.Logf("%d expressions parse; %d metric names, exported unless noted above: %v", len(exprs), len(names), names)
}

// grafanaVariables are the dashboard's Grafana variables, replaced by
// what Grafana would put there before the expressions are parsed.
var grafanaVariables = strings.NewReplacer("$__rate_interval", "1m", "$__interval", "30s", "${datasource}", "prometheus")

// expressions reads every alert and dashboard expression, keyed by where it
// is.
func expressions(t *testing.T) map[string]string {
	t.Helper()
	root := framework.RepoRoot()
	out := map[string]string{}
	data, err := os.ReadFile(filepath.Join(root, "config", "prometheus", "prometheus_rule.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var rule struct {
		Spec struct {
			Groups []struct {
				Name  string
				Rules []struct{ Alert, Record, Expr string }
			}
		}
	}
	if err := yaml.Unmarshal(data, &rule); err != nil {
		t.Fatal(err)
	}
	for _, g := range rule.Spec.Groups {
		for _, r := range g.Rules {
			out["alert "+r.Alert+r.Record] = r.Expr
		}
	}
	data, err = os.ReadFile(filepath.Join(root, "config", "prometheus", "grafana-dashboard.json"))
	if err != nil {
		t.Fatal(err)
	}
	var dash struct {
		Panels []struct {
			Title   string
			Targets []struct{ RefID, Expr string }
		}
	}
	if err := json.Unmarshal(data, &dash); err != nil {
		t.Fatal(err)
	}
	for _, p := range dash.Panels {
		for _, tg := range p.Targets {
			out["panel "+p.Title+" "+tg.RefID] = tg.Expr
		}
	}
	return out
}

// metricNames are the metric names expr selects.
func metricNames(expr parser.Expr) []string {
	var names []string
	parser.Inspect(expr, func(node parser.Node, _ []parser.Node) error {
		vs, ok := node.(*parser.VectorSelector)
		if !ok {
			return nil
		}
		if vs.Name != "" {
			names = append(names, vs.Name)
			return nil
		}
		for _, m := range vs.LabelMatchers {
			if m.Name == model.MetricNameLabel {
				names = append(names, m.Value)
			}
		}
		return nil
	})
	return names
}

// startApp runs the binary's wiring with leader election, a self-signed
// certificate and 1 s scrape and polling intervals; it returns the
// metrics URL (plain HTTP on loopback: the dev-mode metrics server, which
// serves the same registry as the HTTPS one).
func startApp(t *testing.T) string {
	t.Helper()
	webhookPort, metricsPort := framework.FreePort(t), framework.FreePort(t)
	cfg := profile.SampleConfiguration()
	cfg.Webhook.Host = "127.0.0.1"
	cfg.Webhook.Port = webhookPort
	cfg.Webhook.CertDir = filepath.Join(t.TempDir(), "certs")
	cfg.Autoscaler.PollingIntervalSeconds = 1
	cfg.Metrics.ScrapeIntervalSeconds = 1
	metricsAddr := net.JoinHostPort("127.0.0.1", strconv.Itoa(metricsPort))
	a, err := app.New(app.Options{
		Config:         cfg,
		RestConfig:     cluster.Config,
		CertMode:       app.CertSelfSigned,
		Namespace:      "scaleplane-monitoring-e2e",
		WebhookURL:     "https://" + net.JoinHostPort("127.0.0.1", strconv.Itoa(webhookPort)),
		WebhookIPs:     []string{"127.0.0.1"},
		MetricsAddr:    metricsAddr,
		ProbeAddr:      "0",
		LeaderElection: true,
		Dev:            true,
	})
	if err != nil {
		t.Fatalf("build app: %v", err)
	}
	framework.RunApp(t, a)
	return "http://" + metricsAddr + "/metrics"
}

// drive exercises every subsystem once: an autoscaled RackedCluster whose
// pod serves a queue length (scrape, store, trigger, /scale write,
// fan-out), its racks reporting ready (status), one with an HPA range
// (HPA apply), and a trigger on a metric nobody serves (trigger errors).
func drive(t *testing.T, ns string) {
	t.Helper()
	exporter := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprint(w, "# TYPE queue_items gauge\nqueue_items 10\n")
	})}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = exporter.Serve(l) }()
	t.Cleanup(func() { _ = exporter.Close() })
	port := strconv.Itoa(l.Addr().(*net.TCPAddr).Port)

	ctx := t.Context()
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "queue-a-0",
			Labels:      map[string]string{"samples.scaleplane.io/cluster": "queue", "samples.scaleplane.io/rack": "a"},
			Annotations: map[string]string{"prometheus.io/scrape": "true", "prometheus.io/port": port}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "example.invalid/app"}}},
	}
	if err := cluster.Client.Create(ctx, pod); err != nil {
		t.Fatalf("create pod: %v", err)
	}
	pod.Status = corev1.PodStatus{Phase: corev1.PodRunning, PodIP: "127.0.0.1", PodIPs: []corev1.PodIP{{IP: "127.0.0.1"}},
		Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}}
	if err := cluster.Client.Status().Update(ctx, pod); err != nil {
		t.Fatalf("set pod status: %v", err)
	}
	trigger := func(name, query string) map[string]any {
		return map[string]any{"name": name, "type": "AverageValue", "source": "promql", "query": query, "threshold": 5.0}
	}
	workloads := map[string]map[string]any{
		"queue":  {"minReplicas": int64(1), "maxReplicas": int64(3), "triggers": []any{trigger("queue", `sum(queue_items{namespace="${namespace}"})`)}},
		"nodata": {"minReplicas": int64(1), "maxReplicas": int64(3), "triggers": []any{trigger("missing", `sum(never_served{namespace="${namespace}"})`)}},
		"hpa": {"minReplicas": int64(1), "maxReplicas": int64(3), "metrics": []any{map[string]any{"type": "Resource",
			"resource": map[string]any{"name": "cpu", "target": map[string]any{"type": "Utilization", "averageUtilization": int64(60)}}}}},
	}
	for name, sc := range workloads {
		u := framework.RackedCluster(ns, name, 1, 1)
		_ = unstructured.SetNestedMap(u.Object, sc, "spec", "scaleConfig")
		framework.Eventually(t, 0, func(ctx context.Context) (bool, string) {
			if err := cluster.Client.Create(ctx, u.DeepCopy()); err != nil {
				return false, fmt.Sprintf("create %s (the webhook may still be starting): %v", name, err)
			}
			return true, ""
		})
	}
	// The racks of "queue" report ready members: status.replicas follows
	// (C2).
	framework.Eventually(t, 0, func(ctx context.Context) (bool, string) {
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(framework.RackedClusterGVK)
		u.SetNamespace(ns)
		u.SetName("queue")
		if err := cluster.Client.Get(ctx, client.ObjectKeyFromObject(u), u); err != nil {
			return false, err.Error()
		}
		_ = unstructured.SetNestedSlice(u.Object, []any{map[string]any{"name": "a", "readyMembers": int64(1)}}, "status", "racks")
		if err := cluster.Client.Status().Update(ctx, u); err != nil {
			return false, fmt.Sprintf("status update: %v", err)
		}
		return true, ""
	})
}

// scrape reads the app's /metrics and returns every series name it
// serves (a histogram's _bucket, _sum and _count, a summary's _sum and
// _count).
func scrape(ctx context.Context, t *testing.T, url string) map[string]bool {
	t.Helper()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		return nil
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	families, err := p.TextToMetricFamilies(strings.NewReader(string(body)))
	if err != nil {
		t.Fatalf("/metrics does not parse: %v", err)
	}
	out := map[string]bool{}
	for name, f := range families {
		if len(f.GetMetric()) == 0 {
			continue
		}
		out[name] = true
		switch f.GetType() {
		case dto.MetricType_HISTOGRAM:
			out[name+"_bucket"], out[name+"_sum"], out[name+"_count"] = true, true, true
		case dto.MetricType_SUMMARY:
			out[name+"_sum"], out[name+"_count"] = true, true
		}
	}
	return out
}
