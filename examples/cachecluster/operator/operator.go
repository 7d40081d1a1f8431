// Package operator is the example cache operator: its own reconcilers
// would create the cache's pods; scaleplane, wired in Setup, makes both of
// its kinds scaled resources (kubectl scale, HPA, KEDA, triggers).
package operator

import (
	"context"
	"fmt"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/scaleplane/scaleplane"
	"github.com/scaleplane/scaleplane/api/v1alpha1"

	cachev1 "github.com/scaleplane/scaleplane/examples/cachecluster/api/v1"
)

// Owner names this operator's webhook configurations
// (cache-operator-{mutating,validating}-webhook-configuration).
const Owner = "cache-operator"

// Options are what Setup needs from main.
type Options struct {
	// ClientConfig says how the API server reaches the operator's webhook
	// server: its Service in a cluster, a URL in tests.
	ClientConfig func(path string) admissionregistrationv1.WebhookClientConfig
	// Autoscaler runs the PromQL triggers of CacheClusters; nil refuses
	// them at admission.
	Autoscaler scaleplane.Autoscaler
}

// Setup wires scaleplane for both kinds, then the operator's own
// reconciler. These are all the lines scaleplane needs.
func Setup(mgr ctrl.Manager, opts Options) error {
	sp, err := scaleplane.New(mgr, scaleplane.Options{Owner: Owner, ClientConfig: opts.ClientConfig})
	if err != nil {
		return err
	}
	// CacheCluster: spec.replicas is each shard's member count.
	cluster := sp.For(&cachev1.CacheCluster{}).WithProfile(v1alpha1.ScaleProfileSpec{
		ScaleConfig: v1alpha1.ScaleConfigLocation{Path: ".spec.autoscaling"},
		MemberGroups: &v1alpha1.MemberGroups{Path: ".spec.shards", NameField: "name", MembersField: "members",
			Status: &v1alpha1.MemberGroupStatus{Path: ".status.shards", NameField: "name", ReadyMembersField: "readyMembers"}},
		Pods: v1alpha1.Pods{Labels: map[string]string{"cache.example.com/cluster": v1alpha1.NamePlaceholder}, MemberGroupLabel: "cache.example.com/shard"},
	})
	if opts.Autoscaler != nil {
		cluster = cluster.WithAutoscaler(opts.Autoscaler)
	}
	if err := cluster.Complete(); err != nil {
		return err
	}
	// CacheProxy: plain replicas, scaled by an HPA on its metrics.
	if err := sp.For(&cachev1.CacheProxy{}).WithProfile(v1alpha1.ScaleProfileSpec{
		ScaleConfig: v1alpha1.ScaleConfigLocation{Path: ".spec.autoscaling"},
		Pods:        v1alpha1.Pods{Labels: map[string]string{"cache.example.com/proxy": v1alpha1.NamePlaceholder}},
	}).Complete(); err != nil {
		return err
	}
	return ctrl.NewControllerManagedBy(mgr).For(&cachev1.CacheCluster{}).Named("cachecluster-shards").Complete(&shards{mgr.GetClient()})
}

// shards stands for the operator's real work (running each shard's
// members): it reports every member it was asked for as ready, which is
// what lets scaleplane set status.replicas once all shards agree.
type shards struct{ c client.Client }

func (r *shards) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	cc := &cachev1.CacheCluster{}
	if err := r.c.Get(ctx, req.NamespacedName, cc); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	want := make([]cachev1.ShardStatus, 0, len(cc.Spec.Shards))
	for _, s := range cc.Spec.Shards {
		want = append(want, cachev1.ShardStatus{Name: s.Name, ReadyMembers: s.Members})
	}
	if equalShards(cc.Status.Shards, want) {
		return ctrl.Result{}, nil
	}
	patch := client.MergeFrom(cc.DeepCopy())
	cc.Status.Shards = want
	if err := r.c.Status().Patch(ctx, cc, patch); err != nil {
		return ctrl.Result{}, fmt.Errorf("report shards: %w", err)
	}
	return ctrl.Result{}, nil
}

func equalShards(a, b []cachev1.ShardStatus) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
