package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
	"sigs.k8s.io/yaml"

	"github.com/scaleplane/scaleplane/cmd/scaleplane/app"
	"github.com/scaleplane/scaleplane/cmd/scaleplane/convert"
	"github.com/scaleplane/scaleplane/profile"
	"github.com/scaleplane/scaleplane/webhooks"
)

// TestConvertGolden converts ScaledObjects modelled on KEDA's
// documentation examples and compares the output, the list of what was not
// converted and the exit code with testdata/convert/*.golden
// (UPDATE_GOLDEN=1 rewrites them).
func TestConvertGolden(t *testing.T) {
	dir := filepath.Join("testdata", "convert")
	in := func(name string) string { return filepath.Join(dir, name+".yaml") }
	const sampleConfig = "../../config/samples/deploy/scaleplane-config.yaml"
	for _, tc := range []struct {
		name     string
		args     []string
		wantCode int
	}{
		{"prometheus", []string{"-f", in("prometheus")}, convertComplete},
		{"prometheus-activation", []string{"-f", in("prometheus-activation")}, convertIncomplete},
		{"prometheus-embedded", []string{"--source", "promql", "-f", in("prometheus")}, convertComplete},
		{"prometheus-other-server", []string{"--config", filepath.Join(dir, "remote-config.yaml"), "-f", in("prometheus")}, convertIncomplete},
		{"prometheus-no-server", []string{"--config", sampleConfig, "-f", in("prometheus")}, convertIncomplete},
		{"cron", []string{"-f", in("cron")}, convertIncomplete},
		{"cpu", []string{"-f", in("cpu")}, convertComplete},
		{"cpu-no-profile", []string{"--config", sampleConfig, "-f", in("cpu")}, convertIncomplete},
		{"memory", []string{"-f", in("memory")}, convertComplete},
		{"external", []string{"-f", in("external")}, convertIncomplete},
		{"external-profile", []string{"--config", sampleConfig, "-f", in("external")}, convertIncomplete},
		{"paused", []string{"-f", in("paused")}, convertComplete},
		{"idle", []string{"-f", in("idle")}, convertIncomplete},
		{"behavior", []string{"-f", in("behavior")}, convertComplete},
		{"fallback", []string{"-f", in("fallback")}, convertComplete},
		{"modifiers", []string{"-f", in("modifiers")}, convertComplete},
		{"multiple", []string{"-f", in("multiple")}, convertIncomplete},
		{"rackedcluster-profile", []string{"--config", sampleConfig, "--source", "promql", "-f", in("rackedcluster")}, convertComplete},
		{"list", []string{"-f", in("list")}, convertComplete},
		{"refused", []string{"-f", in("refused")}, convertIncomplete},
		{"several-files", []string{"-f", in("prometheus"), "-f", in("cpu")}, convertComplete},
		{"bad-kind", []string{"-f", in("bad-kind")}, convertBadInput},
		{"bad-field", []string{"-f", in("bad-field")}, convertBadInput},
		{"no-input", nil, convertBadInput},
		{"missing-file", []string{"-f", in("does-not-exist")}, convertBadInput},
		{"bad-source", []string{"--source", "influx", "-f", in("prometheus")}, convertBadInput},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := convertCmd(context.Background(), tc.args, &stdout, &stderr)
			if code != tc.wantCode {
				t.Errorf("exit code %d, want %d\nstderr:\n%s", code, tc.wantCode, stderr.String())
			}
			got := fmt.Sprintf("exit code: %d\n--- stdout\n%s--- stderr\n%s", code, stdout.String(), stderr.String())
			checkGolden(t, filepath.Join(dir, tc.name+".golden"), got, "convert "+tc.name)
		})
	}
}

// TestConvertedObjectsAdmittedByTheWebhook sends every object convert
// prints for a profiled kind to that kind's validating webhook handler,
// with the sources of the configuration's autoscaler: each is admitted as
// printed.
func TestConvertedObjectsAdmittedByTheWebhook(t *testing.T) {
	const sampleConfig = "../../config/samples/deploy/scaleplane-config.yaml"
	cfg, _, err := app.LoadConfiguration(sampleConfig)
	if err != nil {
		t.Fatal(err)
	}
	views, err := profile.CompileAll(cfg.Profiles)
	if err != nil {
		t.Fatal(err)
	}
	sources, err := app.ValidationSources(cfg, false)
	if err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	args := []string{"--config", sampleConfig, "--source", "promql", "-f", filepath.Join("testdata", "convert", "rackedcluster.yaml"), "-f", filepath.Join("testdata", "convert", "external.yaml")}
	convertCmd(context.Background(), args, &stdout, &stderr)
	admitted := 0
	for _, doc := range strings.Split(stdout.String(), "\n---\n") {
		var u unstructured.Unstructured
		if err := yaml.Unmarshal([]byte(doc), &u.Object); err != nil {
			t.Fatalf("output is not YAML: %v\n%s", err, doc)
		}
		if u.Object == nil {
			continue // comments only
		}
		var view *profile.Compiled
		for _, v := range views {
			if v.GVK() == u.GroupVersionKind() {
				view = v
			}
		}
		if view == nil {
			continue
		}
		raw, err := json.Marshal(u.Object)
		if err != nil {
			t.Fatal(err)
		}
		gvk, gvr := view.GVK(), view.GVR()
		resp := webhooks.NewValidator(view, sources).Handle(context.Background(), admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{
			UID:       "convert",
			Kind:      metav1.GroupVersionKind{Group: gvk.Group, Version: gvk.Version, Kind: gvk.Kind},
			Resource:  metav1.GroupVersionResource{Group: gvr.Group, Version: gvr.Version, Resource: gvr.Resource},
			Name:      u.GetName(),
			Namespace: u.GetNamespace(),
			Operation: admissionv1.Create,
			Object:    runtime.RawExtension{Raw: raw},
		}})
		if !resp.Allowed {
			t.Errorf("%s %s refused: %v\n%s", u.GetKind(), u.GetName(), resp.Result, doc)
		}
		admitted++
	}
	if admitted != 2 {
		t.Errorf("%d objects of profiled kinds admitted, want 2:\n%s", admitted, stdout.String())
	}
}

// TestConvertReadsClusterScaledObjects lists ScaledObjects as the API
// server returns them (server fields, managedFields and status included),
// sorted by namespace and name, through the decoder of files.
func TestConvertReadsClusterScaledObjects(t *testing.T) {
	so := func(ns, name, target string) *unstructured.Unstructured {
		u := &unstructured.Unstructured{Object: map[string]interface{}{
			"apiVersion": "keda.sh/v1alpha1",
			"kind":       "ScaledObject",
			"metadata": map[string]interface{}{
				"name": name, "namespace": ns, "uid": "1234", "resourceVersion": "7", "generation": int64(2),
				"creationTimestamp": "2026-01-01T00:00:00Z",
				"managedFields":     []interface{}{map[string]interface{}{"manager": "kubectl", "operation": "Apply"}},
			},
			"spec": map[string]interface{}{
				"scaleTargetRef":  map[string]interface{}{"name": target},
				"minReplicaCount": int64(1),
				"triggers": []interface{}{map[string]interface{}{
					"type":     "cpu",
					"metadata": map[string]interface{}{"value": "50"},
				}},
			},
			"status": map[string]interface{}{"hpaName": "keda-hpa-" + name},
		}}
		return u
	}
	scheme := runtime.NewScheme()
	dc := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(scheme,
		map[schema.GroupVersionResource]string{scaledObjectGVR: "ScaledObjectList"},
		so("b", "web", "web"), so("a", "z", "api"), so("a", "c", "worker"))
	for _, tc := range []struct {
		ns   string
		want []string
	}{
		{"", []string{"a/c->worker", "a/z->api", "b/web->web"}},
		{"a", []string{"a/c->worker", "a/z->api"}},
	} {
		got, err := listScaledObjects(context.Background(), dc, tc.ns)
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, o := range got {
			res := convert.Convert(&o.so, convert.Options{})
			if len(res.NotConverted) > 0 || len(res.Config.Metrics) != 1 {
				t.Errorf("%s/%s: converted to %+v", o.so.Namespace, o.so.Name, res)
			}
			ids = append(ids, o.so.Namespace+"/"+o.so.Name+"->"+res.Name)
		}
		if diff := cmp.Diff(tc.want, ids); diff != "" {
			t.Errorf("namespace %q (-want +got):\n%s", tc.ns, diff)
		}
	}
}
