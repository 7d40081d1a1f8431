package admission

import (
	"fmt"
	"strings"
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// TestInvalidObjects applies invalid objects of every kind with kubectl and
// checks that each is refused with the field path of its problem in
// kubectl's message, and that none was stored.
func TestInvalidObjects(t *testing.T) {
	ns := namespace(t)
	rc := func(edit func(c obj)) manifest {
		c := fullConfig()
		edit(c)
		return manifest{kind: "RackedCluster", spec: obj{"replicas": 3, "scaleConfig": c, "racks": racks("a", 3, "b", 3)}}
	}
	wg := func(edit func(c obj)) manifest {
		c := triggerConfig()
		edit(c)
		return manifest{kind: "WorkerGroup", spec: obj{"replicas": 2, "scalePolicy": c}}
	}
	trigger := func(c obj, i int) obj { return c["triggers"].(list)[i].(obj) }
	zdb := func(spec obj, cfg string) manifest {
		m := manifest{kind: "ZonedDatabase", spec: spec}
		if cfg != "" {
			m.annotations = map[string]string{"scaleplane.io/scale-config": cfg}
		}
		return m
	}
	sc := "spec.scaleConfig"
	ann := "metadata.annotations[scaleplane.io/scale-config]"
	tq0 := "spec.scalePolicy.triggers[0].query"
	tests := []struct {
		name  string
		m     manifest
		paths []string
	}{
		// V1, V2: counts and bounds.
		{"min above max", rc(func(c obj) { c["minReplicas"], c["maxReplicas"] = 5, 2 }), []string{sc + ".minReplicas"}},
		{"negative replicas", manifest{kind: "RackedCluster", spec: obj{"replicas": -1, "racks": racks("a", 1)}}, []string{"spec.replicas"}},
		{"replicas above the profile bound", manifest{kind: "RackedCluster", spec: obj{"replicas": 1001}}, []string{"spec.replicas"}},
		{"maxReplicas above the profile bound", rc(func(c obj) { c["maxReplicas"] = 5000 }), []string{sc + ".maxReplicas"}},
		{"negative minReplicas", rc(func(c obj) { c["minReplicas"] = -1 }), []string{sc + ".minReplicas"}},
		{"range from zero without triggers or idle", manifest{kind: "Function", spec: obj{"scaleConfig": obj{"minReplicas": 0, "maxReplicas": 3}}}, []string{sc + ".minReplicas"}},
		{"function min above max", manifest{kind: "Function", spec: obj{"replicas": 2, "scaleConfig": obj{"minReplicas": 4, "maxReplicas": 3}}}, []string{sc + ".minReplicas"}},
		{"workergroup negative replicas", manifest{kind: "WorkerGroup", spec: obj{"replicas": -2}}, []string{"spec.replicas"}},
		// V3: metrics.
		{"Utilization target on a Pods metric", rc(func(c obj) {
			at(c["metrics"].(list)[1].(obj), "pods", "target")["type"] = "Utilization"
		}), []string{sc + ".metrics[1].pods.target.type"}},
		{"unknown metric type", rc(func(c obj) { c["metrics"].(list)[0].(obj)["type"] = "Custom" }), []string{sc + ".metrics[0].type"}},
		{"metric type without its source", rc(func(c obj) { c["metrics"].(list)[0].(obj)["type"] = "Pods" }), []string{sc + ".metrics[0].pods"}},
		{"zero averageUtilization", rc(func(c obj) {
			at(c["metrics"].(list)[0].(obj), "resource", "target")["averageUtilization"] = 0
		}), []string{sc + ".metrics[0].resource.target.averageUtilization"}},
		{"zero averageValue", rc(func(c obj) {
			at(c["metrics"].(list)[1].(obj), "pods", "target")["averageValue"] = "0"
		}), []string{sc + ".metrics[1].pods.target.averageValue"}},
		{"container resource without a container", rc(func(c obj) {
			c["metrics"] = list{obj{"type": "ContainerResource", "containerResource": obj{"name": "cpu", "target": obj{"type": "Utilization", "averageUtilization": 60}}}}
		}), []string{sc + ".metrics[0].containerResource.container"}},
		{"metric selector that does not parse", rc(func(c obj) {
			at(c["metrics"].(list)[1].(obj), "pods", "metric")["selector"] = obj{"matchExpressions": list{obj{"key": "tier", "operator": "Near", "values": list{"db"}}}}
		}), []string{sc + ".metrics[1].pods.metric.selector.matchExpressions[0].operator"}},
		// V4: behavior.
		{"policy periodSeconds 0", rc(func(c obj) {
			at(c, "behavior", "scaleUp")["policies"].(list)[0].(obj)["periodSeconds"] = 0
		}), []string{sc + ".behavior.scaleUp.policies[0].periodSeconds"}},
		{"policy periodSeconds 1801", rc(func(c obj) {
			at(c, "behavior", "scaleDown")["policies"].(list)[0].(obj)["periodSeconds"] = 1801
		}), []string{sc + ".behavior.scaleDown.policies[0].periodSeconds"}},
		{"selectPolicy Fastest", rc(func(c obj) { at(c, "behavior", "scaleUp")["selectPolicy"] = "Fastest" }), []string{sc + ".behavior.scaleUp.selectPolicy"}},
		{"stabilization window above an hour", rc(func(c obj) { at(c, "behavior", "scaleDown")["stabilizationWindowSeconds"] = 3601 }), []string{sc + ".behavior.scaleDown.stabilizationWindowSeconds"}},
		{"policy type Replicas", rc(func(c obj) {
			at(c, "behavior", "scaleUp")["policies"].(list)[0].(obj)["type"] = "Replicas"
		}), []string{sc + ".behavior.scaleUp.policies[0].type"}},
		{"policy value 0", rc(func(c obj) {
			at(c, "behavior", "scaleUp")["policies"].(list)[0].(obj)["value"] = 0
		}), []string{sc + ".behavior.scaleUp.policies[0].value"}},
		{"negative tolerance", rc(func(c obj) { at(c, "behavior", "scaleUp")["tolerance"] = "-0.1" }), []string{sc + ".behavior.scaleUp.tolerance"}},
		// V5, V6: triggers.
		{"unparsable PromQL", wg(func(c obj) { trigger(c, 0)["query"] = "sum(rate(http_requests_total[2m]" }), []string{"spec.scalePolicy.triggers[0].query"}},
		{"range-vector query", wg(func(c obj) { trigger(c, 1)["query"] = "queue_depth[5m]" }), []string{"spec.scalePolicy.triggers[1].query"}},
		{"duplicate trigger names", wg(func(c obj) { trigger(c, 1)["name"] = "rps" }), []string{"spec.scalePolicy.triggers[1].name"}},
		{"trigger type Ratio", wg(func(c obj) { trigger(c, 0)["type"] = "Ratio" }), []string{"spec.scalePolicy.triggers[0].type"}},
		{"trigger threshold 0", wg(func(c obj) { trigger(c, 0)["threshold"] = 0 }), []string{"spec.scalePolicy.triggers[0].threshold"}},
		{"negative activationThreshold", wg(func(c obj) { trigger(c, 0)["activationThreshold"] = -1 }), []string{"spec.scalePolicy.triggers[0].activationThreshold"}},
		{"trigger without a name", wg(func(c obj) { delete(trigger(c, 1), "name") }), []string{"spec.scalePolicy.triggers[1].name"}},
		{"metrics and triggers together", rc(func(c obj) { c["triggers"] = triggerConfig()["triggers"] }), []string{sc + ".triggers"}},
		{"pollingIntervalSeconds 0", rc(func(c obj) { c["pollingIntervalSeconds"] = 0 }), []string{sc + ".pollingIntervalSeconds"}},
		// V7: idle and schedule.
		{"bad time zone", rc(func(c obj) { at(c, "schedule")["timeZone"] = "Mars/Olympus_Mons" }), []string{sc + ".schedule.timeZone"}},
		{"wake-up at 25:00", rc(func(c obj) { at(c, "schedule")["wakeUp"] = list{"07:30", "25:00"} }), []string{sc + ".schedule.wakeUp[1]"}},
		{"scale-down time 7pm", rc(func(c obj) {
			at(c, "schedule")["scaleDownTimeout"] = list{obj{"time": "7pm", "seconds": 60}}
		}), []string{sc + ".schedule.scaleDownTimeout[0].time"}},
		{"negative scale-down seconds", rc(func(c obj) {
			at(c, "schedule")["scaleDownTimeout"] = list{obj{"time": "19:00", "seconds": -5}}
		}), []string{sc + ".schedule.scaleDownTimeout[0].seconds"}},
		{"negative idle timeout", rc(func(c obj) { at(c, "idle")["timeoutSeconds"] = -1 }), []string{sc + ".idle.timeoutSeconds"}},
		{"replicasAtStart 0", rc(func(c obj) { at(c, "idle")["replicasAtStart"] = 0 }), []string{sc + ".idle.replicasAtStart"}},
		{"replicasAtStart above maxReplicas", rc(func(c obj) { at(c, "idle")["replicasAtStart"] = 10 }), []string{sc + ".idle.replicasAtStart"}},
		// V8: groups.
		{"duplicate rack names", manifest{kind: "RackedCluster", spec: obj{"racks": racks("a", 1, "b", 1, "a", 1)}}, []string{"spec.racks[2].name"}},
		{"negative members", manifest{kind: "RackedCluster", spec: obj{"racks": racks("a", 1, "b", -1)}}, []string{"spec.racks[1].members"}},
		{"rack without a name", manifest{kind: "RackedCluster", spec: obj{"racks": list{obj{"members": 1}}}}, []string{"spec.racks[0].name"}},
		// The foreign kind: V1, V8 at its own paths, V9 in its annotation.
		{"foreign: unknown field in the annotation config", zdb(obj{"topology": obj{"replicasPerZone": 2}}, `{"minReplicas":2,"maxReplicas":2,"maxReplica":4}`), []string{ann + ".maxReplica"}},
		{"foreign: annotation that is not JSON", zdb(nil, `{"minReplicas": 2`), []string{ann}},
		{"foreign: annotation with a string count", zdb(nil, `{"minReplicas":"two"}`), []string{ann + ".minReplicas"}},
		// Validation used to trim this space and the
		// mutating webhook then answered 500 (M2 rewrites the annotation).
		{"foreign: annotation after a no-break space", zdb(obj{"topology": obj{"replicasPerZone": 3}}, "\u00a0{\"minReplicas\":2}"), []string{ann}},
		{"foreign: annotation before a form feed", zdb(obj{"topology": obj{"replicasPerZone": 3}}, "{\"minReplicas\":2}\f"), []string{ann}},
		{"foreign: annotation min above max", zdb(nil, `{"minReplicas":4,"maxReplicas":2}`), []string{ann + ".minReplicas"}},
		{"foreign: annotation bad behavior", zdb(nil, `{"minReplicas":1,"maxReplicas":3,"behavior":{"scaleUp":{"selectPolicy":"Fastest"}}}`), []string{ann + ".behavior.scaleUp.selectPolicy"}},
		{"foreign: duplicate zones", zdb(obj{"topology": obj{"zones": zones("eu-1", 1, "eu-1", 1)}}, ""), []string{"spec.topology.zones[1].zoneName"}},
		{"foreign: negative zone size", zdb(obj{"topology": obj{"zones": zones("eu-1", -3)}}, ""), []string{"spec.topology.zones[0].size"}},
		{"foreign: replicas above its profile's bound", zdb(obj{"topology": obj{"replicasPerZone": 51}}, ""), []string{"spec.topology.replicasPerZone"}},
		// V10: what a trigger query may cost.
		{"subquery over 10 years at 1ms", wg(func(c obj) {
			trigger(c, 0)["query"] = `max_over_time(sum(rate(http_requests_total[5m]))[10y:1ms])`
		}), []string{tq0}},
		{"subquery over a year at the default step", wg(func(c obj) { trigger(c, 0)["query"] = `max_over_time(up[1y:])` }), []string{tq0}},
		{"range selector over a day", wg(func(c obj) { trigger(c, 1)["query"] = `sum(rate(queue_depth[1d]))` }), []string{"spec.scalePolicy.triggers[1].query"}},
		{"query of 5 KB", wg(func(c obj) { trigger(c, 0)["query"] = `sum(up{a="` + strings.Repeat("b", 5000) + `"})` }), []string{tq0}},
		{"query nesting 101 deep", wg(func(c obj) {
			trigger(c, 0)["query"] = strings.Repeat("(", 101) + "1" + strings.Repeat(")", 101)
		}), []string{tq0}},
		{"chain of 101 operators", wg(func(c obj) { trigger(c, 0)["query"] = strings.Repeat("a + ", 101) + "a" }), []string{tq0}},
		{"regular expression bomb", wg(func(c obj) {
			trigger(c, 0)["query"] = `up{a=~"` + strings.Repeat(".{1000}", 500) + `"}`
		}), []string{tq0}},
		// V11: references resolve.
		{"placeholder typo", wg(func(c obj) { trigger(c, 0)["query"] = `sum(up{namespace="${namspace}"})` }), []string{tq0}},
		{"placeholder nobody fills", wg(func(c obj) { trigger(c, 0)["query"] = `sum(up{cluster="${cluster}"})` }), []string{tq0}},
		{"unknown trigger source", wg(func(c obj) { trigger(c, 0)["source"] = "kafka" }), []string{"spec.scalePolicy.triggers[0].source"}},
		{"source prometheus without a server", wg(func(c obj) { trigger(c, 0)["source"] = "prometheus" }), []string{"spec.scalePolicy.triggers[0].source"}},
		{"cron trigger of type Value", wg(func(c obj) {
			c["triggers"].(list)[0] = obj{"name": "office", "type": "Value", "source": "cron", "threshold": 1, "metadata": obj{"start": "08:00", "end": "19:00"}}
		}), []string{"spec.scalePolicy.triggers[0].type"}},
		{"cron trigger metadata it cannot read", wg(func(c obj) {
			c["triggers"].(list)[0] = obj{"name": "office", "type": "AverageValue", "source": "cron", "threshold": 1,
				"metadata": obj{"start": "8am", "end": "19:00", "timeZone": "Europe/Paris"}}
		}), []string{"spec.scalePolicy.triggers[0].metadata[start]", "spec.scalePolicy.triggers[0].metadata[timeZone]"}},
		{"cron trigger without a window", wg(func(c obj) {
			c["triggers"].(list)[0] = obj{"name": "office", "type": "AverageValue", "source": "cron", "threshold": 1}
		}), []string{"spec.scalePolicy.triggers[0].metadata"}},
		{"server address in trigger metadata", wg(func(c obj) {
			trigger(c, 0)["metadata"] = obj{"serverAddress": "http://kubernetes.default.svc:443"}
		}), []string{"spec.scalePolicy.triggers[0].metadata[serverAddress]"}},
		{"rack name that is no label value", manifest{kind: "RackedCluster", spec: obj{"racks": racks("rack/a", 1)}}, []string{"spec.racks[0].name"}},
		{"rack name of 64 characters", manifest{kind: "RackedCluster", spec: obj{"racks": racks(strings.Repeat("r", 64), 1)}}, []string{"spec.racks[0].name"}},
		{"empty dependsOn entry", wg(func(c obj) { c["dependsOn"] = list{"db", ""} }), []string{"spec.scalePolicy.dependsOn[1]"}},
		{"duplicate dependsOn entry", wg(func(c obj) { c["dependsOn"] = list{"db", "db"} }), []string{"spec.scalePolicy.dependsOn[1]"}},
		{"dependsOn not an object name", wg(func(c obj) { c["dependsOn"] = list{"Not_A_Name", "ns/db"} }), []string{"spec.scalePolicy.dependsOn[0]", "spec.scalePolicy.dependsOn[1]"}},
		{"dependsOn the workload itself", func() manifest {
			m := wg(func(c obj) { c["dependsOn"] = list{"self-dependent"} })
			m.name = "self-dependent"
			return m
		}(), []string{"spec.scalePolicy.dependsOn[0]"}},
		// Several problems: all reported in one refusal. (A negative count
		// is refused by the API server's own /scale path check before any
		// validating webhook runs, so this one is too large instead.)
		{"every problem at once", manifest{kind: "RackedCluster", spec: obj{
			"replicas":    1001,
			"scaleConfig": obj{"minReplicas": 4, "maxReplicas": 2, "behavior": obj{"scaleUp": obj{"selectPolicy": "Fastest"}}},
			"racks":       racks("a", 1, "a", 1),
		}}, []string{"spec.replicas", sc + ".minReplicas", sc + ".behavior.scaleUp.selectPolicy", "spec.racks[1].name"}},
	}
	// kube-apiserver refuses these itself, before any validating webhook:
	// a negative count at a CRD's /scale specReplicasPath.
	refusedByAPIServer := map[string]bool{"negative replicas": true, "workergroup negative replicas": true}
	if len(tests) < 70 {
		t.Fatalf("only %d invalid objects; the suite promises at least 70", len(tests))
	}
	for i, tc := range tests {
		if tc.m.name == "" {
			tc.m.name = fmt.Sprintf("bad-%02d", i)
		}
		tc.m.namespace = ns
		t.Run(tc.name, func(t *testing.T) {
			// One at a time, so that the webhook's refusal counter says
			// who refused each object.
			before := deniedReviews(t, tc.m.kind)
			out, err := apply(t, tc.m)
			if err == nil {
				t.Fatalf("accepted: %s\n%s", out, tc.m.json())
			}
			t.Logf("refused: %v", err)
			for _, p := range tc.paths {
				if !strings.Contains(err.Error(), p+":") {
					t.Errorf("kubectl's message does not name %s:\n%v", p, err)
				}
			}
			want := 1.0
			if refusedByAPIServer[tc.name] {
				want = 0
			}
			if got := deniedReviews(t, tc.m.kind) - before; got != want {
				t.Errorf("the validating webhook refused it %v times, want %v", got, want)
			}
		})
	}
	t.Cleanup(func() {
		// None of them may have been stored, not even partly.
		for kind, resource := range resources {
			out, err := kubectl(t, "get", resource, "-n", ns, "-o", "name")
			if err != nil || strings.TrimSpace(out) != "" {
				t.Errorf("%s stored after refusals: %q %v", kind, out, err)
			}
		}
	})
}

// deniedReviews reads scaleplane_admission_reviews_total for refusals of
// kind by the validating webhook, from the registry the in-process webhook
// server counts in.
func deniedReviews(t *testing.T, kind string) float64 {
	t.Helper()
	families, err := metrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	gk := gvks[kind].GroupKind().String()
	var n float64
	for _, f := range families {
		if f.GetName() != "scaleplane_admission_reviews_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["webhook"] == "validate" && labels["kind"] == gk && labels["result"] == "denied" {
				n += m.GetCounter().GetValue()
			}
		}
	}
	return n
}
