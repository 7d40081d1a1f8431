package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/scaleplane/scaleplane/certs/certmanagertest"
	"github.com/scaleplane/scaleplane/e2e/framework"

	"github.com/scaleplane/scaleplane/hack/release/manifests"
)

// PrometheusOperator is the release whose CRDs (ServiceMonitor,
// PrometheusRule) the chart's monitoring objects are checked against; its
// Go module carries them in example/prometheus-operator-crd.
const PrometheusOperator = "github.com/prometheus-operator/prometheus-operator@v0.94.1"

var (
	crdsOnce sync.Once
	crdsErr  error
)

// installCRDs installs cert-manager's and the Prometheus Operator's CRDs,
// the real ones from their Go modules, once per package.
func installCRDs(t *testing.T) {
	t.Helper()
	crdsOnce.Do(func() {
		if crdsErr = certmanagertest.InstallCRDs(cluster.Config); crdsErr != nil {
			return
		}
		out, err := exec.Command("go", "mod", "download", "-json", PrometheusOperator).Output()
		if err != nil {
			crdsErr = fmt.Errorf("go mod download %s: %w", PrometheusOperator, err)
			return
		}
		var mod struct{ Dir, Error string }
		if err := json.Unmarshal(out, &mod); err != nil || mod.Dir == "" {
			crdsErr = fmt.Errorf("go mod download %s: %v %s", PrometheusOperator, err, mod.Error)
			return
		}
		crdDir := filepath.Join(mod.Dir, "example", "prometheus-operator-crd")
		_, crdsErr = envtest.InstallCRDs(cluster.Config, envtest.CRDInstallOptions{
			Paths: []string{
				filepath.Join(crdDir, "monitoring.coreos.com_servicemonitors.yaml"),
				filepath.Join(crdDir, "monitoring.coreos.com_prometheusrules.yaml"),
			},
			ErrorIfPathMissing: true,
			MaxTime:            time.Minute,
		})
	})
	if crdsErr != nil {
		t.Fatalf("install CRDs: %v", crdsErr)
	}
}

func ensureNamespace(t *testing.T, name string) {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if err := cluster.Client.Create(context.Background(), ns); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatalf("create namespace %s: %v", name, err)
	}
}

// apply server-side applies objs (dry run when asked) and returns one
// error per refused object.
func apply(ctx context.Context, objs []*unstructured.Unstructured, dryRun bool) []error {
	var errs []error
	for _, o := range objs {
		o = o.DeepCopy()
		opts := []client.PatchOption{client.ForceOwnership, client.FieldOwner("scaleplane-release-e2e")}
		if dryRun {
			opts = append(opts, client.DryRunAll)
		}
		//nolint:staticcheck // client.Apply with unstructured objects is what kubectl apply --server-side does.
		if err := cluster.Client.Patch(ctx, o, client.Apply, opts...); err != nil {
			errs = append(errs, fmt.Errorf("%s %s/%s: %w", o.GetKind(), o.GetNamespace(), o.GetName(), err))
		}
	}
	return errs
}

// TestServerDryRun has the API server validate, with a
// server-side dry run, every object of config/default, the samples overlay,
// config/prometheus, and the chart with default values and with every
// option set: schemas of the built-in kinds, of cert-manager's and of the
// Prometheus Operator's CRDs, and field validation (unknown fields are
// errors).
func TestServerDryRun(t *testing.T) {
	installCRDs(t)
	ensureNamespace(t, manifests.Namespace)
	root := framework.RepoRoot()
	c, err := manifests.LoadChart(filepath.Join(root, manifests.ChartDir))
	if err != nil {
		t.Fatal(err)
	}
	sources := []struct {
		name   string
		render func() ([]*unstructured.Unstructured, error)
	}{
		{"config/default", func() ([]*unstructured.Unstructured, error) {
			return manifests.Kustomize(filepath.Join(root, "config", "default"))
		}},
		{"config/samples/deploy", func() ([]*unstructured.Unstructured, error) {
			return manifests.Kustomize(filepath.Join(root, "config", "samples", "deploy"))
		}},
		{"config/prometheus", func() ([]*unstructured.Unstructured, error) {
			return manifests.Kustomize(filepath.Join(root, "config", "prometheus"))
		}},
		{"chart defaults", func() ([]*unstructured.Unstructured, error) {
			return manifests.RenderChart(c, nil, manifests.Namespace)
		}},
		{"chart every option", func() ([]*unstructured.Unstructured, error) {
			return manifests.RenderChart(c, manifests.EveryOption(), manifests.Namespace)
		}},
		// A second release beside the first, in its own namespace (which
		// helm install --create-namespace would make).
		{"chart second release", func() ([]*unstructured.Unstructured, error) {
			ensureNamespace(t, "scaleplane-canary")
			return manifests.RenderChart(c, map[string]any{"fullnameOverride": "scaleplane-canary", "crds": map[string]any{"install": false}}, "scaleplane-canary")
		}},
	}
	for _, src := range sources {
		t.Run(src.name, func(t *testing.T) {
			objs, err := src.render()
			if err != nil {
				t.Fatal(err)
			}
			errs := apply(t.Context(), objs, true)
			for _, err := range errs {
				t.Errorf("server dry run refused: %v", err)
			}
			t.Logf("%d objects accepted by the API server (dry run): %v", len(objs)-len(errs), manifests.Kinds(objs))
		})
	}
}
