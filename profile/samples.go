package profile

import (
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	configv1alpha2 "github.com/scaleplane/scaleplane/api/config/v1alpha2"
	"github.com/scaleplane/scaleplane/api/v1alpha1"
)

// defaultFunctionCPU is the Function sample's CPU utilization target.
var defaultFunctionCPU int32 = 50

// SampleGroup and SampleVersion are those of the sample CRDs in
// config/samples/crd, which exist to show and test scaleplane on the three
// shapes of workload it was designed from.
const (
	SampleGroup      = "samples.scaleplane.io"
	SampleVersion    = "v1alpha1"
	SampleAPIVersion = SampleGroup + "/" + SampleVersion
)

// Samples returns the profiles of the sample kinds, as a user would write
// them (defaults left out):
//   - RackedCluster: a ScyllaCluster-like kind whose replicas fan out to
//     racks (its member groups), each reporting its ready members in a
//     status list;
//   - Function: a Kyma-like function whose HPA scales its runtime
//     Deployment, not the function itself;
//   - WorkerGroup: a LeaderWorkerSet-like kind with its scale config at
//     .spec.scalePolicy and one leader pod per replica.
func Samples() []v1alpha1.ScaleProfileSpec {
	return []v1alpha1.ScaleProfileSpec{
		{
			Target:       v1alpha1.TargetKind{APIVersion: SampleAPIVersion, Kind: "RackedCluster", Resource: "rackedclusters"},
			ReplicasPath: ".spec.replicas",
			ScaleConfig:  v1alpha1.ScaleConfigLocation{Path: ".spec.scaleConfig"},
			MemberGroups: &v1alpha1.MemberGroups{
				Path:         ".spec.racks",
				NameField:    "name",
				MembersField: "members",
				Status: &v1alpha1.MemberGroupStatus{
					Path:              ".status.racks",
					Style:             v1alpha1.MemberGroupStatusList,
					NameField:         "name",
					ReadyMembersField: "readyMembers",
				},
			},
			Status: v1alpha1.StatusPaths{ReplicasPath: ".status.replicas", SelectorPath: ".status.selector"},
			Pods: v1alpha1.Pods{
				Labels:           map[string]string{SampleGroup + "/cluster": v1alpha1.NamePlaceholder},
				MemberGroupLabel: SampleGroup + "/rack",
			},
		},
		{
			Target:       v1alpha1.TargetKind{APIVersion: SampleAPIVersion, Kind: "Function", Resource: "samplefunctions"},
			ReplicasPath: ".spec.replicas",
			ScaleConfig:  v1alpha1.ScaleConfigLocation{Path: ".spec.scaleConfig"},
			Status:       v1alpha1.StatusPaths{ReplicasPath: ".status.replicas", SelectorPath: ".status.podSelector"},
			Pods:         v1alpha1.Pods{Labels: map[string]string{SampleGroup + "/function": v1alpha1.NamePlaceholder}},
			HPATarget:    v1alpha1.HPATarget{APIVersion: "apps/v1", Kind: "Deployment", Name: v1alpha1.NamePlaceholder},
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
			Target:       v1alpha1.TargetKind{APIVersion: SampleAPIVersion, Kind: "WorkerGroup", Resource: "workergroups"},
			ReplicasPath: ".spec.replicas",
			ScaleConfig:  v1alpha1.ScaleConfigLocation{Path: ".spec.scalePolicy"},
			Status:       v1alpha1.StatusPaths{ReplicasPath: ".status.replicas", SelectorPath: ".status.hpaPodSelector"},
			// One leader per replica: the selector must count replicas, not
			// every worker of every replica (C3).
			Pods: v1alpha1.Pods{Labels: map[string]string{
				SampleGroup + "/workergroup": v1alpha1.NamePlaceholder,
				SampleGroup + "/role":        "leader",
			}},
		},
	}
}

// SampleConfiguration is a complete configuration for the sample kinds,
// with the component's defaults filled and the profiles as Samples writes
// them; it is what config/manager/scaleplane-config.yaml loads to, and what
// `scaleplane dev` runs without --config.
func SampleConfiguration() *configv1alpha2.Configuration {
	c := &configv1alpha2.Configuration{
		TypeMeta: metav1.TypeMeta{APIVersion: configv1alpha2.APIVersion, Kind: configv1alpha2.Kind},
		Profiles: Samples(),
	}
	c.Default()
	return c
}
