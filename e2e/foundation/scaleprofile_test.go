package foundation

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/scaleplane/scaleplane/api/v1alpha1"
	"github.com/scaleplane/scaleplane/e2e/framework"
	"github.com/scaleplane/scaleplane/profile"
	"github.com/scaleplane/scaleplane/profile/profiletest"
)

// TestScaleProfileCRD: the ScaleProfile CRD that controller-gen
// makes of api/v1alpha1 installs on a real API server, takes every sample
// profile, the foreign test kind's and docs/profiles.md's example as they
// are, refuses what its schema can tell is wrong with the field named, and
// `kubectl get sprof` shows TARGET, ACTIVE, REASON and AGE (and the target's
// API version with -o wide).
func TestScaleProfileCRD(t *testing.T) {
	ctx := context.Background()
	crd := filepath.Join(framework.RepoRoot(), "config", "crd", "bases", "scaleplane.io_scaleprofiles.yaml")
	if out, err := cluster.Kubectl(ctx, "apply", "--server-side", "-f", crd); err != nil {
		t.Fatalf("install the ScaleProfile CRD: %v\n%s", err, out)
	}
	if out, err := cluster.Kubectl(ctx, "wait", "--for=condition=Established", "--timeout=60s", "crd/scaleprofiles.scaleplane.io"); err != nil {
		t.Fatalf("wait for the CRD: %v\n%s", err, out)
	}

	// ScaleProfiles are cluster-scoped: they outlive the test's namespace.
	var names []string
	t.Cleanup(func() {
		if len(names) == 0 {
			return
		}
		args := append([]string{"delete", "scaleprofiles.scaleplane.io", "--ignore-not-found"}, names...)
		if out, err := cluster.Kubectl(context.Background(), args...); err != nil {
			t.Errorf("delete ScaleProfiles: %v\n%s", err, out)
		}
	})

	var docs strings.Builder
	for _, spec := range append(profile.Samples(), profiletest.ZonedDatabase()) {
		name := "e2e-" + strings.ToLower(spec.Target.Kind)
		obj := v1alpha1.ScaleProfile{
			TypeMeta:   metav1.TypeMeta{APIVersion: v1alpha1.GroupVersion.String(), Kind: "ScaleProfile"},
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec:       spec,
		}
		data, err := yaml.Marshal(obj)
		if err != nil {
			t.Fatal(err)
		}
		docs.WriteString("---\n")
		docs.Write(data)
		names = append(names, name)
	}
	example := docsScaleProfile(t)
	docs.WriteString("---\n" + example)
	names = append(names, "rackedclusters.samples.scaleplane.io")
	if out, err := cluster.KubectlWithInput(ctx, docs.String(), "apply", "--server-side", "-f", "-"); err != nil {
		t.Fatalf("the API server refused a valid profile: %v\n%s", err, out)
	}

	const valid = `apiVersion: scaleplane.io/v1alpha1
kind: ScaleProfile
metadata: {name: e2e-refused}
spec:
  target: {apiVersion: samples.scaleplane.io/v1alpha1, kind: RackedCluster, resource: rackedclusters}
  scaleConfig: {path: .spec.scaleConfig}
`
	refused := []struct {
		name, old, new, want string
	}{
		{"both scale config locations", "{path: .spec.scaleConfig}", "{path: .spec.scaleConfig, annotation: scaleplane.io/scale-config}", "spec.scaleConfig: Invalid value: set exactly one of path"},
		{"no scale config location", "{path: .spec.scaleConfig}", "{}", "set exactly one of path"},
		{"a path without its dot", "  scaleConfig:", "  replicasPath: spec.replicas\n  scaleConfig:", `spec.replicasPath: Invalid value: "spec.replicas"`},
		{"status in the spec", "  scaleConfig:", "  status: {selectorPath: .spec.selector}\n  scaleConfig:", `spec.status.selectorPath: Invalid value: ".spec.selector"`},
		{"an unknown status style", "  scaleConfig:", "  memberGroups: {path: .spec.racks, status: {path: .status.racks, style: Dict}}\n  scaleConfig:", `spec.memberGroups.status.style: Unsupported value: "Dict"`},
		{"maxReplicas below 1", "  scaleConfig:", "  maxReplicas: 0\n  scaleConfig:", "spec.maxReplicas: Invalid value: 0: spec.maxReplicas in body should be greater than or equal to 1"},
		{"no kind", "kind: RackedCluster, ", "", "spec.target.kind: Required value"},
	}
	for _, tt := range refused {
		t.Run(tt.name, func(t *testing.T) {
			bad := strings.Replace(valid, tt.old, tt.new, 1)
			if bad == valid {
				t.Fatalf("test case does not change the object: %q not found", tt.old)
			}
			_, err := cluster.KubectlWithInput(ctx, bad, "apply", "--server-side", "--dry-run=server", "-f", "-")
			if err == nil {
				t.Fatalf("the API server accepted:\n%s", bad)
			}
			// kubectl's standard error is in err.
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("kubectl said %q, want it to contain %q", err, tt.want)
			}
		})
	}

	// The columns read the Active condition, which a later step's
	// reconciler writes; here the test writes it.
	status := `{"status":{"conditions":[{"type":"Active","status":"False","reason":"CRDNotServed","message":"no such kind","lastTransitionTime":"2026-01-01T00:00:00Z"}]}}`
	if out, err := cluster.Kubectl(ctx, "patch", "sprof", "e2e-rackedcluster", "--subresource=status", "--type=merge", "-p", status); err != nil {
		t.Fatalf("write status: %v\n%s", err, out)
	}
	out, err := cluster.Kubectl(ctx, "get", "sprof", "e2e-rackedcluster", "e2e-function")
	if err != nil {
		t.Fatalf("kubectl get sprof: %v\n%s", err, out)
	}
	columns := []struct{ re, what string }{
		{`(?m)^NAME\s+TARGET\s+ACTIVE\s+REASON\s+AGE$`, "the header"},
		{`(?m)^e2e-rackedcluster\s+RackedCluster\s+False\s+CRDNotServed\s+\S+$`, "a profile with status"},
		{`(?m)^e2e-function\s+Function\s+\S+$`, "a profile without status"},
	}
	for _, c := range columns {
		if !regexp.MustCompile(c.re).MatchString(out) {
			t.Errorf("kubectl get sprof shows no line matching %s (%s):\n%s", c.re, c.what, out)
		}
	}
	out, err = cluster.Kubectl(ctx, "get", "scaleprofiles", "e2e-rackedcluster", "-o", "wide")
	if err != nil {
		t.Fatalf("kubectl get -o wide: %v\n%s", err, out)
	}
	if re := `(?m)^e2e-rackedcluster\s+RackedCluster\s+samples\.scaleplane\.io/v1alpha1\s+False\s+CRDNotServed\s+\S+$`; !regexp.MustCompile(re).MatchString(out) {
		t.Errorf("kubectl get -o wide shows no line matching %s:\n%s", re, out)
	}
}

// docsScaleProfile is the ScaleProfile example of docs/profiles.md.
func docsScaleProfile(t *testing.T) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(framework.RepoRoot(), "docs", "profiles.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, block := range strings.Split(string(data), "```yaml\n")[1:] {
		block, _, _ = strings.Cut(block, "```")
		if strings.Contains(block, "\nkind: ScaleProfile\n") {
			return block
		}
	}
	t.Fatal("docs/profiles.md has no ScaleProfile example")
	return ""
}
