package main

import (
	"bytes"
	"context"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"

	"github.com/scaleplane/scaleplane/cmd/scaleplane/convert"
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
		{"memory", []string{"-f", in("memory")}, convertComplete},
		{"external", []string{"-f", in("external")}, convertIncomplete},
		{"external-profile", []string{"--config", sampleConfig, "-f", in("external")}, convertIncomplete},
		{"paused", []string{"-f", in("paused")}, convertComplete},
		{"idle", []string{"-f", in("idle")}, convertIncomplete},
		{"behavior", []string{"-f", in("behavior")}, convertComplete},
		{"fallback", []string{"-f", in("fallback")}, convertIncomplete},
		{"modifiers", []string{"-f", in("modifiers")}, convertIncomplete},
		{"multiple", []string{"-f", in("multiple")}, convertIncomplete},
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
