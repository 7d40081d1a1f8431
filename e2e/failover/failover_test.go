package failover

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/scaleplane/scaleplane/e2e/framework"
)

// controller-runtime's leader election periods, which scaleplane keeps: a
// candidate takes an expired lease within one retry period of its
// expiry; the holder gives up when it cannot renew within renewDeadline.
const (
	renewDeadline = 10 * time.Second
	retryPeriod   = 2 * time.Second
)

// TestLeaderKillUnderLoad runs two replicas of the binary as
// the shipped Deployment does, kills the leader with SIGKILL right after a
// `kubectl scale`, while scales of three workloads and a steady admission
// load keep going, and checks:
//
//   - the survivor takes the lease within the lease duration plus the
//     renew deadline;
//   - every admission that failed was a webhook call in flight on the
//     killed pod, cut by its death (nothing else failed: not the routing
//     to the survivor, not the leaderless window, not the takeover), and
//     there were no more failures than such calls: SIGKILL gives no
//     chance to finish them, and kube-apiserver does not retry a webhook
//     call whose connection broke (docs/design.md, "Failover");
//   - nothing lost and no double scale: every rack of every workload ends
//     at its last `kubectl scale`, and the recorded history of each
//     workload passes checkHistory (every scale applied once, each fanned
//     out at most once, never an older one after a newer one, never
//     half-applied).
func TestLeaderKillUnderLoad(t *testing.T) {
	leaderKillUnderLoad(t, deploy(t), false, "scaleplane-controller-manager-a", "scaleplane-controller-manager-b")
}

// leaderKillUnderLoad is TestLeaderKillUnderLoad on deployment d. With
// policies (d runs webhook.admission: policies) no admission may fail:
// the writes carry no trigger, so the API server's policies admit them and
// only /scale writes reach the webhook, whose entry is Ignore. a and b
// name the pods; every run in one test process needs names of its own
// (the Service stand-in keeps every endpoint it was given).
func leaderKillUnderLoad(t *testing.T, d *deployment, policies bool, a, b string) {
	ctx := context.Background()
	pods := d.startReady(t, a, b)
	noReadyBefore, unknownBefore := network.Refused()
	var leader, survivor *replica
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
			survivor = r
		}
	}
	t.Logf("leader %s, the other replica %s", leader.name, survivor.name)

	work, loadNS := cluster.Namespace(t), cluster.Namespace(t)
	waitAdmitted(t, work)
	if policies {
		waitPolicies(t, work)
	}
	const role = "failover.scaleplane.io/role"
	hist := watchHistory(t, work, role+"=scaled")
	workloads := []string{"scaled-0", "scaled-1", "scaled-2"}
	const initial = 2
	for _, w := range workloads {
		u := framework.RackedCluster(work, w, initial, initial, initial, initial)
		u.SetLabels(map[string]string{role: "scaled"})
		if err := cluster.Client.Create(ctx, u); err != nil {
			t.Fatalf("create %s: %v", w, err)
		}
	}

	adm := &admissions{}
	loadCtx, stopLoad := context.WithCancel(ctx)
	defer stopLoad()
	loadStart := time.Now()
	loads := startLoad(loadCtx, loadNS, adm)
	sc := startScaler(work, workloads, initial, adm)
	scalerStopped := false
	defer func() {
		if !scalerStopped {
			sc.stop()
		}
	}()

	// Before the kill: the leader fans out, and the killed pod will be one
	// that carries admission calls (the Service spreads connections).
	before := network.Stats(leader.name)
	framework.Eventually(t, 2*framework.DefaultTimeout, func(context.Context) (bool, string) {
		var notYet []string
		for _, w := range workloads {
			vs, err := hist.of(w)
			if err != nil {
				t.Fatal(err)
			}
			if fanOuts(vs) == 0 {
				notYet = append(notYet, w)
			}
		}
		st := network.Stats(leader.name)
		sent, _ := adm.counts()
		// With policies only /scale writes call the webhook.
		calls := policies || (st.Answered-before.Answered >= 20 && st.Open > 0)
		return len(notYet) == 0 && calls && sent >= 100,
			fmt.Sprintf("not fanned out yet: %v; the leader answered %d webhook calls and holds %d connections; %d admissions sent",
				notYet, st.Answered-before.Answered, st.Open, sent)
	})

	// The kill, right after a scale was issued.
	calls, _ := sc.succeeded(time.Time{})
	framework.Eventually(t, 0, func(context.Context) (bool, string) {
		n, _ := sc.succeeded(time.Time{})
		return n > calls, "waiting for the next kubectl scale"
	})
	openAtKill := network.Stats(leader.name).Open
	killedAt := time.Now()
	if err := leader.kill(); err != nil {
		t.Fatalf("kill -9 %s: %v", leader.name, err)
	}
	<-leader.exited
	t.Logf("killed %s (SIGKILL) while it held %d webhook connections", leader.name, openAtKill)

	// The survivor takes the lease once it expires.
	_, lease, err := leaseHolder(ctx)
	if err != nil {
		t.Fatal(err)
	}
	leaseDuration := time.Duration(*lease.Spec.LeaseDurationSeconds) * time.Second
	var takeover time.Duration
	framework.Eventually(t, leaseDuration+renewDeadline+retryPeriod, func(ctx context.Context) (bool, string) {
		holder, lease, err := leaseHolder(ctx)
		if err != nil {
			return false, err.Error()
		}
		if holder != survivor.name {
			return false, fmt.Sprintf("lease held by %q", holder)
		}
		takeover = lease.Spec.AcquireTime.Sub(killedAt)
		return true, ""
	})
	t.Logf("%s took the lease %s after the kill (lease duration %s)", survivor.name, takeover.Round(time.Millisecond), leaseDuration)

	// Keep going: every workload scaled again after the takeover, and more
	// admissions through the survivor alone.
	tookOver := time.Now()
	sentAtTakeover, _ := adm.counts()
	framework.Eventually(t, 2*framework.DefaultTimeout, func(context.Context) (bool, string) {
		_, since := sc.succeeded(tookOver)
		sent, _ := adm.counts()
		return len(since) == len(workloads) && sent-sentAtTakeover >= 100,
			fmt.Sprintf("%d of %d workloads scaled since the takeover, %d admissions sent since", len(since), len(workloads), sent-sentAtTakeover)
	})
	sc.stop()
	scalerStopped = true

	// Nothing lost: every rack at its workload's last scale.
	framework.Eventually(t, 0, func(ctx context.Context) (bool, string) {
		var off []string
		for _, w := range workloads {
			scaled := sc.scaled(w)
			want := scaled[len(scaled)-1]
			u := &unstructured.Unstructured{}
			u.SetGroupVersionKind(framework.RackedClusterGVK)
			if err := cluster.Client.Get(ctx, types.NamespacedName{Namespace: work, Name: w}, u); err != nil {
				return false, err.Error()
			}
			racks, err := framework.RackMembers(u)
			if err != nil {
				return false, err.Error()
			}
			if slices.ContainsFunc(racks, func(m int64) bool { return m != want }) {
				off = append(off, fmt.Sprintf("%s racks %v, want %d", w, racks, want))
			}
		}
		return len(off) == 0, fmt.Sprint(off)
	})
	for _, l := range loads {
		l.Stop()
	}
	stopLoad()
	elapsed := time.Since(loadStart)

	// No double scale: the whole history of every workload.
	framework.Eventually(t, 0, func(context.Context) (bool, string) {
		for _, w := range workloads {
			vs, err := hist.of(w)
			if err != nil {
				t.Fatal(err)
			}
			scaled := sc.scaled(w)
			if last := vs[len(vs)-1]; len(last.Racks) == 0 || last.Racks[0] != scaled[len(scaled)-1] {
				return false, fmt.Sprintf("the watch of %s has not seen its last fan-out yet", w)
			}
		}
		return true, ""
	})
	hist.stop()
	for _, w := range workloads {
		vs, _ := hist.of(w)
		scaled := sc.scaled(w)
		for _, p := range checkHistory(vs, scaled) {
			t.Errorf("%s: %s", w, p)
		}
		t.Logf("%s: scaled %v; %d versions, %d fan-out writes", w, scaled, len(vs), fanOuts(vs))
	}

	// Admissions: the only failures allowed are calls the kill cut.
	sent, failures := adm.counts()
	killed, alive := network.Stats(leader.name), network.Stats(survivor.name)
	all, _ := sc.succeeded(time.Time{})
	t.Logf("admissions: %d sent in %s (%.1f/s), %d failed; kubectl scale: %d calls, %d succeeded",
		sent, elapsed.Round(time.Millisecond), float64(sent)/elapsed.Seconds(), len(failures), len(sc.snapshot()), all)
	t.Logf("webhook calls answered: %s %d, %s %d; calls in flight on %s cut by the kill: %d",
		leader.name, killed.Answered, survivor.name, alive.Answered, leader.name, killed.Cut)
	for _, f := range failures {
		t.Logf("failed admission: %s (started %s after the kill): %v", f.What, f.Start.Sub(killedAt).Round(time.Millisecond), f.Err)
		if policies {
			t.Errorf("a failed admission with the policies on: %s: %v", f.What, f.Err)
			continue
		}
		if !cutByKill(f.Err) || f.Start.After(killed.LastCut) {
			t.Errorf("a failed admission that no call cut by the kill explains: %s: %v", f.What, f.Err)
		}
	}
	if len(failures) > killed.Cut {
		t.Errorf("%d admissions failed, more than the %d webhook calls the kill cut", len(failures), killed.Cut)
	}
	if alive.Cut != 0 {
		t.Errorf("%d webhook calls to the survivor were cut", alive.Cut)
	}
	if noReady, unknown := network.Refused(); noReady != noReadyBefore || unknown != unknownBefore {
		t.Errorf("the Service refused %d connections for want of a ready endpoint and %d to other addresses", noReady-noReadyBefore, unknown-unknownBefore)
	}
}

// waitAdmitted waits until the API server sends RackedCluster creates
// through the webhooks (it learns of caBundle changes through an
// informer), with server-side dry runs that leave nothing behind.
func waitAdmitted(t *testing.T, ns string) {
	t.Helper()
	framework.Eventually(t, 0, func(ctx context.Context) (bool, string) {
		u := framework.RackedCluster(ns, "probe", 3, 1, 2, 4)
		if err := cluster.Client.Create(ctx, u, client.DryRunAll); err != nil {
			return false, fmt.Sprintf("dry-run create: %v", err)
		}
		m, err := framework.RackMembers(u)
		if err != nil {
			return false, err.Error()
		}
		return m[0] == 3, fmt.Sprintf("dry-run create not mutated yet: racks %v", m)
	})
}
