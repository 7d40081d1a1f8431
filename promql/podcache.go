package promql

import (
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TrimPod is a cache transform (controller-runtime's cache.ByObject
// Transform) that keeps of a Pod only what PodDiscoverer and PodTarget read:
// its name, namespace, UID, resource version, labels (workload selectors
// match them), deletion timestamp, the prometheus.io/ annotations, its
// phase and IP, and its containers' ports. The Pod informer is
// cluster-wide, so without it every pod of the cluster is held whole
// (managed fields, specs, statuses): BenchmarkPodCacheBytes measures both.
// Objects that are not Pods are returned unchanged.
func TrimPod(obj any) (any, error) {
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return obj, nil
	}
	out := &corev1.Pod{
		TypeMeta: pod.TypeMeta,
		ObjectMeta: metav1.ObjectMeta{
			Name:              pod.Name,
			Namespace:         pod.Namespace,
			UID:               pod.UID,
			ResourceVersion:   pod.ResourceVersion,
			Labels:            pod.Labels,
			DeletionTimestamp: pod.DeletionTimestamp,
		},
		Status: corev1.PodStatus{Phase: pod.Status.Phase, PodIP: pod.Status.PodIP},
	}
	for k, v := range pod.Annotations {
		if strings.HasPrefix(k, "prometheus.io/") {
			if out.Annotations == nil {
				out.Annotations = map[string]string{}
			}
			out.Annotations[k] = v
		}
	}
	for _, c := range pod.Spec.Containers {
		if len(c.Ports) == 0 {
			continue
		}
		ports := make([]corev1.ContainerPort, len(c.Ports))
		for i, p := range c.Ports {
			ports[i] = corev1.ContainerPort{ContainerPort: p.ContainerPort, Protocol: p.Protocol}
		}
		out.Spec.Containers = append(out.Spec.Containers, corev1.Container{Name: c.Name, Ports: ports})
	}
	return out, nil
}
