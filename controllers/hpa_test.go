package controllers

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/scaleplane/scaleplane/profile"
	"github.com/scaleplane/scaleplane/scaling"
)

// HPAName carries group, kind and workload name, so two kinds of one name
// in two API groups never share an HPA name, and stays a valid name of at
// most 253 characters however long the parts are.
func TestHPANameCarriesTheGroup(t *testing.T) {
	long := strings.Repeat("x", 250)
	longGroup := strings.Repeat("g", 60) + "." + strings.Repeat("h", 60) + ".example.com"
	rackedCluster := schema.GroupKind{Group: "samples.scaleplane.io", Kind: "RackedCluster"}
	const suffix = "-rackedcluster.samples.scaleplane.io"
	tests := []struct {
		name, workload string
		gk             schema.GroupKind
		want           string
	}{
		{"kind in lower case, then the group", "demo", rackedCluster, "demo" + suffix},
		{"another group, same kind", "demo", schema.GroupKind{Group: "db.example.com", Kind: "RackedCluster"}, "demo-rackedcluster.db.example.com"},
		{"core group: kind only", "hello", schema.GroupKind{Kind: "Function"}, "hello-function"},
		{"too long: cut with a hash", long, rackedCluster, long[:253-len(suffix)-11] + "-HASH" + suffix},
		{"too long with a long group: the hash holds the group", strings.Repeat("w", 150), schema.GroupKind{Group: longGroup, Kind: "RackedCluster"}, strings.Repeat("w", 150) + "-HASH-rackedcluster"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := HPAName(tt.workload, tt.gk)
			if errs := validation.IsDNS1123Subdomain(got); len(errs) > 0 {
				t.Errorf("HPAName = %q, not a valid name: %v", got, errs)
			}
			want := tt.want
			if before, after, ok := strings.Cut(want, "HASH"); ok && strings.HasPrefix(got, before) && strings.HasSuffix(got, after) {
				want = got[:len(before)] + got[len(before):len(got)-len(after)] + after
				if n := len(got) - len(before) - len(after); n != 10 {
					t.Errorf("HPAName = %q: hash of %d characters, want 10", got, n)
				}
				other := tt.gk
				other.Group += "x"
				if HPAName(tt.workload+"y", tt.gk) == got || HPAName(tt.workload, other) == got {
					t.Errorf("two workloads share the HPA name %q", got)
				}
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("HPAName (-want +got):\n%s", diff)
			}
		})
	}
}

func TestLegacyHPAName(t *testing.T) {
	long := strings.Repeat("x", 250)
	tests := []struct {
		name, workload, kind, want string
	}{
		{"kind in lower case", "demo", "RackedCluster", "demo-rackedcluster"},
		{"too long: cut with a hash", long, "RackedCluster", long[:253-len("-rackedcluster")-11] + "-" + "HASH" + "-rackedcluster"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := LegacyHPAName(tt.workload, tt.kind)
			want := tt.want
			if strings.Contains(want, "HASH") {
				hash := got[len(got)-len("-rackedcluster")-10 : len(got)-len("-rackedcluster")]
				want = strings.Replace(want, "HASH", hash, 1)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("LegacyHPAName (-want +got):\n%s", diff)
			}
		})
	}
}

func decideWith(t *testing.T, v *profile.Compiled, w scaling.Workload) scaling.HPADecision {
	t.Helper()
	d := scaling.DecideHPA(w, v.Layout(), nil, nil)
	if !d.Want {
		t.Fatalf("DecideHPA wants no HPA: %s", d.Reason)
	}
	return d
}

func decide(t *testing.T, kind string, u *unstructured.Unstructured) scaling.HPADecision {
	t.Helper()
	v := sampleView(t, kind)
	w, errs := v.Read(u)
	if len(errs) > 0 {
		t.Fatalf("read: %v", errs)
	}
	return scaling.DecideHPA(w, v.Layout(), nil, nil)
}

func TestDesiredHPA(t *testing.T) {
	yes := true
	i32 := func(n int32) *int32 { return &n }
	cpu50 := autoscalingv2.MetricSpec{Type: autoscalingv2.ResourceMetricSourceType, Resource: &autoscalingv2.ResourceMetricSource{
		Name: "cpu", Target: autoscalingv2.MetricTarget{Type: autoscalingv2.UtilizationMetricType, AverageUtilization: i32(50)}}}
	owner := func(kind, name string) []metav1.OwnerReference {
		return []metav1.OwnerReference{{APIVersion: "samples.scaleplane.io/v1alpha1", Kind: kind, Name: name, UID: types.UID("uid-" + name), Controller: &yes, BlockOwnerDeletion: &yes}}
	}
	tests := []struct {
		name string
		kind string
		in   *unstructured.Unstructured
		want *autoscalingv2.HorizontalPodAutoscaler
	}{{
		name: "C4 self target through /scale",
		kind: "RackedCluster",
		in:   rc("demo").replicas(1).rack("a", 1).config(bounds(2, 6, cpu(50))).obj(),
		want: &autoscalingv2.HorizontalPodAutoscaler{
			TypeMeta: metav1.TypeMeta{APIVersion: "autoscaling/v2", Kind: "HorizontalPodAutoscaler"},
			ObjectMeta: metav1.ObjectMeta{
				Name: "demo-rackedcluster.samples.scaleplane.io", Namespace: "ns",
				Labels: map[string]string{
					"app.kubernetes.io/managed-by": "scaleplane",
					"scaleplane.io/workload-group": "samples.scaleplane.io",
					"scaleplane.io/workload-kind":  "RackedCluster",
					"scaleplane.io/workload-name":  "demo",
					"scaleplane.io/owner":          "scaleplane",
				},
				OwnerReferences: owner("RackedCluster", "demo"),
			},
			Spec: autoscalingv2.HorizontalPodAutoscalerSpec{
				ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{APIVersion: "samples.scaleplane.io/v1alpha1", Kind: "RackedCluster", Name: "demo"},
				MinReplicas:    i32(2), MaxReplicas: 6,
				Metrics: []autoscalingv2.MetricSpec{cpu50},
			},
		},
	}, {
		name: "C4 child target: the Function's runtime Deployment",
		kind: "Function",
		in:   fn("hello").config(bounds(1, 4, cpu(50))).obj(),
		want: &autoscalingv2.HorizontalPodAutoscaler{
			TypeMeta: metav1.TypeMeta{APIVersion: "autoscaling/v2", Kind: "HorizontalPodAutoscaler"},
			ObjectMeta: metav1.ObjectMeta{
				Name: "hello-function.samples.scaleplane.io", Namespace: "ns",
				Labels: map[string]string{
					"app.kubernetes.io/managed-by": "scaleplane",
					"scaleplane.io/workload-group": "samples.scaleplane.io",
					"scaleplane.io/workload-kind":  "Function",
					"scaleplane.io/workload-name":  "hello",
					"scaleplane.io/owner":          "scaleplane",
				},
				OwnerReferences: owner("Function", "hello"),
			},
			Spec: autoscalingv2.HorizontalPodAutoscalerSpec{
				ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "hello"},
				MinReplicas:    i32(1), MaxReplicas: 4,
				Metrics: []autoscalingv2.MetricSpec{cpu50},
			},
		},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := decide(t, tt.kind, tt.in)
			if !d.Want {
				t.Fatalf("DecideHPA wants no HPA: %s", d.Reason)
			}
			got, err := desiredHPA(sampleView(t, tt.kind), "scaleplane", tt.in, d)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("HPA (-want +got):\n%s", diff)
			}
			apply, err := applyObject(got)
			if err != nil {
				t.Fatal(err)
			}
			if _, ok := apply.Object["status"]; ok {
				t.Errorf("apply object has a status: %v", apply.Object["status"])
			}
			if _, ok, _ := unstructured.NestedFieldNoCopy(apply.Object, "metadata", "creationTimestamp"); ok {
				t.Errorf("apply object has a creationTimestamp")
			}
		})
	}
}

func TestHPAUpToDate(t *testing.T) {
	u := rc("demo").replicas(1).rack("a", 1).config(bounds(2, 6, cpu(50))).obj()
	desired, err := desiredHPA(sampleView(t, "RackedCluster"), "scaleplane", u, decide(t, "RackedCluster", u))
	if err != nil {
		t.Fatal(err)
	}
	selectMax := autoscalingv2.MaxChangePolicySelect
	tests := []struct {
		name   string
		mutate func(h *autoscalingv2.HorizontalPodAutoscaler)
		want   bool
	}{
		{"same", func(*autoscalingv2.HorizontalPodAutoscaler) {}, true},
		{"server defaults a behavior we did not set", func(h *autoscalingv2.HorizontalPodAutoscaler) {
			h.Spec.Behavior = &autoscalingv2.HorizontalPodAutoscalerBehavior{ScaleUp: &autoscalingv2.HPAScalingRules{SelectPolicy: &selectMax}}
		}, true},
		{"someone else's label beside ours", func(h *autoscalingv2.HorizontalPodAutoscaler) { h.Labels["team"] = "x" }, true},
		{"max edited by hand", func(h *autoscalingv2.HorizontalPodAutoscaler) { h.Spec.MaxReplicas = 9 }, false},
		{"metric added by hand (atomic list)", func(h *autoscalingv2.HorizontalPodAutoscaler) {
			h.Spec.Metrics = append(h.Spec.Metrics, h.Spec.Metrics[0])
		}, false},
		{"target changed", func(h *autoscalingv2.HorizontalPodAutoscaler) { h.Spec.ScaleTargetRef.Name = "other" }, false},
		{"our label removed", func(h *autoscalingv2.HorizontalPodAutoscaler) { delete(h.Labels, "app.kubernetes.io/managed-by") }, false},
		{"owner reference gone", func(h *autoscalingv2.HorizontalPodAutoscaler) { h.OwnerReferences = nil }, false},
		// An HPA an older release made has no owner label: the next
		// reconcile labels it, so cleanup finds it by owner.
		{"owner label missing", func(h *autoscalingv2.HorizontalPodAutoscaler) { delete(h.Labels, "scaleplane.io/owner") }, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			existing := desired.DeepCopy()
			tt.mutate(existing)
			if got := hpaUpToDate(existing, desired); got != tt.want {
				t.Errorf("hpaUpToDate = %v, want %v", got, tt.want)
			}
		})
	}
}
