package main

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	fakediscovery "k8s.io/client-go/discovery/fake"
	clienttesting "k8s.io/client-go/testing"

	"github.com/scaleplane/scaleplane/api/v1alpha1"
)

func TestParseTarget(t *testing.T) {
	cases := []struct {
		in   string
		want []string
		err  string
	}{
		{"default/rackedclusters/demo", []string{"default", "rackedclusters", "demo"}, ""},
		{"default/demo", nil, `workload "default/demo": write it as NAMESPACE/RESOURCE/NAME, e.g. default/rackedclusters/demo`},
		{"", nil, `workload "": write it as NAMESPACE/RESOURCE/NAME, e.g. default/rackedclusters/demo`},
		{"a//b", nil, `workload "a//b": write it as NAMESPACE/RESOURCE/NAME, e.g. default/rackedclusters/demo`},
	}
	for _, tc := range cases {
		t.Run(tc.in, func(t *testing.T) {
			ns, res, name, err := parseTarget(tc.in)
			gotErr := ""
			if err != nil {
				gotErr = err.Error()
			}
			var got []string
			if err == nil {
				got = []string{ns, res, name}
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("parts (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.err, gotErr); diff != "" {
				t.Errorf("error (-want +got):\n%s", diff)
			}
		})
	}
}

// Explain prints the Scaling for a person.
func TestExplainRendersTheScaling(t *testing.T) {
	t0 := time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)
	i := func(n int32) *int32 { return &n }
	s := &v1alpha1.Scaling{
		ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "cart-rackedcluster", OwnerReferences: []metav1.OwnerReference{{Name: "cart"}}},
		Spec:       v1alpha1.ScalingSpec{TargetRef: v1alpha1.ScalingTargetRef{APIVersion: "samples.scaleplane.io/v1alpha1", Kind: "RackedCluster", Name: "cart"}},
		Status: v1alpha1.ScalingStatus{
			Mode: v1alpha1.ScalingModeTriggers, Replicas: i(4), DesiredReplicas: i(4), MinReplicas: i(0), MaxReplicas: i(10),
			LastScaleTime: &metav1.Time{Time: t0.Add(-time.Minute)},
			LastActivity:  &metav1.MicroTime{Time: t0.Add(-2 * time.Minute)},
			Conditions: []metav1.Condition{
				{Type: "Ready", Status: metav1.ConditionTrue, Reason: "Ready"},
				{Type: "Active", Status: metav1.ConditionTrue, Reason: "Autoscaling", Message: "the trigger autoscaler scales this workload"},
			},
			Triggers: []v1alpha1.TriggerStatus{{Name: "rps", Type: "AverageValue", Value: "35", Threshold: "10", Active: true, Health: "Happy"},
				{Name: "queue", Type: "AverageValue", Threshold: "5", Health: "Failing", Failures: 4, Fallback: true, Problem: "connection refused"}},
			Decisions: []v1alpha1.ScalingDecision{
				{Time: metav1.MicroTime{Time: t0.Add(-3 * time.Minute)}, Current: 0, Desired: 1, Action: "WakeUp", Reason: "Wake up from 0 to 1: activity"},
				{Time: metav1.MicroTime{Time: t0.Add(-time.Minute)}, Current: 1, Desired: 4, Action: "ScaleUp", Reason: "Scale up from 1 to 4", Error: "conflict"},
			},
		},
	}
	var b strings.Builder
	renderScaling(&b, s, t0)
	want := `RackedCluster shop/cart: triggers
replicas 4, desired 4, range 0..10; last scale 2026-06-01T11:59:00Z (1m0s ago); last activity 2026-06-01T11:58:00Z

CONDITION  STATUS  REASON       MESSAGE
Ready      True    Ready        -
Active     True    Autoscaling  the trigger autoscaler scales this workload

TRIGGER  TYPE          VALUE  THRESHOLD  ACTIVE  HEALTH                          PROBLEM
rps      AverageValue  35     10         true    Happy                           -
queue    AverageValue  -      5          false   Failing (4 in a row), fallback  connection refused

TIME      REPLICAS               ACTION   REASON
11:57:00  0 -> 1                 WakeUp   Wake up from 0 to 1: activity
11:59:00  1 -> 4 (write failed)  ScaleUp  Scale up from 1 to 4; write failed: conflict
`
	if diff := cmp.Diff(want, b.String()); diff != "" {
		t.Errorf("explain (-want +got):\n%s", diff)
	}
}

// A count a stabilization window holds changed nothing, yet it is what an
// operator asks about: explain says what the triggers want and until when
// the window holds, instead of "no decisions".
func TestExplainShowsAHeldCount(t *testing.T) {
	t0 := time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)
	i := func(n int32) *int32 { return &n }
	held := "desired 4, held at 6 by the 300 s scale-down window until 12:04:10 UTC"
	s := &v1alpha1.Scaling{
		ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "cart-rackedcluster", OwnerReferences: []metav1.OwnerReference{{Name: "cart"}}},
		Spec:       v1alpha1.ScalingSpec{TargetRef: v1alpha1.ScalingTargetRef{APIVersion: "samples.scaleplane.io/v1alpha1", Kind: "RackedCluster", Name: "cart"}},
		Status: v1alpha1.ScalingStatus{
			Mode: v1alpha1.ScalingModeTriggers, Replicas: i(6), DesiredReplicas: i(6), MinReplicas: i(1), MaxReplicas: i(10),
			Conditions: []metav1.Condition{{Type: "Active", Status: metav1.ConditionTrue, Reason: "ScaleDownStabilized", Message: held}},
		},
	}
	var b strings.Builder
	renderScaling(&b, s, t0)
	want := `RackedCluster shop/cart: triggers
replicas 6, desired 6, range 1..10

CONDITION  STATUS  REASON               MESSAGE
Active     True    ScaleDownStabilized  ` + held + `

now: ` + held + `
`
	if diff := cmp.Diff(want, b.String()); diff != "" {
		t.Errorf("explain (-want +got):\n%s", diff)
	}
}

// The plugin's completion helper: commands, then explain's workloads.
func TestPluginCompletion(t *testing.T) {
	list := func() []string {
		return []string{"shop/rackedcluster/cart", "shop/function/hello", "web/rackedcluster/front"}
	}
	cases := []struct {
		args []string
		want []string
	}{
		{nil, []string{"explain", "completion", "version", "help"}},
		{[]string{"ex"}, []string{"explain"}},
		{[]string{"explain", "shop/"}, []string{"shop/rackedcluster/cart", "shop/function/hello"}},
		{[]string{"explain", "--j"}, []string{"--json"}},
		{[]string{"completion", ""}, []string{"bash", "zsh"}},
		{[]string{"explain", "shop/rackedcluster/cart", ""}, nil},
	}
	for _, tc := range cases {
		if diff := cmp.Diff(tc.want, completeArgs(tc.args, list)); diff != "" {
			t.Errorf("completeArgs(%q) (-want +got):\n%s", tc.args, diff)
		}
	}
}

// explain reads its RESOURCE as kubectl does: plural, singular, kind, short
// name, each optionally with its group, through discovery.
func TestExplainResolvesResourcesAsKubectl(t *testing.T) {
	dc := &fakediscovery.FakeDiscovery{Fake: &clienttesting.Fake{Resources: []*metav1.APIResourceList{
		{GroupVersion: "samples.scaleplane.io/v1alpha1", APIResources: []metav1.APIResource{
			{Name: "rackedclusters", SingularName: "rackedcluster", Kind: "RackedCluster", Namespaced: true, ShortNames: []string{"rcl"}, Verbs: []string{"get", "list"}},
		}},
		{GroupVersion: "policy.example.org/v1", APIResources: []metav1.APIResource{
			{Name: "knativepolicies", SingularName: "knativepolicy", Kind: "KnativePolicy", Namespaced: false, ShortNames: []string{"knp"}, Verbs: []string{"get", "list"}},
		}},
	}}}
	mapper := discoveryMapper(dc)
	rcl := "samples.scaleplane.io/v1alpha1, Kind=RackedCluster"
	cases := []struct{ in, want, err string }{
		{"rackedclusters", rcl, ""},
		{"rackedcluster", rcl, ""},
		{"RackedCluster", rcl, ""},
		{"rcl", rcl, ""},
		{"rackedclusters.samples.scaleplane.io", rcl, ""},
		{"RackedCluster.samples.scaleplane.io", rcl, ""},
		{"rackedclusters.v1alpha1.samples.scaleplane.io", rcl, ""},
		{"knp", "policy.example.org/v1, Kind=KnativePolicy", ""},
		{"nothing", "", `resource "nothing": no matches for /, Resource=nothing; name the workload's resource as kubectl api-resources lists it`},
	}
	for _, tc := range cases {
		t.Run(tc.in, func(t *testing.T) {
			m, err := resolveResource(mapper, tc.in)
			got, gotErr := "", ""
			if err != nil {
				gotErr = err.Error()
			} else {
				got = m.GroupVersionKind.String()
			}
			if got != tc.want || !strings.HasPrefix(gotErr, tc.err) || (tc.err == "") != (gotErr == "") {
				t.Errorf("resolve %q: %q, error %q; want %q, error starting %q", tc.in, got, gotErr, tc.want, tc.err)
			}
		})
	}
}
