// Package profiletest holds profile fixtures shared by scaleplane's tests.
// It must not be imported by non-test code.
package profiletest

import "github.com/scaleplane/scaleplane/api/v1alpha1"

// ZonedDatabase is the profile of a CRD scaleplane did not write: replicas
// at a nested path, the scale config in the scaleplane.io/scale-config
// annotation, member groups ("zones") with other field names, and ready
// counts as a map keyed by zone name. The webhook unit tests and
// e2e/admission (whose testdata/crd defines the CRD) use it to prove that
// profiles, not code, decide where things live.
func ZonedDatabase() v1alpha1.ScaleProfileSpec {
	return v1alpha1.ScaleProfileSpec{
		Target:       v1alpha1.TargetKind{APIVersion: "data.example.org/v1beta1", Kind: "ZonedDatabase", Resource: "zoneddatabases"},
		ReplicasPath: ".spec.topology.replicasPerZone",
		ScaleConfig:  v1alpha1.ScaleConfigLocation{Annotation: v1alpha1.AnnotationScaleConfig},
		MemberGroups: &v1alpha1.MemberGroups{
			Path:         ".spec.topology.zones",
			NameField:    "zoneName",
			MembersField: "size",
			Status:       &v1alpha1.MemberGroupStatus{Path: ".status.zones", Style: v1alpha1.MemberGroupStatusMap, ReadyMembersField: "readyNodes"},
		},
		Status: v1alpha1.StatusPaths{ReplicasPath: ".status.readyPerZone", SelectorPath: ".status.selector"},
		Pods: v1alpha1.Pods{
			Labels:           map[string]string{"data.example.org/database": v1alpha1.NamePlaceholder},
			MemberGroupLabel: "data.example.org/zone",
		},
		MaxReplicas: 50,
	}
}

// ScaledApp is the profile of profile/testdata/crd's ScaledApp, a
// third-party shape: a defaulted spec.replicas, a scale config whose bounds
// have a minimum of 1, shards of at most 10 members.
func ScaledApp() v1alpha1.ScaleProfileSpec {
	return v1alpha1.ScaleProfileSpec{
		Target:       v1alpha1.TargetKind{APIVersion: "apps.example.org/v1", Kind: "ScaledApp", Resource: "scaledapps"},
		ReplicasPath: ".spec.replicas",
		ScaleConfig:  v1alpha1.ScaleConfigLocation{Path: ".spec.scalePolicy"},
		MemberGroups: &v1alpha1.MemberGroups{
			Path:   ".spec.shards",
			Status: &v1alpha1.MemberGroupStatus{Path: ".status.shards"},
		},
		Status: v1alpha1.StatusPaths{ReplicasPath: ".status.replicas", SelectorPath: ".status.selector"},
		Pods: v1alpha1.Pods{
			Labels:           map[string]string{"apps.example.org/app": v1alpha1.NamePlaceholder},
			MemberGroupLabel: "apps.example.org/shard",
		},
	}
}
