package liveprofiles_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"sort"
	"strings"
	"testing"

	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/scaleplane/scaleplane/api/v1alpha1"
	"github.com/scaleplane/scaleplane/e2e/framework"
)

// activationCycles is how many times each leak test activates the kind
// again.
const activationCycles = 100

// leakGroup is the group of the test's own copy of the Function CRD, so
// that its schema edits touch no other test's kind.
const leakGroup = "leak.example.org"

var leakGVK = schema.GroupVersionKind{Group: leakGroup, Version: "v1alpha2", Kind: "Function"}

// TestProfileReactivationReturnsGoroutines: a ScaleProfile re-applied
// with a changed spec 100 times activates its kind 100 times (controller,
// trigger autoscaler, webhooks); once it settles the process has the
// goroutines and heap it had after the first activation, within 5%: each
// activation's watches leave the shared informers with it.
func TestProfileReactivationReturnsGoroutines(t *testing.T) {
	installFunctionCRD(t, leakGroup)
	startApp(t, false)
	ctx := context.Background()
	p := functionProfile(leakGroup)
	if err := sprofs(t).Create(ctx, p); err != nil {
		t.Fatalf("create ScaleProfile: %v", err)
	}
	t.Cleanup(func() { _ = sprofs(t).Delete(context.Background(), p) })
	reapply := func(i int) {
		t.Helper()
		patch := fmt.Appendf(nil, `{"spec":{"maxReplicas":%d}}`, 100+i)
		if err := sprofs(t).Patch(ctx, p, client.RawPatch(types.MergePatchType, patch)); err != nil {
			t.Fatalf("re-apply the ScaleProfile: %v", err)
		}
		awaitActive(t, p.Name)
	}
	awaitActive(t, p.Name)
	reapply(0)
	before := settled()

	for i := 1; i <= activationCycles; i++ {
		reapply(i)
	}
	after := awaitBaseline(t, before)
	t.Logf("%d profile re-activations: goroutines %d before, %d after; heap %d KiB before, %d KiB after",
		activationCycles, before.goroutines, after.goroutines, before.heap>>10, after.heap>>10)
}

// TestCRDSchemaEditsReturnGoroutines: 100 edits of an active kind's CRD
// schema each activate the kind again with the new limits (seen in what
// the mutating webhook defaults); once it settles the process has the
// goroutines and heap it had before, within 5%.
func TestCRDSchemaEditsReturnGoroutines(t *testing.T) {
	crd := installFunctionCRD(t, leakGroup)
	startApp(t, false)
	ctx := context.Background()
	p := functionProfile(leakGroup)
	if err := sprofs(t).Create(ctx, p); err != nil {
		t.Fatalf("create ScaleProfile: %v", err)
	}
	t.Cleanup(func() { _ = sprofs(t).Delete(context.Background(), p) })
	awaitActive(t, p.Name)
	ns := cluster.Namespace(t)
	// edit sets the minimum of both scale config bounds: with 1, a
	// workload created at 0 replicas gets no pinned scale config (M7);
	// with 0, it gets {0, 0}. The dry-run create shows which schema the
	// webhooks run with.
	edit := func(minimum int) {
		t.Helper()
		path := "/spec/versions/0/schema/openAPIV3Schema/properties/spec/properties/scaleConfig/properties/"
		patch := fmt.Appendf(nil, `[{"op":"replace","path":%q,"value":%d},{"op":"replace","path":%q,"value":%d}]`,
			path+"minReplicas/minimum", minimum, path+"maxReplicas/minimum", minimum)
		if out, err := cluster.Kubectl(ctx, "patch", "crd", crd, "--type=json", "-p", string(patch)); err != nil {
			t.Fatalf("edit the CRD's schema: %v\n%s", err, out)
		}
		framework.Eventually(t, 0, func(ctx context.Context) (bool, string) {
			u := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{"replicas": int64(0), "runtime": "python312"}}}
			u.SetGroupVersionKind(leakGVK)
			u.SetNamespace(ns)
			u.SetName("dry-run")
			if err := cluster.Client.Create(ctx, u, client.DryRunAll); err != nil {
				return false, err.Error()
			}
			_, pinned, _ := unstructured.NestedMap(u.Object, "spec", "scaleConfig")
			return pinned == (minimum == 0), fmt.Sprintf("schema minimum %d: a workload at 0 has scaleConfig %v", minimum, u.Object["spec"])
		})
	}
	edit(0)
	edit(1)
	before := settled()
	for i := 1; i <= activationCycles; i++ {
		edit(i % 2)
	}
	after := awaitBaseline(t, before)
	t.Logf("%d CRD schema edits: goroutines %d before, %d after; heap %d KiB before, %d KiB after",
		activationCycles, before.goroutines, after.goroutines, before.heap>>10, after.heap>>10)
}

// sprofs is a client that knows ScaleProfiles.
func sprofs(t *testing.T) client.Client {
	t.Helper()
	scheme := k8sruntime.NewScheme()
	if err := v1alpha1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	c, err := client.New(cluster.Config, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// installFunctionCRD installs a copy of the Function CRD in group and
// returns its name.
func installFunctionCRD(t *testing.T, group string) string {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(testdata(), "function.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "crd.yaml")
	if err := os.WriteFile(file, []byte(strings.ReplaceAll(string(raw), "serverless.example.org", group)), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if out, err := cluster.Kubectl(ctx, "apply", "--server-side", "-f", file); err != nil {
		t.Fatalf("install the CRD: %v\n%s", err, out)
	}
	name := "functions." + group
	t.Cleanup(func() { _, _ = cluster.Kubectl(context.Background(), "delete", "crd", name, "--wait=true") })
	if out, err := cluster.Kubectl(ctx, "wait", "--for=condition=Established", "crd/"+name, "--timeout=60s"); err != nil {
		t.Fatalf("wait for the CRD: %v\n%s", err, out)
	}
	return name
}

// functionProfile is the ScaleProfile profile init prints for the
// Function CRD (testdata/profileinit/function.golden), in group.
func functionProfile(group string) *v1alpha1.ScaleProfile {
	return &v1alpha1.ScaleProfile{
		ObjectMeta: metav1.ObjectMeta{Name: "functions." + group},
		Spec: v1alpha1.ScaleProfileSpec{
			Target:       v1alpha1.TargetKind{APIVersion: group + "/v1alpha2", Kind: "Function", Resource: "functions"},
			ReplicasPath: ".spec.replicas",
			ScaleConfig:  v1alpha1.ScaleConfigLocation{Path: ".spec.scaleConfig"},
			Status:       v1alpha1.StatusPaths{ReplicasPath: ".status.replicas"},
		},
	}
}

// awaitActive waits until the leader has judged the profile's current
// generation Active: by then the generation's kind runs.
func awaitActive(t *testing.T, name string) {
	t.Helper()
	framework.Eventually(t, 0, func(ctx context.Context) (bool, string) {
		p := &v1alpha1.ScaleProfile{}
		if err := sprofs(t).Get(ctx, client.ObjectKey{Name: name}, p); err != nil {
			return false, err.Error()
		}
		c := apimeta.FindStatusCondition(p.Status.Conditions, v1alpha1.ConditionActive)
		if c == nil || p.Status.ObservedGeneration != p.Generation {
			return false, fmt.Sprintf("%s: generation %d not judged yet (observed %d)", name, p.Generation, p.Status.ObservedGeneration)
		}
		return c.Status == metav1.ConditionTrue, fmt.Sprintf("%s: Active=%s %s: %s", name, c.Status, c.Reason, c.Message)
	})
}

// footprint is the process's goroutines and live heap after a GC.
type footprint struct {
	goroutines int
	heap       uint64
}

func settled() footprint {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return footprint{goroutines: runtime.NumGoroutine(), heap: m.HeapAlloc}
}

// awaitBaseline waits until goroutines and heap are back within 5% of
// before, and returns what they are then.
func awaitBaseline(t *testing.T, before footprint) footprint {
	t.Helper()
	var now footprint
	framework.Eventually(t, 0, func(context.Context) (bool, string) {
		now = settled()
		okG := float64(now.goroutines) <= float64(before.goroutines)*1.05
		okH := float64(now.heap) <= float64(before.heap)*1.05
		if okG && okH {
			return true, ""
		}
		return false, fmt.Sprintf("goroutines %d (baseline %d), heap %d KiB (baseline %d KiB); goroutines by stack:\n%s",
			now.goroutines, before.goroutines, now.heap>>10, before.heap>>10, goroutineSummary())
	})
	return now
}

// goroutineSummary counts goroutines by their top frames, most first.
func goroutineSummary() string {
	var b strings.Builder
	_ = pprof.Lookup("goroutine").WriteTo(&b, 1)
	blocks := strings.Split(b.String(), "\n\n")
	sort.SliceStable(blocks, func(i, j int) bool { return len(blocks[i]) > len(blocks[j]) })
	if len(blocks) > 8 {
		blocks = blocks[:8]
	}
	return strings.Join(blocks, "\n\n")
}
