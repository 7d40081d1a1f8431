package embedders

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	"github.com/scaleplane/scaleplane/api/v1alpha1"
	"github.com/scaleplane/scaleplane/controllers/autoscaler"
	"github.com/scaleplane/scaleplane/controllers/profiles"
	"github.com/scaleplane/scaleplane/e2e/framework"
	"github.com/scaleplane/scaleplane/profile"
	"github.com/scaleplane/scaleplane/promql"
	"github.com/scaleplane/scaleplane/webhooks"
)

// TestReviewLiveKindActivityOnReplicaNotLeading: a gateway may POST
// /activity to any replica (README), and a replica that does not lead
// records it in the workload's Scaling for the leader. That must hold for
// a ScaleProfile's kind too, not only the configuration file's: here the
// replica never leads (another holds the lease), and its activity
// endpoint must know the live kind rather than answer 404 "not profiled".
func TestReviewLiveKindActivityOnReplicaNotLeading(t *testing.T) {
	const owner = "review-activity"
	ns := cluster.Namespace(t)
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, v1alpha1.AddToScheme, apiextensionsv1.AddToScheme} {
		if err := add(scheme); err != nil {
			t.Fatal(err)
		}
	}
	live, err := client.New(cluster.Config, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	// Another replica leads for the whole test.
	now := metav1.NewMicroTime(time.Now())
	lease := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: owner}, Spec: coordinationv1.LeaseSpec{
		HolderIdentity: ptr.To("the-leader"), LeaseDurationSeconds: ptr.To(int32(3600)), AcquireTime: &now, RenewTime: &now,
	}}
	if err := live.Create(context.Background(), lease); err != nil {
		t.Fatal(err)
	}
	mgr, err := ctrl.NewManager(cluster.Config, ctrl.Options{
		Scheme:                  scheme,
		Metrics:                 metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress:  "0",
		LeaderElection:          true,
		LeaderElectionID:        owner,
		LeaderElectionNamespace: ns,
		WebhookServer:           webhook.NewServer(webhook.Options{Host: "127.0.0.1", Port: framework.FreePort(t), CertDir: cluster.WebhookCertDir}),
	})
	if err != nil {
		t.Fatal(err)
	}
	limits := promql.Limits{}
	sources, err := autoscaler.NewSources(promql.NewEvaluator(promql.NewStore(promql.Options{}), promql.EvaluatorOptions{Limits: limits}), nil, limits)
	if err != nil {
		t.Fatal(err)
	}
	as, err := autoscaler.New(autoscaler.Options{Sources: sources, Owner: owner, Namespace: ns, SkipNameValidation: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := as.SetupWithManager(mgr); err != nil {
		t.Fatal(err)
	}
	d, err := webhooks.NewDispatcher(mgr, webhooks.Options{Sources: sources})
	if err != nil {
		t.Fatal(err)
	}
	_, err = profiles.SetupWithManager(mgr, profiles.Options{
		Owner:      owner,
		Dispatcher: d,
		StartAutoscaler: func(ctx context.Context, v *profile.Compiled) (func(context.Context) error, error) {
			rk, err := as.StartKind(ctx, v)
			if err != nil {
				return nil, err
			}
			return rk.Stop, nil
		},
		SkipAccessReview: true,
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx := startManager(t, mgr)

	const group = "review-activity.example.org"
	crd := workerGroupCRDCopy(t, live, group)
	if err := live.Create(ctx, crd); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = live.Delete(context.Background(), crd) })
	spec := profile.Samples()[2]
	spec.Target.APIVersion = group + "/v1alpha1"
	p := &v1alpha1.ScaleProfile{ObjectMeta: metav1.ObjectMeta{Name: crd.Name, Labels: ownedBy(owner)}, Spec: spec}
	if err := live.Create(ctx, p); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = live.Delete(context.Background(), p) })
	wg := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{"replicas": int64(1)}}}
	wg.SetGroupVersionKind(schema.GroupVersionKind{Group: group, Version: "v1alpha1", Kind: "WorkerGroup"})
	wg.SetNamespace(ns)
	wg.SetName("woken")
	framework.Eventually(t, 0, func(ctx context.Context) (bool, string) {
		if err := live.Create(ctx, wg.DeepCopy()); err != nil {
			return false, "create the WorkerGroup: " + err.Error()
		}
		return true, ""
	})

	h := as.Handler()
	framework.Eventually(t, 0, func(context.Context) (bool, string) {
		req := httptest.NewRequest(http.MethodPost, autoscaler.ActivityPath+ns+"/workergroups/woken", nil)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		return rec.Code == http.StatusAccepted, fmt.Sprintf("POST /activity on a replica that does not lead: %d %s", rec.Code, rec.Body.String())
	})
	select {
	case <-mgr.Elected():
		t.Fatal("the replica was elected: the test needs one that does not lead")
	default:
	}
}
