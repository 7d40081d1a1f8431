package webhooks

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"syscall"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/webhook"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
)

// benchObjects are three-rack RackedClusters with a full scale config: one
// with metrics and one with PromQL triggers (V6 forbids both in one valid
// object), plus one with both, which validation refuses.
func benchObjects() map[string]*objBuilder {
	both := fullConfig()
	both["triggers"] = fullTriggerConfig()["triggers"]
	racks := func(b *objBuilder) *objBuilder {
		return b.groups("rack-a", 3, "rack-b", 3, "rack-c", 3).applied()
	}
	return map[string]*objBuilder{
		"metrics":  racks(makeObj(rackedCluster, "db").replicas(3).config(fullConfig())),
		"triggers": racks(makeObj(rackedCluster, "db").replicas(3).config(fullTriggerConfig())),
		"invalid":  racks(makeObj(rackedCluster, "db").replicas(3).config(both)),
	}
}

// applied adds what an object written with kubectl apply carries when the
// API server sends it: the last-applied annotation and managedFields for
// two managers, and a status.
func (b *objBuilder) applied() *objBuilder {
	spec, _ := json.Marshal(b.o["spec"])
	b.annotate("kubectl.kubernetes.io/last-applied-configuration", `{"apiVersion":"samples.scaleplane.io/v1alpha1","kind":"RackedCluster","spec":`+string(spec)+`}`)
	fields := func(keys ...string) obj {
		m := obj{}
		for _, k := range keys {
			m["f:"+k] = obj{}
		}
		return m
	}
	b.set(".metadata.managedFields", list{
		obj{"manager": "kubectl-client-side-apply", "operation": "Update", "apiVersion": "samples.scaleplane.io/v1alpha1",
			"time": "2026-11-22T01:00:00Z", "fieldsType": "FieldsV1", "fieldsV1": obj{
				"f:metadata": obj{"f:annotations": fields("kubectl.kubernetes.io/last-applied-configuration"), "f:labels": fields("app")},
				"f:spec": obj{"f:replicas": obj{}, "f:scaleConfig": fields("minReplicas", "maxReplicas", "metrics", "behavior", "idle", "schedule"),
					"f:racks": obj{}},
			}},
		obj{"manager": "scaleplane", "operation": "Update", "apiVersion": "samples.scaleplane.io/v1alpha1", "subresource": "status",
			"time": "2026-11-22T01:00:05Z", "fieldsType": "FieldsV1", "fieldsV1": obj{
				"f:status": fields("replicas", "selector", "racks"),
			}},
	})
	b.set(".status", obj{"replicas": 3, "selector": "samples.scaleplane.io/cluster=db,samples.scaleplane.io/rack=rack-a",
		"racks": list{obj{"name": "rack-a", "readyMembers": 3}, obj{"name": "rack-b", "readyMembers": 3}, obj{"name": "rack-c", "readyMembers": 3}}})
	return b
}

func benchReview(b *testing.B, h admission.Handler, req admission.Request, wantAllowed bool, wantPatch bool) {
	b.Helper()
	if resp := h.Handle(context.Background(), req); resp.Allowed != wantAllowed || (len(resp.Patches) > 0) != wantPatch {
		b.Fatalf("allowed=%v patches=%d, want allowed=%v patch=%v", resp.Allowed, len(resp.Patches), wantAllowed, wantPatch)
	}
	b.ReportAllocs()
	// ns/op is wall time and grows with whatever else runs on the machine;
	// cpu-ns/op is the CPU the process spent per review (GC included),
	// which load does not inflate.
	start := cpuTime()
	n := 0
	for b.Loop() {
		h.Handle(context.Background(), req)
		n++
	}
	b.ReportMetric(float64(cpuTime()-start)/float64(n), "cpu-ns/op")
}

// cpuTime is the process' user and system CPU time.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkMutate measures one mutating review: "update" is the common case
// (an edit of an object that is already defaulted: no patch), "create" needs
// the fan-out to three racks and M2's bounds, so it encodes and diffs.
func BenchmarkMutate(b *testing.B) {
	view := testViews(b)[rackedCluster]
	h := NewMutator(view)
	for name, o := range benchObjects() {
		if name == "invalid" {
			continue
		}
		b.Run(name+"/update", func(b *testing.B) {
			benchReview(b, h, update(view, o, o), true, false)
		})
		b.Run(name+"/create", func(b *testing.B) {
			needs := benchObjects()[name].replicas(4)
			delete(needs.o["spec"].(obj)["scaleConfig"].(obj), "maxReplicas")
			benchReview(b, h, create(view, needs), true, true)
		})
	}
}

// BenchmarkValidate measures one validating review of an UPDATE from the
// "metrics" object, allowed for "metrics" and "triggers" and refused with a
// 422 for "invalid". The query source is stubQuerySource, so the PromQL
// checks (module controllers/autoscaler, cached per query) are left out.
func BenchmarkValidate(b *testing.B) {
	view := testViews(b)[rackedCluster]
	h := NewValidator(view, testSources())
	old := benchObjects()["metrics"]
	for name, o := range benchObjects() {
		b.Run(name, func(b *testing.B) {
			benchReview(b, h, update(view, old, o), name != "invalid", false)
		})
	}
}

// BenchmarkServeHTTP is one review as the webhook server handles it, body
// to body: controller-runtime decodes the AdmissionReview and encodes the
// answer around the handler. "noop" allows without a patch, which puts a
// number on the per-call cost every webhook pays, next to scaleplane's
// handlers on the same CREATE ("mutate" answers with M5's patch).
func BenchmarkServeHTTP(b *testing.B) {
	view := testViews(b)[rackedCluster]
	o := benchObjects()["metrics"]
	needs := benchObjects()["metrics"].replicas(4)
	noop := admission.HandlerFunc(func(context.Context, admission.Request) admission.Response { return admission.Allowed("") })
	for _, tc := range []struct {
		name string
		h    admission.Handler
		req  admission.Request
	}{
		{"noop", noop, create(view, needs)},
		{"mutate", NewMutator(view), create(view, needs)},
		{"validate", NewValidator(view, testSources()), create(view, o)},
	} {
		b.Run(tc.name, func(b *testing.B) {
			body, err := json.Marshal(admissionv1.AdmissionReview{
				TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"},
				Request:  &tc.req.AdmissionRequest,
			})
			if err != nil {
				b.Fatal(err)
			}
			wh := &webhook.Admission{Handler: tc.h}
			serve := func() *httptest.ResponseRecorder {
				rec := httptest.NewRecorder()
				req := httptest.NewRequest(http.MethodPost, "/review", bytes.NewReader(body))
				req.Header.Set("Content-Type", "application/json")
				wh.ServeHTTP(rec, req)
				return rec
			}
			if rec := serve(); rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), `"allowed":true`) {
				b.Fatalf("answer %d: %s", rec.Code, rec.Body)
			}
			b.ReportAllocs()
			start := cpuTime()
			n := 0
			for b.Loop() {
				serve()
				n++
			}
			b.ReportMetric(float64(cpuTime()-start)/float64(n), "cpu-ns/op")
		})
	}
}
