package v1alpha2

import (
	"fmt"
	"strings"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/scaleplane/scaleplane/api/v1alpha1"
)

// LegacyAPIVersion is the previous version of the configuration file. Its
// files are still read: Decode converts them and warns.
const LegacyAPIVersion = GroupName + "/v1alpha1"

// legacyConfiguration is a config.scaleplane.io/v1alpha1 file. Only its
// profiles differ from v1alpha2: the component settings are the same.
type legacyConfiguration struct {
	metav1.TypeMeta `json:",inline"`
	Profiles        []legacyProfile `json:"profiles"`
	Webhook         Webhook         `json:"webhook,omitempty"`
	Autoscaler      Autoscaler      `json:"autoscaler,omitempty"`
	Metrics         Metrics         `json:"metrics,omitempty"`
	Servers         Servers         `json:"servers,omitempty"`
}

// legacyProfile is a v1alpha1 profile. Its group/version/kind/resource
// became target, replicas replicasPath, groups (the racks: a word that now
// only ever means an API group) memberGroups, status.replicas and
// status.selector replicasPath and selectorPath, pods.groupLabel
// pods.memberGroupLabel.
type legacyProfile struct {
	Group          string                       `json:"group"`
	Version        string                       `json:"version"`
	Kind           string                       `json:"kind"`
	Resource       string                       `json:"resource"`
	Replicas       string                       `json:"replicas,omitempty"`
	ScaleConfig    v1alpha1.ScaleConfigLocation `json:"scaleConfig"`
	Groups         *legacyGroups                `json:"groups,omitempty"`
	Status         legacyStatus                 `json:"status,omitempty"`
	Pods           legacyPods                   `json:"pods,omitempty"`
	HPATarget      v1alpha1.HPATarget           `json:"hpaTarget,omitempty"`
	MaxReplicas    int32                        `json:"maxReplicas,omitempty"`
	DefaultMetrics []autoscalingv2.MetricSpec   `json:"defaultMetrics,omitempty"`
}

type legacyGroups struct {
	Path         string                      `json:"path"`
	NameField    string                      `json:"nameField,omitempty"`
	MembersField string                      `json:"membersField,omitempty"`
	Status       *v1alpha1.MemberGroupStatus `json:"status,omitempty"`
}

type legacyStatus struct {
	Replicas string `json:"replicas,omitempty"`
	Selector string `json:"selector,omitempty"`
}

type legacyPods struct {
	Labels     map[string]string `json:"labels,omitempty"`
	GroupLabel string            `json:"groupLabel,omitempty"`
}

// rename is one field a v1alpha1 profile names differently.
type rename struct {
	old, new string
	// used reports whether a profile sets the old field.
	used func(p *legacyProfile) bool
}

// renames are in the order the warning lists them.
var renames = []rename{
	{"group and version", "target.apiVersion (group/version)", func(p *legacyProfile) bool { return p.Group != "" || p.Version != "" }},
	{"kind", "target.kind", func(p *legacyProfile) bool { return p.Kind != "" }},
	{"resource", "target.resource", func(p *legacyProfile) bool { return p.Resource != "" }},
	{"replicas", "replicasPath", func(p *legacyProfile) bool { return p.Replicas != "" }},
	{"groups", "memberGroups", func(p *legacyProfile) bool { return p.Groups != nil }},
	{"status.replicas", "status.replicasPath", func(p *legacyProfile) bool { return p.Status.Replicas != "" }},
	{"status.selector", "status.selectorPath", func(p *legacyProfile) bool { return p.Status.Selector != "" }},
	{"pods.groupLabel", "pods.memberGroupLabel", func(p *legacyProfile) bool { return p.Pods.GroupLabel != "" }},
}

// convert turns a v1alpha1 file into v1alpha2 and says what to rename for
// the file to be read without conversion.
func (l *legacyConfiguration) convert() (*Configuration, string) {
	c := &Configuration{
		TypeMeta:   metav1.TypeMeta{APIVersion: APIVersion, Kind: l.Kind},
		Webhook:    l.Webhook,
		Autoscaler: l.Autoscaler,
		Metrics:    l.Metrics,
		Servers:    l.Servers,
	}
	if l.Profiles != nil {
		c.Profiles = make([]v1alpha1.ScaleProfileSpec, len(l.Profiles))
	}
	var used []string
	for _, r := range renames {
		for i := range l.Profiles {
			if r.used(&l.Profiles[i]) {
				used = append(used, r.old+" to "+r.new)
				break
			}
		}
	}
	for i := range l.Profiles {
		c.Profiles[i] = l.Profiles[i].convert()
	}
	warning := fmt.Sprintf("apiVersion %s is deprecated and was read as %s: set apiVersion: %s", LegacyAPIVersion, APIVersion, APIVersion)
	if len(used) > 0 {
		warning += " and rename these profile fields: " + strings.Join(used, ", ")
	}
	return c, warning
}

func (p *legacyProfile) convert() v1alpha1.ScaleProfileSpec {
	apiVersion := p.Version
	if p.Group != "" {
		apiVersion = p.Group + "/" + p.Version
	}
	s := v1alpha1.ScaleProfileSpec{
		Target:       v1alpha1.TargetKind{APIVersion: apiVersion, Kind: p.Kind, Resource: p.Resource},
		ReplicasPath: p.Replicas,
		ScaleConfig:  p.ScaleConfig,
		Status:       v1alpha1.StatusPaths{ReplicasPath: p.Status.Replicas, SelectorPath: p.Status.Selector},
		Pods:         v1alpha1.Pods{Labels: p.Pods.Labels, MemberGroupLabel: p.Pods.GroupLabel},
		HPATarget:    p.HPATarget,
		MaxReplicas:  p.MaxReplicas,
		// A v1alpha1 file is decoded afresh for each conversion: nothing
		// here is shared with anything else.
		DefaultMetrics: p.DefaultMetrics,
	}
	if g := p.Groups; g != nil {
		s.MemberGroups = &v1alpha1.MemberGroups{Path: g.Path, NameField: g.NameField, MembersField: g.MembersField, Status: g.Status}
	}
	return s
}
