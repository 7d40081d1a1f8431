package admission

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"gomodules.xyz/jsonpatch/v2"
	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
	"sigs.k8s.io/controller-runtime/pkg/webhook"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	configv1alpha2 "github.com/scaleplane/scaleplane/api/config/v1alpha2"
	"github.com/scaleplane/scaleplane/e2e/framework"
	"github.com/scaleplane/scaleplane/policies"
	"github.com/scaleplane/scaleplane/profile"
	"github.com/scaleplane/scaleplane/webhooks"
)

// What admission costs a user is the time a create takes, measured at the
// client through the real kube-apiserver. BenchmarkCreateLatency compares
// scaleplane's webhooks with controls served the same way: the same
// webhook server (TLS, controller-runtime's webhook.Admission), the same
// configuration shape (webhooks.Configurations: a mutating and a validating
// webhook with the same rules, failurePolicy, sideEffects, timeout,
// matchPolicy and reinvocation), only the handlers differ:
//
//   - "noop" allows every request without a patch;
//   - "patch" allows every request with the patch scaleplane's mutating
//     webhook gives the object being created, so the API server applies the
//     same patch; it separates the cost of the patch from that of the
//     handlers;
//   - "policies" calls no webhook: the RackedCluster profile's own
//     admission policies (package policies, webhook.admission: policies)
//     default and validate in the API server; "policies-mutating" and
//     "policies-validating" install one of the two, "policies-trivial" a
//     validating policy with one comparison and "policies-trivial-mutating"
//     a mutating one with one constant patch: the API server's own cost of
//     a policy and of a mutation, the floor the policies are held to;
//   - "none" has no admission at all, the floor "policies" is measured
//     against.
//
// Each side creates in a namespace only its webhooks select, and the sides
// take turns create by create, in a rotating order, so that load from
// other processes falls on all of them alike.
//
//	go -C e2e test -run '^$' -bench CreateLatency -benchtime 300x ./admission/

// noopSide is one set of control webhooks.
type noopSide struct {
	name string
	// patch: the mutating handler answers with benchPatch.
	patch bool
}

var noopSides = []noopSide{{name: "noop"}, {name: "patch", patch: true}}

// noopLabel on a namespace sends its objects to the control webhooks named
// by its value (and webhooksOffLabel keeps scaleplane's away).
const noopLabel = "e2e.scaleplane.io/noop-webhooks"

// benchPatch is what the "patch" side's mutating handler answers: the patch
// scaleplane gives the object the running benchmark creates.
var benchPatch atomic.Pointer[[]jsonpatch.JsonPatchOperation]

func noopPath(side, path string) string { return "/" + side + path }

// noopConfigurations are the control webhooks of one side: scaleplane's
// configurations for every view, for the namespaces labelled with the
// side's name, at the side's paths.
func noopConfigurations(side noopSide, service func(string) admissionregistrationv1.WebhookClientConfig) (*admissionregistrationv1.MutatingWebhookConfiguration, *admissionregistrationv1.ValidatingWebhookConfiguration) {
	wc := configv1alpha2.Webhook{
		MutatingConfigurationName:   "e2e-" + side.name + "-mutating-webhook-configuration",
		ValidatingConfigurationName: "e2e-" + side.name + "-validating-webhook-configuration",
		// The same kind of selector as scaleplane's (one expression).
		NamespaceSelector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{
			Key: noopLabel, Operator: metav1.LabelSelectorOpIn, Values: []string{side.name},
		}}},
	}
	m, v := webhooks.Configurations(views, webhooks.ConfigurationOptionsFromConfig(wc), func(path string) admissionregistrationv1.WebhookClientConfig {
		return service(noopPath(side.name, path))
	})
	// Told apart from scaleplane's in the API server's metrics and logs.
	for i := range m.Webhooks {
		m.Webhooks[i].Name = side.name + "." + m.Webhooks[i].Name
	}
	for i := range v.Webhooks {
		v.Webhooks[i].Name = side.name + "." + v.Webhooks[i].Name
	}
	return m, v
}

// registerNoop serves the control webhooks on m's webhook server.
func registerNoop(m *framework.Manager) {
	allow := admission.HandlerFunc(func(context.Context, admission.Request) admission.Response {
		return admission.Allowed("")
	})
	patch := admission.HandlerFunc(func(context.Context, admission.Request) admission.Response {
		return admission.Patched("", *benchPatch.Load()...)
	})
	srv := m.GetWebhookServer()
	for _, side := range noopSides {
		mutate := allow
		if side.patch {
			mutate = patch
		}
		for _, v := range views {
			gvr := v.GVR()
			srv.Register(noopPath(side.name, webhooks.DispatchPath(webhooks.DispatchMutatePrefix, gvr)), &webhook.Admission{Handler: mutate})
			srv.Register(noopPath(side.name, webhooks.DispatchPath(webhooks.DispatchValidatePrefix, gvr)), &webhook.Admission{Handler: allow})
			srv.Register(noopPath(side.name, webhooks.DispatchPath(webhooks.DispatchValidateScalePrefix, gvr)), &webhook.Admission{Handler: allow})
		}
	}
}

// BenchmarkCreateLatency reports, per side, the p50 and p90 of a
// RackedCluster create (ms), the webhook server's time per create (µs: both
// reviews, AdmissionReview decoding and encoding included), and the ratios
// to the "noop" side. "defaulting" creates an object the mutating webhook
// patches (M5 fans replicas out to three racks); "defaulted" one it leaves
// alone. One op is one create on every side.
func BenchmarkCreateLatency(b *testing.B) {
	startWebhooksWith(b, registerNoop)
	shapes := []struct {
		name    string
		members []interface{}
		// want is the racks' members after the create on scaleplane's side.
		want string
	}{
		{"defaulting", []interface{}{"a", 1, "b", 2, "c", 5}, "[3 3 3]"},
		{"defaulted", []interface{}{"a", 3, "b", 3, "c", 3}, "[3 3 3]"},
	}
	for _, shape := range shapes {
		body := manifest{kind: "RackedCluster", name: "bench", spec: obj{
			"replicas": 3, "scaleConfig": fullConfig(), "racks": racks(shape.members...),
		}}.json()
		b.Run(shape.name, func(b *testing.B) {
			patch := scaleplanePatch(b, body)
			benchPatch.Store(&patch)
			sides := []*side{{name: "scaleplane", want: shape.want}, {name: "noop", want: "[" + members(shape.members) + "]"}}
			if len(patch) > 0 {
				sides = append(sides, &side{name: "patch", want: shape.want})
			}
			sides = append(sides, &side{name: "policies", want: shape.want},
				&side{name: "policies-mutating", want: shape.want},
				&side{name: "policies-validating", want: "[" + members(shape.members) + "]"},
				&side{name: "policies-trivial", want: "[" + members(shape.members) + "]"},
				&side{name: "policies-trivial-mutating", want: "[" + members(shape.members) + "]"},
				&side{name: "none", want: "[" + members(shape.members) + "]"})
			for _, s := range sides {
				s.setUp(b)
			}
			create := func(s *side) {
				u := &unstructured.Unstructured{}
				// Through JSON, so numbers are what the API machinery expects.
				if err := u.UnmarshalJSON([]byte(body)); err != nil {
					b.Fatal(err)
				}
				s.n++
				u.SetNamespace(s.namespace)
				u.SetName(fmt.Sprintf("bench-%05d", s.n))
				start := time.Now()
				if err := cluster.Client.Create(context.Background(), u); err != nil {
					b.Fatalf("create in %s: %v", s.namespace, err)
				}
				s.latencies = append(s.latencies, time.Since(start))
			}
			// Warm connections, TLS sessions and caches on every side.
			for range 5 {
				for _, s := range sides {
					create(s)
				}
			}
			calls := apiserverCalls(b)
			for _, s := range sides {
				s.latencies = s.latencies[:0]
				s.served0, s.reviews0 = s.served(b)
				s.called0 = s.called(calls)
			}
			b.ResetTimer()
			for i := range b.N {
				for j := range sides {
					create(sides[(i+j)%len(sides)])
				}
			}
			b.StopTimer()
			calls = apiserverCalls(b)
			for _, s := range sides {
				s.check(b)
				s.report(b, sides[1], sides[len(sides)-1], calls)
			}
		})
	}
}

// side is one set of webhooks under measurement.
type side struct {
	name, namespace string
	// want is the racks' members the created objects must end with.
	want      string
	n         int
	latencies []time.Duration
	// served0 and reviews0 are the webhook server's totals before the
	// measured creates; called0 the API server's, by webhook type.
	served0  float64
	reviews0 uint64
	called0  map[string]callTotals
}

func (s *side) setUp(b *testing.B) {
	// The policies and none sides' label selects no control webhook; the
	// policies side's selects the benchmark's policies.
	labels := map[string]string{webhooksOffLabel: "true", noopLabel: s.name}
	if s.name == "scaleplane" {
		labels = nil
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "bench-" + s.name + "-", Labels: labels}}
	if err := cluster.Client.Create(context.Background(), ns); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = cluster.Client.Delete(context.Background(), ns) })
	s.namespace = ns.Name
	if strings.HasPrefix(s.name, "policies") {
		installBenchPolicies(b, s.name, s.namespace)
	}
}

// webhookless reports whether the side's creates call no webhook.
func (s *side) webhookless() bool { return strings.HasPrefix(s.name, "policies") || s.name == "none" }

// installBenchPolicies creates the RackedCluster profile's admission
// policies, bound to namespaces labelled noopLabel=<side> only, and waits
// until the API server enforces them on a dry-run create in ns. The
// "policies-mutating" and "policies-validating" sides get one policy of
// the two, to tell their costs apart; "policies-trivial" gets a validating
// policy with one comparison of the name, the API server's own cost of
// running a policy at all; "policies-trivial-mutating" a mutating policy
// with one mutation, no condition and one small patch (a label), its cost
// of applying a mutation at all.
func installBenchPolicies(b *testing.B, side, ns string) {
	var view *profile.Compiled
	for _, v := range views {
		if v.GVK() == gvks["RackedCluster"] {
			view = v
		}
	}
	set := policies.ForOwner(view, "e2e-bench-"+side)
	only := &admissionregistrationv1.MatchResources{NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{noopLabel: side}}}
	set.MutatingBinding.Spec.MatchResources = only.DeepCopy()
	set.ValidatingBinding.Spec.MatchResources = only.DeepCopy()
	objects := set.Objects()
	switch side {
	case "policies-mutating":
		objects = objects[:2]
	case "policies-validating":
		objects = objects[2:]
	case "policies-trivial-mutating":
		objects = objects[:2]
		m := objects[0].(*admissionregistrationv1.MutatingAdmissionPolicy)
		m.Spec.MatchConditions = nil
		m.Spec.Mutations = []admissionregistrationv1.Mutation{{PatchType: admissionregistrationv1.PatchTypeJSONPatch, JSONPatch: &admissionregistrationv1.JSONPatch{
			Expression: "[JSONPatch{op: 'add', path: '/metadata/labels', value: {'e2e.scaleplane.io/mutated': 'true'}}]"}}}
	case "policies-trivial":
		objects = objects[2:]
		vap := objects[0].(*admissionregistrationv1.ValidatingAdmissionPolicy)
		vap.Spec.MatchConditions, vap.Spec.Variables = nil, nil
		vap.Spec.Validations = []admissionregistrationv1.Validation{{Expression: "object.metadata.name != 'probe-bad'"}}
	}
	for _, obj := range objects {
		if err := cluster.Client.Create(context.Background(), obj); err != nil && !apierrors.IsAlreadyExists(err) {
			b.Fatalf("create %T %s: %v", obj, obj.GetName(), err)
		}
		b.Cleanup(func() { _ = cluster.Client.Delete(context.Background(), obj) })
	}
	framework.Eventually(b, 0, func(ctx context.Context) (bool, string) {
		u := &unstructured.Unstructured{}
		if err := u.UnmarshalJSON([]byte(manifest{kind: "RackedCluster", name: "probe", spec: obj{"replicas": 3, "racks": racks("a", 1)}}.json())); err != nil {
			b.Fatal(err)
		}
		u.SetNamespace(ns)
		if err := cluster.Client.Create(ctx, u, client.DryRunAll); err != nil {
			return false, err.Error()
		}
		got := fmt.Sprint(groupSizes(u, "spec.racks", "members"))
		if side == "policies-trivial-mutating" {
			return u.GetLabels()["e2e.scaleplane.io/mutated"] == "true", "the benchmark's mutating policy is not enforced yet"
		}
		if side == "policies-validating" || side == "policies-trivial" {
			bad := u.DeepCopy()
			_ = unstructured.SetNestedSlice(bad.Object, racks("a", int64(1), "a", int64(1)), "spec", "racks")
			bad.SetName("probe-bad")
			err := cluster.Client.Create(ctx, bad, client.DryRunAll)
			return err != nil && strings.Contains(err.Error(), "ValidatingAdmissionPolicy"), fmt.Sprintf("the benchmark's validating policy is not enforced yet: %v", err)
		}
		return got == "[3]", "the benchmark's policies are not enforced yet: racks " + got
	})
}

// paths are the webhook server paths of the side's two reviews of a
// RackedCluster create.
func (s *side) paths() []string {
	gvr := gvks["RackedCluster"]
	var view *profile.Compiled
	for _, v := range views {
		if v.GVK() == gvr {
			view = v
		}
	}
	return reviewPaths(s.name == "scaleplane", s.name, view.GVR())
}

// reviewPaths are the paths the webhook server's latency metric names for
// the mutating and validating reviews of gvr: scaleplane's dispatcher
// serves each role of every kind on one prefix, which names them; a
// control side serves each kind on the side's own paths.
func reviewPaths(scaleplane bool, side string, gvr schema.GroupVersionResource) []string {
	if scaleplane {
		return []string{webhooks.DispatchMutatePrefix, webhooks.DispatchValidatePrefix}
	}
	return []string{
		noopPath(side, webhooks.DispatchPath(webhooks.DispatchMutatePrefix, gvr)),
		noopPath(side, webhooks.DispatchPath(webhooks.DispatchValidatePrefix, gvr)),
	}
}

// served is the webhook server's time on the side's reviews, and how many.
func (s *side) served(b *testing.B) (seconds float64, reviews uint64) {
	return servedOn(b, s.paths())
}

// servedOn sums controller_runtime_webhook_latency_seconds over paths: the
// webhook server's time on their reviews, and how many.
func servedOn(b *testing.B, paths []string) (seconds float64, reviews uint64) {
	families, err := metrics.Registry.Gather()
	if err != nil {
		b.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != "controller_runtime_webhook_latency_seconds" {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "webhook" && slices.Contains(paths, l.GetValue()) {
					seconds += m.GetHistogram().GetSampleSum()
					reviews += m.GetHistogram().GetSampleCount()
				}
			}
		}
	}
	return seconds, reviews
}

// check fails the benchmark unless the side's webhooks did what it says:
// scaleplane's and the patch defaulted the racks, noop left them.
func (s *side) check(b *testing.B) {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(gvks["RackedCluster"])
	u.SetNamespace(s.namespace)
	u.SetName(fmt.Sprintf("bench-%05d", s.n))
	if err := cluster.Client.Get(context.Background(), clientKey(u), u); err != nil {
		b.Fatal(err)
	}
	if got := fmt.Sprint(groupSizes(u, "spec.racks", "members")); got != s.want {
		b.Fatalf("%s side: racks %s, want %s", s.name, got, s.want)
	}
	if s.webhookless() {
		return
	}
	if _, reviews := s.served(b); reviews <= s.reviews0 {
		b.Fatalf("%s side: its webhooks served no review", s.name)
	}
}

func (s *side) report(b *testing.B, noop, none *side, calls map[string]callTotals) {
	p50, p90 := percentiles(s.latencies)
	creates := float64(len(s.latencies))
	b.ReportMetric(ms(p50), s.name+"-p50-ms")
	b.ReportMetric(ms(p90), s.name+"-p90-ms")
	if seconds, reviews := s.served(b); reviews > s.reviews0 {
		b.ReportMetric((seconds-s.served0)*1e6/creates, s.name+"-served-µs/create")
	}
	// The API server's view of each call: from sending the review to
	// having applied the answer (a patch included), per create; and the
	// calls per create, which reinvocation would raise above one.
	for typ, now := range s.called(calls) {
		was := s.called0[typ]
		if n := now.count - was.count; n > 0 {
			b.ReportMetric((now.seconds-was.seconds)*1e6/creates, s.name+"-apiserver-"+typ+"-µs/create")
			b.ReportMetric(float64(n)/creates, s.name+"-"+typ+"-calls/create")
		}
	}
	if s != noop && !s.webhookless() {
		n50, n90 := percentiles(noop.latencies)
		b.ReportMetric(float64(p50)/float64(n50), s.name+"/noop-p50")
		b.ReportMetric(float64(p90)/float64(n90), s.name+"/noop-p90")
	}
	if s != none {
		n50, n90 := percentiles(none.latencies)
		b.ReportMetric(float64(p50)/float64(n50), s.name+"/none-p50")
		b.ReportMetric(float64(p90)/float64(n90), s.name+"/none-p90")
	}
}

// callTotals are the API server's apiserver_admission_webhook_admission_duration_seconds
// of one webhook and type.
type callTotals struct {
	seconds float64
	count   uint64
}

// apiserverMetrics reads and parses the API server's /metrics.
func apiserverMetrics(b *testing.B) map[string]*dto.MetricFamily {
	cs, err := kubernetes.NewForConfig(cluster.Config)
	if err != nil {
		b.Fatal(err)
	}
	raw, err := cs.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(context.Background())
	if err != nil {
		b.Fatalf("read the API server's metrics: %v", err)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(bytes.NewReader(raw))
	if err != nil {
		b.Fatalf("parse the API server's metrics: %v", err)
	}
	return families
}

// apiserverCalls reads the API server's webhook call totals, by webhook
// name and type ("admit" or "validating").
func apiserverCalls(b *testing.B) map[string]callTotals {
	families := apiserverMetrics(b)
	out := map[string]callTotals{}
	for _, m := range families["apiserver_admission_webhook_admission_duration_seconds"].GetMetric() {
		var name, typ string
		for _, l := range m.GetLabel() {
			switch l.GetName() {
			case "name":
				name = l.GetValue()
			case "type":
				typ = l.GetValue()
			}
		}
		t := out[name+" "+typ]
		t.seconds += m.GetHistogram().GetSampleSum()
		t.count += m.GetHistogram().GetSampleCount()
		out[name+" "+typ] = t
	}
	return out
}

// called picks the side's RackedCluster webhooks from calls, by type.
func (s *side) called(calls map[string]callTotals) map[string]callTotals {
	name := "rackedclusters." + profile.SampleVersion + "." + profile.SampleGroup
	if s.name != "scaleplane" {
		name = s.name + "." + name
	}
	return map[string]callTotals{"mutate": calls[name+" admit"], "validate": calls[name+" validating"]}
}

func percentiles(d []time.Duration) (p50, p90 time.Duration) {
	if len(d) == 0 {
		return 0, 0
	}
	s := slices.Clone(d)
	slices.Sort(s)
	return s[(len(s)-1)/2], s[(len(s)-1)*9/10]
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func members(pairs []interface{}) string {
	var out []interface{}
	for i := 1; i < len(pairs); i += 2 {
		out = append(out, pairs[i])
	}
	return fmt.Sprint(out...)
}

// scaleplanePatch is the patch scaleplane's mutating webhook gives body.
func scaleplanePatch(b *testing.B, body string) []jsonpatch.JsonPatchOperation {
	var view *profile.Compiled
	for _, v := range views {
		if v.GVK() == gvks["RackedCluster"] {
			view = v
		}
	}
	gvk, gvr := view.GVK(), view.GVR()
	resp := webhooks.NewMutator(view).Handle(context.Background(), admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{
		UID:       "bench",
		Kind:      metav1.GroupVersionKind{Group: gvk.Group, Version: gvk.Version, Kind: gvk.Kind},
		Resource:  metav1.GroupVersionResource{Group: gvr.Group, Version: gvr.Version, Resource: gvr.Resource},
		Operation: admissionv1.Create,
		Object:    runtime.RawExtension{Raw: []byte(body)},
	}})
	if !resp.Allowed {
		b.Fatalf("scaleplane refuses the benchmark's object: %v", resp.Result)
	}
	return resp.Patches
}
