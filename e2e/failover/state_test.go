package failover

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/scaleplane/scaleplane/api/v1alpha1"
	"github.com/scaleplane/scaleplane/controllers/autoscaler"
	"github.com/scaleplane/scaleplane/e2e/framework"
	"github.com/scaleplane/scaleplane/scaling"
)

// stabilization is the busy workload's scale-down stabilization window,
// longer than a takeover for the same reason.
const stabilization = 45 * time.Second

// idleTimeout is the workload's idle timeout: longer than a takeover
// (lease duration plus a retry, about 17 s) so that the leader can be
// killed in its middle and the new leader's decision told apart from a
// forgotten timer (which would restart at the takeover).
const idleTimeout = 40 * time.Second

// TestStateAcrossLeaderChange: two replicas as the Deployment runs
// them. Activity posted to the replica that is not the leader wakes a
// workload at zero (the replica records it in the Scaling, the leader's
// watch acts on it); then the leader is killed with SIGKILL in the middle
// of the workload's idle timeout, and the new leader takes it to zero
// neither before the timeout has passed since the activity (it restored
// the activity) nor as late as a timeout after its takeover (it restored
// the History: AwakeSince, not a new one). Killed in the same moment, a
// second workload is in its scale-down stabilization window (its trigger
// fell from 3 replicas' worth to 1): the new leader scales it down neither
// before the window has passed since the last higher recommendation nor a
// window after its takeover (it restored the recommendations).
func TestStateAcrossLeaderChange(t *testing.T) {
	ctx := context.Background()
	d := deploy(t)
	pods := d.startReady(t, "scaleplane-controller-manager-c", "scaleplane-controller-manager-d")
	var leader, other *replica
	framework.Eventually(t, 0, func(ctx context.Context) (bool, string) {
		holder, _, err := leaseHolder(ctx)
		if err != nil {
			return false, err.Error()
		}
		leader = pods[holder]
		return leader != nil, fmt.Sprintf("lease holder %q is none of the replicas", holder)
	})
	for _, r := range pods {
		if r != leader {
			other = r
		}
	}
	t.Logf("leader %s, the other replica %s", leader.name, other.name)

	ns := cluster.Namespace(t)
	waitAdmitted(t, ns)
	token := gatewayToken(t, ns)
	u := framework.RackedCluster(ns, "sleepy", 0, 0, 0)
	if err := unstructured.SetNestedMap(u.Object, map[string]any{
		"minReplicas": int64(0), "maxReplicas": int64(3), "pollingIntervalSeconds": int64(1),
		"idle": map[string]any{"replicasAtStart": int64(1), "timeoutSeconds": int64(idleTimeout / time.Second)},
	}, "spec", "scaleConfig"); err != nil {
		t.Fatal(err)
	}
	if err := cluster.Client.Create(ctx, u); err != nil {
		t.Fatalf("create the workload: %v", err)
	}
	busy := framework.RackedCluster(ns, "busy", 1, 1, 1)
	if err := unstructured.SetNestedMap(busy.Object, map[string]any{
		"minReplicas": int64(1), "maxReplicas": int64(5), "pollingIntervalSeconds": int64(1),
		"triggers": []any{map[string]any{"name": "load", "type": "AverageValue", "threshold": int64(10), "query": "vector(30)"}},
		"behavior": map[string]any{"scaleDown": map[string]any{"stabilizationWindowSeconds": int64(stabilization / time.Second)}},
	}, "spec", "scaleConfig"); err != nil {
		t.Fatal(err)
	}
	if err := cluster.Client.Create(ctx, busy); err != nil {
		t.Fatalf("create the busy workload: %v", err)
	}
	waitReplicas(t, ns, "busy", 3)
	// The leader has seen it (its Scaling exists, autoscaled) before the
	// activity comes.
	framework.Eventually(t, 0, func(ctx context.Context) (bool, string) {
		s, err := getScaling(ctx, ns, autoscaler.ScalingName("sleepy", framework.RackedClusterGVK.GroupKind()))
		if err != nil {
			return false, err.Error()
		}
		return s.Status.Mode == v1alpha1.ScalingModeTriggers, fmt.Sprintf("mode %q", s.Status.Mode)
	})

	// Activity to the replica that is not the leader wakes it.
	if code, body := postActivity(t, other, token, ns, "sleepy"); code != http.StatusAccepted {
		t.Fatalf("POST /activity to %s: %d %s", other.name, code, body)
	}
	waitReplicas(t, ns, "sleepy", 1)
	s, err := getScaling(ctx, ns, autoscaler.ScalingName("sleepy", framework.RackedClusterGVK.GroupKind()))
	if err != nil || s.Status.LastActivity == nil {
		t.Fatalf("the Scaling's lastActivity after the POST: %v, %+v", err, s)
	}
	activity := s.Status.LastActivity.Time
	t.Logf("woken by activity at %s posted to %s", activity.Format(time.RFC3339Nano), other.name)

	// The busy workload's load falls: a recommendation of 1 starts its
	// stabilization window; the Scaling has it, and the newest
	// recommendation of 3, before the leader dies.
	patch := client.RawPatch(types.MergePatchType, []byte(`{"spec":{"scaleConfig":{"triggers":[{"name":"load","type":"AverageValue","threshold":10,"query":"vector(10)"}]}}}`))
	if err := cluster.Client.Patch(ctx, busy, patch); err != nil {
		t.Fatalf("lower the busy workload's load: %v", err)
	}
	var lastHigh time.Time
	framework.Eventually(t, 0, func(ctx context.Context) (bool, string) {
		s, err := getScaling(ctx, ns, autoscaler.ScalingName("busy", framework.RackedClusterGVK.GroupKind()))
		if err != nil {
			return false, err.Error()
		}
		h := s.Status.History
		if h == nil || len(h.Recommendations) < 2 {
			return false, fmt.Sprintf("history %+v", h)
		}
		recs := h.Recommendations
		if recs[len(recs)-1].Replicas != 1 || recs[len(recs)-2].Replicas != 3 {
			return false, fmt.Sprintf("recommendations %+v", recs)
		}
		lastHigh = recs[len(recs)-2].Time.Time
		return true, ""
	})

	// The Scaling holds the History that AwakeSince needs (written with
	// the wake-up) before the leader dies.
	framework.Eventually(t, 0, func(ctx context.Context) (bool, string) {
		s, err := getScaling(ctx, ns, autoscaler.ScalingName("sleepy", framework.RackedClusterGVK.GroupKind()))
		if err != nil {
			return false, err.Error()
		}
		h := s.Status.History
		return h != nil && h.AwakeSince != nil, fmt.Sprintf("history %+v", h)
	})
	if err := leader.kill(); err != nil {
		t.Fatalf("kill the leader: %v", err)
	}
	killed := time.Now()
	var takeover time.Time
	framework.Eventually(t, 3*framework.DefaultTimeout, func(ctx context.Context) (bool, string) {
		holder, lease, err := leaseHolder(ctx)
		if err != nil {
			return false, err.Error()
		}
		if holder != other.name || lease.Spec.AcquireTime == nil {
			return false, fmt.Sprintf("lease held by %q", holder)
		}
		takeover = lease.Spec.AcquireTime.Time
		return true, ""
	})
	t.Logf("%s took the lease %s after the kill, %s after the activity", other.name, takeover.Sub(killed).Round(time.Millisecond), takeover.Sub(activity).Round(time.Millisecond))
	if !takeover.Before(activity.Add(idleTimeout)) || !takeover.Before(lastHigh.Add(stabilization)) {
		t.Fatalf("the takeover came after the idle timeout or the stabilization window ended; the test shows nothing: lengthen them")
	}

	waitReplicas(t, ns, "sleepy", 0)
	var toZero time.Time
	framework.Eventually(t, 0, func(ctx context.Context) (bool, string) {
		s, err := getScaling(ctx, ns, autoscaler.ScalingName("sleepy", framework.RackedClusterGVK.GroupKind()))
		if err != nil {
			return false, err.Error()
		}
		for _, d := range s.Status.Decisions {
			if d.Action == string(scaling.ActionScaleToZero) && d.Time.After(activity) {
				toZero = d.Time.Time
				return true, ""
			}
		}
		return false, fmt.Sprintf("no ScaleToZero decision after the activity in %+v", s.Status.Decisions)
	})
	t.Logf("to zero %s after the activity, %s after the takeover", toZero.Sub(activity).Round(time.Millisecond), toZero.Sub(takeover).Round(time.Millisecond))
	if toZero.Before(activity.Add(idleTimeout)) {
		t.Errorf("the new leader scaled to zero %s after the activity, before the idle timeout of %s: it lost the activity", toZero.Sub(activity), idleTimeout)
	}
	if !toZero.Before(takeover.Add(idleTimeout)) {
		t.Errorf("the new leader scaled to zero %s after its takeover: it restarted the idle timer instead of restoring it", toZero.Sub(takeover))
	}

	waitReplicas(t, ns, "busy", 1)
	var down time.Time
	framework.Eventually(t, 0, func(ctx context.Context) (bool, string) {
		s, err := getScaling(ctx, ns, autoscaler.ScalingName("busy", framework.RackedClusterGVK.GroupKind()))
		if err != nil {
			return false, err.Error()
		}
		for _, d := range s.Status.Decisions {
			if d.Action == string(scaling.ActionScaleDown) && d.Time.After(lastHigh) {
				down = d.Time.Time
				return true, ""
			}
		}
		return false, fmt.Sprintf("no ScaleDown decision after the last recommendation of 3 in %+v", s.Status.Decisions)
	})
	t.Logf("scaled down %s after the last recommendation of 3, %s after the takeover", down.Sub(lastHigh).Round(time.Millisecond), down.Sub(takeover).Round(time.Millisecond))
	if down.Before(lastHigh.Add(stabilization)) {
		t.Errorf("the new leader scaled down %s after the last recommendation of 3, inside the %s stabilization window", down.Sub(lastHigh), stabilization)
	}
	if !down.Before(takeover.Add(stabilization)) {
		t.Errorf("the new leader scaled down %s after its takeover: it forgot the recommendations and started a new window", down.Sub(takeover))
	}
}

// gatewayToken is the token of a ServiceAccount bound to the shipped
// scaleplane-activity-writer role, as a gateway's.
func gatewayToken(t *testing.T, ns string) string {
	t.Helper()
	ctx := context.Background()
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "gateway"}}
	if err := cluster.Client.Create(ctx, sa); err != nil {
		t.Fatalf("create the gateway's ServiceAccount: %v", err)
	}
	crb := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "gateway-" + ns},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "scaleplane-activity-writer"},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: ns, Name: "gateway"}},
	}
	if err := cluster.Client.Create(ctx, crb); err != nil {
		t.Fatalf("bind the gateway: %v", err)
	}
	t.Cleanup(func() { _ = cluster.Client.Delete(context.Background(), crb) })
	cs, err := kubernetes.NewForConfig(cluster.Config)
	if err != nil {
		t.Fatal(err)
	}
	tr, err := cs.CoreV1().ServiceAccounts(ns).CreateToken(ctx, "gateway", &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("token for the gateway: %v", err)
	}
	return tr.Status.Token
}

// postActivity posts the activity signal to one replica's metrics server
// (HTTPS with its self-signed certificate, on loopback).
func postActivity(t *testing.T, r *replica, token, ns, name string) (int, string) {
	t.Helper()
	hc := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} //nolint:gosec // the replica's self-signed metrics certificate, on 127.0.0.1
	var code int
	var body string
	framework.Eventually(t, 0, func(ctx context.Context) (bool, string) {
		url := fmt.Sprintf("https://127.0.0.1:%d%s%s/rackedclusters/%s", r.metricsPort, autoscaler.ActivityPath, ns, name)
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url, nil)
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := hc.Do(req)
		if err != nil {
			return false, err.Error()
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<10))
		code, body = resp.StatusCode, strings.TrimSpace(string(b))
		// 503 while the replica's manager starts; anything else is the answer.
		return code != http.StatusServiceUnavailable, fmt.Sprintf("%d %s", code, body)
	})
	return code, body
}

// waitReplicas waits for the workload's spec.replicas to be n.
func waitReplicas(t *testing.T, ns, name string, n int64) {
	t.Helper()
	framework.Eventually(t, 3*framework.DefaultTimeout, func(ctx context.Context) (bool, string) {
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(framework.RackedClusterGVK)
		if err := cluster.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, u); err != nil {
			return false, err.Error()
		}
		r, _, _ := unstructured.NestedInt64(u.Object, "spec", "replicas")
		return r == n, fmt.Sprintf("spec.replicas %d, want %d", r, n)
	})
}

// getScaling reads a Scaling.
func getScaling(ctx context.Context, ns, name string) (*v1alpha1.Scaling, error) {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(autoscaler.ScalingGVK)
	if err := cluster.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, u); err != nil {
		return nil, err
	}
	s := &v1alpha1.Scaling{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, s); err != nil {
		return nil, err
	}
	return s, nil
}
