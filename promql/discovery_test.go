package promql

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8slabels "k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
)

// podBuilder makes test pods: running, with an IP and scrape enabled
// unless changed.
type podBuilder struct{ p corev1.Pod }

func makePod(ns, name string) *podBuilder {
	return &podBuilder{p: corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{"app": "fn"},
			Annotations: map[string]string{AnnotationScrape: "true"}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, PodIP: "10.0.0.7"},
	}}
}

func (b *podBuilder) ann(k, v string) *podBuilder { b.p.Annotations[k] = v; return b }
func (b *podBuilder) ip(ip string) *podBuilder    { b.p.Status.PodIP = ip; return b }
func (b *podBuilder) phase(p corev1.PodPhase) *podBuilder {
	b.p.Status.Phase = p
	return b
}
func (b *podBuilder) label(k, v string) *podBuilder { b.p.Labels[k] = v; return b }
func (b *podBuilder) port(p int32) *podBuilder {
	b.p.Spec.Containers = append(b.p.Spec.Containers, corev1.Container{Name: "c", Ports: []corev1.ContainerPort{{ContainerPort: p}}})
	return b
}
func (b *podBuilder) deleting() *podBuilder {
	now := metav1.NewTime(time.Unix(0, 0))
	b.p.DeletionTimestamp = &now
	return b
}
func (b *podBuilder) obj() *corev1.Pod { return b.p.DeepCopy() }

type targetView struct {
	URL, Labels, Invalid string
}

func view(t Target, ok bool) *targetView {
	if !ok {
		return nil
	}
	return &targetView{URL: t.URL, Labels: t.Labels.String(), Invalid: t.Invalid}
}

func TestPodTarget(t *testing.T) {
	lbl := `{namespace="ns", pod="p", workload="fn"}`
	tests := []struct {
		name string
		pod  *corev1.Pod
		want *targetView
	}{
		{name: "defaults", pod: makePod("ns", "p").obj(), want: &targetView{URL: "http://10.0.0.7:80/metrics", Labels: lbl}},
		{name: "container port", pod: makePod("ns", "p").port(8080).obj(), want: &targetView{URL: "http://10.0.0.7:8080/metrics", Labels: lbl}},
		{name: "annotations", pod: makePod("ns", "p").port(8080).ann(AnnotationScheme, "https").ann(AnnotationPort, "9000").ann(AnnotationPath, "prom").obj(),
			want: &targetView{URL: "https://10.0.0.7:9000/prom", Labels: lbl}},
		{name: "ipv6", pod: makePod("ns", "p").ip("fd00::7").ann(AnnotationPort, "5000").obj(), want: &targetView{URL: "http://[fd00::7]:5000/metrics", Labels: lbl}},
		{name: "bad port is visible", pod: makePod("ns", "p").ann(AnnotationPort, "http").obj(),
			want: &targetView{URL: "http://10.0.0.7:http/metrics", Labels: lbl, Invalid: `pod ns/p: annotation prometheus.io/port is "http"; use a port number between 1 and 65535`}},
		{name: "bad scheme is visible", pod: makePod("ns", "p").ann(AnnotationScheme, "ftp").obj(),
			want: &targetView{URL: "ftp://10.0.0.7:80/metrics", Labels: lbl, Invalid: `pod ns/p: annotation prometheus.io/scheme is "ftp"; use http or https`}},
		{name: "scrape not enabled", pod: makePod("ns", "p").ann(AnnotationScrape, "false").obj()},
		{name: "pending", pod: makePod("ns", "p").phase(corev1.PodPending).obj()},
		{name: "no IP yet", pod: makePod("ns", "p").ip("").obj()},
		{name: "deleting", pod: makePod("ns", "p").deleting().obj()},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := view(PodTarget(tc.pod, map[string]string{"workload": "fn"}))
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestPodDiscoverer(t *testing.T) {
	c := fake.NewClientBuilder().WithScheme(scheme.Scheme).WithObjects(
		makePod("a", "fn-1").ip("10.0.0.1").obj(),
		makePod("a", "fn-2").ip("10.0.0.2").obj(),
		makePod("a", "other").ip("10.0.0.3").label("app", "other").obj(),
		makePod("b", "fn-1").ip("10.0.0.4").obj(),
	).Build()
	sel := k8slabels.SelectorFromSet(k8slabels.Set{"app": "fn"})
	d := &PodDiscoverer{Client: c, Workloads: func() []Workload {
		return []Workload{{Namespace: "a", Selector: sel, Labels: map[string]string{"workload": "fn"}}}
	}}
	got, err := d.Targets(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var views []targetView
	for _, tg := range got {
		views = append(views, *view(tg, true))
	}
	want := []targetView{
		{URL: "http://10.0.0.1:80/metrics", Labels: `{namespace="a", pod="fn-1", workload="fn"}`},
		{URL: "http://10.0.0.2:80/metrics", Labels: `{namespace="a", pod="fn-2", workload="fn"}`},
	}
	if diff := cmp.Diff(want, views); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

// TestPodDiscovererFeedsScraper runs discovery and scraping together: pods
// whose IP and port point at a loopback server are scraped with their
// namespace, pod and workload labels.
func TestPodDiscovererFeedsScraper(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/custom" {
			http.NotFound(w, r)
			return
		}
		fmt.Fprint(w, "queue_items 4\n")
	}))
	defer srv.Close()
	u, err := url.Parse(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	c := fake.NewClientBuilder().WithScheme(scheme.Scheme).WithObjects(
		makePod("shop", "fn-1").ip(u.Hostname()).ann(AnnotationPort, u.Port()).ann(AnnotationPath, "/custom").obj(),
		makePod("shop", "fn-2").ip(u.Hostname()).ann(AnnotationPort, u.Port()).ann(AnnotationPath, "/missing").obj(),
	).Build()
	d := &PodDiscoverer{Client: c, Workloads: func() []Workload {
		return []Workload{{Namespace: "shop", Selector: k8slabels.SelectorFromSet(k8slabels.Set{"app": "fn"}), Labels: map[string]string{"workload": "fn"}}}
	}}
	clock := newFakeClock()
	store := NewStore(Options{Now: clock.now})
	store.Request("queue_items")
	sc := newTestScraper(t, store, clock, d, nil)
	sc.Cycle(context.Background())

	if diff := cmp.Diff(map[string][]string{
		`{__name__="queue_items", namespace="shop", pod="fn-1", workload="fn"}`: {"4"},
	}, dump(t, store)); diff != "" {
		t.Errorf("stored samples (-want +got):\n%s", diff)
	}
	base := "http://" + u.Host
	if diff := cmp.Diff(map[string]string{
		base + "/custom":  "up",
		base + "/missing": "down: scrape " + base + "/missing: server returned 404 Not Found",
	}, healthOf(sc)); diff != "" {
		t.Errorf("health (-want +got):\n%s", diff)
	}
}
