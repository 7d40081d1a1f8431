package policies

import (
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"

	"github.com/scaleplane/scaleplane/api/v1alpha1"
	"github.com/scaleplane/scaleplane/profile"
	"github.com/scaleplane/scaleplane/profile/profiletest"
	"github.com/scaleplane/scaleplane/scaling"
)

func compile(t testing.TB, spec v1alpha1.ScaleProfileSpec) *profile.Compiled {
	t.Helper()
	p, err := profile.Compile(spec)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// sample is the sample profile of kind.
func sample(t testing.TB, kind string) v1alpha1.ScaleProfileSpec {
	t.Helper()
	for _, s := range profile.Samples() {
		if s.Target.Kind == kind {
			return s
		}
	}
	t.Fatalf("no sample %s", kind)
	return v1alpha1.ScaleProfileSpec{}
}

// expressions are every CEL expression of s, in order.
func expressions(s Set) string {
	var all []string
	for _, m := range s.Mutating.Spec.Mutations {
		all = append(all, m.JSONPatch.Expression)
	}
	for _, c := range s.Validating.Spec.MatchConditions {
		all = append(all, c.Expression)
	}
	for _, v := range s.Validating.Spec.Variables {
		all = append(all, v.Expression)
	}
	return strings.Join(all, "\n")
}

// TestRulesCompiledPerProfile: each profile gets the rules its shape
// (M1–M5 in one mutation)
// allows: M4 only with the HPA on the workload itself, M5 and V8 only
// with member groups, and of a config in an annotation (JSON the policies
// do not read) only what lies outside it.
func TestRulesCompiledPerProfile(t *testing.T) {
	annotationOnly := profiletest.ZonedDatabase()
	annotationOnly.MemberGroups = nil
	annotationOnly.Pods.MemberGroupLabel = ""
	cases := []struct {
		spec      v1alpha1.ScaleProfileSpec
		name      string
		rules     []string
		mutations int
	}{
		{sample(t, "RackedCluster"), "scaleplane-rackedclusters.samples.scaleplane.io", []string{"M1", "M2", "M3", "M4", "M5", "V1", "V2", "V4", "V8"}, 1},
		{sample(t, "Function"), "scaleplane-samplefunctions.samples.scaleplane.io", []string{"M1", "M2", "M3", "V1", "V2", "V4"}, 1},
		{sample(t, "WorkerGroup"), "scaleplane-workergroups.samples.scaleplane.io", []string{"M1", "M2", "M3", "M4", "V1", "V2", "V4"}, 1},
		{profiletest.ZonedDatabase(), "scaleplane-zoneddatabases.data.example.org", []string{"M5", "V1", "V8"}, 1},
		// Nothing for CEL to default: the API server still requires one
		// mutation, which never runs.
		{annotationOnly, "scaleplane-zoneddatabases.data.example.org", []string{"V1"}, 1},
	}
	for _, tc := range cases {
		t.Run(tc.spec.Target.Kind, func(t *testing.T) {
			s := For(compile(t, tc.spec))
			if diff := cmp.Diff(tc.rules, s.Rules); diff != "" {
				t.Errorf("rules (-want +got):\n%s", diff)
			}
			if got := len(s.Mutating.Spec.Mutations); got != tc.mutations {
				t.Errorf("%d mutations, want %d", got, tc.mutations)
			}
			if !slices.ContainsFunc(s.Rules, func(r string) bool { return strings.HasPrefix(r, "M") }) {
				if got := s.Mutating.Spec.MatchConditions[0].Expression; got != "false" {
					t.Errorf("the policy that writes nothing runs when %s, want never", got)
				}
			}
			for _, obj := range s.Objects() {
				if obj.GetName() != tc.name {
					t.Errorf("%T named %q, want %q", obj, obj.GetName(), tc.name)
				}
			}
			if s.MutatingBinding.Spec.PolicyName != tc.name || s.ValidatingBinding.Spec.PolicyName != tc.name {
				t.Errorf("bindings name %q and %q, want %q", s.MutatingBinding.Spec.PolicyName, s.ValidatingBinding.Spec.PolicyName, tc.name)
			}
			if diff := cmp.Diff([]admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny}, s.ValidatingBinding.Spec.ValidationActions); diff != "" {
				t.Errorf("validation actions (-want +got):\n%s", diff)
			}
		})
	}
}

// TestPoliciesMatchOnlyTheKindsWrites: the policies see CREATE and UPDATE
// of the main resource at the profile's version, never its subresources
// (/scale and /status are the controller's), and fail closed as the
// webhooks do.
func TestPoliciesMatchOnlyTheKindsWrites(t *testing.T) {
	s := For(compile(t, profiletest.ZonedDatabase()))
	want := []admissionregistrationv1.NamedRuleWithOperations{{RuleWithOperations: admissionregistrationv1.RuleWithOperations{
		Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update},
		Rule:       admissionregistrationv1.Rule{APIGroups: []string{"data.example.org"}, APIVersions: []string{"v1beta1"}, Resources: []string{"zoneddatabases"}},
	}}}
	for _, got := range [][]admissionregistrationv1.NamedRuleWithOperations{s.Mutating.Spec.MatchConstraints.ResourceRules, s.Validating.Spec.MatchConstraints.ResourceRules} {
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("resource rules (-want +got):\n%s", diff)
		}
	}
	if *s.Mutating.Spec.FailurePolicy != admissionregistrationv1.Fail || *s.Validating.Spec.FailurePolicy != admissionregistrationv1.Fail {
		t.Error("want failurePolicy Fail on both policies")
	}
}

// TestExpressionsUseTheProfilesPaths: patches and refusal sentences name
// the profile's own fields, never the sample's, and a config in an
// annotation is read by its key as a map index.
func TestExpressionsUseTheProfilesPaths(t *testing.T) {
	cases := []struct {
		spec      v1alpha1.ScaleProfileSpec
		want, not []string
	}{
		{sample(t, "WorkerGroup"),
			[]string{"'/spec/scalePolicy'", "'/spec/scalePolicy/minReplicas'", "'/spec/replicas'", "'spec.scalePolicy.minReplicas: Invalid value: '", "'spec.replicas: Invalid value: '"},
			[]string{"scaleConfig", "racks"}},
		{profiletest.ZonedDatabase(),
			[]string{"'/spec/topology/zones/' + string(i) + '/size'", "'spec.topology.zones[' + string(i) + '].zoneName'", "'spec.topology.zones[' + string(i) + '].size'",
				"object.?spec.?topology.?replicasPerZone", "object.?metadata.?annotations[?'scaleplane.io/scale-config']", "must be less than or equal to 50"},
			[]string{"scaleConfig", "racks", "members", "scale__dash__config"}},
	}
	for _, tc := range cases {
		t.Run(tc.spec.Target.Kind, func(t *testing.T) {
			all := expressions(For(compile(t, tc.spec)))
			for _, w := range tc.want {
				if !strings.Contains(all, w) {
					t.Errorf("no expression holds %s:\n%s", w, all)
				}
			}
			for _, n := range tc.not {
				if strings.Contains(all, n) {
					t.Errorf("an expression holds %s:\n%s", n, all)
				}
			}
		})
	}
}

// TestM1CreatesTheConfigsParents: a config below an object that may be
// absent gets that object first, in the same patch; the replicas' parent,
// which M1's condition requires, is not created again.
func TestM1CreatesTheConfigsParents(t *testing.T) {
	spec := sample(t, "Function")
	spec.ScaleConfig.Path = ".spec.scaling.config"
	m1 := For(compile(t, spec)).Mutating.Spec.Mutations[0].JSONPatch.Expression
	for _, w := range []string{"(object.?spec.?scaling.hasValue() ? [] : [JSONPatch{op: 'add', path: '/spec/scaling', value: {}}]) + [JSONPatch{op: 'add', path: '/spec/scaling/config'"} {
		if !strings.Contains(m1, w) {
			t.Errorf("M1 lacks %s:\n%s", w, m1)
		}
	}
	if strings.Contains(m1, "path: '/spec', value: {}") {
		t.Errorf("M1 creates /spec, which replicas' presence implies:\n%s", m1)
	}
}

// TestCELFieldNames: field names are spelled as the API server's CEL
// escapes them, and string literals survive quotes and backslashes.
func TestCELFieldNames(t *testing.T) {
	for in, want := range map[string]string{
		"replicas":       "replicas",
		"scale-config":   "scale__dash__config",
		"a__b":           "a__underscores__b",
		"namespace":      "__namespace__",
		"in":             "__in__",
		"replicasPerPod": "replicasPerPod",
	} {
		if got := celField(in); got != want {
			t.Errorf("celField(%q) = %q, want %q", in, got, want)
		}
	}
	if got, want := celString(`it's a \ path`), `'it\'s a \\ path'`; got != want {
		t.Errorf("celString = %s, want %s", got, want)
	}
}

// TestM7GuardsTheWritesWithTheSchemasLimits: a value a mutation would
// write is tested against the integers the CRD's schema accepts there
// (exclusive bounds made inclusive), and a field typed otherwise accepts
// none; a field without limits adds no test.
func TestM7GuardsTheWritesWithTheSchemasLimits(t *testing.T) {
	one, ten := 1.0, 10.0
	cases := []struct {
		name string
		lim  scaling.Limits
		want string
	}{
		{"no limits", scaling.Limits{}, ""},
		{"minimum", scaling.Limits{Known: true, Type: "integer", Minimum: &one}, " && x >= 1"},
		{"exclusive bounds", scaling.Limits{Known: true, Minimum: &one, ExclusiveMinimum: true, Maximum: &ten, ExclusiveMaximum: true}, " && x >= 2 && x <= 9"},
		{"a string", scaling.Limits{Known: true, Type: "string"}, " && x >= 1 && x <= 0"},
	}
	for _, tc := range cases {
		if got := fits(tc.lim, "x"); got != tc.want {
			t.Errorf("%s: fits = %q, want %q", tc.name, got, tc.want)
		}
	}
}
