package sidebyside

import (
	"context"
	"fmt"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/scaleplane/scaleplane/controllers/autoscaler"
	"github.com/scaleplane/scaleplane/e2e/framework"
	"github.com/scaleplane/scaleplane/profile"
)

// Fixed benchmark settings (the others are Settings, from the
// environment): an idle window measures what the control plane costs
// without the arm; a step not followed within stepDeadline counts as the
// deadline.
const (
	idleWindow   = 20 * time.Second
	warmUp       = 15 * time.Minute
	stepDeadline = 2 * time.Minute
	cleanUp      = 10 * time.Minute
)

var scaledObjectGVK = schema.GroupVersionKind{Group: "keda.sh", Version: "v1alpha1", Kind: "ScaledObject"}

// The same N workloads, metric, target and polling interval, autoscaled
// three ways in turn on one control plane: scaleplane on its embedded
// store, scaleplane on the real Prometheus, then KEDA ScaledObjects with
// the Prometheus scaler and the real HPA controller on workloads of their
// own, scaleplane and its webhook configurations gone. The table goes to the test log, stdout and a file.
func TestScaleplaneAndKEDASideBySide(t *testing.T) {
	needCluster(t)
	n := envInt(t, nVar, 1000)
	ctx := context.Background()
	c, cs := fastClient(t)
	ex := newExporter(t)
	prom, err := framework.StartPrometheusEvery(ctx, filepath.Join(cluster.Dir, "prometheus"), settings.Scrape)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(prom.Stop)
	pr := probes{
		kcm:       onePID(t, "kube-controller-manager", cluster.Kubeconfig),
		prom:      prom.Process.Pid(),
		apiserver: onePID(t, "kube-apiserver", cluster.Dir),
		cs:        cs,
	}
	names := workloadNames(n)
	load, _ := os.ReadFile("/proc/loadavg")
	t.Logf("settings %+v; N=%d; load average at start: %s", settings, n, strings.TrimSpace(string(load)))

	embedded, remote := scaleplaneArms(t, c, pr, ex, prom, names)
	arms := []ArmResult{embedded, remote}
	if os.Getenv(noKEDAVar) == "" {
		// KEDA alone: scaleplane's webhook configurations go with it.
		wc := profile.SampleConfiguration().Webhook
		for _, obj := range []client.Object{
			&admissionregistrationv1.MutatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: wc.MutatingConfigurationName}},
			&admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: wc.ValidatingConfigurationName}},
		} {
			if err := c.Delete(ctx, obj); err != nil {
				t.Fatalf("delete scaleplane's webhook configuration %s: %v", obj.GetName(), err)
			}
		}
		// KEDA's Prometheus is a fresh one: its memory is arm C's alone.
		prom.Stop()
		promC, err := framework.StartPrometheusEvery(ctx, filepath.Join(cluster.Dir, "prometheus-keda"), settings.Scrape)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(promC.Stop)
		pr.prom = promC.Process.Pid()
		arms = append(arms, kedaArm(t, c, pr, ex, promC, names))
	}
	load, _ = os.ReadFile("/proc/loadavg")
	title := fmt.Sprintf("side by side: N=%d workloads, polling interval %s (HPA sync period too), scrapes every %s, %g steps/s for %s (%d steps) in every arm, %s at rest; load average at the end: %s",
		n, settings.Interval, settings.Scrape, settings.StepsPerSecond, settings.Window, settings.Steps(), settings.Rest, strings.TrimSpace(string(load)))
	table := FormatTable(title, arms)
	if len(arms) == 2 {
		// Without KEDA there is no reference to give ratios against.
		table = FormatTable(title, arms[:1]) + FormatTable(title, arms[1:])
	}
	t.Log("\n" + table)
	fmt.Println(table)
	out := os.Getenv(outVar)
	if out == "" {
		out = filepath.Join(os.TempDir(), "scaleplane-sidebyside-N"+strconv.Itoa(n)+".txt")
	}
	if err := os.WriteFile(out, []byte(table), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("table written to %s", out)
}

// trigger is the scaleConfig of a scaleplane arm's workload.
func scaleConfig(source string) map[string]any {
	return map[string]any{
		"minReplicas": int64(1), "maxReplicas": int64(10),
		"triggers": []any{map[string]any{"name": "queue", "type": "AverageValue", "source": source,
			"query":     fmt.Sprintf(`sum(%s{namespace="${namespace}",job="${name}"})`, metricName),
			"threshold": int64(threshold)}},
		"behavior": behavior(),
	}
}

// behavior is the same for both autoscalers: no stabilization, any step
// at once, so each metric step is one decision.
func behavior() map[string]any {
	return map[string]any{
		"scaleDown": map[string]any{"stabilizationWindowSeconds": int64(0)},
		"scaleUp": map[string]any{"stabilizationWindowSeconds": int64(0), "policies": []any{
			map[string]any{"type": "Percent", "value": int64(1000), "periodSeconds": int64(1)},
		}},
	}
}

func rackedCluster(ns, name string, sc map[string]any) *unstructured.Unstructured {
	u := framework.RackedCluster(ns, name, 1, 1, 1)
	if sc != nil {
		u.Object["spec"].(map[string]any)["scaleConfig"] = sc
	}
	return u
}

func kedaArm(t *testing.T, c client.Client, pr probes, ex *exporter, prom *framework.Prometheus, names []string) ArmResult {
	ctx := context.Background()
	ns := "sbs-keda"
	createNamespace(t, c, ns)
	crds := framework.Binary(framework.KEDACRDFolder)
	if _, err := cluster.Kubectl(ctx, "apply", "--server-side", "-f", crds); err != nil {
		t.Fatal(err)
	}
	if _, err := cluster.Kubectl(ctx, "wait", "--for=condition=Established", "--timeout=60s", "-f", crds); err != nil {
		t.Fatal(err)
	}
	for _, n := range names {
		ex.set(ns, n, lowValue)
	}
	if err := prom.SetTargets(ex.targets(ns, names)); err != nil {
		t.Fatal(err)
	}
	rec := record(t, ns)
	parallel(t, names, func(ctx context.Context, name string) error {
		u := rackedCluster(ns, name, nil)
		if err := c.Create(ctx, u); err != nil {
			return err
		}
		// No scaleplane here: the test writes the selector the HPA
		// controller needs from /scale.
		if err := unstructured.SetNestedField(u.Object, map[string]any{"replicas": int64(1), "selector": "samples.scaleplane.io/cluster=" + name}, "status"); err != nil {
			return err
		}
		if err := c.Status().Update(ctx, u); err != nil {
			return err
		}
		return c.Create(ctx, scaledObject(ns, name, prom.URL))
	})
	idle := idleRates(t, pr)
	k, err := framework.StartKEDAWith(ctx, cluster, framework.KEDAOptions{OperatorArgs: settings.KEDAOperatorArgs()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(k.Stop)
	own := []int{k.Operator.Pid(), k.Adapter.Pid()}
	pr.own = own
	waitAll(t, rec, ex, ns, names, warmUp, "KEDA warm-up")
	r := measure(t, "C: KEDA + HPA on Prometheus", pr, idle, rec, ex, ns, names, Charges{Prometheus: true, HPAController: true})
	r.Processes = "keda-operator + keda-adapter + Prometheus (scrapes and queries) + kube-controller-manager above idle (the HPA controller's share); peak RSS: KEDA's two programs and Prometheus"
	r.Limits = settings.ClientLimits()
	r.PeakRSS = rssOf(t, append(own, pr.prom)...)
	t.Logf("C: peak RSS of keda-operator %.1f MiB, keda-adapter %.1f MiB, Prometheus %.1f MiB", float64(rssOf(t, own[0]))/(1<<20), float64(rssOf(t, own[1]))/(1<<20), float64(rssOf(t, pr.prom))/(1<<20))

	// KEDA stops, and its HPAs go so that the HPA controller rests; the
	// ScaledObjects stay (their finalizers are KEDA's).
	k.Stop()
	if err := c.DeleteAllOf(ctx, &autoscalingv2.HorizontalPodAutoscaler{}, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	// Nothing serves KEDA's external metrics any more: its APIService
	// goes too, so discovery in a later test finds no unavailable group.
	api := &unstructured.Unstructured{}
	api.SetAPIVersion("apiregistration.k8s.io/v1")
	api.SetKind("APIService")
	api.SetName("v1beta1.external.metrics.k8s.io")
	if err := c.Delete(ctx, api); err != nil {
		t.Fatal(err)
	}
	rec.cancel()
	return r
}

func scaledObject(ns, name, promURL string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{
		"spec": map[string]any{
			"scaleTargetRef":  map[string]any{"apiVersion": "samples.scaleplane.io/v1alpha1", "kind": "RackedCluster", "name": name},
			"pollingInterval": int64(settings.Interval / time.Second),
			"cooldownPeriod":  int64(1),
			"minReplicaCount": int64(1),
			"maxReplicaCount": int64(10),
			"advanced":        map[string]any{"horizontalPodAutoscalerConfig": map[string]any{"behavior": behavior()}},
			"triggers": []any{map[string]any{"type": "prometheus", "metadata": map[string]any{
				"serverAddress": promURL,
				"query":         fmt.Sprintf(`sum(%s{namespace="%s",job="%s"})`, metricName, ns, name),
				"threshold":     strconv.Itoa(threshold),
			}}},
		},
	}}
	u.SetGroupVersionKind(scaledObjectGVK)
	u.SetNamespace(ns)
	u.SetName(name)
	return u
}

func scaleplaneArms(t *testing.T, c client.Client, pr probes, ex *exporter, prom *framework.Prometheus, names []string) (ArmResult, ArmResult) {
	ns := "sbs-scaleplane"
	createNamespace(t, c, ns)
	for _, n := range names {
		ex.set(ns, n, lowValue)
	}
	if err := prom.SetTargets(nil); err != nil {
		t.Fatal(err)
	}
	// One pod per workload for the embedded store's scraper, its metrics
	// at the workload's path of the shared exporter.
	_, portStr, _ := net.SplitHostPort(ex.addr())
	parallel(t, names, func(ctx context.Context, name string) error {
		pod := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name + "-a-0",
				Labels: map[string]string{"samples.scaleplane.io/cluster": name, "samples.scaleplane.io/rack": "a"},
				Annotations: map[string]string{"prometheus.io/scrape": "true", "prometheus.io/port": portStr,
					"prometheus.io/path": "/metrics/" + ns + "/" + name}},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "example.invalid/app"}}},
		}
		if err := c.Create(ctx, pod); err != nil {
			return err
		}
		pod.Status = corev1.PodStatus{Phase: corev1.PodRunning, PodIP: "127.0.0.1", PodIPs: []corev1.PodIP{{IP: "127.0.0.1"}},
			Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}}
		return c.Status().Update(ctx, pod)
	})
	rec := record(t, ns)

	idle := idleRates(t, pr)
	cs := childSettings{PrometheusURL: prom.URL, Workloads: len(names), PollSeconds: int32(settings.Interval / time.Second), ScrapeSeconds: int32(settings.Scrape / time.Second)}
	a := startScaleplane(t, "arm-embedded", cs)
	pr.own = []int{a.pid()}
	prof := os.Getenv(cpuProfileVar)
	if prof != "" {
		pr.atRest = func() { a.startCPUProfile(t) }
	}
	parallel(t, names, func(ctx context.Context, name string) error {
		return withRetry(ctx, func(ctx context.Context) error {
			if a.exited() {
				return fmt.Errorf("scaleplane exited; its log ends:\n%s", a.logTail())
			}
			return c.Create(ctx, rackedCluster(ns, name, scaleConfig("promql")))
		})
	})
	waitAll(t, rec, ex, ns, names, warmUp, "scaleplane (embedded store) warm-up")
	embedded := measure(t, "A: scaleplane, embedded store", pr, idle, rec, ex, ns, names, Charges{})
	embedded.Processes = "scaleplane (its scrapes, store and evaluations)"
	embedded.Limits = "scaleplane: none (its binary's; API Priority and Fairness applies)"
	embedded.PeakRSS = rssOf(t, a.pid())
	if prof != "" {
		a.copyCPUProfile(t, prof+"-A.pprof")
	}

	// The same workloads read Prometheus from now on; the patch goes
	// through the running scaleplane's webhooks, then a fresh process
	// takes over.
	parallel(t, names, func(ctx context.Context, name string) error {
		patch := client.RawPatch(types.MergePatchType, []byte(`{"spec":{"scaleConfig":{"triggers":[`+
			mustJSON(scaleConfig("prometheus")["triggers"].([]any)[0])+`]}}}`))
		return c.Patch(ctx, rackedCluster(ns, name, nil), patch)
	})
	if err := prom.SetTargets(ex.targets(ns, names)); err != nil {
		t.Fatal(err)
	}
	a.stop()
	pr.own = nil
	idle = idleRates(t, pr)
	b := startScaleplane(t, "arm-remote", cs)
	pr.own = []int{b.pid()}
	if prof != "" {
		pr.atRest = func() { b.startCPUProfile(t) }
	}
	for _, n := range names {
		ex.set(ns, n, flip(ex.get(ns, n)))
	}
	waitAll(t, rec, ex, ns, names, warmUp, "scaleplane (remote Prometheus) warm-up")
	remote := measure(t, "B: scaleplane, remote Prometheus", pr, idle, rec, ex, ns, names, Charges{Prometheus: true})
	remote.Processes = "scaleplane + Prometheus (scrapes and queries); peak RSS: both"
	remote.Limits = embedded.Limits
	remote.PeakRSS = rssOf(t, b.pid(), pr.prom)
	t.Logf("B: peak RSS of scaleplane %.1f MiB, of Prometheus %.1f MiB", float64(rssOf(t, b.pid()))/(1<<20), float64(rssOf(t, pr.prom))/(1<<20))
	if prof != "" {
		b.copyCPUProfile(t, prof+"-B.pprof")
	}
	pr.atRest = nil
	// The workloads go while scaleplane still serves, so that a later
	// test in this package starts from an empty cluster.
	rc := &unstructured.Unstructured{}
	rc.SetGroupVersionKind(framework.RackedClusterGVK)
	if err := c.DeleteAllOf(context.Background(), rc, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	if err := c.DeleteAllOf(context.Background(), &corev1.Pod{}, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	// Gone, with what the garbage collector removes after them (their
	// Scalings), so that the next arm's idle window is not the clean-up.
	framework.Eventually(t, cleanUp, func(ctx context.Context) (bool, string) {
		for _, gvk := range []schema.GroupVersionKind{framework.RackedClusterGVK, autoscaler.ScalingGVK, corev1.SchemeGroupVersion.WithKind("Pod")} {
			l := &unstructured.UnstructuredList{}
			l.SetGroupVersionKind(gvk)
			if err := c.List(ctx, l, client.InNamespace(ns)); err != nil {
				return false, err.Error()
			}
			if len(l.Items) > 0 {
				return false, fmt.Sprintf("%d %s left", len(l.Items), gvk.Kind)
			}
		}
		return true, ""
	})
	b.stop()
	if err := prom.SetTargets(nil); err != nil {
		t.Fatal(err)
	}
	return embedded, remote
}

func flip(v float64) float64 {
	if v == highValue {
		return lowValue
	}
	return highValue
}

// idleRates measures the control plane and Prometheus without the arm.
// The window is a measurement, not a wait for anything.
func idleRates(t *testing.T, pr probes) rates {
	t.Helper()
	a := pr.read(t)
	time.Sleep(idleWindow)
	return between(a, pr.read(t))
}

// measure steps the metric of one workload after another at
// settings.StepsPerSecond for settings.Window (the same work in every
// arm), timing each step from the exporter's change to spec.replicas
// taking the new count, then measures the arm at rest for settings.Rest.
// CPU is charged as charges say (ChargedCPU); API requests are the
// window's less the idle rate. Steps still waited for when the window ends
// are waited for after it, up to stepDeadline, outside the measured
// window.
func measure(t *testing.T, arm string, pr probes, idle rates, rec *recorder, ex *exporter, ns string, names []string, charges Charges) ArmResult {
	t.Helper()
	type pendingStep struct {
		at   time.Time
		want int64
	}
	pending := map[string]pendingStep{}
	var reactions []time.Duration
	missed, skipped := 0, 0
	collect := func(now time.Time) {
		for n, p := range pending {
			if got, ok := rec.reached(n, p.want, p.at); ok {
				reactions = append(reactions, got.Sub(p.at))
				delete(pending, n)
			} else if now.Sub(p.at) > stepDeadline {
				// Counted as the deadline: the quantiles it reaches are
				// lower bounds (the table marks them).
				reactions = append(reactions, stepDeadline)
				missed++
				delete(pending, n)
			}
		}
	}
	time.Sleep(settings.Settle) // left to the warm-up's trailing writes, unmeasured
	rot := NewRotation(names)
	total := settings.Steps()
	issued := 0
	start := pr.read(t)
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		now := time.Now()
		for due := StepsDue(now.Sub(start.at), settings.StepsPerSecond, total); issued < due; issued++ {
			n, ok := rot.Next(func(n string) bool { _, busy := pending[n]; return busy })
			if !ok {
				skipped++
				continue
			}
			v := flip(ex.get(ns, n))
			pending[n] = pendingStep{at: time.Now(), want: countFor(v)}
			ex.set(ns, n, v)
		}
		collect(now)
		if now.Sub(start.at) >= settings.Window {
			break
		}
		<-tick.C
	}
	end := pr.read(t)
	for len(pending) > 0 {
		collect(time.Now())
		<-tick.C
	}
	// At rest after the steps, not after the warm-up: the warm-up changes
	// every workload at once, and its events and status writes trail it.
	restStart := pr.read(t)
	if pr.atRest != nil {
		pr.atRest()
	}
	time.Sleep(settings.Rest) // a measurement window, not a wait for anything
	restEnd := pr.read(t)
	rest := between(restStart, restEnd)
	w := between(start, end)
	r := ArmResult{Arm: arm, Reactions: len(reactions), Missed: missed, Deadline: stepDeadline, P50: Percentile(reactions, 0.5), P99: Percentile(reactions, 0.99)}
	r.StepsPerMinute = float64(issued-skipped) / end.at.Sub(start.at).Minutes()
	r.CPUPerMinute = ChargedCPU(w.own, w.prom, w.kcm, idle.kcm, charges)
	r.RestCPUPerMinute = ChargedCPU(rest.own, rest.prom, rest.kcm, idle.kcm, charges)
	r.APIServerCPUPerMinute = max(0, w.apiserver-idle.apiserver)
	api := w.api.Sub(idle.api)
	r.RequestsPerMinute, r.WritesPerMinute = api.All, api.Writes
	r.RestRequestsPerMinute = rest.api.Sub(idle.api).All
	t.Logf("%s: window %s, %d steps (%d skipped: every workload busy), own CPU %.2f s/min (rest %.2f), kcm %.2f (rest %.2f, idle %.2f), prometheus %.2f (rest %.2f, idle %.2f), apiserver %.2f (rest %.2f, idle %.2f), API %.0f/min (rest %.0f, idle %.0f), %d timed, %d missed",
		arm, end.at.Sub(start.at).Round(time.Second), issued-skipped, skipped, w.own, rest.own, w.kcm, rest.kcm, idle.kcm, w.prom, rest.prom, idle.prom,
		w.apiserver, rest.apiserver, idle.apiserver, w.api.All, rest.api.All, idle.api.All, len(reactions), missed)
	t.Logf("%s: writes in the window: %q", arm, TopWrites(start.writes, end.writes, 8))
	t.Logf("%s: writes at rest: %q", arm, TopWrites(restStart.writes, restEnd.writes, 8))
	if missed > 0 {
		// A finding of the benchmark, not a failure: the table shows it.
		t.Logf("%s: %d of %d steps not followed within %s", arm, missed, len(reactions), stepDeadline)
	}
	return r
}
