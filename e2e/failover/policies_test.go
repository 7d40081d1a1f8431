package failover

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	configv1alpha2 "github.com/scaleplane/scaleplane/api/config/v1alpha2"
	"github.com/scaleplane/scaleplane/api/v1alpha1"
	"github.com/scaleplane/scaleplane/e2e/framework"
)

// runsEnv sets how many times TestLeaderKillUnderLoadWithPolicies kills a
// leader (default 3, about 35 s each; 10 for the full check).
const runsEnv = "SCALEPLANE_FAILOVER_POLICY_RUNS"

// deployWithPolicies is deploy with webhook.admission: policies. The
// replicas write the policies at start; they are deleted at the end, as
// the webhook configurations are.
func deployWithPolicies(t *testing.T) *deployment {
	t.Helper()
	d := deploy(t)
	cfg := *d.config
	cfg.Webhook.Admission = configv1alpha2.AdmissionPolicies
	d.config = &cfg
	t.Cleanup(func() {
		ctx := context.Background()
		owned := client.MatchingLabels{v1alpha1.LabelOwner: configv1alpha2.DefaultOwner}
		for _, obj := range []client.Object{
			&admissionregistrationv1.MutatingAdmissionPolicyBinding{}, &admissionregistrationv1.ValidatingAdmissionPolicyBinding{},
			&admissionregistrationv1.MutatingAdmissionPolicy{}, &admissionregistrationv1.ValidatingAdmissionPolicy{},
		} {
			if err := cluster.Client.DeleteAllOf(ctx, obj, owned); err != nil && !apierrors.IsNotFound(err) {
				t.Errorf("delete %T: %v", obj, err)
			}
		}
	})
	return d
}

// waitPolicies waits until the API server enforces the policies the
// replicas wrote and the validating entry carries the policies-mode match
// condition: an invalid RackedCluster is refused by the
// ValidatingAdmissionPolicy and a valid one is pinned and fanned out by the
// MutatingAdmissionPolicy (server-side dry runs).
func waitPolicies(t *testing.T, ns string) {
	t.Helper()
	// The last answer before the deadline, not the deadline's own error.
	why := ""
	framework.Eventually(t, 0, func(ctx context.Context) (bool, string) {
		ok, msg := policiesEnforced(ctx, ns)
		if ctx.Err() == nil {
			why = msg
		}
		return ok, why
	})
}

func policiesEnforced(ctx context.Context, ns string) (bool, string) {
	v := &admissionregistrationv1.ValidatingWebhookConfiguration{}
	if err := cluster.Client.Get(ctx, client.ObjectKey{Name: configv1alpha2.DefaultValidatingConfigurationName}, v); err != nil {
		return false, err.Error()
	}
	if len(v.Webhooks) == 0 || len(v.Webhooks[0].MatchConditions) == 0 {
		return false, fmt.Sprintf("the validating entries have no match condition yet (%d entries)", len(v.Webhooks))
	}
	// min > max: the API server's own checks (the schema, the /scale
	// replicas path) let it through to validating admission.
	bad := framework.RackedCluster(ns, "bad-probe", 2)
	_ = unstructured.SetNestedMap(bad.Object, map[string]interface{}{"minReplicas": int64(5), "maxReplicas": int64(3)}, "spec", "scaleConfig")
	err := cluster.Client.Create(ctx, bad, client.DryRunAll)
	if err == nil || !strings.Contains(err.Error(), "ValidatingAdmissionPolicy") {
		return false, fmt.Sprintf("the validating policy is not enforced yet: %v", err)
	}
	// The API server loads each policy on its own: the mutating one may
	// come after the validating one. A create without triggers never
	// reaches the webhook in policies mode, so a pinned and fanned-out
	// answer is the mutating policy's.
	good := framework.RackedCluster(ns, "good-probe", 3, 1, 1)
	if err := cluster.Client.Create(ctx, good, client.DryRunAll); err != nil {
		return false, fmt.Sprintf("dry-run create of a valid RackedCluster: %v", err)
	}
	racks, err := framework.RackMembers(good)
	minR, _, _ := unstructured.NestedInt64(good.Object, "spec", "scaleConfig", "minReplicas")
	if err != nil || len(racks) != 2 || racks[0] != 3 || racks[1] != 3 || minR != 3 {
		return false, fmt.Sprintf("the mutating policy is not enforced yet: racks %v, scaleConfig %v", racks, good.Object["spec"])
	}
	return true, ""
}

// TestLeaderKillUnderLoadWithPolicies is TestLeaderKillUnderLoad with
// webhook.admission: policies, where no admission may fail: creates and
// replica updates without triggers never leave the API server, and the
// /scale entry is Ignore. SCALEPLANE_FAILOVER_POLICY_RUNS repeats it.
func TestLeaderKillUnderLoadWithPolicies(t *testing.T) {
	runs := 3
	if s := os.Getenv(runsEnv); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			t.Fatalf("%s=%q: want a count of runs, 1 or more", runsEnv, s)
		}
		runs = n
	}
	for i := range runs {
		t.Run(fmt.Sprintf("run-%d", i+1), func(t *testing.T) {
			pod := fmt.Sprintf("scaleplane-controller-manager-p%d-", i+1)
			leaderKillUnderLoad(t, deployWithPolicies(t), true, pod+"a", pod+"b")
		})
	}
}

// TestEveryReplicaKilledWithPolicies kills every replica with SIGKILL in
// policies mode and then writes: creates, updates and `kubectl scale` of
// RackedClusters without triggers are still defaulted (M1), fanned out
// (M5, M3) and validated (V1, V2) by the API server's policies; a
// `kubectl scale` is admitted (the /scale entry is Ignore) and fanned out
// (C1) once a replica is back; a write that adds a trigger needs the
// webhook, whose entry is Fail, so it is refused while no replica
// answers, and admitted once one does (docs/design.md, "Admission
// policies").
func TestEveryReplicaKilledWithPolicies(t *testing.T) {
	ctx := context.Background()
	d := deployWithPolicies(t)
	pods := d.startReady(t, "scaleplane-controller-manager-k-a", "scaleplane-controller-manager-k-b")
	ns := cluster.Namespace(t)
	waitPolicies(t, ns)
	for _, r := range pods {
		if err := r.kill(); err != nil {
			t.Fatalf("kill -9 %s: %v", r.name, err)
		}
		<-r.exited
	}
	t.Log("every replica killed (SIGKILL)")

	var counts struct{ defaulted, fannedOut, refused, scaled, needWebhook int }
	get := func(name string) *unstructured.Unstructured {
		t.Helper()
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(framework.RackedClusterGVK)
		if err := cluster.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, u); err != nil {
			t.Fatal(err)
		}
		return u
	}
	expect := func(u *unstructured.Unstructured, replicas int64) {
		t.Helper()
		racks, err := framework.RackMembers(u)
		if err != nil {
			t.Fatal(err)
		}
		lo, _, _ := unstructured.NestedInt64(u.Object, "spec", "scaleConfig", "minReplicas")
		hi, _, _ := unstructured.NestedInt64(u.Object, "spec", "scaleConfig", "maxReplicas")
		if slices.ContainsFunc(racks, func(m int64) bool { return m != replicas }) || lo != replicas || hi != replicas {
			t.Errorf("%s: racks %v, config [%d, %d], want every rack and the pin at %d", u.GetName(), racks, lo, hi, replicas)
		}
	}

	// Creates: M1 pins the config, M5 fans R out to racks given without
	// members.
	const n = 5
	for i := range n {
		u := framework.RackedCluster(ns, fmt.Sprintf("w-%d", i), 3)
		_ = unstructured.SetNestedSlice(u.Object, []interface{}{map[string]interface{}{"name": "a"}, map[string]interface{}{"name": "b", "members": int64(1)}}, "spec", "racks")
		if err := cluster.Client.Create(ctx, u); err != nil {
			t.Fatalf("create %s with every replica down: %v", u.GetName(), err)
		}
		expect(u, 3)
		counts.defaulted++
	}
	// Updates: the pin follows R (M3) and so do the racks (M5).
	for i := range n {
		u := get(fmt.Sprintf("w-%d", i))
		_ = unstructured.SetNestedField(u.Object, int64(4), "spec", "replicas")
		if err := cluster.Client.Update(ctx, u); err != nil {
			t.Fatalf("update %s with every replica down: %v", u.GetName(), err)
		}
		expect(u, 4)
		counts.fannedOut++
	}
	// Invalid writes: refused by the policy with the webhook's sentence.
	invalid := map[string]*unstructured.Unstructured{
		`spec.racks[1].name: Duplicate value: "a"`: framework.RackedCluster(ns, "duplicate", 2),
	}
	_ = unstructured.SetNestedSlice(invalid[`spec.racks[1].name: Duplicate value: "a"`].Object,
		[]interface{}{map[string]interface{}{"name": "a"}, map[string]interface{}{"name": "a"}}, "spec", "racks")
	ranged := framework.RackedCluster(ns, "inverted", 2)
	_ = unstructured.SetNestedMap(ranged.Object, map[string]interface{}{"minReplicas": int64(5), "maxReplicas": int64(3)}, "spec", "scaleConfig")
	invalid["spec.scaleConfig.minReplicas: Invalid value: 5"] = ranged
	for sentence, u := range invalid {
		err := cluster.Client.Create(ctx, u)
		if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), sentence) || !strings.Contains(err.Error(), "ValidatingAdmissionPolicy") {
			t.Errorf("create %s with every replica down: %v, want the policy's 422 saying %q", u.GetName(), err, sentence)
			continue
		}
		counts.refused++
	}
	// kubectl scale: admitted (the /scale entry is Ignore); the racks wait
	// for the controller.
	if out, err := cluster.Kubectl(ctx, "scale", "rackedclusters.samples.scaleplane.io", "w-0", "-n", ns, "--replicas=6"); err != nil {
		t.Fatalf("kubectl scale with every replica down: %v\n%s", err, out)
	}
	if r, _, _ := unstructured.NestedInt64(get("w-0").Object, "spec", "replicas"); r != 6 {
		t.Errorf("replicas %d after kubectl scale --replicas=6", r)
	}
	counts.scaled++
	// A trigger is the webhook's to judge (V5, V10, V11): refused while no
	// replica answers.
	withTrigger := func(name string) *unstructured.Unstructured {
		u := framework.RackedCluster(ns, name, 2)
		_ = unstructured.SetNestedMap(u.Object, map[string]interface{}{
			"minReplicas": int64(1), "maxReplicas": int64(4),
			"triggers": []interface{}{map[string]interface{}{"name": "rps", "type": "AverageValue", "query": `sum(rate(http_requests_total{namespace="${namespace}"}[1m]))`, "threshold": int64(10)}},
		}, "spec", "scaleConfig")
		return u
	}
	err := cluster.Client.Create(ctx, withTrigger("triggered"))
	if err == nil || !strings.Contains(err.Error(), "failed calling webhook") {
		t.Errorf("create with a trigger while every replica is down: %v, want the API server's failed webhook call", err)
	} else {
		counts.needWebhook++
	}
	t.Logf("with every replica killed: %d creates defaulted and fanned out, %d updates fanned out, %d invalid writes refused by the policies, %d kubectl scale admitted, %d trigger write refused for want of the webhook",
		counts.defaulted, counts.fannedOut, counts.refused, counts.scaled, counts.needWebhook)

	// A replica back: the count of the scale reaches the racks (C1), and
	// the trigger is judged by the webhook.
	d.startReady(t, "scaleplane-controller-manager-k-c")
	framework.Eventually(t, 0, func(ctx context.Context) (bool, string) {
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(framework.RackedClusterGVK)
		if err := cluster.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "w-0"}, u); err != nil {
			return false, err.Error()
		}
		racks, err := framework.RackMembers(u)
		if err != nil {
			return false, err.Error()
		}
		return !slices.ContainsFunc(racks, func(m int64) bool { return m != 6 }), fmt.Sprintf("racks %v, want 6 each", racks)
	})
	framework.Eventually(t, 0, func(ctx context.Context) (bool, string) {
		err := cluster.Client.Create(ctx, withTrigger("triggered"))
		return err == nil, fmt.Sprintf("create with a trigger once a replica is back: %v", err)
	})
}
