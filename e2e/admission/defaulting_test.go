package admission

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestRacksFollowReplicas: M1 and M5 on create, M3 and M5 when replicas
// change with kubectl patch.
func TestRacksFollowReplicas(t *testing.T) {
	ns := namespace(t)
	mustApply(t, manifest{kind: "RackedCluster", name: "db", namespace: ns, spec: obj{
		"replicas": 3,
		"racks":    racks("rack-a", 1, "rack-b", 2, "rack-c", 5),
	}})
	u := get(t, "RackedCluster", ns, "db")
	if diff := cmp.Diff([]interface{}{i64(3), i64(3), i64(3)}, groupSizes(u, "spec.racks", "members")); diff != "" {
		t.Errorf("racks after create (-want +got):\n%s", diff)
	}
	wantFields(t, u, map[string]interface{}{"spec.scaleConfig": obj{"minReplicas": i64(3), "maxReplicas": i64(3)}})

	if _, err := kubectl(t, "patch", "rackedcluster", "db", "-n", ns, "--type=merge", "-p", `{"spec":{"replicas":5}}`); err != nil {
		t.Fatal(err)
	}
	u = get(t, "RackedCluster", ns, "db")
	if diff := cmp.Diff([]interface{}{i64(5), i64(5), i64(5)}, groupSizes(u, "spec.racks", "members")); diff != "" {
		t.Errorf("racks after patch (-want +got):\n%s", diff)
	}
	// M3: the pinned config follows.
	wantFields(t, u, map[string]interface{}{"spec.scaleConfig": obj{"minReplicas": i64(5), "maxReplicas": i64(5)}})

	// An edit of the whole object (what kubectl edit sends) keeps them in
	// line too: racks edited by hand are brought back to replicas.
	u.Object["spec"].(map[string]interface{})["racks"] = []interface{}{
		map[string]interface{}{"name": "rack-a", "members": int64(1)},
		map[string]interface{}{"name": "rack-b", "members": int64(5)},
		map[string]interface{}{"name": "rack-c", "members": int64(5)},
	}
	if _, err := cluster.KubectlWithInput(t.Context(), mustJSON(t, u.Object), "replace", "-f", "-"); err != nil {
		t.Fatal(err)
	}
	u = get(t, "RackedCluster", ns, "db")
	if diff := cmp.Diff([]interface{}{i64(5), i64(5), i64(5)}, groupSizes(u, "spec.racks", "members")); diff != "" {
		t.Errorf("racks after replace (-want +got):\n%s", diff)
	}
}

// TestRangeWithoutReplicas: M4 gives a WorkerGroup (HPA on itself) a count
// to start from; a Function (HPA on its Deployment) keeps none.
func TestRangeWithoutReplicas(t *testing.T) {
	ns := namespace(t)
	mustApply(t, manifest{kind: "WorkerGroup", name: "wg", namespace: ns, spec: obj{
		"size": 4, "scalePolicy": obj{"minReplicas": 2, "maxReplicas": 6},
	}})
	wantFields(t, get(t, "WorkerGroup", ns, "wg"), map[string]interface{}{
		"spec.replicas":    i64(2),
		"spec.scalePolicy": obj{"minReplicas": i64(2), "maxReplicas": i64(6)},
	})
	mustApply(t, manifest{kind: "Function", name: "fn", namespace: ns, spec: obj{
		"runtime": "nodejs22", "scaleConfig": obj{"maxReplicas": 4},
	}})
	wantFields(t, get(t, "Function", ns, "fn"), map[string]interface{}{
		"spec.replicas":    nil,
		"spec.scaleConfig": obj{"minReplicas": i64(1), "maxReplicas": i64(4)},
	})
}

// TestNoReplicasKeepsRacks: without replicas (and without a range) every
// rack keeps the members it was given and nothing is added.
func TestNoReplicasKeepsRacks(t *testing.T) {
	ns := namespace(t)
	mustApply(t, manifest{kind: "RackedCluster", name: "db", namespace: ns, spec: obj{"racks": racks("a", 1, "b", 4)}})
	u := get(t, "RackedCluster", ns, "db")
	if diff := cmp.Diff(obj{"racks": list{obj{"name": "a", "members": i64(1)}, obj{"name": "b", "members": i64(4)}}}, u.Object["spec"]); diff != "" {
		t.Errorf("spec (-want +got):\n%s", diff)
	}
}

// TestWarnings: W1 and W2 reach the user as kubectl warnings and do not
// block the write.
func TestWarnings(t *testing.T) {
	ns := namespace(t)
	tests := []struct {
		m    manifest
		want string
	}{{
		m:    manifest{kind: "RackedCluster", name: "w1", spec: obj{"replicas": 12, "scaleConfig": fullConfig(), "racks": racks("a", 1)}},
		want: "Warning: spec.replicas (12) is outside spec.scaleConfig [2, 9]",
	}, {
		m:    manifest{kind: "Function", name: "w2", spec: obj{"replicas": 2, "scaleConfig": obj{"minReplicas": 1, "maxReplicas": 5}}},
		want: "Warning: spec.scaleConfig is ignored while spec.replicas is set",
	}}
	for _, tc := range tests {
		tc.m.namespace = ns
		_, stderr, err := kubectlStderr(t, tc.m.json(), "apply", "-f", "-")
		if err != nil {
			t.Fatalf("%s refused: %v", tc.m.name, err)
		}
		if !strings.Contains(stderr, tc.want) {
			t.Errorf("%s: kubectl printed %q, want a line with %q", tc.m.name, stderr, tc.want)
		}
	}
}

// TestUnknownFieldsKept: fields scaleplane does not own survive defaulting
// untouched, on the foreign kind whose zones carry vendor settings.
func TestUnknownFieldsKept(t *testing.T) {
	ns := namespace(t)
	mustApply(t, manifest{kind: "ZonedDatabase", name: "zdb", namespace: ns, spec: obj{
		"engine":   "rocks",
		"topology": obj{"replicasPerZone": 2, "zones": zones("eu-1", 1, "eu-2", 7)},
	}})
	u := get(t, "ZonedDatabase", ns, "zdb")
	want := obj{"engine": "rocks", "topology": obj{"replicasPerZone": i64(2), "zones": list{
		obj{"zoneName": "eu-1", "size": i64(2), "vendor": obj{"diskClass": "nvme", "weight": 1.5}},
		obj{"zoneName": "eu-2", "size": i64(2), "vendor": obj{"diskClass": "nvme", "weight": 1.5}},
	}}}
	if diff := cmp.Diff(want, u.Object["spec"]); diff != "" {
		t.Errorf("spec (-want +got):\n%s", diff)
	}
	// M1 does not invent an annotation the user never wrote.
	if _, ok := u.GetAnnotations()["scaleplane.io/scale-config"]; ok {
		t.Errorf("scale config annotation created: %v", u.GetAnnotations())
	}
}

// TestForeignKind: the foreign kind gets the same rules at its own paths,
// with its scale config in an annotation.
func TestForeignKind(t *testing.T) {
	ns := namespace(t)
	mustApply(t, manifest{kind: "ZonedDatabase", name: "pinned", namespace: ns,
		annotations: scaleConfigJSON(obj{"minReplicas": 3, "maxReplicas": 3}),
		spec:        obj{"topology": obj{"replicasPerZone": 3, "zones": zones("eu-1", 1, "eu-2", 2, "eu-3", 5)}},
	})
	u := get(t, "ZonedDatabase", ns, "pinned")
	if diff := cmp.Diff([]interface{}{i64(3), i64(3), i64(3)}, groupSizes(u, "spec.topology.zones", "size")); diff != "" {
		t.Errorf("zones after create (-want +got):\n%s", diff)
	}
	if _, err := kubectl(t, "patch", "zoneddatabase", "pinned", "-n", ns, "--type=merge", "-p", `{"spec":{"topology":{"replicasPerZone":5}}}`); err != nil {
		t.Fatal(err)
	}
	u = get(t, "ZonedDatabase", ns, "pinned")
	if diff := cmp.Diff([]interface{}{i64(5), i64(5), i64(5)}, groupSizes(u, "spec.topology.zones", "size")); diff != "" {
		t.Errorf("zones after patch (-want +got):\n%s", diff)
	}
	// M3 in an annotation.
	if diff := cmp.Diff(obj{"minReplicas": 5.0, "maxReplicas": 5.0}, annotationConfig(t, u)); diff != "" {
		t.Errorf("annotation config after patch (-want +got):\n%s", diff)
	}

	// M2 and M4 in an annotation: the bounds are completed and replicas
	// starts at the minimum.
	mustApply(t, manifest{kind: "ZonedDatabase", name: "ranged", namespace: ns,
		annotations: scaleConfigJSON(obj{"maxReplicas": 6}),
		spec:        obj{"topology": obj{"zones": zones("eu-1", 4)}},
	})
	u = get(t, "ZonedDatabase", ns, "ranged")
	wantFields(t, u, map[string]interface{}{"spec.topology.replicasPerZone": i64(1)})
	if diff := cmp.Diff([]interface{}{i64(1)}, groupSizes(u, "spec.topology.zones", "size")); diff != "" {
		t.Errorf("zones (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(obj{"minReplicas": 1.0, "maxReplicas": 6.0}, annotationConfig(t, u)); diff != "" {
		t.Errorf("annotation config (-want +got):\n%s", diff)
	}

	// S1 on the foreign kind names its own replicas field and the
	// annotation.
	_, err := kubectl(t, "scale", "zoneddatabase", "ranged", "-n", ns, "--replicas=9")
	want := "spec.topology.replicasPerZone: Invalid value: 9: outside the autoscaling range [1, 6] of the annotation scaleplane.io/scale-config; raise maxReplicas in the annotation scaleplane.io/scale-config to 9 or more"
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("kubectl scale to 9: %v\nwant a refusal containing %q", err, want)
	}
}

// TestRejectedUpdateLeavesObject: an object that was valid stays exactly
// as it was after a refused update.
func TestRejectedUpdateLeavesObject(t *testing.T) {
	ns := namespace(t)
	good := manifest{kind: "RackedCluster", name: "db", namespace: ns, spec: obj{"replicas": 3, "scaleConfig": fullConfig(), "racks": racks("a", 3)}}
	mustApply(t, good)
	before := get(t, "RackedCluster", ns, "db")

	bad := good
	c := fullConfig()
	c["minReplicas"], c["maxReplicas"] = 7, 4
	bad.spec = obj{"replicas": 3, "scaleConfig": c, "racks": racks("a", 3)}
	if _, err := apply(t, bad); err == nil || !strings.Contains(err.Error(), "spec.scaleConfig.minReplicas:") {
		t.Fatalf("invalid update: %v, want a refusal naming spec.scaleConfig.minReplicas", err)
	}
	if _, err := kubectl(t, "patch", "rackedcluster", "db", "-n", ns, "--type=merge", "-p", `{"spec":{"replicas":-2}}`); err == nil {
		t.Fatal("negative replicas patch accepted")
	}
	after := get(t, "RackedCluster", ns, "db")
	if after.GetResourceVersion() != before.GetResourceVersion() {
		t.Errorf("resourceVersion moved from %s to %s", before.GetResourceVersion(), after.GetResourceVersion())
	}
	if diff := cmp.Diff(before.Object, after.Object); diff != "" {
		t.Errorf("object changed by refused updates (-before +after):\n%s", diff)
	}
}
