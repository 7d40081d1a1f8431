package profile

import (
	"fmt"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	"github.com/scaleplane/scaleplane/api/v1alpha1"
)

// HandleInference is a ScaleHandle read from a CRD that has no /scale
// subresource: the handle's spec (with TargetRef.Name left to the
// caller), what was inferred and what was not, one sentence each.
type HandleInference struct {
	Spec     v1alpha1.ScaleHandleSpec
	Inferred []string
	Missing  []string
}

// InferHandle reads the spec of a ScaleHandle for crd, a kind without
// /scale: for version, or (empty) the storage version. It needs a list of
// member groups in the spec (objects with a string name and an integer
// count): without one there is nothing a handle could size, and the error
// says so.
func InferHandle(crd *apiextensionsv1.CustomResourceDefinition, version string) (*HandleInference, error) {
	var ver *apiextensionsv1.CustomResourceDefinitionVersion
	var served []string
	for i := range crd.Spec.Versions {
		v := &crd.Spec.Versions[i]
		if !v.Served {
			continue
		}
		served = append(served, v.Name)
		if (version != "" && v.Name == version) || (version == "" && v.Storage) || (version == "" && ver == nil) {
			ver = v
		}
	}
	if ver == nil || (version != "" && ver.Name != version) {
		return nil, fmt.Errorf("CRD %s has no served version %s (served: %s)", crd.Name, version, strings.Join(served, ", "))
	}
	if crd.Spec.Scope == apiextensionsv1.ClusterScoped {
		return nil, fmt.Errorf("CRD %s is cluster-scoped; a ScaleHandle lives in its target's namespace, and no HPA can scale a cluster-scoped kind", crd.Name)
	}
	var root *apiextensionsv1.JSONSchemaProps
	if ver.Schema != nil {
		root = ver.Schema.OpenAPIV3Schema
	}
	g := findGroups(prop(root, "spec"), ".spec", 0)
	if g == nil {
		return nil, fmt.Errorf("CRD %s has no /scale subresource and its spec has no list of member groups (objects with a string name and an integer count) that a ScaleHandle could size; add subresources.scale to the CRD", crd.Name)
	}
	in := &HandleInference{}
	in.Spec.TargetRef = v1alpha1.ScaleHandleTarget{APIVersion: crd.Spec.Group + "/" + ver.Name, Kind: crd.Spec.Names.Kind}
	in.note("target %s %s, version %s: no served version has a /scale subresource, so kubectl scale, an HPA and KEDA cannot scale it; a ScaleHandle holds the count for it", in.Spec.TargetRef.APIVersion, in.Spec.TargetRef.Kind, ver.Name)
	in.Spec.MemberGroups = *g.groups
	in.note("memberGroups.path %s: a list of objects with a string %s and an integer %s; the handle's replicas are fanned out to every one", g.groups.Path, g.groups.NameField, g.groups.MembersField)
	if st := findGroupStatus(prop(root, "status"), g.groups.Path); st != nil {
		in.Spec.MemberGroups.Status = st
		in.note("memberGroups.status.path %s (%s): the handle's status.replicas is their ready count when all agree (C2)", st.Path, st.Style)
	} else {
		in.missing("memberGroups.status: the status has no list or map of member groups with a ready count, so the handle's status.replicas stays unset (C2)")
	}
	in.missing("pods.labels and pods.memberGroupLabel: the labels of the kind's pods are not in its schema; without them the handle has no /scale selector, and an HPA with Resource or Pods metrics cannot count pods")
	// Defaults are left to the reader, as in a hand-written handle.
	if in.Spec.MemberGroups.NameField == DefaultMemberGroupNameField {
		in.Spec.MemberGroups.NameField = ""
	}
	if in.Spec.MemberGroups.MembersField == DefaultMemberGroupMembersField {
		in.Spec.MemberGroups.MembersField = ""
	}
	if st := in.Spec.MemberGroups.Status; st != nil && st.ReadyMembersField == DefaultReadyMembersField {
		st.ReadyMembersField = ""
	}
	spec := in.Spec
	spec.TargetRef.Name = "sample"
	if _, errs := HandleTarget(spec); len(errs) > 0 {
		return nil, fmt.Errorf("the ScaleHandle inferred from CRD %s is not valid: %w", crd.Name, errs.ToAggregate())
	}
	return in, nil
}

func (in *HandleInference) note(format string, args ...any) {
	in.Inferred = append(in.Inferred, fmt.Sprintf(format, args...))
}

func (in *HandleInference) missing(format string, args ...any) {
	in.Missing = append(in.Missing, fmt.Sprintf(format, args...))
}
