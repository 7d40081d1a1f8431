package admission

// fullConfig is a valid scale config using metrics, behavior, idle and a
// schedule; each invalid object in TestInvalidObjects breaks one thing in a
// fresh copy of it.
func fullConfig() obj {
	return obj{
		"minReplicas": 2,
		"maxReplicas": 9,
		"metrics": list{
			obj{"type": "Resource", "resource": obj{"name": "cpu", "target": obj{"type": "Utilization", "averageUtilization": 70}}},
			obj{"type": "Pods", "pods": obj{
				"metric": obj{"name": "requests_per_second"},
				"target": obj{"type": "AverageValue", "averageValue": "200m"},
			}},
		},
		"behavior": obj{
			"scaleUp": obj{
				"stabilizationWindowSeconds": 0,
				"selectPolicy":               "Max",
				"policies":                   list{obj{"type": "Pods", "value": 4, "periodSeconds": 15}},
			},
			"scaleDown": obj{
				"stabilizationWindowSeconds": 300,
				"policies":                   list{obj{"type": "Percent", "value": 10, "periodSeconds": 60}},
			},
		},
		"idle":     obj{"replicasAtStart": 2, "timeoutSeconds": 600},
		"schedule": obj{"timeZone": "Europe/Paris", "wakeUp": list{"07:30"}, "scaleDownTimeout": list{obj{"time": "20:00", "seconds": 300}}},
	}
}

// triggerConfig is a valid config driven by PromQL triggers.
func triggerConfig() obj {
	return obj{
		"minReplicas": 0,
		"maxReplicas": 8,
		"triggers": list{
			obj{"name": "rps", "type": "AverageValue", "query": `sum(rate(http_requests_total{namespace="${namespace}",workload="${name}"}[2m]))`, "threshold": 50, "activationThreshold": 1},
			obj{"name": "queue", "type": "Value", "query": `max(queue_depth{namespace="${namespace}"})`, "threshold": 100},
		},
		"idle": obj{"replicasAtStart": 1, "timeoutSeconds": 300},
	}
}

func racks(pairs ...interface{}) list {
	var l list
	for i := 0; i < len(pairs); i += 2 {
		l = append(l, obj{"name": pairs[i], "members": pairs[i+1]})
	}
	return l
}

func zones(pairs ...interface{}) list {
	var l list
	for i := 0; i < len(pairs); i += 2 {
		l = append(l, obj{"zoneName": pairs[i], "size": pairs[i+1], "vendor": obj{"diskClass": "nvme", "weight": 1.5}})
	}
	return l
}

// at returns the object at a dotted path of c, for editing.
func at(c obj, path ...string) obj {
	for _, p := range path {
		c = c[p].(obj)
	}
	return c
}
