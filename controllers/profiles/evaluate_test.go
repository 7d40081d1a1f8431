package profiles

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/scaleplane/scaleplane/api/v1alpha1"
	"github.com/scaleplane/scaleplane/profile"
)

func sp(name string, age time.Duration, spec v1alpha1.ScaleProfileSpec) v1alpha1.ScaleProfile {
	return v1alpha1.ScaleProfile{
		ObjectMeta: metav1.ObjectMeta{Name: name, Generation: 3, CreationTimestamp: metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).Add(-age))},
		Spec:       spec,
	}
}

// TestEvaluate: each reason of the Active condition, and the
// status fields of an active profile.
func TestEvaluate(t *testing.T) {
	samples := profile.Samples()
	rc, fn, wg := samples[0], samples[1], samples[2]
	mapper := meta.NewDefaultRESTMapper(nil)
	gv := schema.GroupVersion{Group: profile.SampleGroup, Version: profile.SampleVersion}
	mapper.Add(gv.WithKind("RackedCluster"), meta.RESTScopeNamespace)
	mapper.Add(gv.WithKind("WorkerGroup"), meta.RESTScopeRoot)
	// Function is not served.

	invalid := rc
	invalid.ScaleConfig = v1alpha1.ScaleConfigLocation{}
	wrongResource := rc
	wrongResource.Target.Resource = "racks"

	type want struct {
		Active           bool
		Status           metav1.ConditionStatus
		Reason           string
		Resource         string
		Scope            v1alpha1.Scope
		MessageHasPrefix string
	}
	tests := []struct {
		name   string
		p      v1alpha1.ScaleProfile
		others []v1alpha1.ScaleProfile
		want   want
	}{
		{"active", sp("rc", time.Hour, rc), nil,
			want{true, metav1.ConditionTrue, "Active", "rackedclusters.samples.scaleplane.io", "Namespaced", "scaleplane runs rackedclusters"}},
		{"the older of two for one kind stays active", sp("rc", time.Hour, rc), []v1alpha1.ScaleProfile{sp("rc-2", time.Minute, rc)},
			want{true, metav1.ConditionTrue, "Active", "rackedclusters.samples.scaleplane.io", "Namespaced", "scaleplane runs"}},
		{"the newer of two for one kind is a conflict", sp("rc-2", time.Minute, rc), []v1alpha1.ScaleProfile{sp("rc", time.Hour, rc)},
			want{false, metav1.ConditionFalse, "Conflict", "", "", "ScaleProfile rc, older, profiles RackedCluster.samples.scaleplane.io too"}},
		{"invalid spec", sp("bad", time.Hour, invalid), nil,
			want{false, metav1.ConditionFalse, "Invalid", "", "", "profile RackedCluster"}},
		{"resource the API server does not call it", sp("rc", time.Hour, wrongResource), nil,
			want{false, metav1.ConditionFalse, "Invalid", "rackedclusters.samples.scaleplane.io", "Namespaced", `spec.target.resource "racks"`}},
		{"CRD not served", sp("fn", time.Hour, fn), nil,
			want{false, metav1.ConditionFalse, "CRDNotServed", "", "", "the API server does not serve Function"}},
		{"profiled statically", sp("fn", time.Hour, fn), nil,
			want{false, metav1.ConditionFalse, "Conflict", "", "", "Function.samples.scaleplane.io is profiled in scaleplane's own configuration"}},
		{"cluster-scoped", sp("wg", time.Hour, wg), nil,
			want{true, metav1.ConditionTrue, "Active", "workergroups.samples.scaleplane.io", "Cluster", "scaleplane runs workergroups"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := EvaluateWith(&tc.p, append(tc.others, tc.p), mapper, map[schema.GroupKind]bool{gv.WithKind("Function").GroupKind(): tc.name == "profiled statically"})
			got := want{s.Active(), s.Condition.Status, s.Condition.Reason, s.Resource, s.Scope, ""}
			if len(s.Condition.Message) >= len(tc.want.MessageHasPrefix) && s.Condition.Message[:len(tc.want.MessageHasPrefix)] == tc.want.MessageHasPrefix {
				got.MessageHasPrefix = tc.want.MessageHasPrefix
			} else {
				got.MessageHasPrefix = s.Condition.Message
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
			if s.Condition.Type != "Active" || s.Condition.ObservedGeneration != 3 {
				t.Errorf("condition %s observing generation %d, want Active observing 3", s.Condition.Type, s.Condition.ObservedGeneration)
			}
		})
	}
}

// TestOwnsProfilesByLabel: a ScaleProfile is the owner's its
// scaleplane.io/owner label names; an unlabelled one is the default
// owner's and no other's.
func TestOwnsProfilesByLabel(t *testing.T) {
	labelled := func(owner string) *v1alpha1.ScaleProfile {
		return &v1alpha1.ScaleProfile{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{v1alpha1.LabelOwner: owner}}}
	}
	cases := []struct {
		name  string
		owner string
		p     *v1alpha1.ScaleProfile
		want  bool
	}{
		{"unlabelled, default owner", v1alpha1.DefaultOwner, &v1alpha1.ScaleProfile{}, true},
		{"unlabelled, another owner", "cache-operator", &v1alpha1.ScaleProfile{}, false},
		{"labelled for the owner", "cache-operator", labelled("cache-operator"), true},
		{"labelled for another", v1alpha1.DefaultOwner, labelled("cache-operator"), false},
		{"labelled empty", v1alpha1.DefaultOwner, labelled(""), false},
	}
	for _, tc := range cases {
		if got := Owns(tc.owner, tc.p); got != tc.want {
			t.Errorf("%s: Owns(%q) = %v, want %v", tc.name, tc.owner, got, tc.want)
		}
	}
	all := []v1alpha1.ScaleProfile{*labelled("a"), {}, *labelled(v1alpha1.DefaultOwner)}
	if got := len(Owned(v1alpha1.DefaultOwner, all)); got != 2 {
		t.Errorf("Owned(default) kept %d profiles, want 2", got)
	}
}
