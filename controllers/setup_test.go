package controllers

import (
	"net/http"
	"strings"
	"testing"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
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
