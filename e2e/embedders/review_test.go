package embedders

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/scaleplane/scaleplane/api/v1alpha1"
	"github.com/scaleplane/scaleplane/controllers/profiles"
	"github.com/scaleplane/scaleplane/e2e/framework"
	"github.com/scaleplane/scaleplane/profile"
)

// crdReader is the API reader of the ScaleProfile reconciler's CRDs, with
// faults: a read that fails as an overloaded API server does, and a CRD
// that comes back as another object of the same name and generation (one
// deleted and created again between two reconciles).
type crdReader struct {
	client.Reader
	name     string
	fail     atomic.Bool
	failed   atomic.Int32
	recreate atomic.Bool
}

func (r *crdReader) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	if key.Name == r.name && r.fail.Load() {
		r.failed.Add(1)
		return apierrors.NewServiceUnavailable("the API server is overloaded")
	}
	if err := r.Reader.Get(ctx, key, obj, opts...); err != nil {
		return err
	}
	if key.Name == r.name && r.recreate.Load() {
		obj.SetUID(types.UID("recreated-" + string(obj.GetUID())))
	}
	return nil
}

// TestReviewCRDReadErrorKeepsKindRunning: a CRD read that fails for a
// moment (an API server under load, a timeout) while a kind runs must not
// restart the kind's controllers and trigger autoscaler, nor run it
// without its schema limits until the next reconcile; and a CRD deleted
// and created again under the same generation is another schema, which
// restarts the kind. Reconciles are driven by marker profiles whose
// status shows that a pass over every profile has ended.
func TestReviewCRDReadErrorKeepsKindRunning(t *testing.T) {
	const owner = "review-crd"
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, v1alpha1.AddToScheme, apiextensionsv1.AddToScheme} {
		if err := add(scheme); err != nil {
			t.Fatal(err)
		}
	}
	// The manager's scheme does not know CRDs, so the reconciler does not
	// watch them and reads the CRD on every pass: with the watch it reads
	// only when the CRD's cached UID or generation moved, which this
	// reader's faults do not show.
	mgrScheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, v1alpha1.AddToScheme} {
		if err := add(mgrScheme); err != nil {
			t.Fatal(err)
		}
	}
	mgr, d, live := dispatchManager(t, mgrScheme, scheme, framework.FreePort(t))
	var err error
	const group = "review-crd.example.org"
	crds := &crdReader{Reader: live, name: "workergroups." + group}
	var starts, stops atomic.Int32
	_, err = profiles.SetupWithManager(mgr, profiles.Options{
		Owner:      owner,
		Dispatcher: d,
		CRDs:       crds,
		StartAutoscaler: func(context.Context, *profile.Compiled) (func(context.Context) error, error) {
			starts.Add(1)
			return func(context.Context) error { stops.Add(1); return nil }, nil
		},
		NotServedRetry:   time.Hour,
		SkipAccessReview: true,
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx := startManager(t, mgr)
	reason := func(ctx context.Context, name string) string {
		p := &v1alpha1.ScaleProfile{}
		if err := live.Get(ctx, client.ObjectKey{Name: name}, p); err != nil {
			return err.Error()
		}
		if c := apimeta.FindStatusCondition(p.Status.Conditions, v1alpha1.ConditionActive); c != nil {
			return c.Reason
		}
		return "no condition"
	}
	create := func(p *v1alpha1.ScaleProfile) {
		t.Helper()
		if err := live.Create(ctx, p); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = live.Delete(context.Background(), p) })
	}
	// pass waits for a reconcile that began after it was called to end.
	markers := 0
	pass := func() {
		t.Helper()
		markers++
		spec := profile.Samples()[2]
		spec.Target.APIVersion, spec.Target.Kind = fmt.Sprintf("marker%d.example.org/v1", markers), "Marker"
		name := fmt.Sprintf("review-crd-marker-%d", markers)
		create(&v1alpha1.ScaleProfile{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: ownedBy(owner)}, Spec: spec})
		framework.Eventually(t, 0, func(ctx context.Context) (bool, string) {
			got := reason(ctx, name)
			return got == v1alpha1.ProfileReasonCRDNotServed, name + ": " + got
		})
	}
	counts := func(wantStarts, wantStops int32) {
		t.Helper()
		if s, p := starts.Load(), stops.Load(); s != wantStarts || p != wantStops {
			t.Errorf("trigger autoscaler started %d times and stopped %d times, want %d and %d", s, p, wantStarts, wantStops)
		}
	}

	crd := workerGroupCRDCopy(t, live, group)
	if err := live.Create(ctx, crd); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = live.Delete(context.Background(), crd) })
	spec := profile.Samples()[2]
	spec.Target.APIVersion = group + "/v1alpha1"
	wg := &v1alpha1.ScaleProfile{ObjectMeta: metav1.ObjectMeta{Name: crd.Name, Labels: ownedBy(owner)}, Spec: spec}
	create(wg)
	framework.Eventually(t, 0, func(ctx context.Context) (bool, string) {
		got := reason(ctx, wg.Name)
		return got == v1alpha1.ProfileReasonActive && starts.Load() == 1, fmt.Sprintf("%s: %s, %d starts", wg.Name, got, starts.Load())
	})

	// The CRD cannot be read for a moment: the kind keeps running.
	crds.fail.Store(true)
	pass()
	if crds.failed.Load() == 0 {
		t.Fatal("the reconcile did not read the CRD")
	}
	counts(1, 0)
	crds.fail.Store(false)
	pass()
	counts(1, 0)
	if got := reason(ctx, wg.Name); got != v1alpha1.ProfileReasonActive {
		t.Errorf("%s: %s, want Active", wg.Name, got)
	}

	// The CRD is another one now (same name and generation): restarted.
	crds.recreate.Store(true)
	pass()
	counts(2, 1)
}
