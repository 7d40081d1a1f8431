package schema_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/scaleplane/scaleplane/controllers"
	"github.com/scaleplane/scaleplane/controllers/autoscaler"
	"github.com/scaleplane/scaleplane/controlplane"
	"github.com/scaleplane/scaleplane/e2e/framework"
	"github.com/scaleplane/scaleplane/profile"
	"github.com/scaleplane/scaleplane/profile/profiletest"
	"github.com/scaleplane/scaleplane/promql"
	"github.com/scaleplane/scaleplane/webhooks"
)

var gvk = schema.GroupVersionKind{Group: "apps.example.org", Version: "v1", Kind: "ScaledApp"}

// startScaleplane runs scaleplane's webhooks and controllers for ScaledApp,
// with the limits of the CRD the API server serves, until the test ends.
func startScaleplane(t *testing.T) {
	t.Helper()
	v, err := profile.Compile(profiletest.ScaledApp())
	if err != nil {
		t.Fatal(err)
	}
	if os.Getenv("SCALEPLANE_E2E_NO_SCHEMA") == "" {
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := cluster.Client.Get(context.Background(), client.ObjectKey{Name: "scaledapps.apps.example.org"}, crd); err != nil {
			t.Fatal(err)
		}
		if v, err = v.WithCRD(crd); err != nil {
			t.Fatal(err)
		}
	}
	m, err := cluster.NewManager(framework.ManagerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	limits := promql.Limits{}
	sources, err := autoscaler.NewSources(promql.NewEvaluator(promql.NewStore(promql.Options{}), promql.EvaluatorOptions{Limits: limits}), nil, limits)
	if err != nil {
		t.Fatal(err)
	}
	views := []*profile.Compiled{v}
	if err := webhooks.Setup(m, views, webhooks.Options{Sources: sources}); err != nil {
		t.Fatal(err)
	}
	if err := controllers.Setup(m, views, controllers.Options{SkipNameValidation: true, KEDADiscoveryInterval: -1}); err != nil {
		t.Fatal(err)
	}
	if err := m.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := m.Stop(); err != nil {
			t.Errorf("stop the manager: %v", err)
		}
	})
}

// kubectl runs the real kubectl and returns stdout and stderr (where it
// prints admission warnings).
func kubectl(t *testing.T, stdin string, args ...string) (string, string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, framework.Binary(controlplane.KubectlBinary), append([]string{"--kubeconfig=" + cluster.Kubeconfig}, args...)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.Stdin = strings.NewReader(stdin)
	err := cmd.Run()
	if err != nil {
		err = fmt.Errorf("kubectl %s: %w: %s", strings.Join(args, " "), err, stderr.String())
	}
	return stdout.String(), stderr.String(), err
}

func get(t *testing.T, ns, name string) *unstructured.Unstructured {
	t.Helper()
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(gvk)
	if err := cluster.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, u); err != nil {
		t.Fatal(err)
	}
	return u
}

func spec(u *unstructured.Unstructured) map[string]interface{} {
	s, _, _ := unstructured.NestedMap(u.Object, "spec")
	return s
}

const app = `apiVersion: apps.example.org/v1
kind: ScaledApp
metadata:
  name: %s
  namespace: %s
spec:
  image: example.org/app:1
  replicas: %d
  shards:
  - name: a
  - name: b
`

// TestReplicasZeroOnCreate (M7): creating an
// object with replicas: 0 on a kind whose scale config bounds have a
// minimum of 1 is accepted, with a warning that says why no pin was
// written. Before schema awareness the pin {0, 0} made the API server
// refuse the object with errors on fields the user never wrote.
func TestReplicasZeroOnCreate(t *testing.T) {
	startScaleplane(t)
	ns := cluster.Namespace(t)
	_, stderr, err := kubectl(t, fmt.Sprintf(app, "idle", ns, 0), "apply", "--server-side", "-f", "-")
	if err != nil {
		t.Fatalf("create with replicas 0: %v", err)
	}
	wantWarning := "spec.scalePolicy not pinned to 0 (M1): spec.scalePolicy.minReplicas: the CRD's schema requires a value of at least 1 (minimum)"
	if !strings.Contains(stderr, wantWarning) {
		t.Errorf("kubectl stderr = %q, want the warning %q", stderr, wantWarning)
	}
	want := map[string]interface{}{
		"image":    "example.org/app:1",
		"replicas": int64(0),
		"shards": []interface{}{
			map[string]interface{}{"name": "a", "members": int64(0)},
			map[string]interface{}{"name": "b", "members": int64(0)},
		},
	}
	if diff := cmp.Diff(want, spec(get(t, ns, "idle"))); diff != "" {
		t.Errorf("stored spec (-want +got):\n%s", diff)
	}
}

// TestScaleToZeroOnPinned (S2, C6): kubectl
// scale --replicas=0 on a pinned object is refused at admission, naming
// the schema's limit, and replicas, the pin and the shards stay together.
// A count the schema accepts goes through and the controller carries it
// to the pin and the shards. Before, the scale was accepted and the
// controller retried a refused write in a loop.
func TestScaleToZeroOnPinned(t *testing.T) {
	startScaleplane(t)
	ns := cluster.Namespace(t)
	if _, _, err := kubectl(t, fmt.Sprintf(app, "web", ns, 3), "apply", "--server-side", "-f", "-"); err != nil {
		t.Fatal(err)
	}
	pinned := func(n int64) map[string]interface{} {
		return map[string]interface{}{
			"image":       "example.org/app:1",
			"replicas":    n,
			"scalePolicy": map[string]interface{}{"minReplicas": n, "maxReplicas": n},
			"shards": []interface{}{
				map[string]interface{}{"name": "a", "members": n},
				map[string]interface{}{"name": "b", "members": n},
			},
		}
	}
	if diff := cmp.Diff(pinned(3), spec(get(t, ns, "web"))); diff != "" {
		t.Fatalf("created spec (-want +got):\n%s", diff)
	}

	_, _, err := kubectl(t, "", "scale", "scaledapps.apps.example.org/web", "-n", ns, "--replicas=0")
	wantRefusal := "spec.replicas: Invalid value: 0: scaling to 0 needs spec.scalePolicy.minReplicas := 0, but the CRD's schema requires a value of at least 1 (minimum)"
	if err == nil || !strings.Contains(err.Error(), wantRefusal) {
		t.Fatalf("kubectl scale --replicas=0: %v\nwant a refusal containing %q", err, wantRefusal)
	}
	if diff := cmp.Diff(pinned(3), spec(get(t, ns, "web"))); diff != "" {
		t.Errorf("spec after the refused scale (-want +got):\n%s", diff)
	}
	_, _, err = kubectl(t, "", "scale", "scaledapps.apps.example.org/web", "-n", ns, "--replicas=11")
	if wantRefusal := "spec.replicas: Invalid value: 11: spec.shards[*].members cannot be 11: the CRD's schema requires a value of at most 10 (maximum)"; err == nil || !strings.Contains(err.Error(), wantRefusal) {
		t.Fatalf("kubectl scale --replicas=11: %v\nwant a refusal containing %q", err, wantRefusal)
	}

	if _, _, err := kubectl(t, "", "scale", "scaledapps.apps.example.org/web", "-n", ns, "--replicas=2"); err != nil {
		t.Fatalf("kubectl scale --replicas=2: %v", err)
	}
	framework.Eventually(t, 0, func(ctx context.Context) (bool, string) {
		got := spec(get(t, ns, "web"))
		return cmp.Equal(pinned(2), got), fmt.Sprintf("spec = %v, want the pin and shards at 2", got)
	})
}
