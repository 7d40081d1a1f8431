package devworld

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	world "github.com/scaleplane/scaleplane/cmd/scaleplane/devworld"
	"github.com/scaleplane/scaleplane/e2e/framework"
	"github.com/scaleplane/scaleplane/promql"
)

const timeout = 60 * time.Second

func sample(kind, ns, name string, spec map[string]any) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "samples.scaleplane.io/v1alpha1",
		"kind":       kind,
		"metadata":   map[string]any{"namespace": ns, "name": name},
		"spec":       spec,
	}}
	return u
}

func racks(members ...int64) []any {
	var out []any
	for i, m := range members {
		out = append(out, map[string]any{"name": string(rune('a' + i)), "members": m})
	}
	return out
}

// podsOf lists the pods labelled for a workload, by name.
func podsOf(ctx context.Context, ns string, labels map[string]string) (map[string]corev1.Pod, error) {
	var list corev1.PodList
	if err := cluster.Client.List(ctx, &list, client.InNamespace(ns), client.MatchingLabels(labels)); err != nil {
		return nil, err
	}
	out := map[string]corev1.Pod{}
	for _, p := range list.Items {
		out[p.Name] = p
	}
	return out, nil
}

func ready(p corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue && p.Status.Phase == corev1.PodRunning
		}
	}
	return false
}

// waitPods waits until exactly want pods of the workload exist, all ready.
func waitPods(t *testing.T, ns string, labels map[string]string, want ...string) map[string]corev1.Pod {
	t.Helper()
	slices.Sort(want)
	var pods map[string]corev1.Pod
	framework.Eventually(t, timeout, func(ctx context.Context) (bool, string) {
		var err error
		if pods, err = podsOf(ctx, ns, labels); err != nil {
			return false, err.Error()
		}
		var names, notReady []string
		for name, p := range pods {
			names = append(names, name)
			if !ready(p) {
				notReady = append(notReady, name)
			}
		}
		slices.Sort(names)
		return slices.Equal(names, want) && len(notReady) == 0, fmt.Sprintf("pods %v (not ready %v), want %v all ready", names, notReady, want)
	})
	return pods
}

// scrape reads a pod as scaleplane's scraper does (promql.PodTarget) and
// returns the sum of each family's counter or histogram count.
func scrape(t *testing.T, p corev1.Pod) map[string]float64 {
	t.Helper()
	target, ok := promql.PodTarget(&p, nil)
	if !ok || target.Invalid != "" {
		t.Fatalf("pod %s is not a scrape target (%v, %q)", p.Name, ok, target.Invalid)
	}
	if !strings.HasPrefix(target.URL, "http://127.0.0.1:") {
		t.Fatalf("pod %s is scraped at %s, want 127.0.0.1", p.Name, target.URL)
	}
	resp, err := http.Get(target.URL)
	if err != nil {
		t.Fatalf("scrape %s: %v", p.Name, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(strings.NewReader(string(body)))
	if err != nil {
		t.Fatalf("parse %s's exposition: %v\n%s", p.Name, err, body)
	}
	out := map[string]float64{}
	for name, f := range families {
		for _, m := range f.Metric {
			out[name] += m.GetCounter().GetValue() + float64(m.GetHistogram().GetSampleCount())
		}
	}
	return out
}

// work sends n requests to a pod's work port.
func work(t *testing.T, p corev1.Pod, n int) {
	t.Helper()
	port := p.Spec.Containers[0].Ports[0].ContainerPort
	for range n {
		resp, err := http.Get(fmt.Sprintf("http://%s:%d/", p.Status.PodIP, port))
		if err != nil {
			t.Fatalf("request to %s: %v", p.Name, err)
		}
		resp.Body.Close()
	}
}

func readyMembers(ctx context.Context, ns, name string) (string, error) {
	u := sample("RackedCluster", ns, name, nil)
	if err := cluster.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, u); err != nil {
		return "", err
	}
	list, _, _ := unstructured.NestedSlice(u.Object, "status", "racks")
	var parts []string
	for _, r := range list {
		m := r.(map[string]any)
		parts = append(parts, fmt.Sprintf("%v=%v", m["name"], m["readyMembers"]))
	}
	return strings.Join(parts, " "), nil
}

func waitReadyMembers(t *testing.T, ns, name, want string) {
	t.Helper()
	framework.Eventually(t, timeout, func(ctx context.Context) (bool, string) {
		got, err := readyMembers(ctx, ns, name)
		return err == nil && got == want, fmt.Sprintf("status.racks %q (%v), want %q", got, err, want)
	})
}

func setMembers(t *testing.T, ns, name string, members ...int64) {
	t.Helper()
	// The world writes the workload's status meanwhile: an update of the
	// spec retries on a conflict, as kubectl edit would have the user do.
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		u := sample("RackedCluster", ns, name, nil)
		if err := cluster.Client.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: name}, u); err != nil {
			return err
		}
		_ = unstructured.SetNestedSlice(u.Object, racks(members...), "spec", "racks")
		return cluster.Client.Update(context.Background(), u)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestRackedClusterPods: one pod per member of each rack,
// labelled as the profile says, on 127.0.0.1 with the prometheus.io
// annotations, Running and Ready, each serving its own counter and
// histogram; status.racks[].readyMembers reports them; fewer members
// delete pods and stop their servers; a pod someone deletes comes back;
// past the cap the rest are not started and the status says what runs;
// deleting the workload deletes every pod.
func TestRackedClusterPods(t *testing.T) {
	startWorld(t)
	ctx := context.Background()
	ns := cluster.Namespace(t)
	rc := sample("RackedCluster", ns, "web", map[string]any{"racks": racks(2, 1)})
	if err := cluster.Client.Create(ctx, rc); err != nil {
		t.Fatal(err)
	}
	labels := map[string]string{"samples.scaleplane.io/cluster": "web"}
	pods := waitPods(t, ns, labels, "web-a-0", "web-a-1", "web-b-0")
	waitReadyMembers(t, ns, "web", "a=2 b=1")

	p := pods["web-a-1"]
	gotLabels := map[string]string{"cluster": p.Labels["samples.scaleplane.io/cluster"], "rack": p.Labels["samples.scaleplane.io/rack"], "managed-by": p.Labels[world.LabelManagedBy]}
	if diff := cmp.Diff(map[string]string{"cluster": "web", "rack": "a", "managed-by": world.ManagedByValue}, gotLabels); diff != "" {
		t.Errorf("labels of web-a-1 (-want +got):\n%s", diff)
	}
	if p.Status.PodIP != "127.0.0.1" || p.Annotations[promql.AnnotationScrape] != "true" || p.Annotations[promql.AnnotationPath] != world.MetricsPath {
		t.Errorf("web-a-1: podIP %q, annotations %v", p.Status.PodIP, p.Annotations)
	}
	work(t, p, 3)
	if diff := cmp.Diff(map[string]float64{"http_requests_total": 3, "http_request_duration_seconds": 3}, scrape(t, p)); diff != "" {
		t.Errorf("web-a-1 after 3 requests (-want +got):\n%s", diff)
	}
	if got := scrape(t, pods["web-a-0"]); got["http_requests_total"] != 0 {
		t.Errorf("web-a-0 counts requests it did not get: %v", got)
	}

	// Fewer members: the pod goes, and so does its server.
	setMembers(t, ns, "web", 1, 1)
	waitPods(t, ns, labels, "web-a-0", "web-b-0")
	waitReadyMembers(t, ns, "web", "a=1 b=1")
	if resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%s/metrics", p.Annotations[promql.AnnotationPort])); err == nil {
		resp.Body.Close()
		t.Errorf("the server of deleted pod web-a-1 still answers")
	}

	// A pod someone deletes is replaced, with a server of its own.
	gone := pods["web-b-0"]
	if err := cluster.Client.Delete(ctx, &gone); err != nil {
		t.Fatal(err)
	}
	framework.Eventually(t, timeout, func(ctx context.Context) (bool, string) {
		var p corev1.Pod
		err := cluster.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: "web-b-0"}, &p)
		return err == nil && p.UID != gone.UID && ready(p), fmt.Sprintf("web-b-0 not replaced and ready yet (%v)", err)
	})

	// Past the cap: member i of every rack first, so racks stay even.
	setMembers(t, ns, "web", 4, 4)
	waitPods(t, ns, labels, "web-a-0", "web-a-1", "web-a-2", "web-b-0", "web-b-1", "web-b-2")
	waitReadyMembers(t, ns, "web", "a=3 b=3")
	framework.Eventually(t, timeout, func(context.Context) (bool, string) {
		msgs := notices.of(ns, "web")
		for _, m := range msgs {
			if strings.Contains(m, "asks for 8 pods; dev runs at most 6 per workload") {
				return true, ""
			}
		}
		return false, fmt.Sprintf("no notice about the cap: %q", msgs)
	})

	if err := cluster.Client.Delete(ctx, rc); err != nil {
		t.Fatal(err)
	}
	waitPods(t, ns, labels)
}

// TestFunctionPods: a Function gets its runtime Deployment
// (what its HPA scales) and one pod per Deployment replica; a /scale write
// on the Deployment (the HPA's) changes the pods; spec.replicas (external
// scaling) sets the Deployment's count; status.replicas and the
// Deployment's status report the pods; deletion removes both.
func TestFunctionPods(t *testing.T) {
	startWorld(t)
	ctx := context.Background()
	ns := cluster.Namespace(t)
	fn := sample("Function", ns, "hello", map[string]any{"scaleConfig": map[string]any{"minReplicas": int64(2), "maxReplicas": int64(4)}})
	if err := cluster.Client.Create(ctx, fn); err != nil {
		t.Fatal(err)
	}
	labels := map[string]string{"samples.scaleplane.io/function": "hello"}
	waitPods(t, ns, labels, "hello-0", "hello-1")
	waitStatus := func(want int64) {
		t.Helper()
		framework.Eventually(t, timeout, func(ctx context.Context) (bool, string) {
			u := sample("Function", ns, "hello", nil)
			var d appsv1.Deployment
			if err := cluster.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: "hello"}, u); err != nil {
				return false, err.Error()
			}
			if err := cluster.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: "hello"}, &d); err != nil {
				return false, err.Error()
			}
			got, _, _ := unstructured.NestedInt64(u.Object, "status", "replicas")
			return got == want && d.Status.ReadyReplicas == int32(want), fmt.Sprintf("status.replicas %d, deployment ready %d; want %d", got, d.Status.ReadyReplicas, want)
		})
	}
	waitStatus(2)

	// The HPA's write: the Deployment's /scale.
	scale := &autoscalingv1.Scale{}
	d := &appsv1.Deployment{}
	d.Namespace, d.Name = ns, "hello"
	if err := cluster.Client.SubResource("scale").Get(ctx, d, scale); err != nil {
		t.Fatal(err)
	}
	scale.Spec.Replicas = 3
	if err := cluster.Client.SubResource("scale").Update(ctx, d, client.WithSubResourceBody(scale)); err != nil {
		t.Fatal(err)
	}
	waitPods(t, ns, labels, "hello-0", "hello-1", "hello-2")
	waitStatus(3)

	// External scaling: spec.replicas wins.
	if err := cluster.Client.Patch(ctx, fn, client.RawPatch(types.MergePatchType, []byte(`{"spec":{"replicas":1}}`))); err != nil {
		t.Fatal(err)
	}
	waitPods(t, ns, labels, "hello-0")
	waitStatus(1)

	if err := cluster.Client.Delete(ctx, fn); err != nil {
		t.Fatal(err)
	}
	waitPods(t, ns, labels)
	framework.Eventually(t, timeout, func(ctx context.Context) (bool, string) {
		err := cluster.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: "hello"}, &appsv1.Deployment{})
		return apierrors.IsNotFound(err), fmt.Sprintf("deployment hello still there (%v)", err)
	})
}

// TestWorkerGroupPods: one leader pod per replica, labelled
// role=leader as the profile's selector expects; status.replicas and
// readyReplicas report them.
func TestWorkerGroupPods(t *testing.T) {
	startWorld(t)
	ctx := context.Background()
	ns := cluster.Namespace(t)
	wg := sample("WorkerGroup", ns, "inference", map[string]any{"replicas": int64(2), "size": int64(4)})
	if err := cluster.Client.Create(ctx, wg); err != nil {
		t.Fatal(err)
	}
	labels := map[string]string{"samples.scaleplane.io/workergroup": "inference", "samples.scaleplane.io/role": "leader"}
	waitPods(t, ns, labels, "inference-0", "inference-1")
	framework.Eventually(t, timeout, func(ctx context.Context) (bool, string) {
		u := sample("WorkerGroup", ns, "inference", nil)
		if err := cluster.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: "inference"}, u); err != nil {
			return false, err.Error()
		}
		st, _, _ := unstructured.NestedMap(u.Object, "status")
		return fmt.Sprint(st["replicas"], st["readyReplicas"]) == "2 2", fmt.Sprintf("status %v, want replicas 2, readyReplicas 2", st)
	})
	if err := cluster.Client.Delete(ctx, wg); err != nil {
		t.Fatal(err)
	}
	waitPods(t, ns, labels)
}
