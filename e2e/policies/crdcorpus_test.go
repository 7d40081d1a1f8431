package policies

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/scaleplane/scaleplane/api/v1alpha1"
	"github.com/scaleplane/scaleplane/controllers/autoscaler"
	"github.com/scaleplane/scaleplane/e2e/crdcorpus"
	"github.com/scaleplane/scaleplane/e2e/framework"
	"github.com/scaleplane/scaleplane/policies"
	"github.com/scaleplane/scaleplane/profile"
	"github.com/scaleplane/scaleplane/promql"
	"github.com/scaleplane/scaleplane/scaling"
)

// corpusLabel on an object sends it to the policies of one corpus entry
// only: two entries can profile the same kind (the Function as printed and
// with its config moved to the annotation; the ScaleHandles of ScyllaCluster
// and RayCluster).
const corpusLabel = "e2e.scaleplane.io/corpus"

// corpusKind is one profile of the real-CRD corpus (e2e/crdcorpus) as
// `scaleplane profile init` infers it, with the CRD's limits (M7), and a
// valid object of its kind.
type corpusKind struct {
	// key is the corpus entry: its kind, and "-edited" for an edited profile.
	key  string
	view *profile.Compiled
	// body is the object of the table (its replicas field at 2), without
	// name and namespace.
	body *unstructured.Unstructured
	// clustered is a cluster-scoped kind.
	clustered bool
}

// corpusKinds compiles every corpus entry profile init accepts. A kind
// without /scale is profiled through the ScaleHandle profile init prints
// for it: the handle's writes are the ones admission sees.
func corpusKinds(t *testing.T) []corpusKind {
	t.Helper()
	var out []corpusKind
	for _, c := range crdcorpus.Corpus {
		if c.Init.Outcome != crdcorpus.Works {
			continue
		}
		crd := readCRD(t, filepath.Join(framework.RepoRoot(), "testdata", "crds", c.File))
		key := c.Kind
		if c.Edit != nil {
			key += "-edited"
		}
		k := corpusKind{key: key, clustered: c.Clustered}
		var spec v1alpha1.ScaleProfileSpec
		if c.Handle {
			hin, err := profile.InferHandle(crd, "")
			if err != nil {
				t.Fatalf("%s: %v", c.Kind, err)
			}
			spec = profile.ScaleHandleProfile()
			crd = readCRD(t, filepath.Join(framework.RepoRoot(), "config", "crd", "bases", "scaleplane.io_scalehandles.yaml"))
			hs := hin.Spec
			hs.TargetRef.Name = "demo"
			two := int32(2)
			hs.Replicas = &two
			k.body = newObject(t, v1alpha1.GroupVersion.String(), v1alpha1.ScaleHandleKind, hs)
		} else {
			in, err := profile.Infer(crd, "")
			if err != nil {
				t.Fatalf("%s: %v", c.Kind, err)
			}
			spec = in.Spec
			if c.Edit != nil {
				spec = editSpec(t, spec, c.Edit)
			}
			js, err := yaml.YAMLToJSON([]byte(c.Body))
			if err != nil {
				t.Fatalf("%s body: %v", c.Kind, err)
			}
			var body map[string]interface{}
			if err := json.Unmarshal(js, &body); err != nil {
				t.Fatal(err)
			}
			k.body = newObject(t, c.Group+"/"+c.Version, c.Kind, body)
		}
		compiled, err := profile.Compile(spec)
		if err != nil {
			t.Fatalf("%s: %v", key, err)
		}
		if k.view, err = compiled.WithCRD(crd); err != nil {
			t.Fatalf("%s: %v", key, err)
		}
		out = append(out, k)
	}
	return out
}

func readCRD(t *testing.T, file string) *apiextensionsv1.CustomResourceDefinition {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := yaml.Unmarshal(data, crd); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	return crd
}

// editSpec is the corpus' hand edit of profile init's output, made on the
// spec as printed in YAML.
func editSpec(t *testing.T, spec v1alpha1.ScaleProfileSpec, e *crdcorpus.Edit) v1alpha1.ScaleProfileSpec {
	t.Helper()
	data, err := yaml.Marshal(spec)
	if err != nil {
		t.Fatal(err)
	}
	edited := bytes.Replace(data, []byte(e.Old), []byte(e.New), 1)
	if bytes.Equal(edited, data) {
		t.Fatalf("the profile has no %q to edit:\n%s", e.Old, data)
	}
	var out v1alpha1.ScaleProfileSpec
	if err := yaml.UnmarshalStrict(edited, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// newObject is an object of apiVersion and kind with spec, through JSON
// so that numbers are int64 as the API server's are.
func newObject(t *testing.T, apiVersion, kind string, spec interface{}) *unstructured.Unstructured {
	t.Helper()
	js, err := json.Marshal(map[string]interface{}{"apiVersion": apiVersion, "kind": kind, "spec": spec})
	if err != nil {
		t.Fatal(err)
	}
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON(js); err != nil {
		t.Fatal(err)
	}
	return u
}

// corpusWrite is one write of a corpus kind: edit changes the table's
// object; with stored, the table's object is created first, and the
// stored object with edit applied is sent as an UPDATE.
type corpusWrite struct {
	name   string
	stored bool
	edit   func(w *writer)
}

// writer edits an object at its kind's paths.
type writer struct {
	t    *testing.T
	view *profile.Compiled
	u    *unstructured.Unstructured
}

func (w *writer) replicas(v interface{}) {
	segs := strings.Split(strings.TrimPrefix(w.view.Spec().ReplicasPath, "."), ".")
	if v == nil {
		unstructured.RemoveNestedField(w.u.Object, segs...)
		return
	}
	if err := unstructured.SetNestedField(w.u.Object, v, segs...); err != nil {
		w.t.Fatal(err)
	}
}

// config sets C at the kind's spec path or as its annotation's JSON.
func (w *writer) config(c obj) {
	if a := w.view.ConfigAnnotation(); a != "" {
		js, err := json.Marshal(c)
		if err != nil {
			w.t.Fatal(err)
		}
		ann := w.u.GetAnnotations()
		if ann == nil {
			ann = map[string]string{}
		}
		ann[a] = string(js)
		w.u.SetAnnotations(ann)
		return
	}
	js, err := json.Marshal(c)
	if err != nil {
		w.t.Fatal(err)
	}
	var v map[string]interface{}
	if err := json.Unmarshal(js, &v); err != nil {
		w.t.Fatal(err)
	}
	// Through JSON for int64 numbers.
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON([]byte(`{"apiVersion":"v1","kind":"X","c":` + string(js) + `}`)); err != nil {
		w.t.Fatal(err)
	}
	if err := unstructured.SetNestedField(w.u.Object, u.Object["c"], w.view.ConfigPathSegments()...); err != nil {
		w.t.Fatal(err)
	}
}

// corpusTrigger is a valid trigger; corpusIdle idle settings that wake on it.
var (
	corpusTrigger = list{obj{"name": "load", "type": "AverageValue", "threshold": 10, "query": "vector(50)"}}
	corpusIdle    = obj{"timeoutSeconds": 60}
)

// corpusWrites are the writes every corpus kind gets: the corpus' own
// steps (the table's object, no replicas, zero, a range, triggers, sleep)
// and the contract's defaulting and validation rules on the kind's own
// paths and schema.
var corpusWrites = []corpusWrite{
	{name: "the table's object", edit: func(*writer) {}},
	{name: "no replicas", edit: func(w *writer) { w.replicas(nil) }},
	{name: "zero", edit: func(w *writer) { w.replicas(int64(0)) }},
	{name: "M1 a pin at zero", edit: func(w *writer) { w.replicas(int64(0)); w.config(obj{"minReplicas": 0, "maxReplicas": 0}) }},
	{name: "a range", edit: func(w *writer) { w.replicas(int64(3)); w.config(obj{"minReplicas": 2, "maxReplicas": 4}) }},
	{name: "M4 a range without replicas", edit: func(w *writer) { w.replicas(nil); w.config(obj{"minReplicas": 2, "maxReplicas": 4}) }},
	{name: "M2 a minimum alone", edit: func(w *writer) { w.replicas(int64(3)); w.config(obj{"minReplicas": 2}) }},
	{name: "M2 a maximum alone", edit: func(w *writer) { w.config(obj{"maxReplicas": 5}) }},
	{name: "V1 negative replicas", edit: func(w *writer) { w.replicas(int64(-1)) }},
	{name: "V1 replicas over the profile's bound", edit: func(w *writer) { w.replicas(int64(1001)) }},
	{name: "V2 minimum over maximum", edit: func(w *writer) { w.config(obj{"minReplicas": 5, "maxReplicas": 3}) }},
	{name: "V2 a range from zero with nothing to wake it", edit: func(w *writer) { w.replicas(nil); w.config(obj{"minReplicas": 0, "maxReplicas": 3}) }},
	{name: "V4 a behavior past the HPA's limits", edit: func(w *writer) {
		w.config(obj{"minReplicas": 1, "maxReplicas": 4, "behavior": obj{"scaleUp": obj{"stabilizationWindowSeconds": 4000}}})
	}},
	{name: "triggers", edit: func(w *writer) {
		w.config(obj{"minReplicas": 1, "maxReplicas": 5, "triggers": corpusTrigger})
	}},
	{name: "sleep", edit: func(w *writer) {
		w.config(obj{"minReplicas": 0, "maxReplicas": 5, "idle": corpusIdle, "triggers": corpusTrigger})
	}},
	{name: "M3 a pin follows replicas", stored: true, edit: func(w *writer) { w.replicas(int64(3)) }},
	{name: "an update of another field", stored: true, edit: func(w *writer) {
		w.u.SetLabels(map[string]string{corpusLabel: w.u.GetLabels()[corpusLabel], "team": "a"})
	}},
}

// annotationDifferences are the writes of corpusWrites the policies alone
// decide otherwise than the webhook when the kind keeps its config in the
// annotation, and why (docs/contract.md lists them). With admission:
// policies each goes to the webhook as well (a config in an annotation
// matches the webhook entries' condition), which then decides it.
var annotationDifferences = map[string]string{
	"M2 a minimum alone":                           "M2 rewrites the annotation's JSON, which the policies do not write",
	"M2 a maximum alone":                           "M2 rewrites the annotation's JSON, which the policies do not write",
	"V2 minimum over maximum":                      "V2 reads the annotation's JSON, which the policies do not parse",
	"V2 a range from zero with nothing to wake it": "V2 reads the annotation's JSON, which the policies do not parse",
	"V4 a behavior past the HPA's limits":          "V4 reads the annotation's JSON, which the policies do not parse",
}

// corpusDifferences is why the policies alone decide write otherwise than
// the webhook for k, or "" when they decide as it does.
func corpusDifferences(k corpusKind, write string) string {
	if k.view.ConfigAnnotation() == "" {
		return ""
	}
	if r := annotationDifferences[write]; r != "" {
		return r
	}
	lim := k.view.Layout().Schema.Replicas
	switch {
	case write == "M4 a range without replicas" && lim.Default == nil:
		// With a schema default, R is never absent and M4 never runs.
		return "M4 reads the minimum from the annotation's JSON, which the policies do not parse"
	case write == "sleep" && !scaling.CanReachZero(k.view.Layout()):
		return "a range the replicas field's schema cannot hold is refused (M7's range rule) from the annotation's JSON, which the policies do not parse"
	}
	return ""
}

// needsScaleplane is the warning of webhookProbe's policy.
const needsScaleplane = "needs scaleplane: the webhook entries' condition holds"

// webhookProbe is a validating policy, bound with the action Warn to the
// objects of entry i, that warns exactly when policies.WebhookCondition
// holds: when, with admission: policies, the API server calls the webhook
// for the write as well.
func webhookProbe(view *profile.Compiled, set policies.Set, i int) []client.Object {
	name := fmt.Sprintf("corpus-%d-webhook-probe", i)
	p := set.Validating.DeepCopy()
	p.ObjectMeta = metav1.ObjectMeta{Name: name}
	p.Spec.MatchConditions = []admissionregistrationv1.MatchCondition{policies.WebhookCondition(view)}
	p.Spec.Variables = nil
	p.Spec.Validations = []admissionregistrationv1.Validation{{Expression: "false", Message: needsScaleplane}}
	b := set.ValidatingBinding.DeepCopy()
	b.ObjectMeta = metav1.ObjectMeta{Name: name}
	b.Spec.PolicyName = name
	b.Spec.ValidationActions = []admissionregistrationv1.ValidationAction{admissionregistrationv1.Warn}
	return []client.Object{p, b}
}

// warningSink keeps the warnings of the API server's answers since reset.
type warningSink struct {
	mu   sync.Mutex
	seen []string
}

func (w *warningSink) HandleWarningHeader(_ int, _ string, text string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.seen = append(w.seen, text)
}

func (w *warningSink) reset() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.seen = nil
}

func (w *warningSink) has(s string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.ContainsFunc(w.seen, func(x string) bool { return strings.Contains(x, s) })
}

// warningClient is a client of the cluster whose answers' warnings go to
// the returned sink.
func warningClient(t *testing.T) (client.Client, *warningSink) {
	t.Helper()
	sink := &warningSink{}
	cfg := rest.CopyConfig(cluster.Config)
	cfg.WarningHandler = sink
	c, err := client.New(cfg, client.Options{Scheme: cluster.Client.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	return c, sink
}

// createWith and updateWith are create and update through c.
func createWith(ctx context.Context, c client.Client, u *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	u = u.DeepCopy()
	err := c.Create(ctx, u)
	return u, err
}

func updateWith(ctx context.Context, c client.Client, u *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	cur := &unstructured.Unstructured{}
	cur.SetGroupVersionKind(u.GroupVersionKind())
	if err := c.Get(ctx, client.ObjectKeyFromObject(u), cur); err != nil {
		return nil, err
	}
	u = u.DeepCopy()
	u.SetResourceVersion(cur.GetResourceVersion())
	err := c.Update(ctx, u)
	return u, err
}

// TestCorpusDecidesAsTheWebhook sends every write of corpusWrites for every
// profile of the real-CRD corpus (e2e/crdcorpus: upstream CRDs served
// unchanged, profiles as profile init prints them) to the API server with
// only that profile's policies, and compares what it admits, stores and
// refuses with the webhook's decision of the same object.
func TestCorpusDecidesAsTheWebhook(t *testing.T) {
	ctx := context.Background()
	kinds := corpusKinds(t)
	ns := cluster.Namespace(t)
	for i, k := range kinds {
		set := policies.ForOwner(k.view, fmt.Sprintf("corpus-%d", i))
		only := &admissionregistrationv1.MatchResources{ObjectSelector: &metav1.LabelSelector{MatchLabels: map[string]string{corpusLabel: fmt.Sprint(i)}}}
		set.MutatingBinding.Spec.MatchResources = only.DeepCopy()
		set.ValidatingBinding.Spec.MatchResources = only.DeepCopy()
		for _, o := range append(set.Objects(), webhookProbe(k.view, set, i)...) {
			if err := cluster.Client.Create(ctx, o); err != nil {
				t.Fatalf("%s: create %T %s: %v", k.key, o, o.GetName(), err)
			}
			t.Cleanup(func() { _ = cluster.Client.Delete(context.Background(), o) })
		}
	}
	// Each entry's policies enforced: replicas over the profile's bound
	// refused by the validating policy (V1), and, for a config at a spec
	// path, replicas pinned by the mutating one (M1).
	for i, k := range kinds {
		n := 0
		framework.Eventually(t, 0, func(ctx context.Context) (bool, string) {
			n++
			probe := corpusObject(k, i, ns, fmt.Sprintf("probe-%d-%d", i, n))
			w := &writer{t: t, view: k.view, u: probe}
			w.replicas(int64(k.view.Layout().MaxReplicas + 1))
			err := cluster.Client.Create(ctx, probe, client.DryRunAll)
			if err == nil || !fromPolicy(err) {
				return false, fmt.Sprintf("%s: the validating policy is not enforced yet: %v", k.key, err)
			}
			if k.view.ConfigAnnotation() != "" {
				return true, ""
			}
			probe = corpusObject(k, i, ns, fmt.Sprintf("probe-%d-%d", i, n))
			if err := cluster.Client.Create(ctx, probe, client.DryRunAll); err != nil {
				return false, fmt.Sprintf("%s: the table's object: %v", k.key, err)
			}
			_, ok, _ := unstructured.NestedMap(probe.Object, k.view.ConfigPathSegments()...)
			return ok, k.key + ": the mutating policy is not enforced yet"
		})
	}
	c, warnings := warningClient(t)
	compared, differences, webhook := 0, 0, 0
	for i, k := range kinds {
		for j, wr := range corpusWrites {
			key := k.key + "/" + wr.name
			t.Run(key, func(t *testing.T) {
				name := fmt.Sprintf("corpus-%d-%d", i, j)
				if k.clustered {
					name += "-" + ns
				}
				sent := corpusObject(k, i, ns, name)
				var old *unstructured.Unstructured
				if wr.stored {
					var err error
					if old, err = create(ctx, sent); err != nil {
						t.Fatalf("create the table's object: %v", err)
					}
					t.Cleanup(func() { _ = cluster.Client.Delete(context.Background(), old) })
					sent = old.DeepCopy()
				}
				wr.edit(&writer{t: t, view: k.view, u: sent})
				var got *unstructured.Unstructured
				var err error
				warnings.reset()
				if wr.stored {
					got, err = updateWith(ctx, c, sent)
				} else {
					got, err = createWith(ctx, c, sent)
					if err == nil {
						t.Cleanup(func() { _ = cluster.Client.Delete(context.Background(), got) })
					}
				}
				compared++
				diff := webhookArm(ctx, t, k.view, old, decoded(ctx, sent)).diff(got, err)
				// With webhook.admission: policies the webhook entries'
				// condition (policies.WebhookCondition) sends this write to
				// the webhook too: the webhook then decides it.
				called := warnings.has(needsScaleplane)
				if called {
					webhook++
				}
				reason := corpusDifferences(k, wr.name)
				switch {
				case reason == "" && diff != "":
					t.Errorf("the policies decide otherwise than the webhook:\n%s", diff)
				case reason != "" && diff == "":
					t.Errorf("listed as a difference (%s), but the policies decide as the webhook", reason)
				case reason != "" && !called && err != nil && !fromPolicy(err):
					// The schema refused the write before validating
					// admission, where the probe runs; the mutating
					// webhook entry, with the same condition, runs before
					// the schema.
					differences++
					t.Logf("known difference: %s (the schema refuses the write before the probe can tell whether the webhook is called):\n%s", reason, diff)
				case reason != "" && !called:
					t.Errorf("listed as a difference (%s), but with admission: policies the webhook is not called for it", reason)
				case reason != "":
					differences++
					t.Logf("known difference: %s:\n%s", reason, diff)
				}
			})
		}
	}
	t.Logf("corpus writes compared: %d (%d profiles); known differences: %d; sent to the webhook too with admission: policies: %d", compared, len(kinds), differences, webhook)
}

// corpusObject is the table's object of k, named and labelled for entry
// i's policies.
func corpusObject(k corpusKind, i int, ns, name string) *unstructured.Unstructured {
	u := k.body.DeepCopy()
	u.SetName(name)
	if !k.clustered {
		u.SetNamespace(ns)
	}
	u.SetLabels(map[string]string{corpusLabel: fmt.Sprint(i)})
	return u
}

// decoded is u as the API server decodes it before admission (unknown
// fields pruned, the schema's defaults filled), which is what the webhook
// sees: u created as a dry run, unlabelled so that no policy matches it.
// A u the schema refuses is returned as it is.
func decoded(ctx context.Context, u *unstructured.Unstructured) *unstructured.Unstructured {
	probe := u.DeepCopy()
	probe.SetLabels(nil)
	probe.SetResourceVersion("")
	probe.SetName(u.GetName() + "-decoded")
	if err := cluster.Client.Create(ctx, probe, client.DryRunAll); err != nil {
		return u
	}
	out := u.DeepCopy()
	out.Object["spec"] = probe.Object["spec"]
	out.SetAnnotations(probe.GetAnnotations())
	return out
}

// webhookAnswer is what the API server answers a write with scaleplane's
// webhooks instead of the policies: the mutating webhook's object
// (scaling.Default, with the CRD's limits, M7), then the CRD's schema,
// then the validating webhook (scaling.Validate with the trigger sources
// the binary registers), in the API server's order.
type webhookAnswer struct {
	stored *unstructured.Unstructured
	causes field.ErrorList
	// schema is the schema's refusal of the mutated object.
	schema error
}

func webhookArm(ctx context.Context, t *testing.T, view *profile.Compiled, old, u *unstructured.Unstructured) webhookAnswer {
	t.Helper()
	l := view.Layout()
	w, errs := view.Read(u)
	if len(errs) > 0 {
		return webhookAnswer{causes: errs}
	}
	var ow *scaling.Workload
	if old != nil {
		o, _ := view.Read(old)
		ow = &o
	}
	d := scaling.Default(ow, w, l)
	out := u.DeepCopy()
	if err := view.WriteSpec(out, d); err != nil {
		t.Fatalf("write the webhook's defaults: %v", err)
	}
	if err := schemaCheck(ctx, out); err != nil {
		return webhookAnswer{schema: err}
	}
	if verrs, _ := scaling.Validate(d, l, webhookSources(t)); len(verrs) > 0 {
		return webhookAnswer{causes: verrs}
	}
	return webhookAnswer{stored: out}
}

// diff is empty when the policies' answer (got, err) is a: a refusal by
// the schema at the same paths, or decisionDiff's sameness.
func (a webhookAnswer) diff(got *unstructured.Unstructured, err error) string {
	if a.schema == nil {
		return decisionDiff(a.stored, a.causes, got, err)
	}
	switch {
	case err == nil:
		return fmt.Sprintf("with the webhooks the schema refuses (%v), the policies admit %v", a.schema, got.Object["spec"])
	case fromPolicy(err):
		return fmt.Sprintf("with the webhooks the schema refuses (%v), the policies refuse: %v", a.schema, err)
	}
	want, have := statusFields(a.schema), statusFields(err)
	slices.Sort(want)
	slices.Sort(have)
	if diff := cmp.Diff(want, have); diff != "" {
		return fmt.Sprintf("the schema refuses at other paths (-webhooks +policies):\n%s", diff)
	}
	return ""
}

// schemaCheck is the API server's answer to u with no admission at all:
// u created as a dry run under another name, unlabelled so that no
// policy matches it.
func schemaCheck(ctx context.Context, u *unstructured.Unstructured) error {
	probe := u.DeepCopy()
	probe.SetLabels(nil)
	probe.SetResourceVersion("")
	probe.SetName(u.GetName() + "-schema")
	return cluster.Client.Create(ctx, probe, client.DryRunAll)
}

var sourcesOnce = sync.OnceValues(func() (*scaling.Sources, error) {
	limits := promql.Limits{}
	return autoscaler.NewSources(promql.NewEvaluator(promql.NewStore(promql.Options{}), promql.EvaluatorOptions{Limits: limits}), nil, limits)
})

// webhookSources are the trigger sources the binary's webhook checks
// triggers with: cron and the embedded PromQL evaluator.
func webhookSources(t *testing.T) *scaling.Sources {
	s, err := sourcesOnce()
	if err != nil {
		t.Fatal(err)
	}
	return s
}
