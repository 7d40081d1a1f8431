package scaleplane

import (
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/scaleplane/scaleplane/api/v1alpha1"
	"github.com/scaleplane/scaleplane/profile"
	"github.com/scaleplane/scaleplane/scaling"
)

// ownedAutoscaler is an Autoscaler that says its owner, as
// controllers/autoscaler's does.
type ownedAutoscaler struct{ owner string }

func (a ownedAutoscaler) Sources() *scaling.Sources                          { return nil }
func (a ownedAutoscaler) SetupKind(manager.Manager, *profile.Compiled) error { return nil }
func (a ownedAutoscaler) Owner() string                                      { return a.owner }

// C5 across owners needs the autoscaler and the controllers to agree on the
// owner: Complete refuses an autoscaler built for another one and says which
// owner to build it with, before anything is registered.
func TestCompleteRefusesAnAutoscalerOfAnotherOwner(t *testing.T) {
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	mgr, err := ctrl.NewManager(&rest.Config{Host: "https://127.0.0.1:1"}, ctrl.Options{
		Scheme: s, Metrics: metricsserver.Options{BindAddress: "0"}, HealthProbeBindAddress: "0",
	})
	if err != nil {
		t.Fatal(err)
	}
	sp, err := New(mgr, Options{Owner: "cache-operator"})
	if err != nil {
		t.Fatal(err)
	}
	err = sp.For(&appsv1.Deployment{}).WithProfile(v1alpha1.ScaleProfileSpec{}).WithAutoscaler(ownedAutoscaler{"scaleplane"}).Complete()
	if err == nil || !strings.Contains(err.Error(), `build the autoscaler with Owner "cache-operator"`) {
		t.Fatalf("Complete: %v, want a refusal naming the owner to build the autoscaler with", err)
	}
}
