package config

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestSampleCRDs: the binary carries the three sample CRDs of
// config/samples/crd, and nothing else of the folder.
func TestSampleCRDs(t *testing.T) {
	crds, err := SampleCRDs()
	if err != nil {
		t.Fatalf("SampleCRDs: %v", err)
	}
	var names []string
	for _, crd := range crds {
		names = append(names, crd.Name)
	}
	want := []string{"rackedclusters.samples.scaleplane.io", "samplefunctions.samples.scaleplane.io", "workergroups.samples.scaleplane.io"}
	if diff := cmp.Diff(want, names); diff != "" {
		t.Errorf("SampleCRDs (-want +got):\n%s", diff)
	}
}

// TestScaleplaneCRDs: the binary carries scaleplane's own CRDs, so that
// scaleplane dev and the e2e control plane serve Scalings, ScaleProfiles and ScaleHandles
// (kubectl apply of a profile works there as in a cluster).
func TestScaleplaneCRDs(t *testing.T) {
	crds, err := ScaleplaneCRDs()
	if err != nil {
		t.Fatalf("ScaleplaneCRDs: %v", err)
	}
	var names []string
	for _, crd := range crds {
		names = append(names, crd.Name)
	}
	want := []string{"scalehandles.scaleplane.io", "scaleprofiles.scaleplane.io", "scalings.scaleplane.io"}
	if diff := cmp.Diff(want, names); diff != "" {
		t.Errorf("ScaleplaneCRDs (-want +got):\n%s", diff)
	}
}

// The sample kinds run beside real CRDs (scaleplane dev --crd): kubectl
// resolves a plural, singular or short name to one kind, so a sample that
// takes a name a built-in or a well-known third-party kind uses shadows it
// (kubectl get functions showing the sample, not the user's Function). The
// group is scaleplane's own domain, which no third party uses.
func TestSampleCRDsShadowNoWellKnownKind(t *testing.T) {
	taken := map[string]string{
		// Built-in resources and their short names.
		"rc": "ReplicationController", "deploy": "Deployment", "sts": "StatefulSet", "ds": "DaemonSet",
		"hpa": "HorizontalPodAutoscaler", "po": "Pod", "svc": "Service", "cj": "CronJob",
		"jobs": "Job", "job": "Job", "pods": "Pod", "deployments": "Deployment",
		// Serverless functions: Kyma (serverless.kyma-project.io),
		// OpenFunction (core.openfunction.io), Fission (fission.io),
		// Knative's func and OpenFaaS' fn.
		"functions": "Function", "function": "Function", "fn": "Function",
		// Scale targets of well-known operators.
		"clusters": "Cluster", "cluster": "Cluster", "scaledobjects": "ScaledObject", "so": "ScaledObject",
		"leaderworkersets": "LeaderWorkerSet", "lws": "LeaderWorkerSet",
		"scyllaclusters": "ScyllaCluster", "rayclusters": "RayCluster",
	}
	crds, err := SampleCRDs()
	if err != nil {
		t.Fatalf("SampleCRDs: %v", err)
	}
	var shadows []string
	for _, crd := range crds {
		n := crd.Spec.Names
		if crd.Spec.Group != "samples.scaleplane.io" {
			shadows = append(shadows, crd.Name+": group "+crd.Spec.Group+" is not scaleplane's")
		}
		for _, name := range append([]string{n.Plural, n.Singular}, n.ShortNames...) {
			if kind, ok := taken[name]; ok {
				shadows = append(shadows, crd.Name+": "+name+" is "+kind+"'s")
			}
		}
	}
	if len(shadows) > 0 {
		t.Errorf("sample names that shadow other kinds: %v", shadows)
	}
}
