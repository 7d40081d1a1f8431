package scalings

import (
	"context"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/scaleplane/scaleplane/api/v1alpha1"
	"github.com/scaleplane/scaleplane/profile"
)

// scalingsClient is a fake API server holding Scalings with their status
// subresource.
func scalingsClient(t *testing.T, objs ...client.Object) client.Client {
	t.Helper()
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	if err := v1alpha1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	return fake.NewClientBuilder().WithScheme(scheme).WithObjects(objs...).WithStatusSubresource(&v1alpha1.Scaling{}).Build()
}

// A Scaling of the name without the group is renamed on start, with its
// owner, status and last activity; one already renamed is left alone.
func TestLegacyScalingsRenamed(t *testing.T) {
	at := time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)
	desired := int32(3)
	old := &v1alpha1.Scaling{
		ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "db-rackedcluster", Labels: map[string]string{
			v1alpha1.LabelManagedBy: v1alpha1.ManagedByValue, v1alpha1.LabelWorkloadKind: "RackedCluster", v1alpha1.LabelWorkloadName: "db",
		}, OwnerReferences: []metav1.OwnerReference{{APIVersion: profile.SampleAPIVersion, Kind: "RackedCluster", Name: "db", UID: "uid"}}},
		Spec: v1alpha1.ScalingSpec{TargetRef: v1alpha1.ScalingTargetRef{APIVersion: profile.SampleAPIVersion, Kind: "RackedCluster", Name: "db"}},
	}
	m := metav1.NewMicroTime(at)
	old.Status.LastActivity = &m
	old.Status.DesiredReplicas = &desired
	old.Status.Mode = v1alpha1.ScalingModeTriggers
	c := scalingsClient(t, old)
	Migrate(context.Background(), c, c)

	gk := schema.GroupKind{Group: profile.SampleGroup, Kind: "RackedCluster"}
	got := &v1alpha1.Scaling{}
	if err := c.Get(context.Background(), types.NamespacedName{Namespace: "shop", Name: Name("db", gk)}, got); err != nil {
		t.Fatalf("the renamed Scaling: %v", err)
	}
	if got.Status.LastActivity == nil || !got.Status.LastActivity.Time.Equal(at) || got.Status.DesiredReplicas == nil || *got.Status.DesiredReplicas != 3 {
		t.Errorf("renamed without its status: %+v", got.Status)
	}
	if len(got.OwnerReferences) != 1 || got.OwnerReferences[0].UID != "uid" || got.Labels[v1alpha1.LabelWorkloadGroup] != profile.SampleGroup {
		t.Errorf("renamed with owners %v labels %v", got.OwnerReferences, got.Labels)
	}
	if err := c.Get(context.Background(), types.NamespacedName{Namespace: "shop", Name: "db-rackedcluster"}, &v1alpha1.Scaling{}); !apierrors.IsNotFound(err) {
		t.Errorf("the old Scaling: %v, want it deleted", err)
	}
	// Run again: nothing left to rename, nothing deleted.
	Migrate(context.Background(), c, c)
	if err := c.Get(context.Background(), types.NamespacedName{Namespace: "shop", Name: Name("db", gk)}, &v1alpha1.Scaling{}); err != nil {
		t.Errorf("a second start lost the renamed Scaling: %v", err)
	}
}
