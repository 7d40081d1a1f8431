package webhooks

// fullConfig is a scale config using every section, valid for every sample
// kind that keeps a full config (RackedCluster, WorkerGroup) and for the
// foreign kind's annotation: a range with metrics, behavior, idle and a
// schedule. Triggers are left out (V6: not with metrics); see
// fullTriggerConfig.
func fullConfig() obj {
	return obj{
		"minReplicas": 2,
		"maxReplicas": 9,
		"metrics": list{
			obj{"type": "Resource", "resource": obj{"name": "cpu", "target": obj{"type": "Utilization", "averageUtilization": 70}}},
			obj{"type": "Pods", "pods": obj{
				"metric": obj{"name": "requests_per_second", "selector": obj{"matchLabels": obj{"tier": "db"}}},
				"target": obj{"type": "AverageValue", "averageValue": "200m"},
			}},
		},
		"behavior": obj{
			"scaleUp": obj{
				"stabilizationWindowSeconds": 0,
				"selectPolicy":               "Max",
				"policies": list{
					obj{"type": "Pods", "value": 4, "periodSeconds": 15},
					obj{"type": "Percent", "value": 100, "periodSeconds": 15},
				},
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

// fullTriggerConfig is fullConfig with PromQL triggers instead of metrics,
// and a range that may start at zero (it has triggers and idle).
func fullTriggerConfig() obj {
	c := fullConfig()
	delete(c, "metrics")
	c["minReplicas"] = 0
	c["triggers"] = list{
		obj{"name": "rps", "type": "AverageValue", "query": `sum(rate(http_requests_total{namespace="${namespace}",workload="${name}"}[2m]))`, "threshold": 50, "activationThreshold": 1},
		obj{"name": "queue", "type": "Value", "query": `max(queue_depth{namespace="${namespace}"})`, "threshold": 100},
	}
	return c
}
