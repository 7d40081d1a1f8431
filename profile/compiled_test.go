package profile

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/validation/field"
	kjson "sigs.k8s.io/json"

	"github.com/scaleplane/scaleplane/api/v1alpha1"
	"github.com/scaleplane/scaleplane/scaling"
)

func TestCompileDefaults(t *testing.T) {
	in := v1alpha1.ScaleProfileSpec{
		Target:       v1alpha1.TargetKind{APIVersion: "db.example.com/v1", Kind: "Store", Resource: "stores"},
		ScaleConfig:  v1alpha1.ScaleConfigLocation{Path: ".spec.scaleConfig"},
		MemberGroups: &v1alpha1.MemberGroups{Path: ".spec.racks", Status: &v1alpha1.MemberGroupStatus{Path: ".status.racks"}},
	}
	c := mustCompile(t, in)
	want := v1alpha1.ScaleProfileSpec{
		Target:       v1alpha1.TargetKind{APIVersion: "db.example.com/v1", Kind: "Store", Resource: "stores"},
		ReplicasPath: ".spec.replicas",
		ScaleConfig:  v1alpha1.ScaleConfigLocation{Path: ".spec.scaleConfig"},
		MemberGroups: &v1alpha1.MemberGroups{Path: ".spec.racks", NameField: "name", MembersField: "members",
			Status: &v1alpha1.MemberGroupStatus{Path: ".status.racks", Style: v1alpha1.MemberGroupStatusList, NameField: "name", ReadyMembersField: "readyMembers"}},
		HPATarget:   v1alpha1.HPATarget{Name: "${name}"},
		MaxReplicas: 1000,
	}
	if diff := cmp.Diff(want, c.Spec()); diff != "" {
		t.Errorf("Spec() (-want +got):\n%s", diff)
	}
	// Defaulting works on a copy: the caller's spec is unchanged.
	if in.MemberGroups.NameField != "" || in.MemberGroups.Status.Style != "" {
		t.Errorf("Compile changed the caller's spec: %+v", in.MemberGroups)
	}
	// And so does Spec(): changing its result leaves the compiled profile
	// alone.
	p := c.Spec()
	p.MemberGroups.Path = ".spec.changed"
	if got := c.Spec().MemberGroups.Path; got != ".spec.racks" {
		t.Errorf("Spec() shares state with the compiled profile: member groups path %q", got)
	}
}

func TestLayout(t *testing.T) {
	tests := []struct {
		profile v1alpha1.ScaleProfileSpec
		want    scaling.Layout
	}{{
		profile: sample("RackedCluster"),
		want: scaling.Layout{
			ReplicasPath: field.NewPath("spec", "replicas"), ConfigPath: field.NewPath("spec", "scaleConfig"),
			GroupsPath: field.NewPath("spec", "racks"), GroupNameField: "name", GroupMembersField: "members",
			TargetSelf: true, MaxReplicas: 1000, GroupNamesInSelector: true,
		},
	}, {
		profile: sample("Function"),
		want: scaling.Layout{
			ReplicasPath: field.NewPath("spec", "replicas"), ConfigPath: field.NewPath("spec", "scaleConfig"),
			MaxReplicas: 1000, HasDefaultMetrics: true,
		},
	}, {
		profile: sample("WorkerGroup"),
		want: scaling.Layout{
			ReplicasPath: field.NewPath("spec", "replicas"), ConfigPath: field.NewPath("spec", "scalePolicy"),
			TargetSelf: true, MaxReplicas: 1000,
		},
	}, {
		profile: func() v1alpha1.ScaleProfileSpec {
			p := foreignProfile()
			p.MaxReplicas = 7
			p.DefaultMetrics = []autoscalingv2.MetricSpec{cpuMetric(80)}
			return p
		}(),
		want: scaling.Layout{
			ReplicasPath:       field.NewPath("spec", "size", "perZone"),
			ConfigPath:         field.NewPath("metadata", "annotations").Key("scaleplane.io/scale-config"),
			ConfigInAnnotation: true,
			GroupsPath:         field.NewPath("spec", "zones"), GroupNameField: "zone", GroupMembersField: "size",
			MaxReplicas: 7, HasDefaultMetrics: true, GroupNamesInSelector: true,
		},
	}, {
		// V11: ${group} in a pod label puts group names in the selector too.
		profile: func() v1alpha1.ScaleProfileSpec {
			p := foreignProfile()
			p.Target.Kind = "GroupInLabel"
			p.Pods.MemberGroupLabel = ""
			p.Status.SelectorPath = ""
			p.Pods.Labels = map[string]string{"app": "${name}", "zone": "db-${group}"}
			return p
		}(),
		want: scaling.Layout{
			ReplicasPath:       field.NewPath("spec", "size", "perZone"),
			ConfigPath:         field.NewPath("metadata", "annotations").Key("scaleplane.io/scale-config"),
			ConfigInAnnotation: true,
			GroupsPath:         field.NewPath("spec", "zones"), GroupNameField: "zone", GroupMembersField: "size",
			MaxReplicas: 1000, GroupNamesInSelector: true,
		},
	}}
	for _, tt := range tests {
		t.Run(tt.profile.Target.Kind, func(t *testing.T) {
			got := mustCompile(t, tt.profile).Layout()
			if diff := cmp.Diff(tt.want, got, cmpOpts...); diff != "" {
				t.Errorf("Layout() (-want +got):\n%s", diff)
			}
		})
	}
}

func TestCompiledAccessors(t *testing.T) {
	v := mustCompile(t, foreignProfile())
	if diff := cmp.Diff("db.example.com/v2, Kind=Store", v.GVK().String()); diff != "" {
		t.Errorf("GVK (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff("db.example.com/v2, Resource=stores", v.GVR().String()); diff != "" {
		t.Errorf("GVR (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"status", "readyPerZone"}, v.StatusReplicasPath()); diff != "" {
		t.Errorf("StatusReplicasPath (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"status", "scaleSelector"}, v.SelectorPath()); diff != "" {
		t.Errorf("SelectorPath (-want +got):\n%s", diff)
	}
	p := foreignProfile()
	p.Status = v1alpha1.StatusPaths{}
	p.Pods = v1alpha1.Pods{}
	if got := mustCompile(t, p).SelectorPath(); got != nil {
		t.Errorf("SelectorPath without a selector = %q, want nil", got)
	}
}

func TestCompileErrors(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(*v1alpha1.ScaleProfileSpec)
		want   []string
		// wantMsg is part of Compile's error: the example to follow.
		wantMsg string
	}{{
		name:    "replicas without leading dot",
		mutate:  func(p *v1alpha1.ScaleProfileSpec) { p.ReplicasPath = "spec.replicas" },
		want:    []string{"FieldValueInvalid replicasPath"},
		wantMsg: `replicasPath: Invalid value: "spec.replicas": must start with a dot, like ".spec.replicas"`,
	}, {
		name:    "index in a path",
		mutate:  func(p *v1alpha1.ScaleProfileSpec) { p.MemberGroups.Path = ".spec.racks[0]" },
		want:    []string{"FieldValueInvalid memberGroups.path"},
		wantMsg: `field name "racks[0]" is not valid; write a path like ".spec.racks"`,
	}, {
		name:    "empty segment",
		mutate:  func(p *v1alpha1.ScaleProfileSpec) { p.ScaleConfig.Path = ".spec..scaleConfig" },
		want:    []string{"FieldValueInvalid scaleConfig.path"},
		wantMsg: `field name "" is not valid`,
	}, {
		name:    "segment starting with a digit",
		mutate:  func(p *v1alpha1.ScaleProfileSpec) { p.Status.ReplicasPath = ".status.3replicas" },
		want:    []string{"FieldValueInvalid status.replicasPath"},
		wantMsg: `write a path like ".status.replicas"`,
	}, {
		name:    "replicas outside spec",
		mutate:  func(p *v1alpha1.ScaleProfileSpec) { p.ReplicasPath = ".status.replicas" },
		want:    []string{"FieldValueInvalid replicasPath"},
		wantMsg: `must name a field under .spec, like ".spec.replicas"`,
	}, {
		name:    "selector in spec",
		mutate:  func(p *v1alpha1.ScaleProfileSpec) { p.Status.SelectorPath = ".spec.selector" },
		want:    []string{"FieldValueInvalid status.selectorPath"},
		wantMsg: `must name a field under .status`,
	}, {
		name:    "unknown status style",
		mutate:  func(p *v1alpha1.ScaleProfileSpec) { p.MemberGroups.Status.Style = "Dict" },
		want:    []string{"FieldValueNotSupported memberGroups.status.style"},
		wantMsg: `supported values: "List", "Map"`,
	}, {
		name:    "name field of a map status",
		mutate:  func(p *v1alpha1.ScaleProfileSpec) { p.MemberGroups.Status.Style = v1alpha1.MemberGroupStatusMap },
		want:    []string{"FieldValueInvalid memberGroups.status.nameField"},
		wantMsg: "the map's keys are the member group names",
	}, {
		name:    "dotted group field",
		mutate:  func(p *v1alpha1.ScaleProfileSpec) { p.MemberGroups.MembersField = "spec.members" },
		want:    []string{"FieldValueInvalid memberGroups.membersField"},
		wantMsg: `must be one field name such as "members"`,
	}, {
		name:    "no scale config",
		mutate:  func(p *v1alpha1.ScaleProfileSpec) { p.ScaleConfig = v1alpha1.ScaleConfigLocation{} },
		want:    []string{"FieldValueRequired scaleConfig"},
		wantMsg: `set path (e.g. ".spec.scaleConfig") or`,
	}, {
		name:    "both scale config locations",
		mutate:  func(p *v1alpha1.ScaleProfileSpec) { p.ScaleConfig.Annotation = "scaleplane.io/scale-config" },
		want:    []string{"FieldValueInvalid scaleConfig"},
		wantMsg: "set only one of path and annotation",
	}, {
		name: "bad annotation key",
		mutate: func(p *v1alpha1.ScaleProfileSpec) {
			p.ScaleConfig = v1alpha1.ScaleConfigLocation{Annotation: "scale config"}
		},
		want:    []string{"FieldValueInvalid scaleConfig.annotation"},
		wantMsg: `e.g. "scaleplane.io/scale-config"`,
	}, {
		name:    "overlapping spec paths",
		mutate:  func(p *v1alpha1.ScaleProfileSpec) { p.ReplicasPath = ".spec.scaleConfig.replicas" },
		want:    []string{"FieldValueInvalid scaleConfig.path"},
		wantMsg: "overlaps replicasPath",
	}, {
		name: "kind names missing",
		mutate: func(p *v1alpha1.ScaleProfileSpec) {
			p.Target = v1alpha1.TargetKind{}
		},
		want: []string{"FieldValueRequired target.apiVersion", "FieldValueRequired target.kind", "FieldValueRequired target.resource"},
	}, {
		name:    "group without a version",
		mutate:  func(p *v1alpha1.ScaleProfileSpec) { p.Target.APIVersion = "samples.scaleplane.io/" },
		want:    []string{"FieldValueInvalid target.apiVersion"},
		wantMsg: `must be group/version, or only the version for the core group, e.g. "samples.scaleplane.io/v1alpha1"`,
	}, {
		name:    "version that is not a DNS label",
		mutate:  func(p *v1alpha1.ScaleProfileSpec) { p.Target.APIVersion = "samples.scaleplane.io/V1" },
		want:    []string{"FieldValueInvalid target.apiVersion"},
		wantMsg: "version a DNS-1035 label",
	}, {
		name:    "singular resource",
		mutate:  func(p *v1alpha1.ScaleProfileSpec) { p.Target.Resource = "rackedcluster" },
		want:    []string{"FieldValueInvalid target.resource"},
		wantMsg: `must be the plural resource name, e.g. "rackedclusters"`,
	}, {
		name:    "uppercase resource",
		mutate:  func(p *v1alpha1.ScaleProfileSpec) { p.Target.Resource = "RackedClusters" },
		want:    []string{"FieldValueInvalid target.resource"},
		wantMsg: `must be lowercase, e.g. "rackedclusters"`,
	}, {
		name:   "bad group",
		mutate: func(p *v1alpha1.ScaleProfileSpec) { p.Target.APIVersion = "Samples_IO/v1alpha1" },
		want:   []string{"FieldValueInvalid target.apiVersion"},
	}, {
		name:    "negative max replicas",
		mutate:  func(p *v1alpha1.ScaleProfileSpec) { p.MaxReplicas = -1 },
		want:    []string{"FieldValueInvalid maxReplicas"},
		wantMsg: "must be at least 1",
	}, {
		name:    "selector of a kind with member groups without a member group label",
		mutate:  func(p *v1alpha1.ScaleProfileSpec) { p.Pods.MemberGroupLabel = "" },
		want:    []string{"FieldValueRequired pods.memberGroupLabel"},
		wantMsg: "an HPA overshoots by the number of member groups",
	}, {
		name:    "selector without pod labels",
		mutate:  func(p *v1alpha1.ScaleProfileSpec) { p.Pods.Labels = nil },
		want:    []string{"FieldValueRequired pods.labels"},
		wantMsg: "would match every pod",
	}, {
		name:    "unknown placeholder",
		mutate:  func(p *v1alpha1.ScaleProfileSpec) { p.Pods.Labels["x.io/ns"] = "${namespace}" },
		want:    []string{"FieldValueInvalid pods.labels[x.io/ns]"},
		wantMsg: "unknown placeholder",
	}, {
		name:    "child target without apiVersion",
		mutate:  func(p *v1alpha1.ScaleProfileSpec) { p.HPATarget = v1alpha1.HPATarget{Kind: "Deployment"} },
		want:    []string{"FieldValueRequired hpaTarget.apiVersion"},
		wantMsg: `e.g. "apps/v1"`,
	}, {
		name: "bad child name",
		mutate: func(p *v1alpha1.ScaleProfileSpec) {
			p.HPATarget = v1alpha1.HPATarget{APIVersion: "apps/v1", Kind: "Deployment", Name: "${name}_runtime"}
		},
		want: []string{"FieldValueInvalid hpaTarget.name"},
	}, {
		name: "bad default metric",
		mutate: func(p *v1alpha1.ScaleProfileSpec) {
			m := cpuMetric(80)
			m.Type = autoscalingv2.PodsMetricSourceType
			p.DefaultMetrics = []autoscalingv2.MetricSpec{cpuMetric(80), m}
		},
		want:    []string{"FieldValueRequired defaultMetrics[1].pods", "FieldValueForbidden defaultMetrics[1].resource"},
		wantMsg: "defaultMetrics[1].pods",
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := sample("RackedCluster")
			p := clone(&s)
			tt.mutate(&p)
			_, err := Compile(p)
			if err == nil {
				t.Fatal("Compile succeeded, want an error")
			}
			if !strings.Contains(err.Error(), tt.wantMsg) {
				t.Errorf("Compile error %q does not contain %q", err, tt.wantMsg)
			}
			if diff := cmp.Diff(tt.want, errorStrings(Validate(&p, nil))); diff != "" {
				t.Errorf("errors (-want +got):\n%s", diff)
			}
		})
	}
}

func cpuMetric(util int32) autoscalingv2.MetricSpec {
	return autoscalingv2.MetricSpec{
		Type: autoscalingv2.ResourceMetricSourceType,
		Resource: &autoscalingv2.ResourceMetricSource{
			Name:   "cpu",
			Target: autoscalingv2.MetricTarget{Type: autoscalingv2.UtilizationMetricType, AverageUtilization: ptr(util)},
		},
	}
}

// cpuMetricObj is cpuMetric as it appears in an unstructured object.
func cpuMetricObj(util int) obj {
	return obj{"type": "Resource", "resource": obj{"name": "cpu", "target": obj{"type": "Utilization", "averageUtilization": util}}}
}

func TestRead(t *testing.T) {
	tests := []struct {
		name    string
		profile v1alpha1.ScaleProfileSpec
		in      *unstructured.Unstructured
		want    scaling.Workload
	}{{
		name:    "racked cluster",
		profile: sample("RackedCluster"),
		in: makeObj("RackedCluster", "db").
			set(".spec.replicas", 3).
			set(".spec.scaleConfig", obj{"minReplicas": 3, "maxReplicas": 3, "metrics": list{cpuMetricObj(70)}}).
			set(".spec.racks", list{rack("a", 3), rack("b", 3), obj{"name": "c"}}).
			set(".status.racks", list{
				obj{"name": "a", "readyMembers": 3, "observedGeneration": 4},
				obj{"name": "b", "readyMembers": 2},
			}).
			set(".status.replicas", 2).obj(),
		want: scaling.Workload{
			Replicas: ptr[int32](3),
			Config: &scaling.Config{MinReplicas: ptr[int32](3), MaxReplicas: ptr[int32](3),
				Metrics: []autoscalingv2.MetricSpec{cpuMetric(70)}},
			Groups: []scaling.Group{{Name: "a", Members: ptr[int32](3)}, {Name: "b", Members: ptr[int32](3)}, {Name: "c"}},
			// The sample profile names no observed generation field, so
			// none is read even where the object has one.
			GroupStatus:    []scaling.GroupStatus{{Name: "a", ReadyMembers: ptr[int32](3)}, {Name: "b", ReadyMembers: ptr[int32](2)}},
			StatusReplicas: ptr[int32](2),
			Generation:     4,
		},
	}, {
		name:    "racked cluster with nothing set",
		profile: sample("RackedCluster"),
		in:      makeObj("RackedCluster", "db").obj(),
		want:    scaling.Workload{Generation: 4},
	}, {
		name:    "nulls are absent",
		profile: sample("RackedCluster"),
		in: makeObj("RackedCluster", "db").
			set(".spec", obj{"replicas": nil, "scaleConfig": nil, "racks": list{obj{"name": "a", "members": nil}}}).obj(),
		want: scaling.Workload{Groups: []scaling.Group{{Name: "a"}}, Generation: 4},
	}, {
		name:    "integral floats from encoding/json",
		profile: sample("RackedCluster"),
		in: makeObj("RackedCluster", "db").
			set(".spec.replicas", float64(3)).
			set(".spec.scaleConfig", obj{"minReplicas": float64(1), "maxReplicas": float64(4)}).
			set(".spec.racks", list{obj{"name": "a", "members": float64(3)}}).obj(),
		want: scaling.Workload{
			Replicas:   ptr[int32](3),
			Config:     &scaling.Config{MinReplicas: ptr[int32](1), MaxReplicas: ptr[int32](4)},
			Groups:     []scaling.Group{{Name: "a", Members: ptr[int32](3)}},
			Generation: 4,
		},
	}, {
		// A CRD that preserves unknown fields may hand them to us; they are
		// not ours to reject.
		name:    "unknown fields in a spec config are ignored",
		profile: sample("Function"),
		in: makeObj("Function", "fn").
			set(".spec.scaleConfig", obj{"minReplicas": 0, "maxReplicas": 5, "cooldown": "5m",
				"idle": obj{"timeoutSeconds": 300, "extra": true}}).obj(),
		want: scaling.Workload{
			Config: &scaling.Config{MinReplicas: ptr[int32](0), MaxReplicas: ptr[int32](5),
				Idle: &scaling.Idle{TimeoutSeconds: ptr[int32](300)}},
			Generation: 4,
		},
	}, {
		name:    "worker group",
		profile: sample("WorkerGroup"),
		in: makeObj("WorkerGroup", "wg").
			set(".spec.replicas", 2).
			set(".spec.scalePolicy", obj{"minReplicas": 1, "maxReplicas": 6}).
			set(".spec.scaleConfig", obj{"minReplicas": 9}). // not this kind's config field
			set(".status.replicas", 2).obj(),
		want: scaling.Workload{
			Replicas:       ptr[int32](2),
			Config:         &scaling.Config{MinReplicas: ptr[int32](1), MaxReplicas: ptr[int32](6)},
			StatusReplicas: ptr[int32](2),
			Generation:     4,
		},
	}, {
		name:    "foreign kind: annotation config, map status in spec order then sorted",
		profile: foreignProfile(),
		in: makeObj("Store", "st").
			set(".spec.size.perZone", 2).
			set(".spec.zones", list{obj{"zone": "b", "size": 2}, obj{"zone": "a", "size": 2}}).
			annotate("scaleplane.io/scale-config", `{"minReplicas":1,"maxReplicas":4,"metrics":[{"type":"Resource","resource":{"name":"cpu","target":{"type":"Utilization","averageUtilization":60}}}]}`).
			set(".status.zones", obj{
				"z": obj{"ready": 0},
				"a": obj{"ready": 1},
				"y": obj{"ready": 5},
				"b": obj{"ready": 2, "observedGeneration": 3},
			}).
			set(".status.readyPerZone", 1).obj(),
		want: scaling.Workload{
			Replicas: ptr[int32](2),
			Config: &scaling.Config{MinReplicas: ptr[int32](1), MaxReplicas: ptr[int32](4),
				Metrics: []autoscalingv2.MetricSpec{cpuMetric(60)}},
			Groups: []scaling.Group{{Name: "b", Members: ptr[int32](2)}, {Name: "a", Members: ptr[int32](2)}},
			GroupStatus: []scaling.GroupStatus{
				{Name: "b", ReadyMembers: ptr[int32](2), ObservedGeneration: ptr[int64](3)},
				{Name: "a", ReadyMembers: ptr[int32](1)},
				{Name: "y", ReadyMembers: ptr[int32](5)},
				{Name: "z", ReadyMembers: ptr[int32](0)},
			},
			StatusReplicas: ptr[int32](1),
			Generation:     4,
		},
	}, {
		name:    "foreign kind: emptied annotation means no config",
		profile: foreignProfile(),
		in:      makeObj("Store", "st").annotate("scaleplane.io/scale-config", " ").obj(),
		want:    scaling.Workload{Generation: 4},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := tt.in.DeepCopy()
			got, errs := mustCompile(t, tt.profile).Read(tt.in)
			if len(errs) > 0 {
				t.Fatalf("Read errors: %v", errs)
			}
			if got.Name != tt.in.GetName() {
				t.Errorf("Read name = %q, want %q", got.Name, tt.in.GetName())
			}
			got.Name = ""
			if diff := cmp.Diff(tt.want, got, cmpOpts...); diff != "" {
				t.Errorf("Read (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(before, tt.in); diff != "" {
				t.Errorf("Read changed the object (-before +after):\n%s", diff)
			}
		})
	}
}

func TestReadErrors(t *testing.T) {
	const ann = "metadata.annotations[scaleplane.io/scale-config]"
	tests := []struct {
		name    string
		profile v1alpha1.ScaleProfileSpec
		in      *unstructured.Unstructured
		want    []string
		// wantDetail, when set, is the first error's detail.
		wantDetail string
	}{{
		name:       "replicas as a string",
		profile:    sample("RackedCluster"),
		in:         makeObj("RackedCluster", "db").set(".spec.replicas", "3").obj(),
		want:       []string{"FieldValueInvalid spec.replicas"},
		wantDetail: "must be an integer, not a string",
	}, {
		name:       "fractional replicas",
		profile:    sample("RackedCluster"),
		in:         makeObj("RackedCluster", "db").set(".spec.replicas", 1.5).obj(),
		want:       []string{"FieldValueInvalid spec.replicas"},
		wantDetail: "must be an integer, not a number",
	}, {
		name:       "replicas beyond int32",
		profile:    sample("RackedCluster"),
		in:         makeObj("RackedCluster", "db").set(".spec.replicas", int64(1)<<40).obj(),
		want:       []string{"FieldValueInvalid spec.replicas"},
		wantDetail: "must be an integer between -2147483648 and 2147483647",
	}, {
		name:    "members of the second rack",
		profile: sample("RackedCluster"),
		in: makeObj("RackedCluster", "db").
			set(".spec.racks", list{rack("a", 3), obj{"name": "b", "members": "3"}, obj{"name": true}, "c"}).obj(),
		want:       []string{"FieldValueInvalid spec.racks[1].members", "FieldValueInvalid spec.racks[2].name", "FieldValueInvalid spec.racks[3]"},
		wantDetail: "must be an integer, not a string",
	}, {
		name:       "racks not a list",
		profile:    sample("RackedCluster"),
		in:         makeObj("RackedCluster", "db").set(".spec.racks", obj{"a": 3}).obj(),
		want:       []string{"FieldValueInvalid spec.racks"},
		wantDetail: "must be a list, not an object",
	}, {
		name:       "spec not an object is reported once",
		profile:    sample("RackedCluster"),
		in:         makeObj("RackedCluster", "db").set(".spec", "big").obj(),
		want:       []string{"FieldValueInvalid spec"},
		wantDetail: "must be an object, not a string",
	}, {
		name:    "config fields at their exact paths",
		profile: sample("RackedCluster"),
		in: makeObj("RackedCluster", "db").set(".spec.scaleConfig", obj{
			"minReplicas": "1",
			"metrics": list{cpuMetricObj(70), obj{"type": "Pods", "pods": obj{
				"metric": obj{"name": "rps"},
				"target": obj{"type": "AverageValue", "averageValue": "lots"},
			}}, obj{"type": "Resource", "resource": obj{"name": "cpu", "target": obj{"type": "Utilization", "averageUtilization": "70%"}}}},
			"triggers": list{obj{"name": "q", "type": "Value", "threshold": "high", "metadata": obj{"b": 1, "a": "x"}}},
			"schedule": obj{"wakeUp": "07:00"},
			"idle":     list{},
		}).obj(),
		want: []string{
			"FieldValueInvalid spec.scaleConfig.minReplicas",
			"FieldValueInvalid spec.scaleConfig.metrics[1].pods.target.averageValue",
			"FieldValueInvalid spec.scaleConfig.metrics[2].resource.target.averageUtilization",
			"FieldValueInvalid spec.scaleConfig.triggers[0].threshold",
			"FieldValueInvalid spec.scaleConfig.triggers[0].metadata[b]",
			"FieldValueInvalid spec.scaleConfig.idle",
			"FieldValueInvalid spec.scaleConfig.schedule.wakeUp",
		},
		wantDetail: "must be an integer, not a string",
	}, {
		// resource.ParseQuantity would take minutes over this one.
		name:    "quantity with a huge negative exponent",
		profile: sample("Function"),
		in: makeObj("Function", "fn").set(".spec.scaleConfig.metrics", list{obj{"type": "Pods", "pods": obj{
			"metric": obj{"name": "rps"},
			"target": obj{"type": "AverageValue", "averageValue": "1e-999999999"},
		}}}).obj(),
		want:       []string{"FieldValueInvalid spec.scaleConfig.metrics[0].pods.target.averageValue"},
		wantDetail: `must be a quantity such as "100m", "1Gi" or 5, with a decimal exponent between e-1000 and e1000`,
	}, {
		name:       "config not an object",
		profile:    sample("Function"),
		in:         makeObj("Function", "fn").set(".spec.scaleConfig", list{}).obj(),
		want:       []string{"FieldValueInvalid spec.scaleConfig"},
		wantDetail: "must be an object, not a list",
	}, {
		name:    "status fields",
		profile: sample("RackedCluster"),
		in: makeObj("RackedCluster", "db").
			set(".status.racks", list{obj{"name": "a", "readyMembers": 1}, obj{"name": "b", "readyMembers": 2.5}}).
			set(".status.replicas", "1").obj(),
		want: []string{"FieldValueInvalid status.racks[1].readyMembers", "FieldValueInvalid status.replicas"},
	}, {
		name:    "map status",
		profile: foreignProfile(),
		in: makeObj("Store", "st").
			set(".spec.zones", list{obj{"zone": "a", "size": 1}}).
			set(".status.zones", obj{"a": obj{"ready": 1, "observedGeneration": "x"}, "b": 3}).obj(),
		want: []string{"FieldValueInvalid status.zones[a].observedGeneration", "FieldValueInvalid status.zones[b]"},
	}, {
		name:       "annotation with an unknown field (V9)",
		profile:    foreignProfile(),
		in:         makeObj("Store", "st").annotate("scaleplane.io/scale-config", `{"minReplica":1,"maxReplicas":3}`).obj(),
		want:       []string{"FieldValueInvalid " + ann + ".minReplica"},
		wantDetail: `unknown field "minReplica"; remove it or correct its spelling (field names are case-sensitive)`,
	}, {
		// The same guard as at a spec path, by the same decoder. (A JSON
		// number is a float64, as the API server holds it, and is never
		// handed to ParseQuantity as text.)
		name:    "annotation with a huge exponent",
		profile: foreignProfile(),
		in: makeObj("Store", "st").annotate("scaleplane.io/scale-config",
			`{"metrics":[{"type":"Pods","pods":{"metric":{"name":"rps"},"target":{"type":"AverageValue","averageValue":"1e-999999999"}}}]}`).obj(),
		want:       []string{"FieldValueInvalid " + ann + ".metrics[0].pods.target.averageValue"},
		wantDetail: `must be a quantity such as "100m", "1Gi" or 5, with a decimal exponent between e-1000 and e1000`,
	}, {
		name:    "annotation that is not JSON",
		profile: foreignProfile(),
		in:      makeObj("Store", "st").annotate("scaleplane.io/scale-config", `minReplicas: 1`).obj(),
		want:    []string{"FieldValueInvalid " + ann},
	}, {
		// JSON allows only its own four space characters.
		name:       "annotation starting with a no-break space",
		profile:    foreignProfile(),
		in:         makeObj("Store", "st").annotate("scaleplane.io/scale-config", "\u00a0{\"minReplicas\":1}").obj(),
		want:       []string{"FieldValueInvalid " + ann},
		wantDetail: "is not valid JSON: it holds U+00A0 at byte 0, a space JSON does not allow; only spaces, tabs, line feeds and carriage returns may surround or separate JSON values, so remove it",
	}, {
		name:       "annotation ending with a form feed",
		profile:    foreignProfile(),
		in:         makeObj("Store", "st").annotate("scaleplane.io/scale-config", "{\"minReplicas\":1}\f").obj(),
		want:       []string{"FieldValueInvalid " + ann},
		wantDetail: "is not valid JSON: it holds U+000C at byte 17, a space JSON does not allow; only spaces, tabs, line feeds and carriage returns may surround or separate JSON values, so remove it",
	}, {
		name:    "annotation with every error at its path, all together",
		profile: foreignProfile(),
		in: makeObj("Store", "st").annotate("scaleplane.io/scale-config",
			`{"minReplicas":"two","idle":{"timeout":3},"metrics":[{"type":"Resource","resource":{"nam":"cpu","target":{"averageUtilization":"70%"}}}],"Foo":1}`).obj(),
		want: []string{
			"FieldValueInvalid " + ann + ".minReplicas",
			"FieldValueInvalid " + ann + ".metrics[0].resource.target.averageUtilization",
			"FieldValueInvalid " + ann + ".metrics[0].resource.nam",
			"FieldValueInvalid " + ann + ".idle.timeout",
			"FieldValueInvalid " + ann + ".Foo",
		},
		wantDetail: "must be an integer, not a string",
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, errs := mustCompile(t, tt.profile).Read(tt.in)
			if diff := cmp.Diff(tt.want, errorStrings(errs)); diff != "" {
				t.Errorf("errors (-want +got):\n%s", diff)
			}
			if tt.wantDetail != "" && len(errs) > 0 {
				if diff := cmp.Diff(tt.wantDetail, errs[0].Detail); diff != "" {
					t.Errorf("detail (-want +got):\n%s", diff)
				}
			}
		})
	}
}

// TestDecodeConfigMatchesJSON proves that the direct map-to-Config decoder
// means exactly what a JSON round trip means, for every field of a full
// config and for numbers as either decoder produces them.
func TestDecodeConfigMatchesJSON(t *testing.T) {
	for _, tt := range []struct {
		name string
		in   map[string]interface{}
	}{
		{"int64 numbers", fullConfigObj()},
		{"float64 numbers", func() map[string]interface{} {
			data, err := json.Marshal(fullConfigObj())
			if err != nil {
				t.Fatal(err)
			}
			var m map[string]interface{}
			if err := json.Unmarshal(data, &m); err != nil {
				t.Fatal(err)
			}
			return m
		}()},
	} {
		t.Run(tt.name, func(t *testing.T) {
			data, err := json.Marshal(tt.in)
			if err != nil {
				t.Fatal(err)
			}
			want := &scaling.Config{}
			if strict, err := kjson.UnmarshalStrict(data, want); err != nil || len(strict) > 0 {
				t.Fatalf("json decode: %v %v", err, strict)
			}
			got, errs := decodeConfig(tt.in, field.NewPath("spec", "scaleConfig"), false, nil)
			if len(errs) > 0 {
				t.Fatalf("decodeConfig: %v", errs)
			}
			if diff := cmp.Diff(want, got, cmpOpts...); diff != "" {
				t.Errorf("decodeConfig (-json +direct):\n%s", diff)
			}
		})
	}
}

// fullConfigObj is a scale config that sets every field, as the API
// machinery decodes it.
func fullConfigObj() map[string]interface{} {
	return normalize(obj{
		"minReplicas": 2,
		"maxReplicas": 10,
		"metrics": list{
			cpuMetricObj(70),
			obj{"type": "Pods", "pods": obj{
				"metric": obj{"name": "requests_per_second", "selector": obj{
					"matchLabels":      obj{"tier": "web"},
					"matchExpressions": list{obj{"key": "zone", "operator": "In", "values": list{"a", "b"}}},
				}},
				"target": obj{"type": "AverageValue", "averageValue": "100m"},
			}},
			obj{"type": "External", "external": obj{
				"metric": obj{"name": "queue_depth"},
				"target": obj{"type": "Value", "value": 30},
			}},
			obj{"type": "ContainerResource", "containerResource": obj{
				"name": "memory", "container": "app",
				"target": obj{"type": "AverageValue", "averageValue": "512Mi"},
			}},
		},
		"behavior": obj{
			"scaleUp": obj{"stabilizationWindowSeconds": 0, "selectPolicy": "Max", "tolerance": "0.05",
				"policies": list{obj{"type": "Pods", "value": 4, "periodSeconds": 15}, obj{"type": "Percent", "value": 100, "periodSeconds": 15}}},
			"scaleDown": obj{"stabilizationWindowSeconds": 300, "selectPolicy": "Min",
				"policies": list{obj{"type": "Percent", "value": 50, "periodSeconds": 60}}},
		},
		"triggers": list{obj{
			"name": "rps", "type": "AverageValue", "source": "promql",
			"query":     `sum(rate(http_requests_total{namespace="${namespace}",pod=~"${name}-.*"}[1m]))`,
			"threshold": 100.5, "activationThreshold": 1,
			"metadata": obj{"window": "1m"},
		}},
		"idle":                   obj{"replicasAtStart": 1, "timeoutSeconds": 600},
		"schedule":               obj{"timeZone": "Europe/Paris", "wakeUp": list{"07:00", "13:30"}, "scaleDownTimeout": list{obj{"time": "19:00", "seconds": 300}}},
		"dependsOn":              list{"db", "cache"},
		"pollingIntervalSeconds": 30,
	}).(map[string]interface{})
}

func TestWriteSpec(t *testing.T) {
	// extra holds fields no profile knows; WriteSpec must keep them all.
	racked := func() *objBuilder {
		return makeObj("RackedCluster", "db").
			set(".metadata.labels", obj{"team": "data"}).
			set(".spec.version", "5.4").
			set(".spec.replicas", 3).
			set(".spec.racks", list{
				obj{"name": "a", "members": 3, "storage": obj{"capacity": "10Gi"}},
				obj{"name": "b", "members": 2},
			}).
			set(".status", obj{"replicas": 2, "racks": list{obj{"name": "a", "readyMembers": 2}}, "conditions": list{}})
	}
	const key = "scaleplane.io/scale-config"
	tests := []struct {
		name    string
		profile v1alpha1.ScaleProfileSpec
		in      *unstructured.Unstructured
		w       scaling.Workload
		want    *unstructured.Unstructured
		wantErr string
	}{{
		name:    "fan out and pin, keeping every other field",
		profile: sample("RackedCluster"),
		in:      racked().set(".spec.scaleConfig", obj{"minReplicas": 3, "maxReplicas": 3, "metrics": list{cpuMetricObj(70)}, "x-unknown": 1}).obj(),
		w: scaling.Workload{
			Replicas: ptr[int32](5),
			Config:   &scaling.Config{MinReplicas: ptr[int32](5), MaxReplicas: ptr[int32](5)},
			Groups:   []scaling.Group{{Name: "a", Members: ptr[int32](5)}, {Name: "b", Members: ptr[int32](5)}},
		},
		want: racked().
			set(".spec.replicas", 5).
			set(".spec.scaleConfig", obj{"minReplicas": 5, "maxReplicas": 5, "metrics": list{cpuMetricObj(70)}, "x-unknown": 1}).
			set(".spec.racks", list{
				obj{"name": "a", "members": 5, "storage": obj{"capacity": "10Gi"}},
				obj{"name": "b", "members": 5},
			}).obj(),
	}, {
		name:    "config created when absent (M1)",
		profile: sample("RackedCluster"),
		in:      racked().obj(),
		w:       scaling.Workload{Config: &scaling.Config{MinReplicas: ptr[int32](3), MaxReplicas: ptr[int32](3)}},
		want:    racked().set(".spec.scaleConfig", obj{"minReplicas": 3, "maxReplicas": 3}).obj(),
	}, {
		name:    "nil values never remove fields",
		profile: sample("RackedCluster"),
		in:      racked().set(".spec.scaleConfig", obj{"minReplicas": 1, "maxReplicas": 4}).obj(),
		w: scaling.Workload{
			Config: &scaling.Config{MaxReplicas: ptr[int32](6)},
			Groups: []scaling.Group{{Name: "a"}},
		},
		want: racked().set(".spec.scaleConfig", obj{"minReplicas": 1, "maxReplicas": 6}).obj(),
	}, {
		name:    "replicas created on a bare object",
		profile: sample("Function"),
		in:      makeObj("Function", "fn").obj(),
		w:       scaling.Workload{Replicas: ptr[int32](2)},
		want:    makeObj("Function", "fn").set(".spec.replicas", 2).obj(),
	}, {
		name:    "worker group scale policy",
		profile: sample("WorkerGroup"),
		in:      makeObj("WorkerGroup", "wg").set(".spec.scalePolicy", obj{"minReplicas": 1}).set(".spec.leaderTemplate", obj{"image": "x"}).obj(),
		w:       scaling.Workload{Config: &scaling.Config{MinReplicas: ptr[int32](1), MaxReplicas: ptr[int32](1)}},
		want:    makeObj("WorkerGroup", "wg").set(".spec.scalePolicy", obj{"minReplicas": 1, "maxReplicas": 1}).set(".spec.leaderTemplate", obj{"image": "x"}).obj(),
	}, {
		name:    "annotation rewritten keeping its other fields",
		profile: foreignProfile(),
		in: makeObj("Store", "st").annotate("other", "keep").
			annotate(key, `{"triggers":[{"name":"q","type":"Value","query":"a > 1 & b","threshold":0.1}],"minReplicas":1, "maxReplicas": 2}`).obj(),
		w: scaling.Workload{Config: &scaling.Config{MinReplicas: ptr[int32](2), MaxReplicas: ptr[int32](2)}},
		want: makeObj("Store", "st").annotate("other", "keep").
			annotate(key, `{"maxReplicas":2,"minReplicas":2,"triggers":[{"name":"q","query":"a > 1 & b","threshold":0.1,"type":"Value"}]}`).obj(),
	}, {
		name:    "annotation left as written when nothing changes",
		profile: foreignProfile(),
		in:      makeObj("Store", "st").annotate(key, `{ "minReplicas": 2, "maxReplicas": 2 }`).obj(),
		w:       scaling.Workload{Config: &scaling.Config{MinReplicas: ptr[int32](2), MaxReplicas: ptr[int32](2)}},
		want:    makeObj("Store", "st").annotate(key, `{ "minReplicas": 2, "maxReplicas": 2 }`).obj(),
	}, {
		name:    "annotation created",
		profile: foreignProfile(),
		in:      makeObj("Store", "st").obj(),
		w:       scaling.Workload{Config: &scaling.Config{MinReplicas: ptr[int32](1), MaxReplicas: ptr[int32](1)}},
		want:    makeObj("Store", "st").annotate(key, `{"maxReplicas":1,"minReplicas":1}`).obj(),
	}, {
		name:    "foreign groups by their own field names",
		profile: foreignProfile(),
		in:      makeObj("Store", "st").set(".spec.zones", list{obj{"zone": "a", "size": 1, "class": "ssd"}}).obj(),
		w:       scaling.Workload{Replicas: ptr[int32](3), Groups: []scaling.Group{{Name: "a", Members: ptr[int32](3)}}},
		want: makeObj("Store", "st").
			set(".spec.size.perZone", 3).
			set(".spec.zones", list{obj{"zone": "a", "size": 3, "class": "ssd"}}).obj(),
	}, {
		name:    "groups changed since read",
		profile: sample("RackedCluster"),
		in:      racked().obj(),
		w:       scaling.Workload{Groups: []scaling.Group{{Name: "b", Members: ptr[int32](1)}}},
		wantErr: `write groups: spec.racks[0] is named "a", not "b": the groups changed since they were read`,
	}, {
		name:    "more groups than the object has",
		profile: sample("RackedCluster"),
		in:      racked().obj(),
		w:       scaling.Workload{Groups: make([]scaling.Group, 3)},
		wantErr: "write groups: spec.racks has 2 groups but 3 were given",
	}, {
		name:    "replicas under a non-object",
		profile: foreignProfile(),
		in:      makeObj("Store", "st").set(".spec.size", "large").obj(),
		w:       scaling.Workload{Replicas: ptr[int32](1)},
		wantErr: "write replicas: set spec.size.perZone: spec.size is a string, not an object",
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := mustCompile(t, tt.profile).WriteSpec(tt.in, tt.w)
			if tt.wantErr != "" {
				if err == nil || err.Error() != tt.wantErr {
					t.Fatalf("WriteSpec error = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("WriteSpec: %v", err)
			}
			if diff := cmp.Diff(tt.want, tt.in); diff != "" {
				t.Errorf("object (-want +got):\n%s", diff)
			}
		})
	}
}

// TestRoundTrip writes back exactly what was read: the object must not
// change at all, so that an unchanged decision yields no patch (M6).
func TestRoundTrip(t *testing.T) {
	tests := []struct {
		profile v1alpha1.ScaleProfileSpec
		in      *unstructured.Unstructured
	}{
		{sample("RackedCluster"), benchObject()},
		{sample("Function"), makeObj("Function", "fn").set(".spec.replicas", 0).set(".spec.scaleConfig", obj{"minReplicas": 0, "maxReplicas": 0}).obj()},
		{sample("WorkerGroup"), makeObj("WorkerGroup", "wg").set(".spec.scalePolicy", fullConfigObj()).obj()},
		{foreignProfile(), makeObj("Store", "st").
			set(".spec.size.perZone", 2).
			set(".spec.zones", list{obj{"zone": "b", "size": 2}, obj{"zone": "a", "size": 1}}).
			annotate("scaleplane.io/scale-config", "{\n  \"minReplicas\": 1,\n  \"maxReplicas\": 4\n}").obj()},
	}
	for _, tt := range tests {
		t.Run(tt.profile.Target.Kind, func(t *testing.T) {
			v := mustCompile(t, tt.profile)
			w, errs := v.Read(tt.in)
			if len(errs) > 0 {
				t.Fatalf("Read: %v", errs)
			}
			got := tt.in.DeepCopy()
			if err := v.WriteSpec(got, w); err != nil {
				t.Fatalf("WriteSpec: %v", err)
			}
			if diff := cmp.Diff(tt.in, got); diff != "" {
				t.Errorf("round trip changed the object (-read +written):\n%s", diff)
			}
			again, errs := v.Read(got)
			if len(errs) > 0 {
				t.Fatalf("Read after write: %v", errs)
			}
			if diff := cmp.Diff(w, again, cmpOpts...); diff != "" {
				t.Errorf("Read after write (-first +second):\n%s", diff)
			}
		})
	}
}

func TestPodSelector(t *testing.T) {
	tests := []struct {
		name    string
		profile v1alpha1.ScaleProfileSpec
		in      *unstructured.Unstructured
		want    string
		wantErr string
	}{{
		name:    "racked cluster selects the first rack",
		profile: sample("RackedCluster"),
		in:      makeObj("RackedCluster", "db").set(".spec.racks", list{rack("west", 1), rack("east", 1)}).obj(),
		want:    "samples.scaleplane.io/cluster=db,samples.scaleplane.io/rack=west",
	}, {
		name:    "racked cluster without racks",
		profile: sample("RackedCluster"),
		in:      makeObj("RackedCluster", "db").obj(),
		want:    "samples.scaleplane.io/cluster=db",
	}, {
		name:    "function",
		profile: sample("Function"),
		in:      makeObj("Function", "hello").obj(),
		want:    "samples.scaleplane.io/function=hello",
	}, {
		name:    "worker group counts leaders",
		profile: sample("WorkerGroup"),
		in:      makeObj("WorkerGroup", "wg").obj(),
		want:    "samples.scaleplane.io/role=leader,samples.scaleplane.io/workergroup=wg",
	}, {
		name: "group placeholder in a value",
		profile: func() v1alpha1.ScaleProfileSpec {
			p := foreignProfile()
			p.Pods.Labels["db.example.com/set"] = "${name}-${group}"
			return p
		}(),
		in:   makeObj("Store", "st").set(".spec.zones", list{obj{"zone": "z1"}}).obj(),
		want: "app.kubernetes.io/instance=st,db.example.com/set=st-z1,db.example.com/zone=z1",
	}, {
		name:    "first group without a name",
		profile: sample("RackedCluster"),
		in:      makeObj("RackedCluster", "db").set(".spec.racks", list{obj{"members": 1}}).obj(),
		wantErr: "spec.racks[0] has no name; the selector needs the first group's name",
	}, {
		name:    "name too long for a label value",
		profile: sample("Function"),
		in:      makeObj("Function", strings.Repeat("f", 64)).obj(),
		wantErr: "pod selector of Function " + strings.Repeat("f", 64),
	}, {
		name: "no pod labels",
		profile: func() v1alpha1.ScaleProfileSpec {
			p := sample("Function")
			p.Pods, p.Status.SelectorPath = v1alpha1.Pods{}, ""
			return p
		}(),
		in:      makeObj("Function", "fn").obj(),
		wantErr: "profile Function.samples.scaleplane.io/v1alpha1 names no pod labels",
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := mustCompile(t, tt.profile).PodSelector(tt.in)
			if tt.wantErr != "" {
				if err == nil || !strings.HasPrefix(err.Error(), tt.wantErr) {
					t.Fatalf("PodSelector error = %v, want prefix %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("PodSelector: %v", err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("PodSelector (-want +got):\n%s", diff)
			}
		})
	}
}

func TestHPATargetRef(t *testing.T) {
	tests := []struct {
		name    string
		profile v1alpha1.ScaleProfileSpec
		in      *unstructured.Unstructured
		want    autoscalingv2.CrossVersionObjectReference
	}{{
		name:    "self",
		profile: sample("RackedCluster"),
		in:      makeObj("RackedCluster", "db").obj(),
		want:    autoscalingv2.CrossVersionObjectReference{APIVersion: "samples.scaleplane.io/v1alpha1", Kind: "RackedCluster", Name: "db"},
	}, {
		name:    "self without type meta",
		profile: sample("WorkerGroup"),
		in: func() *unstructured.Unstructured {
			u := makeObj("WorkerGroup", "wg").obj()
			u.SetAPIVersion("")
			u.SetKind("")
			return u
		}(),
		want: autoscalingv2.CrossVersionObjectReference{APIVersion: "samples.scaleplane.io/v1alpha1", Kind: "WorkerGroup", Name: "wg"},
	}, {
		name:    "runtime deployment",
		profile: sample("Function"),
		in:      makeObj("Function", "hello").obj(),
		want:    autoscalingv2.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "hello"},
	}, {
		name:    "named child",
		profile: foreignProfile(),
		in:      makeObj("Store", "st").obj(),
		want:    autoscalingv2.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "StatefulSet", Name: "st-store"},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := mustCompile(t, tt.profile).HPATargetRef(tt.in)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("HPATargetRef (-want +got):\n%s", diff)
			}
		})
	}
}

// benchObject is a three-rack RackedCluster with a full scale config and a
// reported status: the shape of a typical admission request.
func benchObject() *unstructured.Unstructured {
	return makeObj("RackedCluster", "db").
		set(".metadata.labels", obj{"app": "db"}).
		set(".spec.replicas", 3).
		set(".spec.scaleConfig", fullConfigObj()).
		set(".spec.racks", list{rack("a", 3), rack("b", 3), rack("c", 3)}).
		set(".status.racks", list{
			obj{"name": "a", "readyMembers": 3}, obj{"name": "b", "readyMembers": 3}, obj{"name": "c", "readyMembers": 2},
		}).
		set(".status.replicas", 3).
		set(".status.selector", "samples.scaleplane.io/cluster=db,samples.scaleplane.io/rack=a").obj()
}

func TestExponentGuards(t *testing.T) {
	tests := []struct {
		s  string
		ok bool
	}{
		{"100m", true},
		{"1Ei", true},
		{"2E", true},
		{"1.5e3", true},
		{"1e1000", true},
		{"1e-1000", true},
		{"1e-1001", false},
		{"1.e+99999", false},
		{"5e-99999999999999999999", false},
		{"sum(rate(x[1m])) > 1e5000", true}, // a query, not a quantity: ParseQuantity rejects it anyway
	}
	for _, tt := range tests {
		if got := exponentOK(tt.s); got != tt.ok {
			t.Errorf("exponentOK(%q) = %v, want %v", tt.s, got, tt.ok)
		}
	}
}
