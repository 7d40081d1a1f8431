package promql

import (
	"fmt"
	"runtime"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// realisticPod is a pod as a Deployment's ReplicaSet makes it, with the
// managed fields, spec and status the API server returns.
func realisticPod(i int, scraped bool) *corev1.Pod {
	ann := map[string]string{"kubectl.kubernetes.io/restartedAt": "2026-11-01T10:00:00Z", "example.com/team": "payments"}
	if scraped {
		ann[AnnotationScrape] = "true"
		ann[AnnotationPort] = "9090"
	}
	env := make([]corev1.EnvVar, 12)
	for j := range env {
		env[j] = corev1.EnvVar{Name: fmt.Sprintf("SETTING_%d", j), Value: strings.Repeat("v", 40)}
	}
	fields := `{"f:metadata":{"f:generateName":{},"f:labels":{".":{},"f:app":{},"f:pod-template-hash":{}},"f:ownerReferences":{".":{},"k:{\"uid\":\"x\"}":{}}},"f:spec":{"f:containers":{"k:{\"name\":\"app\"}":{".":{},"f:env":{},"f:image":{},"f:name":{},"f:ports":{},"f:resources":{}}}}}`
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: fmt.Sprintf("web-7d9f8c6b5-%05d", i), Namespace: fmt.Sprintf("team-%d", i%50), UID: types.UID(fmt.Sprintf("uid-%d", i)),
			ResourceVersion: "123456", GenerateName: "web-7d9f8c6b5-",
			Labels:          map[string]string{"app": "web", "pod-template-hash": "7d9f8c6b5", "app.kubernetes.io/version": "1.2.3"},
			Annotations:     ann,
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "web-7d9f8c6b5", UID: "rs-uid"}},
			ManagedFields: []metav1.ManagedFieldsEntry{
				{Manager: "kube-controller-manager", Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "v1", FieldsType: "FieldsV1", FieldsV1: metav1.NewFieldsV1(fields)},
				{Manager: "kubelet", Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "v1", FieldsType: "FieldsV1", FieldsV1: metav1.NewFieldsV1(fields), Subresource: "status"},
			},
		},
		Spec: corev1.PodSpec{
			Containers: []corev1.Container{{
				Name: "app", Image: "registry.example/team/web:1.2.3", Env: env,
				Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 8080, Protocol: corev1.ProtocolTCP}, {Name: "metrics", ContainerPort: 9090, Protocol: corev1.ProtocolTCP}},
				Resources: corev1.ResourceRequirements{
					Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("128Mi")},
					Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("256Mi")},
				},
				VolumeMounts: []corev1.VolumeMount{{Name: "kube-api-access", MountPath: "/var/run/secrets/kubernetes.io/serviceaccount", ReadOnly: true}},
			}},
			Volumes:  []corev1.Volume{{Name: "kube-api-access", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{}}}},
			NodeName: "node-3", ServiceAccountName: "default",
		},
		Status: corev1.PodStatus{
			Phase: corev1.PodRunning, PodIP: fmt.Sprintf("10.1.%d.%d", i/250, i%250), HostIP: "192.0.2.3",
			Conditions:        []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}, {Type: corev1.ContainersReady, Status: corev1.ConditionTrue}, {Type: corev1.PodInitialized, Status: corev1.ConditionTrue}, {Type: corev1.PodScheduled, Status: corev1.ConditionTrue}},
			ContainerStatuses: []corev1.ContainerStatus{{Name: "app", Ready: true, Image: "registry.example/team/web:1.2.3", ImageID: "registry.example/team/web@sha256:" + strings.Repeat("ab", 32), ContainerID: "containerd://" + strings.Repeat("cd", 32)}},
		},
	}
}

// TestTrimPodKeepsWhatDiscoveryReads: a trimmed pod gives the same target
// as the whole one, for a scraped pod (default and annotated port), an
// unscraped one and one being deleted; a non-Pod passes through.
func TestTrimPodKeepsWhatDiscoveryReads(t *testing.T) {
	deleting := realisticPod(3, true)
	now := metav1.Now()
	deleting.DeletionTimestamp = &now
	noPortAnnotation := realisticPod(4, true)
	delete(noPortAnnotation.Annotations, AnnotationPort)
	for name, pod := range map[string]*corev1.Pod{
		"scraped": realisticPod(1, true), "not scraped": realisticPod(2, false), "deleting": deleting, "port from the container": noPortAnnotation,
	} {
		t.Run(name, func(t *testing.T) {
			trimmed, err := TrimPod(pod.DeepCopy())
			if err != nil {
				t.Fatal(err)
			}
			extra := map[string]string{"workload": "web"}
			wantT, wantOK := PodTarget(pod, extra)
			gotT, gotOK := PodTarget(trimmed.(*corev1.Pod), extra)
			if wantOK != gotOK || !cmp.Equal(wantT, gotT, cmp.Comparer(func(a, b Target) bool {
				return a.URL == b.URL && a.Invalid == b.Invalid && a.Labels.String() == b.Labels.String()
			})) {
				t.Errorf("target of the trimmed pod %+v (%v), of the whole pod %+v (%v)", gotT, gotOK, wantT, wantOK)
			}
			if diff := cmp.Diff(pod.Labels, trimmed.(*corev1.Pod).Labels); diff != "" {
				t.Errorf("labels (selectors match them) (-whole +trimmed):\n%s", diff)
			}
		})
	}
	cm := &corev1.ConfigMap{}
	if got, _ := TrimPod(cm); got != cm {
		t.Errorf("a ConfigMap was changed by the pod transform")
	}
}

// BenchmarkPodCacheBytes: heap bytes the Pod informer holds per pod of the
// cluster (most of them not scraped), whole and trimmed by TrimPod.
func BenchmarkPodCacheBytes(b *testing.B) {
	const pods = 10_000
	for _, bc := range []struct {
		name      string
		transform func(any) (any, error)
	}{
		{"whole", func(o any) (any, error) { return o, nil }},
		{"trimmed", TrimPod},
	} {
		b.Run(bc.name, func(b *testing.B) {
			var perPod float64
			for range b.N {
				var before, after runtime.MemStats
				runtime.GC()
				runtime.ReadMemStats(&before)
				held := make([]any, pods)
				for i := range held {
					// Decoded from the watch, then transformed: the
					// original is garbage once the transform returns.
					o, _ := bc.transform(realisticPod(i, i%100 == 0))
					held[i] = o
				}
				runtime.GC()
				runtime.ReadMemStats(&after)
				perPod = float64(after.HeapAlloc-before.HeapAlloc) / pods
				runtime.KeepAlive(held)
			}
			b.ReportMetric(perPod, "heapB/pod")
			b.ReportMetric(perPod*pods/(1<<20), "MiB/10000pods")
		})
	}
}
