// Package configtest holds profile fixtures shared by scaleplane's tests.
// It must not be imported by non-test code.
package configtest

import "github.com/scaleplane/scaleplane/config"

// ZonedDatabase is the profile of a CRD scaleplane did not write: replicas
// at a nested path, the scale config in the scaleplane.io/scale-config
// annotation, groups ("zones") with other field names, and ready counts as a
// map keyed by zone name. The webhook unit tests and e2e/admission (whose
// testdata/crd defines the CRD) use it to prove that profiles, not code,
// decide where things live.
func ZonedDatabase() config.Profile {
	return config.Profile{
		Group:       "data.example.org",
		Version:     "v1beta1",
		Kind:        "ZonedDatabase",
		Resource:    "zoneddatabases",
		Replicas:    ".spec.topology.replicasPerZone",
		ScaleConfig: config.ScaleConfigLocation{Annotation: config.AnnotationScaleConfig},
		Groups: &config.Groups{
			Path:         ".spec.topology.zones",
			NameField:    "zoneName",
			MembersField: "size",
			Status:       &config.GroupStatus{Path: ".status.zones", Style: config.GroupStatusMap, ReadyMembersField: "readyNodes"},
		},
		Status: config.Status{Replicas: ".status.readyPerZone", Selector: ".status.selector"},
		Pods: config.Pods{
			Labels:     map[string]string{"data.example.org/database": config.NamePlaceholder},
			GroupLabel: "data.example.org/zone",
		},
		MaxReplicas: 50,
	}
}
