package hostile

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// Field paths of the sample kinds' scale configs.
const (
	sc  = "spec.scaleConfig"
	sp  = "spec.scalePolicy"
	ann = "metadata.annotations[scaleplane.io/scale-config]"
)

// set puts v at path in o (string keys and list indices), creating the
// objects on the way, and returns o.
func set(o obj, v any, path ...any) obj {
	var cur any = o
	for i, p := range path {
		last := i == len(path)-1
		switch k := p.(type) {
		case string:
			m := cur.(obj)
			if last {
				m[k] = v
				break
			}
			if _, ok := m[k]; !ok {
				m[k] = obj{}
			}
			cur = m[k]
		case int:
			l := cur.(list)
			if last {
				l[k] = v
				break
			}
			cur = l[k]
		}
	}
	return o
}

func racks(names ...string) list {
	l := list{}
	for _, n := range names {
		l = append(l, obj{"name": n, "members": 1})
	}
	return l
}

// rcSpec is a valid RackedCluster spec with a scale config c (nil: none).
func rcSpec(c obj) obj {
	s := obj{"replicas": 3, "racks": racks("a", "b")}
	if c != nil {
		s["scaleConfig"] = c
	}
	return s
}

// metricsConfig is a valid config for the built-in HPA, with behavior.
func metricsConfig() obj {
	return obj{
		"minReplicas": 2, "maxReplicas": 9,
		"metrics": list{
			obj{"type": "Resource", "resource": obj{"name": "cpu", "target": obj{"type": "Utilization", "averageUtilization": 70}}},
			obj{"type": "Pods", "pods": obj{"metric": obj{"name": "rps"}, "target": obj{"type": "AverageValue", "averageValue": "200m"}}},
		},
		"behavior": obj{
			"scaleUp":   obj{"selectPolicy": "Max", "policies": list{obj{"type": "Pods", "value": 4, "periodSeconds": 15}}},
			"scaleDown": obj{"stabilizationWindowSeconds": 300, "policies": list{obj{"type": "Percent", "value": 10, "periodSeconds": 60}}},
		},
	}
}

// triggerConfig is a valid config for the trigger autoscaler with one
// trigger reading query.
func triggerConfig(query string) obj {
	return obj{"minReplicas": 1, "maxReplicas": 5, "triggers": list{trigger("t", query)}}
}

func trigger(name, query string) obj {
	return obj{"name": name, "type": "AverageValue", "query": query, "threshold": 10}
}

// scheduleConfig is a valid config with idle settings and a schedule.
func scheduleConfig() obj {
	return obj{"minReplicas": 0, "maxReplicas": 4,
		"idle":     obj{"replicasAtStart": 1, "timeoutSeconds": 300},
		"schedule": obj{"timeZone": "Europe/Paris", "wakeUp": list{"07:30"}, "scaleDownTimeout": list{obj{"time": "20:00", "seconds": 60}}},
	}
}

func num(s string) json.Number { return json.Number(s) }

// kubectlTypeInputs: a wrong type at every path a profile reads. The
// RackedCluster's schema types its fields, so the API server refuses most
// before any webhook; the LooseCluster's schema types nothing, so the same
// inputs reach scaleplane's decoder, which must refuse each at its path.
// behavior and metric items preserve unknown fields even in the
// RackedCluster's schema.
func (s *suite) kubectlTypeInputs(t *testing.T) {
	loose := func(name string, spec obj, path string) kubectlInput {
		return kubectlInput{name: "LooseCluster: " + name, kind: "LooseCluster", spec: spec, want: refused(path)}
	}
	rc := func(name string, spec obj, path string) kubectlInput {
		return kubectlInput{name: "RackedCluster: " + name, kind: "RackedCluster", spec: spec, want: refused(path)}
	}
	s.runKubectl(t, []kubectlInput{
		rc("replicas a string", set(rcSpec(nil), "3", "replicas"), "spec.replicas"),
		rc("racks a string", set(rcSpec(nil), "a,b", "racks"), "spec.racks"),
		rc("members a string", set(rcSpec(nil), "3", "racks", 0, "members"), "spec.racks[0].members"),
		rc("rack name a number", set(rcSpec(nil), 7, "racks", 1, "name"), "spec.racks[1].name"),
		rc("scaleConfig a string", set(rcSpec(nil), "min=1,max=3", "scaleConfig"), sc),
		rc("minReplicas a string", rcSpec(set(metricsConfig(), "two", "minReplicas")), sc+".minReplicas"),
		rc("metrics a number", rcSpec(set(metricsConfig(), 7, "metrics")), sc+".metrics"),
		// kubectl asks for strict field validation: the API server refuses
		// the object's fields as unknown (400) before any webhook sees it.
		{name: "RackedCluster: racks an object", kind: "RackedCluster", spec: set(rcSpec(nil), obj{"a": 1}, "racks"), want: kubectlResult{Code: 400}},
		rc("a metric a string", rcSpec(set(metricsConfig(), "cpu", "metrics", 0)), sc+".metrics[0]"),
		rc("behavior a list", rcSpec(set(metricsConfig(), list{"fast"}, "behavior")), sc+".behavior"),
		rc("policy value a string", rcSpec(set(metricsConfig(), "4", "behavior", "scaleUp", "policies", 0, "value")), sc+".behavior.scaleUp.policies[0].value"),
		rc("averageUtilization a string", rcSpec(set(metricsConfig(), "70%", "metrics", 0, "resource", "target", "averageUtilization")), sc+".metrics[0].resource.target.averageUtilization"),
		rc("threshold a string", rcSpec(set(triggerConfig("vector(1)"), "10", "triggers", 0, "threshold")), sc+".triggers[0].threshold"),
		rc("wakeUp a string", rcSpec(set(scheduleConfig(), "07:30", "schedule", "wakeUp")), sc+".schedule.wakeUp"),
		rc("dependsOn a string", rcSpec(set(metricsConfig(), "db", "dependsOn")), sc+".dependsOn"),
		loose("replicas a string", set(rcSpec(nil), "3", "replicas"), "spec.replicas"),
		loose("replicas a fraction", set(rcSpec(nil), 2.5, "replicas"), "spec.replicas"),
		loose("replicas an object", set(rcSpec(nil), obj{"value": 3}, "replicas"), "spec.replicas"),
		loose("racks an object", set(rcSpec(nil), obj{"a": 1}, "racks"), "spec.racks"),
		loose("a rack a string", set(rcSpec(nil), "a", "racks", 0), "spec.racks[0]"),
		loose("members a string", set(rcSpec(nil), "3", "racks", 0, "members"), "spec.racks[0].members"),
		loose("rack name a number", set(rcSpec(nil), 7, "racks", 1, "name"), "spec.racks[1].name"),
		loose("scaleConfig a string", set(rcSpec(nil), "min=1,max=3", "scaleConfig"), sc),
		loose("maxReplicas a list", rcSpec(set(metricsConfig(), list{9}, "maxReplicas")), sc+".maxReplicas"),
		// A threshold may be a quantity string (api/v1alpha1's Trigger
		// writes one), so only a string that is no quantity is refused.
		loose("threshold a string that is no quantity", rcSpec(set(triggerConfig("vector(1)"), "ten", "triggers", 0, "threshold")), sc+".triggers[0].threshold"),
		{name: "LooseCluster: threshold a quantity string", kind: "LooseCluster", spec: rcSpec(set(triggerConfig("vector(1)"), "500m", "triggers", 0, "threshold")), want: kubectlResult{Code: 201}},
		loose("triggers an object", rcSpec(set(triggerConfig("vector(1)"), obj{"t": "vector(1)"}, "triggers")), sc+".triggers"),
		loose("idle a string", rcSpec(set(scheduleConfig(), "on", "idle")), sc+".idle"),
		loose("dependsOn entries numbers", rcSpec(set(metricsConfig(), list{1, 2}, "dependsOn")), sc+".dependsOn[0]"),
		loose("pollingIntervalSeconds a bool", rcSpec(set(triggerConfig("vector(1)"), true, "pollingIntervalSeconds")), sc+".pollingIntervalSeconds"),
		{name: "WorkerGroup: minReplicas a string", kind: "WorkerGroup", spec: obj{"replicas": 2, "scalePolicy": obj{"minReplicas": "2", "maxReplicas": 4}}, want: refused(sp + ".minReplicas")},
	})
}

// kubectlNumberInputs: huge, negative, fractional and overflowing counts,
// and quantities with absurd exponents.
func (s *suite) kubectlNumberInputs(t *testing.T) {
	rc := func(name string, spec obj, path string) kubectlInput {
		return kubectlInput{name: "RackedCluster: " + name, kind: "RackedCluster", spec: spec, want: refused(path)}
	}
	loose := func(name string, spec obj, path string) kubectlInput {
		return kubectlInput{name: "LooseCluster: " + name, kind: "LooseCluster", spec: spec, want: refused(path)}
	}
	s.runKubectl(t, []kubectlInput{
		rc("replicas -1", set(rcSpec(nil), -1, "replicas"), "spec.replicas"),
		rc("replicas 2^31 (past int32)", set(rcSpec(nil), num("2147483648"), "replicas"), "spec.replicas"),
		rc("replicas over the profile bound", set(rcSpec(nil), 1001, "replicas"), "spec.replicas"),
		// Without replicas: with them, M5 would set every rack to them.
		rc("members -2^31", obj{"racks": list{obj{"name": "a", "members": num("-2147483648")}}}, "spec.racks[0].members"),
		rc("maxReplicas 2^31-1", rcSpec(set(metricsConfig(), num("2147483647"), "maxReplicas")), sc+".maxReplicas"),
		rc("averageValue 1e-999999999", rcSpec(set(metricsConfig(), "1e-999999999", "metrics", 1, "pods", "target", "averageValue")), sc+".metrics[1].pods.target.averageValue"),
		rc("averageValue 1e999999999", rcSpec(set(metricsConfig(), "1e999999999", "metrics", 1, "pods", "target", "averageValue")), sc+".metrics[1].pods.target.averageValue"),
		rc("tolerance 1e-999999999", rcSpec(set(metricsConfig(), "1e-999999999", "behavior", "scaleUp", "tolerance")), sc+".behavior.scaleUp.tolerance"),
		rc("averageValue -1", rcSpec(set(metricsConfig(), "-1", "metrics", 1, "pods", "target", "averageValue")), sc+".metrics[1].pods.target.averageValue"),
		rc("threshold 1e-999999999 (a number, read as 0)", rcSpec(set(triggerConfig("vector(1)"), num("1e-999999999"), "triggers", 0, "threshold")), sc+".triggers[0].threshold"),
		rc("threshold -1e308", rcSpec(set(triggerConfig("vector(1)"), num("-1e308"), "triggers", 0, "threshold")), sc+".triggers[0].threshold"),
		rc("stabilizationWindowSeconds 1e11", rcSpec(set(metricsConfig(), num("99999999999"), "behavior", "scaleDown", "stabilizationWindowSeconds")), sc+".behavior.scaleDown.stabilizationWindowSeconds"),
		rc("periodSeconds -2^63", rcSpec(set(metricsConfig(), num("-9223372036854775808"), "behavior", "scaleUp", "policies", 0, "periodSeconds")), sc+".behavior.scaleUp.policies[0].periodSeconds"),
		rc("pollingIntervalSeconds -2^31", rcSpec(set(triggerConfig("vector(1)"), num("-2147483648"), "pollingIntervalSeconds")), sc+".pollingIntervalSeconds"),
		rc("idle timeoutSeconds -1", rcSpec(set(scheduleConfig(), -1, "idle", "timeoutSeconds")), sc+".idle.timeoutSeconds"),
		loose("replicas 1e20", set(rcSpec(nil), num("1e20"), "replicas"), "spec.replicas"),
		loose("replicas 2^63-1", set(rcSpec(nil), num("9223372036854775807"), "replicas"), "spec.replicas"),
		loose("replicas -2^63", set(rcSpec(nil), num("-9223372036854775808"), "replicas"), "spec.replicas"),
		loose("members 2^32", set(rcSpec(nil), num("4294967296"), "racks", 0, "members"), "spec.racks[0].members"),
		loose("minReplicas 1.5", rcSpec(set(metricsConfig(), 1.5, "minReplicas")), sc+".minReplicas"),
		{name: "RackedCluster: threshold 1e300 (huge, valid)", kind: "RackedCluster", spec: rcSpec(set(triggerConfig("vector(1)"), num("1e300"), "triggers", 0, "threshold")), want: created},
		{name: "RackedCluster: replicas 0, pinned at 0 (valid)", kind: "RackedCluster", spec: set(rcSpec(nil), 0, "replicas"), want: created},
	})
}

// kubectlAnnotationInputs: the ZonedDatabase keeps its config in an
// annotation, which no schema checks: strict JSON (V9), with every kind of
// space around it, duplicate keys, nesting past any decoder's depth, and
// sizes up to and past the API server's 256 KiB for all annotations.
func (s *suite) kubectlAnnotationInputs(t *testing.T) {
	zdb := func(name, config string, want kubectlResult) kubectlInput {
		return kubectlInput{name: "ZonedDatabase: " + name, kind: "ZonedDatabase",
			spec:        obj{"topology": obj{"zones": list{obj{"zoneName": "eu-1", "size": 2}}}},
			annotations: map[string]string{"scaleplane.io/scale-config": config}, want: want}
	}
	valid := `{"minReplicas":1,"maxReplicas":3}`
	// About 200 KB of valid config: many metrics of distinct names.
	var metrics []string
	for i := 0; len(strings.Join(metrics, ",")) < 200<<10; i++ {
		metrics = append(metrics, fmt.Sprintf(`{"type":"Pods","pods":{"metric":{"name":"m%d"},"target":{"type":"AverageValue","averageValue":"1"}}}`, i))
	}
	big := `{"minReplicas":1,"maxReplicas":3,"metrics":[` + strings.Join(metrics, ",") + `]}`
	s.runKubectl(t, []kubectlInput{
		zdb("valid (control)", valid, created),
		zdb("leading no-break space U+00A0", "\u00a0"+valid, refused(ann)),
		zdb("trailing line separator U+2028", valid+"\u2028", refused(ann)),
		zdb("leading vertical tab", "\v"+valid, refused(ann)),
		zdb("trailing form feed", valid+"\f", refused(ann)),
		zdb("leading byte order mark", "\ufeff"+valid, refused(ann)),
		zdb("no-break space between tokens", `{"minReplicas":`+"\u00a0"+`1,"maxReplicas":3}`, refused(ann)),
		zdb("duplicate key, the last valid (last wins)", `{"minReplicas":9,"minReplicas":1,"maxReplicas":3}`, created),
		zdb("duplicate key, the last invalid", `{"minReplicas":1,"minReplicas":5,"maxReplicas":3}`, refused(ann+".minReplicas")),
		zdb("unknown field", `{"minReplicas":1,"maxReplica":3}`, refused(ann+".maxReplica")),
		zdb("field name in another case", `{"MinReplicas":1,"maxReplicas":3}`, refused(ann+".MinReplicas")),
		zdb("trailing garbage", valid+` {"minReplicas":2}`, refused(ann)),
		zdb("not JSON", `minReplicas: 1`, refused(ann)),
		zdb("a string count", `{"minReplicas":"1","maxReplicas":3}`, refused(ann+".minReplicas")),
		zdb("quantity 1e-999999999", `{"minReplicas":1,"maxReplicas":3,"metrics":[{"type":"Pods","pods":{"metric":{"name":"x"},"target":{"type":"AverageValue","averageValue":"1e-999999999"}}}]}`,
			refused(ann+".metrics[0].pods.target.averageValue")),
		zdb("number 1e999999999", `{"minReplicas":1,"maxReplicas":1e999999999}`, refused(ann)),
		zdb("100,000 nested lists", `{"metrics":`+strings.Repeat("[", 100000)+strings.Repeat("]", 100000)+`}`, refused(ann)),
		zdb("10,000 nested objects", `{"behavior":`+strings.Repeat(`{"a":`, 10000)+"1"+strings.Repeat("}", 10000)+`}`, refused(ann)),
		zdb("200 KB of valid metrics", big, created),
		zdb("over 256 KiB", `{"minReplicas":1,"maxReplicas":3,"metrics":[`+strings.Join(metrics, ",")+","+strings.Join(metrics, ",")+`]}`, refused("metadata.annotations")),
		zdb("null (no config)", `null`, created),
		zdb("empty (no config)", ``, created),
	})
}

// kubectlReferenceInputs: what a config names must exist (V11).
func (s *suite) kubectlReferenceInputs(t *testing.T) {
	rc := func(name string, spec obj, want kubectlResult) kubectlInput {
		return kubectlInput{name: "RackedCluster: " + name, kind: "RackedCluster", spec: spec, want: want}
	}
	cron := func(typ string, meta obj) obj {
		return obj{"minReplicas": 1, "maxReplicas": 5, "triggers": list{obj{"name": "office", "type": typ, "source": "cron", "threshold": 1, "metadata": meta}}}
	}
	office := obj{"start": "08:00", "end": "19:00", "timezone": "Europe/Paris", "desiredReplicas": "3"}
	s.runKubectl(t, []kubectlInput{
		rc("placeholder typo ${namspace}", rcSpec(triggerConfig(`sum(up{namespace="${namspace}"})`)), refused(sc+".triggers[0].query")),
		rc("placeholder ${env:HOME}", rcSpec(triggerConfig(`sum(up{namespace="${env:HOME}"})`)), refused(sc+".triggers[0].query")),
		rc("unterminated placeholder", rcSpec(triggerConfig(`sum(up{namespace="${namespace"})`)), refused(sc+".triggers[0].query")),
		rc("unknown source", rcSpec(set(triggerConfig("vector(1)"), "graphite", "triggers", 0, "source")), refused(sc+".triggers[0].source")),
		rc("prometheus source without prometheusURL", rcSpec(set(triggerConfig("vector(1)"), "prometheus", "triggers", 0, "source")), refused(sc+".triggers[0].source")),
		rc("query source given a server", rcSpec(set(triggerConfig("vector(1)"), obj{"serverAddress": "http://10.0.0.1:9090"}, "triggers", 0, "metadata")),
			refused(sc+".triggers[0].metadata[serverAddress]")),
		rc("cron trigger of type Value", rcSpec(cron("Value", office)), refused(sc+".triggers[0].type")),
		rc("cron metadata with an unknown key", rcSpec(cron("AverageValue", set(obj{"start": "08:00", "end": "19:00"}, "Europe/Paris", "timeZone"))), refused(sc+".triggers[0].metadata[timeZone]")),
		rc("cron trigger with a query", rcSpec(set(cron("AverageValue", office), "vector(1)", "triggers", 0, "query")), refused(sc+".triggers[0].query")),
		rc("cron trigger, valid (control)", rcSpec(cron("AverageValue", office)), created),
		rc("rack name not a label value", obj{"replicas": 1, "racks": racks("rack a!")}, refused("spec.racks[0].name")),
		rc("rack name of 64 characters", obj{"replicas": 1, "racks": racks(strings.Repeat("r", 64))}, refused("spec.racks[0].name")),
		rc("rack name with a slash", obj{"replicas": 1, "racks": racks("a", "eu/1")}, refused("spec.racks[1].name")),
		rc("dependsOn an empty name", rcSpec(set(metricsConfig(), list{""}, "dependsOn")), refused(sc+".dependsOn[0]")),
		rc("dependsOn a path", rcSpec(set(metricsConfig(), list{"../db"}, "dependsOn")), refused(sc+".dependsOn[0]")),
		rc("dependsOn an upper-case name", rcSpec(set(metricsConfig(), list{"db", "Cache"}, "dependsOn")), refused(sc+".dependsOn[1]")),
		{name: "WorkerGroup: trigger without a query", kind: "WorkerGroup", spec: obj{"replicas": 1, "scalePolicy": obj{"minReplicas": 1, "maxReplicas": 3,
			"triggers": list{obj{"name": "t", "type": "Value", "threshold": 1}}}}, want: refused(sp + ".triggers[0].query")},
	})
}

// kubectlRuleInputs: metrics, schedules and behavior out of range (V3, V4,
// V7), each at its path.
func (s *suite) kubectlRuleInputs(t *testing.T) {
	rc := func(name string, c obj, path string) kubectlInput {
		return kubectlInput{name: "RackedCluster: " + name, kind: "RackedCluster", spec: rcSpec(c), want: refused(path)}
	}
	pods := func(metric obj) obj {
		return set(metricsConfig(), obj{"type": "Pods", "pods": obj{"metric": metric, "target": obj{"type": "AverageValue", "averageValue": "1"}}}, "metrics", 1)
	}
	external := func(selector obj) obj {
		return set(metricsConfig(), obj{"type": "External", "external": obj{"metric": obj{"name": "queue", "selector": selector},
			"target": obj{"type": "Value", "value": "10"}}}, "metrics", 1)
	}
	s.runKubectl(t, []kubectlInput{
		rc("selector operator Near", pods(obj{"name": "rps", "selector": obj{"matchExpressions": list{obj{"key": "tier", "operator": "Near", "values": list{"db"}}}}}),
			sc+".metrics[1].pods.metric.selector.matchExpressions[0].operator"),
		rc("selector In without values", external(obj{"matchExpressions": list{obj{"key": "tier", "operator": "In"}}}),
			sc+".metrics[1].external.metric.selector.matchExpressions[0].values"),
		rc("selector label key with spaces", external(obj{"matchLabels": obj{"bad key": "x"}}), sc+".metrics[1].external.metric.selector.matchLabels"),
		rc("selector label value of 1000 characters", external(obj{"matchLabels": obj{"tier": strings.Repeat("v", 1000)}}), sc+".metrics[1].external.metric.selector.matchLabels"),
		rc("metric name a path", pods(obj{"name": "../../etc/passwd"}), sc+".metrics[1].pods.metric.name"),
		rc("resource name with punctuation", set(metricsConfig(), "cpu!!", "metrics", 0, "resource", "name"), sc+".metrics[0].resource.name"),
		rc("container name not a DNS label", set(metricsConfig(), obj{"type": "ContainerResource", "containerResource": obj{"name": "cpu", "container": "Bad_Container",
			"target": obj{"type": "Utilization", "averageUtilization": 50}}}, "metrics", 0), sc+".metrics[0].containerResource.container"),
		rc("object metric without a name", set(metricsConfig(), obj{"type": "Object", "object": obj{"metric": obj{"name": "hits"},
			"describedObject": obj{"kind": "Service", "apiVersion": "v1"}, "target": obj{"type": "Value", "value": "1"}}}, "metrics", 0), sc+".metrics[0].object.describedObject.name"),
		rc("time zone a path", set(scheduleConfig(), "../../../etc/passwd", "schedule", "timeZone"), sc+".schedule.timeZone"),
		rc("time zone Local", set(scheduleConfig(), "Local", "schedule", "timeZone"), sc+".schedule.timeZone"),
		rc("time zone of 10,000 characters", set(scheduleConfig(), strings.Repeat("Europe/", 1430), "schedule", "timeZone"), sc+".schedule.timeZone"),
		rc("wake-up at 24:00", set(scheduleConfig(), list{"24:00"}, "schedule", "wakeUp"), sc+".schedule.wakeUp[0]"),
		rc("wake-up at 7:30", set(scheduleConfig(), list{"06:00", "7:30"}, "schedule", "wakeUp"), sc+".schedule.wakeUp[1]"),
		rc("scale-down time with seconds", set(scheduleConfig(), list{obj{"time": "20:00:00", "seconds": 60}}, "schedule", "scaleDownTimeout"), sc+".schedule.scaleDownTimeout[0].time"),
		rc("scale-down times repeated", set(scheduleConfig(), list{obj{"time": "20:00", "seconds": 60}, obj{"time": "20:00", "seconds": 30}}, "schedule", "scaleDownTimeout"),
			sc+".schedule.scaleDownTimeout[1].time"),
		rc("replicasAtStart above maxReplicas", set(scheduleConfig(), 5, "idle", "replicasAtStart"), sc+".idle.replicasAtStart"),
		rc("policies empty", set(metricsConfig(), list{}, "behavior", "scaleUp", "policies"), sc+".behavior.scaleUp.policies"),
		rc("policy periodSeconds 0", set(metricsConfig(), 0, "behavior", "scaleUp", "policies", 0, "periodSeconds"), sc+".behavior.scaleUp.policies[0].periodSeconds"),
		rc("policy periodSeconds 1801", set(metricsConfig(), 1801, "behavior", "scaleDown", "policies", 0, "periodSeconds"), sc+".behavior.scaleDown.policies[0].periodSeconds"),
		rc("policy value -5", set(metricsConfig(), -5, "behavior", "scaleUp", "policies", 0, "value"), sc+".behavior.scaleUp.policies[0].value"),
		rc("policy type Replicas", set(metricsConfig(), "Replicas", "behavior", "scaleUp", "policies", 0, "type"), sc+".behavior.scaleUp.policies[0].type"),
		rc("stabilization window -1", set(metricsConfig(), -1, "behavior", "scaleUp", "stabilizationWindowSeconds"), sc+".behavior.scaleUp.stabilizationWindowSeconds"),
		rc("stabilization window 3601", set(metricsConfig(), 3601, "behavior", "scaleDown", "stabilizationWindowSeconds"), sc+".behavior.scaleDown.stabilizationWindowSeconds"),
		rc("selectPolicy in lower case", set(metricsConfig(), "max", "behavior", "scaleUp", "selectPolicy"), sc+".behavior.scaleUp.selectPolicy"),
		rc("tolerance -1", set(metricsConfig(), "-1", "behavior", "scaleDown", "tolerance"), sc+".behavior.scaleDown.tolerance"),
		rc("metrics and triggers together", set(metricsConfig(), list{trigger("t", "vector(1)")}, "triggers"), sc+".triggers"),
	})
}

// kubectlBombInputs: thousands of racks, dependencies, wake-up times and
// policies, and configs nested deeper than anyone writes.
func (s *suite) kubectlBombInputs(t *testing.T) {
	many := func(n int, name func(i int) string) list {
		l := make(list, n)
		for i := range l {
			l[i] = name(i)
		}
		return l
	}
	rackList := func(n int, name func(i int) string) list {
		l := make(list, n)
		for i := range l {
			l[i] = obj{"name": name(i), "members": i % 7}
		}
		return l
	}
	policies := func(n int) list {
		l := make(list, n)
		for i := range l {
			l[i] = obj{"type": "Replicas", "value": 1, "periodSeconds": 15}
		}
		return l
	}
	deep := func(n int) any {
		var v any = 1
		for range n {
			v = obj{"x": v}
		}
		return v
	}
	rc := func(name string, spec obj, want kubectlResult) kubectlInput {
		return kubectlInput{name: "RackedCluster: " + name, kind: "RackedCluster", spec: spec, want: want}
	}
	s.runKubectl(t, []kubectlInput{
		rc("5,000 racks (valid)", obj{"replicas": 2, "racks": rackList(5000, func(i int) string { return fmt.Sprintf("r%d", i) })}, created),
		{name: "RackedCluster: 5,000 racks with kubectl apply", kind: "RackedCluster", apply: true,
			spec: obj{"replicas": 2, "racks": rackList(5000, func(i int) string { return fmt.Sprintf("r%d", i) })}, want: created},
		rc("5,000 racks of one name", obj{"replicas": 2, "racks": rackList(5000, func(int) string { return "a" })}, refused("spec.racks[1].name", "spec.racks[4999].name")),
		rc("5,000 racks named badly", obj{"replicas": 2, "racks": rackList(5000, func(i int) string { return fmt.Sprintf("R %d!", i) })}, refused("spec.racks[0].name", "spec.racks[4999].name")),
		rc("3,000 dependencies (valid)", rcSpec(set(metricsConfig(), many(3000, func(i int) string { return fmt.Sprintf("db-%d", i) }), "dependsOn")), created),
		rc("3,000 copies of one dependency", rcSpec(set(metricsConfig(), many(3000, func(int) string { return "db" }), "dependsOn")), refused(sc+".dependsOn[1]", sc+".dependsOn[2999]")),
		rc("3,000 dependencies that are paths", rcSpec(set(metricsConfig(), many(3000, func(i int) string { return fmt.Sprintf("../%d", i) }), "dependsOn")), refused(sc+".dependsOn[0]", sc+".dependsOn[2999]")),
		rc("3,000 wake-up times at 25:99", rcSpec(set(scheduleConfig(), many(3000, func(int) string { return "25:99" }), "schedule", "wakeUp")), refused(sc+".schedule.wakeUp[0]", sc+".schedule.wakeUp[2999]")),
		rc("3,000 policies of type Replicas", rcSpec(set(metricsConfig(), policies(3000), "behavior", "scaleUp", "policies")),
			refused(sc+".behavior.scaleUp.policies[0].type", sc+".behavior.scaleUp.policies[2999].type")),
		rc("behavior with unknown fields nested 500 deep (ignored at a spec path)", rcSpec(set(metricsConfig(), deep(500), "behavior", "scaleUp", "x")), created),
		// Unknown fields are ignored at a spec path: what is missing is
		// reported.
		rc("a metric nested 5,000 deep", rcSpec(set(metricsConfig(), deep(5000), "metrics", 0, "resource")),
			refused(sc+".metrics[0].resource.name", sc+".metrics[0].resource.target.type")),
		{name: "LooseCluster: replicas nested 5,000 deep", kind: "LooseCluster", spec: set(rcSpec(nil), deep(5000), "replicas"), want: refused("spec.replicas")},
		// Just under the JSON decoders' 10,000 levels once wrapped in a
		// review; kubectl itself refuses deeper ones.
		{name: "LooseCluster: scaleConfig of unknown fields nested 9,000 deep (ignored)", kind: "LooseCluster", spec: set(rcSpec(nil), deep(9000), "scaleConfig"), want: created},
	})
}

// kubectlQueryInputs: trigger queries that would cost the evaluator more
// than any bound (V10), each refused at admission at its query's path.
func (s *suite) kubectlQueryInputs(t *testing.T) {
	chain := strings.TrimSuffix(strings.Repeat("up + ", 20000), " + ") // 100 KB
	rc := func(name, query string) kubectlInput {
		return kubectlInput{name: "RackedCluster: " + name, kind: "RackedCluster", spec: rcSpec(triggerConfig(query)), want: refused(sc + ".triggers[0].query")}
	}
	s.runKubectl(t, []kubectlInput{
		rc("subquery [10y:1ms]", `max_over_time(sum(rate(http_requests_total{namespace="${namespace}"}[5m]))[10y:1ms])`),
		rc("100 KB query", chain),
		rc("2,000 nested parentheses", strings.Repeat("(", 2000)+"up"+strings.Repeat(")", 2000)),
		rc("2,000 unary minus signs", strings.Repeat("-", 2000)+"up"),
		rc("nested subqueries", `max_over_time(max_over_time(rate(up[1m])[1d:1s])[7d:1s])`),
		rc("range selector over ten years", `sum(rate(up[10y]))`),
		rc("regular expression bomb", `sum(up{pod=~"`+strings.Repeat(".{1000}", 500)+`"})`),
		rc("subquery step 0", `max_over_time(up[1h:0s])`),
		// Within every bound, and costly: the noisy neighbour's trigger
		// (noisy_test.go), admitted; its namespace's share of the
		// evaluation slots and its cost budget bound what it takes.
		{name: "RackedCluster: a costly legal trigger every second", kind: "RackedCluster",
			spec: rcSpec(obj{"minReplicas": 1, "maxReplicas": 3, "pollingIntervalSeconds": 1, "triggers": list{trigger("heavy", heavyQuery)}}), want: created},
		{name: "WorkerGroup: second trigger a cost bomb", kind: "WorkerGroup", spec: obj{"replicas": 1, "scalePolicy": obj{"minReplicas": 1, "maxReplicas": 3,
			"triggers": list{trigger("ok", "vector(1)"), trigger("bomb", `max_over_time(up[10y:1ms])`)}}}, want: refused(sp + ".triggers[1].query")},
		{name: "ZonedDatabase: cost bomb in the annotation", kind: "ZonedDatabase",
			annotations: map[string]string{"scaleplane.io/scale-config": `{"minReplicas":1,"maxReplicas":3,"triggers":[{"name":"t","type":"Value","threshold":1,"query":"max_over_time(up[10y:1ms])"}]}`},
			want:        refused(ann + ".triggers[0].query")},
	})
}
