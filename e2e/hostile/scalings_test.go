package hostile

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/scaleplane/scaleplane/controllers/autoscaler"
	"github.com/scaleplane/scaleplane/e2e/framework"
)

// scalingInputs: what reaches a workload's Scaling through names and
// status: two kinds of one name in two API groups, a workload name of 253
// characters, and a lastActivity far in the future written into the
// Scaling by hand.
func (s *suite) scalingInputs(t *testing.T) {
	t.Run("two kinds named RackedCluster in two groups", func(t *testing.T) {
		t.Parallel()
		for _, gvk := range []schema.GroupVersionKind{framework.RackedClusterGVK, twinGVK} {
			wl := framework.RackedCluster(s.ns, "twin", 1, 1)
			wl.SetGroupVersionKind(gvk)
			wl.Object["spec"].(obj)["scaleConfig"] = scheduleConfig()
			if err := cluster.Client.Create(context.Background(), wl); err != nil {
				t.Fatalf("create the %s twin: %v", gvk.Group, err)
			}
		}
		type outcome struct {
			Status                       int
			Scalings                     int
			TwinActivity, SampleActivity bool
		}
		status := s.postOnceSeen(t, "/activity/"+s.ns+"/rackedclusters."+twinGVK.Group+"/twin")
		var got outcome
		err := within(framework.DefaultTimeout, func(ctx context.Context) error {
			got = outcome{Status: status}
			for _, gvk := range []schema.GroupVersionKind{framework.RackedClusterGVK, twinGVK} {
				sc, err := readScaling(ctx, s.ns, autoscaler.ScalingName("twin", gvk.GroupKind()))
				if err != nil {
					return err
				}
				got.Scalings++
				_, has, _ := unstructured.NestedString(sc.Object, "status", "lastActivity")
				if gvk == twinGVK {
					got.TwinActivity = has
				} else {
					got.SampleActivity = has
				}
			}
			if !got.TwinActivity {
				return fmt.Errorf("the twin's Scaling has no activity yet")
			}
			return nil
		})
		if err != nil {
			t.Log(err)
		}
		s.expect(t, areaActivity, "two kinds named RackedCluster in two groups: a Scaling each, activity for one only",
			outcome{Status: http.StatusAccepted, Scalings: 2, TwinActivity: true}, got, false)
	})
	t.Run("workload name of 253 characters", func(t *testing.T) {
		t.Parallel()
		name := strings.Repeat("l", 126) + "." + strings.Repeat("n", 126)
		wl := framework.RackedCluster(s.ns, name, 1, 1)
		wl.Object["spec"].(obj)["scaleConfig"] = scheduleConfig()
		if err := cluster.Client.Create(context.Background(), wl); err != nil {
			t.Fatalf("create the workload: %v", err)
		}
		type outcome struct {
			Status    int
			TargetRef string
		}
		got := outcome{Status: s.postOnceSeen(t, "/activity/"+s.ns+"/rackedclusters/"+name)}
		err := within(framework.DefaultTimeout, func(ctx context.Context) error {
			sc, err := readScaling(ctx, s.ns, autoscaler.ScalingName(name, framework.RackedClusterGVK.GroupKind()))
			if err != nil {
				return err
			}
			got.TargetRef, _, _ = unstructured.NestedString(sc.Object, "spec", "targetRef", "name")
			if _, has, _ := unstructured.NestedString(sc.Object, "status", "lastActivity"); !has {
				return fmt.Errorf("no activity in the Scaling yet")
			}
			return nil
		})
		if err != nil {
			t.Log(err)
		}
		s.expect(t, areaActivity, "workload name of 253 characters: a Scaling with its activity", outcome{Status: http.StatusAccepted, TargetRef: name}, got, false)
	})
	for _, year := range []int{2250, 2999} {
		t.Run(fmt.Sprintf("lastActivity in year %d", year), func(t *testing.T) {
			t.Parallel()
			name := fmt.Sprintf("future-%d", year)
			wl := framework.RackedCluster(s.ns, name, 1, 1)
			wl.Object["spec"].(obj)["scaleConfig"] = scheduleConfig()
			if err := cluster.Client.Create(context.Background(), wl); err != nil {
				t.Fatalf("create the workload: %v", err)
			}
			key := autoscaler.ScalingName(name, framework.RackedClusterGVK.GroupKind())
			if err := within(framework.DefaultTimeout, func(ctx context.Context) error {
				_, err := readScaling(ctx, s.ns, key)
				return err
			}); err != nil {
				t.Fatalf("the workload's Scaling: %v", err)
			}
			future := time.Date(year, 1, 1, 0, 0, 0, 0, time.UTC).Format("2006-01-02T15:04:05.000000Z07:00")
			u := &unstructured.Unstructured{}
			u.SetGroupVersionKind(autoscaler.ScalingGVK)
			u.SetNamespace(s.ns)
			u.SetName(key)
			patch := client.RawPatch(types.MergePatchType, []byte(fmt.Sprintf(`{"status":{"lastActivity":%q}}`, future)))
			if err := cluster.Client.Status().Patch(context.Background(), u, patch, client.FieldOwner("hostile")); err != nil {
				t.Fatalf("write lastActivity: %v", err)
			}
			type outcome struct {
				Status      int
				ActivityNow bool
			}
			got := outcome{Status: s.post(t, "/activity/"+s.ns+"/rackedclusters/"+name)}
			var last string
			err := within(framework.DefaultTimeout, func(ctx context.Context) error {
				sc, err := readScaling(ctx, s.ns, key)
				if err != nil {
					return err
				}
				last, _, _ = unstructured.NestedString(sc.Object, "status", "lastActivity")
				at, err := time.Parse(time.RFC3339Nano, last)
				if err != nil || at.After(time.Now().Add(time.Hour)) {
					return fmt.Errorf("lastActivity %q", last)
				}
				got.ActivityNow = true
				return nil
			})
			if err != nil {
				t.Log(err)
			}
			s.expect(t, areaActivity, fmt.Sprintf("lastActivity in year %d: overwritten by the next activity", year), outcome{Status: http.StatusAccepted, ActivityNow: true}, got, false)
		})
	}
}

// post sends POST path with the suite's token and returns the status.
func (s *suite) post(t *testing.T, path string) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	r, data, err := s.call(ctx, http.MethodPost, path, s.token, nil)
	if err != nil {
		t.Fatalf("POST %s: %v", path, err)
	}
	if r.Status != http.StatusAccepted {
		t.Logf("POST %s: %d %.500s", path, r.Status, data)
	}
	return r.Status
}

// postOnceSeen is post for a workload just created: scaleplane answers
// 404 until its cache has seen the workload, as it should, so the POST is
// repeated while it says so, until the deadline.
func (s *suite) postOnceSeen(t *testing.T, path string) int {
	t.Helper()
	status := 0
	_ = within(framework.DefaultTimeout, func(context.Context) error {
		if status = s.post(t, path); status == http.StatusNotFound {
			return fmt.Errorf("POST %s: 404", path)
		}
		return nil
	})
	return status
}

// readScaling reads the Scaling ns/name.
func readScaling(ctx context.Context, ns, name string) (*unstructured.Unstructured, error) {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(autoscaler.ScalingGVK)
	if err := cluster.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, u); err != nil {
		return nil, err
	}
	return u, nil
}
