package config

import (
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// defaultFunctionCPU is the Function sample's CPU utilization target.
var defaultFunctionCPU int32 = 50

// SampleGroup and SampleVersion are those of the sample CRDs in
// config/crd, which exist to show and test scaleplane on the three shapes
// of workload it was designed from.
const (
	SampleGroup   = "samples.scaleplane.io"
	SampleVersion = "v1alpha1"
)

// SampleProfiles returns the profiles of the sample kinds, as a user would
// write them (defaults left out):
//   - RackedCluster: a ScyllaCluster-like kind whose replicas fan out to
//     racks, each reporting its ready members in a status list;
//   - Function: a Kyma-like function whose HPA scales its runtime
//     Deployment, not the function itself;
//   - WorkerGroup: a LeaderWorkerSet-like kind with its scale config at
//     .spec.scalePolicy and one leader pod per replica.
func SampleProfiles() []Profile {
	return []Profile{
		{
			Group:       SampleGroup,
			Version:     SampleVersion,
			Kind:        "RackedCluster",
			Resource:    "rackedclusters",
			Replicas:    ".spec.replicas",
			ScaleConfig: ScaleConfigLocation{Path: ".spec.scaleConfig"},
			Groups: &Groups{
				Path:         ".spec.racks",
				NameField:    "name",
				MembersField: "members",
				Status: &GroupStatus{
					Path:              ".status.racks",
					Style:             GroupStatusList,
					NameField:         "name",
					ReadyMembersField: "readyMembers",
				},
			},
			Status: Status{Replicas: ".status.replicas", Selector: ".status.selector"},
			Pods: Pods{
				Labels:     map[string]string{SampleGroup + "/cluster": NamePlaceholder},
				GroupLabel: SampleGroup + "/rack",
			},
		},
		{
			Group:       SampleGroup,
			Version:     SampleVersion,
			Kind:        "Function",
			Resource:    "functions",
			Replicas:    ".spec.replicas",
			ScaleConfig: ScaleConfigLocation{Path: ".spec.scaleConfig"},
			Status:      Status{Replicas: ".status.replicas", Selector: ".status.podSelector"},
			Pods:        Pods{Labels: map[string]string{SampleGroup + "/function": NamePlaceholder}},
			HPATarget:   HPATarget{APIVersion: "apps/v1", Kind: "Deployment", Name: NamePlaceholder},
			// Kyma's scaleConfig has only min and max; its HPA scales on CPU.
			DefaultMetrics: []autoscalingv2.MetricSpec{{
				Type: autoscalingv2.ResourceMetricSourceType,
				Resource: &autoscalingv2.ResourceMetricSource{
					Name:   corev1.ResourceCPU,
					Target: autoscalingv2.MetricTarget{Type: autoscalingv2.UtilizationMetricType, AverageUtilization: &defaultFunctionCPU},
				},
			}},
		},
		{
			Group:       SampleGroup,
			Version:     SampleVersion,
			Kind:        "WorkerGroup",
			Resource:    "workergroups",
			Replicas:    ".spec.replicas",
			ScaleConfig: ScaleConfigLocation{Path: ".spec.scalePolicy"},
			Status:      Status{Replicas: ".status.replicas", Selector: ".status.hpaPodSelector"},
			// One leader per replica: the selector must count replicas, not
			// every worker of every replica (C3).
			Pods: Pods{Labels: map[string]string{
				SampleGroup + "/workergroup": NamePlaceholder,
				SampleGroup + "/role":        "leader",
			}},
		},
	}
}

// SampleConfiguration is a complete, defaulted configuration for the sample
// kinds, equal to what config/manager/scaleplane-config.yaml loads to.
func SampleConfiguration() *Configuration {
	c := &Configuration{
		TypeMeta: metav1.TypeMeta{APIVersion: APIVersion, Kind: Kind},
		Profiles: SampleProfiles(),
	}
	c.Default()
	return c
}
