package autoscaler

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/scaleplane/scaleplane/api/v1alpha1"
	"github.com/scaleplane/scaleplane/controllers/autoscaler"
	"github.com/scaleplane/scaleplane/e2e/framework"
)

// A workload whose name has 253 characters gets its Scaling from the
// real API server (name and labels it accepts) and its activity is
// recorded; a deleted Scaling comes back though nothing changed; and a
// lastActivity in year 2250 or 2999 written into the Scaling is neither
// trusted by the leader nor kept by the next activity.
func testScalingOfALongNameAndHostileStatus(t *testing.T, e *env) {
	ns := cluster.Namespace(t)
	name := strings.Repeat("a", 120) + "." + strings.Repeat("b", 132)
	if len(name) != 253 {
		t.Fatalf("name of %d characters", len(name))
	}
	rc(ns, name, 1).scaleConfig(map[string]any{
		"minReplicas": int64(0), "maxReplicas": int64(4),
		"idle": map[string]any{"replicasAtStart": int64(1), "timeoutSeconds": int64(3600)},
	}).create(t)
	key := types.NamespacedName{Namespace: ns, Name: autoscaler.ScalingName(name, rackedClusterGVK.GroupKind())}
	var uid types.UID
	framework.Eventually(t, 0, func(ctx context.Context) (bool, string) {
		s, err := getScaling(ctx, ns, key.Name)
		if err != nil {
			return false, err.Error()
		}
		uid = s.UID
		for k, v := range s.Labels {
			if errs := validation.IsValidLabelValue(v); len(errs) > 0 {
				return false, fmt.Sprintf("label %s=%q: %v", k, v, errs)
			}
		}
		return s.Spec.TargetRef.Name == name, "targetRef " + s.Spec.TargetRef.Name
	})
	post := func() {
		t.Helper()
		status, body, err := e.call(context.Background(), http.MethodPost, autoscaler.ActivityPath+ns+"/rackedclusters/"+name, e.token)
		if err != nil || status != http.StatusAccepted {
			t.Fatalf("POST activity: %d %s %v, want 202", status, body, err)
		}
	}
	post()

	// Deleted: written again without any change to the workload.
	s := &unstructured.Unstructured{}
	s.SetGroupVersionKind(autoscaler.ScalingGVK)
	s.SetNamespace(ns)
	s.SetName(key.Name)
	if err := cluster.Client.Delete(context.Background(), s); err != nil {
		t.Fatalf("delete the Scaling: %v", err)
	}
	framework.Eventually(t, 0, func(ctx context.Context) (bool, string) {
		s, err := getScaling(ctx, ns, key.Name)
		if err != nil {
			return false, err.Error()
		}
		return s.UID != uid, "the old Scaling still"
	})

	for _, year := range []int{2250, 2999} {
		future := time.Date(year, 1, 1, 0, 0, 0, 0, time.UTC)
		patch := client.RawPatch(types.MergePatchType, []byte(fmt.Sprintf(`{"status":{"lastActivity":%q}}`, future.Format("2006-01-02T15:04:05.000000Z07:00"))))
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(autoscaler.ScalingGVK)
		u.SetNamespace(ns)
		u.SetName(key.Name)
		if err := cluster.Client.Status().Patch(context.Background(), u, patch, client.FieldOwner("hostile")); err != nil {
			t.Fatalf("write lastActivity %d: %v", year, err)
		}
		post()
		framework.Eventually(t, 0, func(ctx context.Context) (bool, string) {
			s, err := getScaling(ctx, ns, key.Name)
			if err != nil {
				return false, err.Error()
			}
			x, err := e.explain(ctx, ns, name)
			if err != nil {
				return false, err.Error()
			}
			soon := time.Now().Add(time.Hour)
			ok := s.Status.LastActivity != nil && s.Status.LastActivity.Time.Before(soon) && x.LastActivity.Before(soon)
			return ok, fmt.Sprintf("after year %d: Scaling lastActivity %v, the leader's %v", year, s.Status.LastActivity, x.LastActivity)
		})
	}
}

// legacyScaling is a Scaling of the name scaleplane gave before the API
// group was part of it, written before the app starts.
type legacyScaling struct {
	ns, old string
	at      time.Time
}

func writeLegacyScaling(t *testing.T) legacyScaling {
	t.Helper()
	ns := cluster.Namespace(t)
	l := legacyScaling{ns: ns, old: "legacy-rackedcluster", at: time.Now().Add(-time.Minute).UTC().Truncate(time.Microsecond)}
	u := &unstructured.Unstructured{Object: map[string]any{
		"spec": map[string]any{"targetRef": map[string]any{"apiVersion": rackedClusterGVK.GroupVersion().String(), "kind": "RackedCluster", "name": "legacy"}},
	}}
	u.SetGroupVersionKind(autoscaler.ScalingGVK)
	u.SetNamespace(ns)
	u.SetName(l.old)
	u.SetLabels(map[string]string{v1alpha1.LabelManagedBy: v1alpha1.ManagedByValue})
	if err := cluster.Client.Create(context.Background(), u); err != nil {
		t.Fatalf("create the old Scaling: %v", err)
	}
	patch := client.RawPatch(types.MergePatchType, []byte(fmt.Sprintf(`{"status":{"mode":"triggers","lastActivity":%q}}`, l.at.Format("2006-01-02T15:04:05.000000Z07:00"))))
	if err := cluster.Client.Status().Patch(context.Background(), u, patch); err != nil {
		t.Fatalf("write the old Scaling's status: %v", err)
	}
	return l
}

// check waits for the rename: the Scaling under its name with the group
// holds the old one's status and activity, and the old one is gone.
func (l legacyScaling) check(t *testing.T) {
	renamed := autoscaler.ScalingName("legacy", rackedClusterGVK.GroupKind())
	framework.Eventually(t, 0, func(ctx context.Context) (bool, string) {
		s, err := getScaling(ctx, l.ns, renamed)
		if err != nil {
			return false, err.Error()
		}
		if _, err := getScaling(ctx, l.ns, l.old); err == nil {
			return false, "the old Scaling is still there"
		}
		ok := s.Status.Mode == v1alpha1.ScalingModeTriggers && s.Status.LastActivity != nil && s.Status.LastActivity.Time.Equal(l.at)
		return ok, fmt.Sprintf("renamed with mode %q, lastActivity %v (want %v)", s.Status.Mode, s.Status.LastActivity, l.at)
	})
}
