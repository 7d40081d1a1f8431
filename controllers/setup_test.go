package controllers

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/scaleplane/scaleplane/api/v1alpha1"
	"github.com/scaleplane/scaleplane/profile"
)

// offlineManager is a manager that never reaches an API server: its
// RESTMapper knows no kind (so KEDA is not served), and nothing starts.
func offlineManager(t *testing.T, copts config.Controller) manager.Manager {
	t.Helper()
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	m, err := ctrl.NewManager(&rest.Config{Host: "https://127.0.0.1:1"}, ctrl.Options{
		Scheme:                 s,
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		Controller:             copts,
		MapperProvider: func(*rest.Config, *http.Client) (meta.RESTMapper, error) {
			rm := meta.NewDefaultRESTMapper([]schema.GroupVersion{})
			rm.Add(autoscalingv2.SchemeGroupVersion.WithKind("HorizontalPodAutoscaler"), meta.RESTScopeNamespace)
			return rm, nil
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestSetupPerKind: kinds set up one call at a time on one
// manager, as one calls SetupWithManager per reconciler, register nothing
// twice; setting up one kind twice says so instead of an indexer conflict.
func TestSetupPerKind(t *testing.T) {
	skip := true
	m := offlineManager(t, config.Controller{SkipNameValidation: &skip})
	opts := Options{KEDADiscoveryInterval: -1}
	for _, kind := range []string{"RackedCluster", "Function", "WorkerGroup"} {
		if err := SetupKind(m, sampleView(t, kind), opts); err != nil {
			t.Fatalf("set up %s: %v", kind, err)
		}
	}
	err := SetupKind(m, sampleView(t, "Function"), opts)
	if err == nil || !strings.Contains(err.Error(), "already has one for the kind; set up each kind once") || strings.Contains(err.Error(), "indexer conflict") {
		t.Errorf("second set-up of Function: %v, want an error that says the kind is set up", err)
	}
}

// TestManagerControllerOptions: what Options leaves out is the
// manager's. A manager that skips name validation (tests, several managers
// in a process) is obeyed without repeating it in Options; one that does
// not is obeyed too, so the owner in the name is what keeps embedders apart.
func TestManagerControllerOptions(t *testing.T) {
	skip := true
	opts := Options{KEDADiscoveryInterval: -1, Owner: "owner-a"}
	for i := range 2 {
		m := offlineManager(t, config.Controller{SkipNameValidation: &skip})
		if err := SetupKind(m, sampleView(t, "RackedCluster"), opts); err != nil {
			t.Fatalf("manager %d skipping name validation: %v", i, err)
		}
	}
	strict := offlineManager(t, config.Controller{})
	if err := SetupKind(strict, sampleView(t, "WorkerGroup"), opts); err != nil {
		t.Fatalf("first strict manager: %v", err)
	}
	again := offlineManager(t, config.Controller{})
	err := SetupKind(again, sampleView(t, "WorkerGroup"), opts)
	if err == nil || !strings.Contains(err.Error(), "owner-a-workergroup") {
		t.Errorf("a second controller named owner-a-workergroup under a validating manager: %v, want controller-runtime's name conflict", err)
	}
	other := offlineManager(t, config.Controller{})
	if err := SetupKind(other, sampleView(t, "WorkerGroup"), Options{KEDADiscoveryInterval: -1, Owner: "owner-a-other"}); err != nil {
		t.Errorf("another owner's controller of the same kind: %v", err)
	}
}

// refusingIndexer refuses a second registration of an index name, in its
// own words (not controller-runtime's "indexer conflict").
type refusingIndexer struct{ names map[string]bool }

func (r *refusingIndexer) IndexField(_ context.Context, _ client.Object, name string, _ client.IndexerFunc) error {
	if r.names[name] {
		return fmt.Errorf("index %q exists already", name)
	}
	r.names[name] = true
	return nil
}

type indexerManager struct {
	manager.Manager
	indexer client.FieldIndexer
}

func (m indexerManager) GetFieldIndexer() client.FieldIndexer { return m.indexer }

// TestScaleHandleKindActivatedAgainReusesItsIndexes: the ScaleHandle kind
// activated twice on one manager registers its HPA and handle indexes
// once, whatever words the field indexer refuses a second registration
// with: the indexes registered are remembered per manager, not recognised
// in an error's text.
func TestScaleHandleKindActivatedAgainReusesItsIndexes(t *testing.T) {
	m := offlineManager(t, config.Controller{})
	if err := v1alpha1.AddToScheme(m.GetScheme()); err != nil {
		t.Fatal(err)
	}
	idx := &refusingIndexer{names: map[string]bool{}}
	mgr := indexerManager{Manager: m, indexer: idx}
	view, err := profile.Compile(profile.ScaleHandleProfile())
	if err != nil {
		t.Fatal(err)
	}
	for i := range 2 {
		if _, err := NewKindRuntime(mgr, view, Options{KEDADiscoveryInterval: -1}); err != nil {
			t.Fatalf("activation %d of ScaleHandles: %v", i+1, err)
		}
	}
	want := map[string]bool{handleTargetIndex: true, HPATargetIndex(view.GVK().GroupKind()): true}
	if diff := cmp.Diff(want, idx.names); diff != "" {
		t.Errorf("indexes registered (-want +got):\n%s", diff)
	}
}
