package profiles

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/scaleplane/scaleplane/api/v1alpha1"
	"github.com/scaleplane/scaleplane/profile"
)

// State is what scaleplane makes of one ScaleProfile: the Active condition
// (without times), the status fields, and the compiled profile when it is
// active.
type State struct {
	View      *profile.Compiled
	Condition metav1.Condition
	Resource  string
	Scope     v1alpha1.Scope
	// CRDGeneration is the generation of the kind's CRD whose schema View
	// holds (0: none read): a CRD whose schema changed under an unchanged
	// profile activates the kind again with the new limits.
	CRDGeneration int64
	// CRDUID is that CRD's UID: one deleted and created again between
	// two reconciles has the same generation and another schema.
	CRDUID types.UID
}

// Active reports whether the profile runs.
func (s State) Active() bool { return s.View != nil }

// Evaluate decides whether p may be active, given every ScaleProfile
// (others may include p) and the API server's kinds:
//
//   - Invalid: the spec does not compile (every field error named) or its
//     resource is not what the API server calls the kind;
//   - Conflict: an older profile (by creation, then name) names the same
//     kind; only the oldest is active, so applying a second one never
//     changes what runs;
//   - CRDNotServed: the API server does not serve the kind's version;
//   - Active otherwise.
func Evaluate(p *v1alpha1.ScaleProfile, others []v1alpha1.ScaleProfile, mapper meta.RESTMapper) State {
	return EvaluateWith(p, others, mapper, nil)
}

// EvaluateWith is Evaluate in a process that also runs kinds set up
// statically (the binary's configuration file, a library builder): a
// ScaleProfile of one of those is a Conflict, since the static one is
// older than any object.
func EvaluateWith(p *v1alpha1.ScaleProfile, others []v1alpha1.ScaleProfile, mapper meta.RESTMapper, static map[schema.GroupKind]bool) State {
	s := State{Condition: metav1.Condition{Type: v1alpha1.ConditionActive, Status: metav1.ConditionFalse, ObservedGeneration: p.Generation}}
	fail := func(reason, msg string) State {
		s.Condition.Reason, s.Condition.Message = reason, msg
		return s
	}
	gv, err := schema.ParseGroupVersion(p.Spec.Target.APIVersion)
	if err != nil {
		return fail(v1alpha1.ProfileReasonInvalid, fmt.Sprintf("spec.target.apiVersion %q: %v", p.Spec.Target.APIVersion, err))
	}
	gk := schema.GroupKind{Group: gv.Group, Kind: p.Spec.Target.Kind}
	if static[gk] {
		return fail(v1alpha1.ProfileReasonConflict, fmt.Sprintf("%s is profiled in scaleplane's own configuration; remove it there or delete this ScaleProfile", gk))
	}
	if winner := oldest(gk, others); winner != nil && winner.Name != p.Name {
		return fail(v1alpha1.ProfileReasonConflict, fmt.Sprintf("ScaleProfile %s, older, profiles %s too; delete one of them", winner.Name, gk))
	}
	view, err := profile.Compile(p.Spec)
	if err != nil {
		return fail(v1alpha1.ProfileReasonInvalid, err.Error())
	}
	m, err := mapper.RESTMapping(gk, gv.Version)
	if err != nil {
		if meta.IsNoMatchError(err) {
			return fail(v1alpha1.ProfileReasonCRDNotServed, fmt.Sprintf("the API server does not serve %s in %s; install its CRD", gk.Kind, gv))
		}
		return fail(v1alpha1.ProfileReasonCRDNotServed, fmt.Sprintf("look up %s: %v", gk, err))
	}
	s.Resource = m.Resource.GroupResource().String()
	s.Scope = v1alpha1.ScopeNamespaced
	if m.Scope.Name() != meta.RESTScopeNameNamespace {
		// The controllers and webhooks run cluster-scoped kinds as they
		// do configuration-file ones (without an HPA).
		s.Scope = v1alpha1.ScopeCluster
	}
	if got := m.Resource.Resource; got != view.GVR().Resource {
		return fail(v1alpha1.ProfileReasonInvalid, fmt.Sprintf("spec.target.resource %q: the API server calls %s %q; set resource: %s", view.GVR().Resource, gk.Kind, got, got))
	}
	s.View = view
	s.Condition.Status, s.Condition.Reason = metav1.ConditionTrue, v1alpha1.ProfileReasonActive
	s.Condition.Message = fmt.Sprintf("scaleplane runs %s", s.Resource)
	return s
}

// Owns reports whether owner acts on p: p's scaleplane.io/owner label
// names owner, or p has none and owner is v1alpha1.DefaultOwner. Each
// binary or embedding operator activates, resyncs entries for and writes
// the status of its own ScaleProfiles only, so that two owners in one
// cluster never run (and add fail-closed webhook entries for) the same
// profile.
func Owns(owner string, p *v1alpha1.ScaleProfile) bool {
	got, ok := p.Labels[v1alpha1.LabelOwner]
	if !ok {
		got = v1alpha1.DefaultOwner
	}
	return got == owner
}

// Owned are the profiles of all that owner owns (Owns).
func Owned(owner string, all []v1alpha1.ScaleProfile) []v1alpha1.ScaleProfile {
	out := make([]v1alpha1.ScaleProfile, 0, len(all))
	for i := range all {
		if Owns(owner, &all[i]) {
			out = append(out, all[i])
		}
	}
	return out
}

// oldest is the profile of gk created first (then by name), or nil.
func oldest(gk schema.GroupKind, all []v1alpha1.ScaleProfile) *v1alpha1.ScaleProfile {
	var best *v1alpha1.ScaleProfile
	for i := range all {
		p := &all[i]
		if p.DeletionTimestamp != nil {
			continue
		}
		gv, err := schema.ParseGroupVersion(p.Spec.Target.APIVersion)
		if err != nil || gv.Group != gk.Group || p.Spec.Target.Kind != gk.Kind {
			continue
		}
		if best == nil || p.CreationTimestamp.Before(&best.CreationTimestamp) ||
			(p.CreationTimestamp.Equal(&best.CreationTimestamp) && strings.Compare(p.Name, best.Name) < 0) {
			best = p
		}
	}
	return best
}
