package promql

import (
	"context"
	"fmt"
	"net"
	"sort"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	k8slabels "k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/prometheus/prometheus/model/labels"
)

// The pod annotations Prometheus' Kubernetes examples made the convention.
const (
	AnnotationScrape = "prometheus.io/scrape"
	AnnotationScheme = "prometheus.io/scheme"
	AnnotationPort   = "prometheus.io/port"
	AnnotationPath   = "prometheus.io/path"
)

// Workload is one profiled workload whose pods are scraped.
type Workload struct {
	// Namespace of the pods.
	Namespace string
	// Selector picks the workload's pods (its /scale selector).
	Selector k8slabels.Selector
	// Labels are added to every sample of these pods, e.g. the workload's
	// name, so a trigger can select one workload's series.
	Labels map[string]string
}

// PodDiscoverer lists the pods of each workload with a controller-runtime
// client (normally the manager's cached one) and turns the annotated ones
// into targets.
type PodDiscoverer struct {
	Client client.Reader
	// Workloads returns the workloads to scrape now; it is called every
	// cycle so profiles and triggers can change at run time.
	Workloads func() []Workload
}

// Targets implements Discoverer.
func (d *PodDiscoverer) Targets(ctx context.Context) ([]Target, error) {
	var out []Target
	for _, w := range d.Workloads() {
		var pods corev1.PodList
		opts := []client.ListOption{client.InNamespace(w.Namespace)}
		if w.Selector != nil {
			opts = append(opts, client.MatchingLabelsSelector{Selector: w.Selector})
		}
		if err := d.Client.List(ctx, &pods, opts...); err != nil {
			return nil, fmt.Errorf("list pods in namespace %q: %w", w.Namespace, err)
		}
		for i := range pods.Items {
			if t, ok := PodTarget(&pods.Items[i], w.Labels); ok {
				out = append(out, t)
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].URL < out[j].URL })
	return out, nil
}

// LabelNamespace is the target label holding a pod's namespace.
const LabelNamespace = "namespace"

// PodTarget decides whether pod is scraped and where. A pod is a target when
// it has prometheus.io/scrape: "true", is running, has an IP and is not
// being deleted. The URL is <scheme>://<podIP>:<port><path> with scheme
// from prometheus.io/scheme (default http), port from prometheus.io/port
// (default: the first declared TCP container port, else 80) and path from
// prometheus.io/path (default /metrics). A pod with a bad annotation is
// still returned, marked Invalid, so the debug endpoint shows why.
//
// Every sample scraped from the pod carries LabelNamespace: queries of a
// tenant are bound to it (RequireLabel) and the store counts series by it
// (Options.MaxSeriesPerNamespace).
func PodTarget(pod *corev1.Pod, extra map[string]string) (Target, bool) {
	ann := pod.Annotations
	if ann[AnnotationScrape] != "true" || pod.DeletionTimestamp != nil ||
		pod.Status.Phase != corev1.PodRunning || pod.Status.PodIP == "" {
		return Target{}, false
	}
	b := labels.NewBuilder(labels.EmptyLabels())
	for k, v := range extra {
		b.Set(k, v)
	}
	b.Set(LabelNamespace, pod.Namespace)
	b.Set("pod", pod.Name)
	t := Target{Labels: b.Labels()}

	scheme := strings.ToLower(ann[AnnotationScheme])
	if scheme == "" {
		scheme = "http"
	}
	if scheme != "http" && scheme != "https" {
		t.Invalid = fmt.Sprintf("pod %s/%s: annotation %s is %q; use http or https", pod.Namespace, pod.Name, AnnotationScheme, ann[AnnotationScheme])
	}
	port := ann[AnnotationPort]
	if port == "" {
		port = "80"
		if p := firstTCPPort(pod); p != 0 {
			port = strconv.Itoa(int(p))
		}
	} else if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
		t.Invalid = fmt.Sprintf("pod %s/%s: annotation %s is %q; use a port number between 1 and 65535", pod.Namespace, pod.Name, AnnotationPort, port)
	}
	path := ann[AnnotationPath]
	if path == "" {
		path = "/metrics"
	}
	if !strings.HasPrefix(path, "/") {
		path = "/" + path
	}
	t.URL = scheme + "://" + net.JoinHostPort(pod.Status.PodIP, port) + path
	return t, true
}

func firstTCPPort(pod *corev1.Pod) int32 {
	for _, c := range pod.Spec.Containers {
		for _, p := range c.Ports {
			if p.Protocol == "" || p.Protocol == corev1.ProtocolTCP {
				return p.ContainerPort
			}
		}
	}
	return 0
}
