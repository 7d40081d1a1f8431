package autoscaler

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/scaleplane/scaleplane/api/v1alpha1"
	"github.com/scaleplane/scaleplane/controllers/autoscaler"
	"github.com/scaleplane/scaleplane/controlplane"
	"github.com/scaleplane/scaleplane/e2e/framework"
	"github.com/scaleplane/scaleplane/scaling"
)

// TestAutoscaler runs every scenario in parallel against one app: each
// has its own namespace, workload, pod and exporter.
func TestAutoscaler(t *testing.T) {
	legacy := writeLegacyScaling(t)
	e := startApp(t)
	t.Run("LegacyScalingRenamedAtStart", func(t *testing.T) { legacy.check(t) })
	t.Run("scenarios", func(t *testing.T) {
		for name, fn := range map[string]func(*testing.T, *env){
			"RequestRateScalesUpAndDown":         testRequestRateScalesUpAndDown,
			"IdleGoesToZeroAndActivityWakesIt":   testIdleGoesToZeroAndActivityWakesIt,
			"MetricsOutageKeepsTheCount":         testMetricsOutageKeepsTheCount,
			"PausedIsLeftAlone":                  testPausedIsLeftAlone,
			"ForeignHPAStandsItDown":             testForeignHPAStandsItDown,
			"ForeignHPANamedOnAPinnedWorkload":   testForeignHPANamedOnAPinnedWorkload,
			"DependenciesWakeFirst":              testDependenciesWakeFirst,
			"ScalingOfALongNameAndHostileStatus": testScalingOfALongNameAndHostileStatus,
		} {
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				fn(t, e)
			})
		}
	})
}

// Raising the request rate scales the RackedCluster up and its racks follow
// (C1); lowering it scales down once the 2 s stabilization window passed.
func testRequestRateScalesUpAndDown(t *testing.T, e *env) {
	ns := cluster.Namespace(t)
	ex := newExporter(t, 0)
	addPod(t, ns, "web", ex)
	rc(ns, "web", 1).scaleConfig(map[string]any{
		"minReplicas": int64(1), "maxReplicas": int64(8),
		"triggers": []any{rpsTrigger(10)},
		"behavior": map[string]any{"scaleDown": map[string]any{"stabilizationWindowSeconds": int64(2)}},
	}).create(t)

	// 45 requests/s at 10 per replica: 5 replicas (4 or 6 when rate()'s
	// extrapolation over 1 s scrapes lands just across a boundary).
	ex.setRate(45)
	up := waitScale(t, ns, "web", ">= 4", func(r int64) bool { return r >= 4 })
	note := findEvent(t, ns, "web", v1alpha1.ReasonScaled, func(n string) bool { return strings.HasPrefix(n, "Scaled up from 1 to ") })
	if !strings.Contains(note, "rps=") || !strings.Contains(note, "per replica, above the target 10") {
		t.Errorf("scale-up event does not name the trigger value: %q", note)
	}

	ex.setRate(3)
	waitScale(t, ns, "web", "1", func(r int64) bool { return r == 1 })
	findEvent(t, ns, "web", v1alpha1.ReasonScaled, func(n string) bool { return strings.HasPrefix(n, "Scaled down from ") })

	// The explain endpoint has the decisions with their inputs.
	x, err := e.explain(context.Background(), ns, "web")
	if err != nil {
		t.Fatal(err)
	}
	var actions []scaling.ScaleAction
	for _, r := range x.Decisions {
		if r.Written {
			actions = append(actions, r.Action)
			if len(r.Triggers) != 1 || !r.Triggers[0].Valid {
				t.Errorf("written decision without a valid trigger: %+v", r.Triggers)
			}
		}
	}
	if len(actions) == 0 || actions[len(actions)-1] != scaling.ActionScaleDown {
		t.Errorf("written actions in the explanation: %v, want the last to be ScaleDown (scaled up to %d first)", actions, up.Replicas)
	}
	// The Scaling shows the same, through kubectl.
	framework.Eventually(t, 0, func(ctx context.Context) (bool, string) {
		s, err := getScaling(ctx, ns, autoscaler.ScalingName("web", rackedClusterGVK.GroupKind()))
		if err != nil {
			return false, err.Error()
		}
		var last string
		if n := len(s.Status.Decisions); n > 0 {
			last = s.Status.Decisions[n-1].Action
		}
		ok := s.Status.Mode == v1alpha1.ScalingModeTriggers && s.Status.Replicas != nil && *s.Status.Replicas == 1 &&
			last == string(scaling.ActionScaleDown) && len(s.Status.Triggers) == 1 && s.Status.History != nil &&
			s.Status.LastScaleTime != nil && len(s.OwnerReferences) == 1 && s.OwnerReferences[0].Name == "web"
		return ok, fmt.Sprintf("mode %q, replicas %v, last decision %q, triggers %v, owners %v", s.Status.Mode, s.Status.Replicas, last, s.Status.Triggers, s.OwnerReferences)
	})
	out, err := cluster.Kubectl(context.Background(), "get", "scalings", "-n", ns)
	if err != nil {
		t.Fatalf("kubectl get scalings: %v: %s", err, out)
	}
	for _, col := range []string{"TARGET", "MODE", "REPLICAS", "DESIRED", "MIN", "MAX", "ACTIVE", "REASON", "LAST SCALE", "RackedCluster/web", "triggers", "Autoscaling"} {
		if !strings.Contains(out, col) {
			t.Errorf("kubectl get scalings lacks %q:\n%s", col, out)
		}
	}
	// The kubectl plugin reads it through the kubeconfig.
	out = kubectlPlugin(t, "scaleplane", "explain", ns+"/rackedclusters/web")
	for _, want := range []string{"RackedCluster " + ns + "/web: triggers", "CONDITION", "Active", "TRIGGER", "rps", "ScaleUp", "ScaleDown"} {
		if !strings.Contains(out, want) {
			t.Errorf("kubectl scaleplane explain lacks %q:\n%s", want, out)
		}
	}
	// And kubectl completes the plugin's workloads from the Scalings.
	out = kubectlPlugin(t, "__complete", "scaleplane", "explain", ns+"/")
	if !strings.Contains(out, ns+"/rackedcluster/web\n") {
		t.Errorf("kubectl __complete scaleplane explain %s/ does not offer %s/rackedcluster/web:\n%s", ns, ns, out)
	}
}

// kubectlPlugin runs the real kubectl with KUBECONFIG set and
// kubectl-scaleplane (scaleplane built under that name) first on PATH:
// `kubectl scaleplane ...` as a user runs it.
func kubectlPlugin(t *testing.T, args ...string) string {
	t.Helper()
	dir := t.TempDir()
	build := exec.Command("go", "build", "-o", filepath.Join(dir, "kubectl-scaleplane"), ".")
	build.Dir = framework.BinaryModuleDir()
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build kubectl-scaleplane: %v\n%s", err, out)
	}
	// Its completion helper, as make build links it.
	if err := os.Link(filepath.Join(dir, "kubectl-scaleplane"), filepath.Join(dir, "kubectl_complete-scaleplane")); err != nil {
		t.Fatal(err)
	}
	kubectl := controlplane.Binary(controlplane.KubectlBinary)
	cmd := exec.Command(kubectl, args...)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+cluster.Kubeconfig, "PATH="+dir+string(os.PathListSeparator)+filepath.Dir(kubectl)+string(os.PathListSeparator)+os.Getenv("PATH"))
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// getScaling reads a Scaling.
func getScaling(ctx context.Context, ns, name string) (*v1alpha1.Scaling, error) {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(autoscaler.ScalingGVK)
	if err := cluster.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, u); err != nil {
		return nil, err
	}
	s := &v1alpha1.Scaling{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, s); err != nil {
		return nil, err
	}
	return s, nil
}

// With minReplicas 0 and a short idle timeout, no requests take the
// workload to zero; POST /activity (authenticated, authorized) wakes it to
// idle.replicasAtStart.
func testIdleGoesToZeroAndActivityWakesIt(t *testing.T, e *env) {
	ns := cluster.Namespace(t)
	ex := newExporter(t, 0)
	addPod(t, ns, "fn", ex)
	rc(ns, "fn", 1).scaleConfig(map[string]any{
		"minReplicas": int64(0), "maxReplicas": int64(4),
		"triggers": []any{rpsTrigger(10)},
		"idle":     map[string]any{"replicasAtStart": int64(2), "timeoutSeconds": int64(3)},
	}).create(t)
	waitScale(t, ns, "fn", "0", func(r int64) bool { return r == 0 })
	findEvent(t, ns, "fn", v1alpha1.ReasonScaled, func(n string) bool { return strings.HasPrefix(n, "Scaled to zero from 1") })

	path := autoscaler.ActivityPath + ns + "/rackedclusters/fn"
	cases := []struct {
		name, path, token string
		want              int
	}{
		{"no token", path, "", http.StatusUnauthorized},
		{"a token without the right", path, e.nobody, http.StatusForbidden},
		{"an unknown resource", autoscaler.ActivityPath + ns + "/deployments/fn", e.token, http.StatusNotFound},
		{"an unknown workload", autoscaler.ActivityPath + ns + "/rackedclusters/nope", e.token, http.StatusNotFound},
		{"the gateway", path, e.token, http.StatusAccepted},
	}
	for _, tc := range cases {
		status, body, err := e.call(context.Background(), http.MethodPost, tc.path, tc.token)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if status != tc.want {
			t.Errorf("%s: POST %s: got %d %s, want %d", tc.name, tc.path, status, body, tc.want)
		}
	}
	// Woken to replicasAtStart (it sleeps again 3 s later: nobody calls).
	waitScale(t, ns, "fn", "2", func(r int64) bool { return r == 2 })
	note := findEvent(t, ns, "fn", v1alpha1.ReasonScaled, func(n string) bool { return strings.HasPrefix(n, "Woke up from 0 to 2") })
	if !strings.Contains(note, "activity at") {
		t.Errorf("wake-up event does not name the activity: %q", note)
	}
	// The activity is in the Scaling, for every replica.
	framework.Eventually(t, 0, func(ctx context.Context) (bool, string) {
		s, err := getScaling(ctx, ns, autoscaler.ScalingName("fn", rackedClusterGVK.GroupKind()))
		if err != nil {
			return false, err.Error()
		}
		return s.Status.LastActivity != nil, fmt.Sprintf("lastActivity %v", s.Status.LastActivity)
	})
}

// A metrics outage (the exporter answers 500, or stops) leaves the trigger
// without data: the count is kept, never read as zero, and a Warning says
// why.
func testMetricsOutageKeepsTheCount(t *testing.T, e *env) {
	for _, outage := range []struct {
		name  string
		start func(*exporter)
	}{
		{"500", func(x *exporter) { x.setFailing(true) }},
		{"stopped", func(x *exporter) { x.srv.Close() }},
	} {
		t.Run(outage.name, func(t *testing.T) {
			ns := cluster.Namespace(t)
			ex := newExporter(t, 25)
			addPod(t, ns, "db", ex)
			// 25 requests/s at 10 per replica asks for the 3 it has.
			rc(ns, "db", 3).scaleConfig(map[string]any{
				"minReplicas": int64(1), "maxReplicas": int64(8),
				"triggers": []any{rpsTrigger(10)},
			}).create(t)
			lastTrigger := func(ctx context.Context) (scaling.Decision, string) {
				x, err := e.explain(ctx, ns, "db")
				if err != nil {
					return scaling.Decision{}, err.Error()
				}
				if len(x.Decisions) == 0 {
					return scaling.Decision{}, "no decision yet"
				}
				d := x.Decisions[len(x.Decisions)-1].Decision
				return d, fmt.Sprintf("last decision: %s", d.Reason)
			}
			framework.Eventually(t, 0, func(ctx context.Context) (bool, string) {
				d, msg := lastTrigger(ctx)
				return len(d.Triggers) == 1 && d.Triggers[0].Valid && d.Triggers[0].Value > 0, msg
			})

			outage.start(ex)
			var during scaling.Decision
			framework.Eventually(t, 0, func(ctx context.Context) (bool, string) {
				d, msg := lastTrigger(ctx)
				during = d
				return len(d.Triggers) == 1 && !d.Triggers[0].Valid, msg
			})
			got := struct {
				Current, Desired int32
				Problem          string
			}{during.Current, during.Desired, during.Triggers[0].Problem}
			want := got
			want.Current, want.Desired, want.Problem = 3, 3, "no data"
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("decision during the outage (-want +got):\n%s", diff)
			}
			s, err := getScale(context.Background(), ns, "db")
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(scale{3, []int64{3, 3}}, s); diff != "" {
				t.Errorf("scale during the outage (-want +got):\n%s", diff)
			}
			findEvent(t, ns, "db", v1alpha1.ReasonInvalidTrigger, func(n string) bool { return strings.Contains(n, "rps: no data") })
		})
	}
}

// While scaleplane.io/paused is "true", kubectl scale is left alone; once
// the annotation goes, the autoscaler acts again; paused-replicas holds a
// count.
func testPausedIsLeftAlone(t *testing.T, e *env) {
	ns := cluster.Namespace(t)
	ex := newExporter(t, 45)
	addPod(t, ns, "shop", ex)
	rc(ns, "shop", 2).annotate(v1alpha1.AnnotationPaused, "true").scaleConfig(map[string]any{
		"minReplicas": int64(1), "maxReplicas": int64(8),
		"triggers": []any{rpsTrigger(10)},
	}).create(t)
	ctx := context.Background()
	kubectl := func(args ...string) {
		t.Helper()
		if out, err := cluster.Kubectl(ctx, append([]string{"-n", ns}, args...)...); err != nil {
			t.Fatalf("kubectl %v: %v\n%s", args, err, out)
		}
	}
	kubectl("scale", "rackedcluster/shop", "--replicas=3")
	waitScale(t, ns, "shop", "3", func(r int64) bool { return r == 3 })
	// The autoscaler saw the scaled object (generation 2) and stood aside.
	framework.Eventually(t, 0, func(ctx context.Context) (bool, string) {
		x, err := e.explain(ctx, ns, "shop")
		if err != nil {
			return false, err.Error()
		}
		return x.State == autoscaler.StatePaused && len(x.Decisions) == 0, fmt.Sprintf("state %s, %d decisions", x.State, len(x.Decisions))
	})
	if m := managers(t, ns, "shop"); m[v1alpha1.AutoscalerFieldManager] {
		t.Errorf("the autoscaler wrote a paused workload: managers %v", m)
	}
	if s, _ := getScale(ctx, ns, "shop"); s.Replicas != 3 {
		t.Errorf("replicas while paused: got %d, want kubectl's 3", s.Replicas)
	}

	// Unpaused: 45 requests/s at 10 per replica.
	kubectl("annotate", "rackedcluster/shop", v1alpha1.AnnotationPaused+"-")
	waitScale(t, ns, "shop", ">= 4", func(r int64) bool { return r >= 4 })
	if m := managers(t, ns, "shop"); !m[v1alpha1.AutoscalerFieldManager] {
		t.Errorf("scale not written by %s: managers %v", v1alpha1.AutoscalerFieldManager, m)
	}

	kubectl("annotate", "rackedcluster/shop", v1alpha1.AnnotationPausedReplicas+"=2")
	waitScale(t, ns, "shop", "2", func(r int64) bool { return r == 2 })
	findEvent(t, ns, "shop", v1alpha1.ReasonScaled, func(n string) bool { return strings.HasPrefix(n, "Held at 2 ") })
	x, err := e.explain(ctx, ns, "shop")
	if err != nil {
		t.Fatal(err)
	}
	if x.State != autoscaler.StateHeld {
		t.Errorf("state with paused-replicas: got %s (%s), want %s", x.State, x.Message, autoscaler.StateHeld)
	}
}

// A user's HPA on the same workload makes the autoscaler stand down with a
// Warning; deleting it hands the workload back.
func testForeignHPAStandsItDown(t *testing.T, e *env) {
	ns := cluster.Namespace(t)
	ex := newExporter(t, 25)
	addPod(t, ns, "api", ex)
	rc(ns, "api", 3).scaleConfig(map[string]any{
		"minReplicas": int64(1), "maxReplicas": int64(8),
		"triggers": []any{rpsTrigger(10)},
	}).create(t)
	hpa := &autoscalingv2.HorizontalPodAutoscaler{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "theirs"},
		Spec: autoscalingv2.HorizontalPodAutoscalerSpec{
			ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{APIVersion: rackedClusterGVK.GroupVersion().String(), Kind: "RackedCluster", Name: "api"},
			MinReplicas:    ptr.To(int32(1)), MaxReplicas: 5,
			Metrics: []autoscalingv2.MetricSpec{{Type: autoscalingv2.ResourceMetricSourceType, Resource: &autoscalingv2.ResourceMetricSource{
				Name: corev1.ResourceCPU, Target: autoscalingv2.MetricTarget{Type: autoscalingv2.UtilizationMetricType, AverageUtilization: ptr.To(int32(50))}}}},
		},
	}
	ctx := context.Background()
	if err := cluster.Client.Create(ctx, hpa); err != nil {
		t.Fatalf("create HPA: %v", err)
	}
	waitState := func(want autoscaler.State) {
		t.Helper()
		framework.Eventually(t, 0, func(ctx context.Context) (bool, string) {
			x, err := e.explain(ctx, ns, "api")
			if err != nil {
				return false, err.Error()
			}
			return x.State == want, fmt.Sprintf("state %s (%s), want %s", x.State, x.Message, want)
		})
	}
	waitState(autoscaler.StateForeign)
	findEvent(t, ns, "api", v1alpha1.ReasonForeignAutoscaler, func(n string) bool {
		return strings.Contains(n, "trigger autoscaler standing down: HorizontalPodAutoscaler/"+ns+"/theirs")
	})
	if err := cluster.Client.Delete(ctx, hpa); err != nil {
		t.Fatalf("delete HPA: %v", err)
	}
	waitState(autoscaler.StateAutoscaling)
}

// A user's own HPA (kubectl autoscale) on a workload the trigger
// autoscaler does not manage (pinned by M1) is what its Scaling names, as
// soon as the HPA appears and without the workload changing; deleting the
// HPA brings the pin back.
func testForeignHPANamedOnAPinnedWorkload(t *testing.T, _ *env) {
	ns := cluster.Namespace(t)
	rc(ns, "own", 2).create(t)
	waitActive := func(mode v1alpha1.ScalingMode, reason, message string) {
		t.Helper()
		framework.Eventually(t, 0, func(ctx context.Context) (bool, string) {
			s, err := getScaling(ctx, ns, autoscaler.ScalingName("own", rackedClusterGVK.GroupKind()))
			if err != nil {
				return false, err.Error()
			}
			for _, c := range s.Status.Conditions {
				if c.Type == v1alpha1.ScalingActive && s.Status.Mode == mode && c.Reason == reason && strings.Contains(c.Message, message) {
					return true, ""
				}
			}
			return false, fmt.Sprintf("mode %q, conditions %+v; want %s with Active %s %q", s.Status.Mode, s.Status.Conditions, mode, reason, message)
		})
	}
	waitActive(v1alpha1.ScalingModePinned, "Pinned", "pinned at 2")
	hpa := &autoscalingv2.HorizontalPodAutoscaler{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "own"},
		Spec: autoscalingv2.HorizontalPodAutoscalerSpec{
			ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{APIVersion: rackedClusterGVK.GroupVersion().String(), Kind: "RackedCluster", Name: "own"},
			MinReplicas:    ptr.To(int32(1)), MaxReplicas: 5,
			Metrics: []autoscalingv2.MetricSpec{{Type: autoscalingv2.ResourceMetricSourceType, Resource: &autoscalingv2.ResourceMetricSource{
				Name: corev1.ResourceCPU, Target: autoscalingv2.MetricTarget{Type: autoscalingv2.UtilizationMetricType, AverageUtilization: ptr.To(int32(80))}}}},
		},
	}
	ctx := context.Background()
	if err := cluster.Client.Create(ctx, hpa); err != nil {
		t.Fatalf("create HPA: %v", err)
	}
	waitActive(v1alpha1.ScalingModeExternal, v1alpha1.ReasonForeignAutoscaler, "HorizontalPodAutoscaler/"+ns+"/own scales this workload")
	if err := cluster.Client.Delete(ctx, hpa); err != nil {
		t.Fatalf("delete HPA: %v", err)
	}
	waitActive(v1alpha1.ScalingModePinned, "Pinned", "pinned at 2")
}

// managers are the field managers of a RackedCluster's managedFields.
func managers(t *testing.T, ns, name string) map[string]bool {
	t.Helper()
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(rackedClusterGVK)
	if err := cluster.Client.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: name}, u); err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	for _, f := range u.GetManagedFields() {
		out[f.Manager] = true
	}
	return out
}

// A workload woken by activity waits at zero until its dependsOn workload
// has a ready replica: the dependency is woken first, and once its racks
// report ready (status.replicas, written by C2) the workload wakes.
func testDependenciesWakeFirst(t *testing.T, e *env) {
	ns := cluster.Namespace(t)
	rc(ns, "db", 0).scaleConfig(map[string]any{
		"minReplicas": int64(0), "maxReplicas": int64(2),
		"idle": map[string]any{"replicasAtStart": int64(1), "timeoutSeconds": int64(60)},
	}).create(t)
	rc(ns, "app", 0).scaleConfig(map[string]any{
		"minReplicas": int64(0), "maxReplicas": int64(3),
		"idle":      map[string]any{"replicasAtStart": int64(2), "timeoutSeconds": int64(60)},
		"dependsOn": []any{"db"},
	}).create(t)
	ctx := context.Background()
	framework.Eventually(t, 0, func(ctx context.Context) (bool, string) {
		status, body, err := e.call(ctx, http.MethodPost, autoscaler.ActivityPath+ns+"/rackedclusters/app", e.token)
		if err != nil {
			return false, err.Error()
		}
		return status == http.StatusAccepted, fmt.Sprintf("%d %s", status, body)
	})
	waitScale(t, ns, "db", "1", func(r int64) bool { return r == 1 })
	framework.Eventually(t, 0, func(ctx context.Context) (bool, string) {
		x, err := e.explain(ctx, ns, "app")
		if err != nil || len(x.Decisions) == 0 {
			return false, fmt.Sprintf("no decision yet (%v)", err)
		}
		d := x.Decisions[len(x.Decisions)-1]
		return d.Action == scaling.ActionWait, d.Reason
	})
	if s, _ := getScale(ctx, ns, "app"); s.Replicas != 0 {
		t.Errorf("app woke before db was ready: replicas %d", s.Replicas)
	}

	// db's racks report a ready member, as its operator would.
	db := &unstructured.Unstructured{}
	db.SetGroupVersionKind(rackedClusterGVK)
	db.SetNamespace(ns)
	db.SetName("db")
	patch := []byte(`{"status":{"racks":[{"name":"a","readyMembers":1},{"name":"b","readyMembers":1}]}}`)
	if err := cluster.Client.Status().Patch(ctx, db, client.RawPatch(types.MergePatchType, patch)); err != nil {
		t.Fatalf("report db ready: %v", err)
	}
	waitScale(t, ns, "app", "2", func(r int64) bool { return r == 2 })
	note := findEvent(t, ns, "app", v1alpha1.ReasonScaled, func(n string) bool { return strings.HasPrefix(n, "Woke up from 0 to 2") })
	if !strings.Contains(note, "activity at") {
		t.Errorf("wake-up event: %q", note)
	}
}
