//go:build !nodev

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/scaleplane/scaleplane/config"
	"github.com/scaleplane/scaleplane/controlplane"
)

// bigCRD is a CRD with a /scale subresource whose manifest is over 256
// KiB: many documented fields, as generated CRDs embedding pod templates
// have.
func bigCRD() *apiextensionsv1.CustomResourceDefinition {
	props := map[string]apiextensionsv1.JSONSchemaProps{
		"replicas": {Type: "integer", Format: "int32"},
	}
	for i := range 600 {
		props[fmt.Sprintf("option%03d", i)] = apiextensionsv1.JSONSchemaProps{
			Type:        "string",
			Description: strings.Repeat(fmt.Sprintf("Option %d tunes one knob of the big workload. ", i), 10),
		}
	}
	return &apiextensionsv1.CustomResourceDefinition{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apiextensions.k8s.io/v1", Kind: "CustomResourceDefinition"},
		ObjectMeta: metav1.ObjectMeta{Name: "bigworkloads.big.example.org"},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: "big.example.org",
			Names: apiextensionsv1.CustomResourceDefinitionNames{Kind: "BigWorkload", ListKind: "BigWorkloadList", Plural: "bigworkloads", Singular: "bigworkload"},
			Scope: apiextensionsv1.NamespaceScoped,
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{
				Name: "v1", Served: true, Storage: true,
				Subresources: &apiextensionsv1.CustomResourceSubresources{
					Status: &apiextensionsv1.CustomResourceSubresourceStatus{},
					Scale:  &apiextensionsv1.CustomResourceSubresourceScale{SpecReplicasPath: ".spec.replicas", StatusReplicasPath: ".status.replicas"},
				},
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
					Type: "object",
					Properties: map[string]apiextensionsv1.JSONSchemaProps{
						"spec":   {Type: "object", Properties: props},
						"status": {Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{"replicas": {Type: "integer", Format: "int32"}}},
					},
				}},
			}},
		},
	}
}

// TestDevInstallsCRDsOver256KiB: `scaleplane dev --crd FILE`
// installs a CRD over 256 KiB (which client-side kubectl apply refuses)
// with server-side apply, waits until it is established, and applying it
// again (a reused --data-dir) is fine.
func TestDevInstallsCRDsOver256KiB(t *testing.T) {
	if err := controlplane.CheckBinaries(controlplane.EtcdBinary, controlplane.APIServerBinary, controlplane.KubectlBinary); err != nil {
		t.Skipf("control-plane binaries not built: %v", err)
	}
	data, err := yaml.Marshal(bigCRD())
	if err != nil {
		t.Fatal(err)
	}
	if len(data) <= 256*1024 {
		t.Fatalf("the CRD is %d bytes, want over 256 KiB", len(data))
	}
	file := filepath.Join(t.TempDir(), "big.yaml")
	if err := os.WriteFile(file, append([]byte("# a big CRD\n---\n"), data...), 0o644); err != nil {
		t.Fatal(err)
	}
	crds, err := readDevCRDs([]string{file})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cp, err := controlplane.Start(ctx, controlplane.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := cp.Stop(); err != nil {
			t.Errorf("stop the control plane: %v", err)
		}
	}()
	for range 2 {
		if err := applyCRDs(ctx, cp.Client, crds, time.Minute); err != nil {
			t.Fatal(err)
		}
	}
	got := &apiextensionsv1.CustomResourceDefinition{}
	if err := cp.Client.Get(ctx, client.ObjectKey{Name: "bigworkloads.big.example.org"}, got); err != nil {
		t.Fatal(err)
	}
	raw, _ := json.Marshal(got.Spec)
	if len(raw) <= 256*1024 {
		t.Errorf("stored CRD spec is %d bytes, want the whole schema", len(raw))
	}
	// The kind is served: kubectl lists it.
	if out, err := cp.Kubectl(ctx, "get", "bigworkloads.big.example.org", "-A"); err != nil {
		t.Errorf("kubectl get bigworkloads: %v\n%s", err, out)
	}
}

func TestDevCRDFileErrors(t *testing.T) {
	cm := filepath.Join(t.TempDir(), "cm.yaml")
	if err := os.WriteFile(cm, []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for file, want := range map[string]string{
		cm: "holds no CustomResourceDefinition",
		filepath.Join(t.TempDir(), "missing.yaml"): "no such file",
	} {
		if _, err := readDevCRDs([]string{file}); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("readDevCRDs(%s) = %v, want %q", file, err, want)
		}
	}
}

// wellKnownShortNames are short names of widely installed third-party
// kinds a sample must not take: Knative Serving and Eventing, KEDA,
// cert-manager, Argo CD and Workflows, Istio, Prometheus Operator,
// Kueue, LeaderWorkerSet, Fission and OpenFaaS functions.
var wellKnownShortNames = []string{
	"ksvc", "kcfg", "rt", "rev", "kpa", "broker", "trigger", "fn", "func", "function",
	"so", "sj", "ta", "cta",
	"cert", "certs", "cr", "crs", "cm", "iss", "ciss",
	"app", "apps", "appproj", "wf", "wftmpl", "cwf",
	"vs", "gw", "dr", "se", "pa", "ap",
	"prom", "smon", "pmon", "am",
	"wl", "cq", "lq", "lws",
}

// TestSampleShortNamesShadowNothing: the sample kinds' short
// names (and plural and singular names) clash with no name the real
// control plane serves (kubectl api-resources: kubectl resolves rc to
// ReplicationController before any CRD) nor with well-known third-party
// kinds' short names.
func TestSampleShortNamesShadowNothing(t *testing.T) {
	if err := controlplane.CheckBinaries(controlplane.EtcdBinary, controlplane.APIServerBinary, controlplane.KubectlBinary); err != nil {
		t.Skipf("control-plane binaries not built: %v", err)
	}
	samples, err := config.SampleCRDs()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	// Without the samples: what the control plane itself serves.
	cp, err := controlplane.Start(ctx, controlplane.Options{CRDs: []*apiextensionsv1.CustomResourceDefinition{bigCRD()}})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := cp.Stop(); err != nil {
			t.Errorf("stop the control plane: %v", err)
		}
	}()
	out, err := cp.Kubectl(ctx, "api-resources", "--no-headers")
	if err != nil {
		t.Fatalf("kubectl api-resources: %v\n%s", err, out)
	}
	taken := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		f := strings.Fields(line)
		if len(f) < 4 {
			continue
		}
		taken[f[0]] = f[len(f)-1]
		// NAME SHORTNAMES APIVERSION NAMESPACED KIND: five fields when
		// short names are present.
		if len(f) == 5 {
			for _, s := range strings.Split(f[1], ",") {
				taken[s] = f[4]
			}
		}
	}
	if taken["rc"] != "ReplicationController" || taken["po"] != "Pod" {
		t.Fatalf("kubectl api-resources parsed wrong: rc=%q po=%q", taken["rc"], taken["po"])
	}
	for _, crd := range samples {
		n := crd.Spec.Names
		for _, name := range append([]string{n.Plural, n.Singular}, n.ShortNames...) {
			if other, ok := taken[name]; ok {
				t.Errorf("%s's name %q shadows %s", n.Kind, name, other)
			}
		}
		for _, name := range n.ShortNames {
			if slices.Contains(wellKnownShortNames, name) {
				t.Errorf("%s's short name %q is a well-known third-party kind's", n.Kind, name)
			}
		}
	}
}
