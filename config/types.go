package config

import (
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Configuration is the component configuration read from --config.
type Configuration struct {
	metav1.TypeMeta `json:",inline"`
	// Profiles describe the workload kinds scaleplane manages.
	Profiles []Profile `json:"profiles"`
	// Webhook configures the admission webhook server and the webhook
	// configurations scaleplane keeps in line with its profiles.
	Webhook Webhook `json:"webhook,omitempty"`
	// Autoscaler configures the built-in trigger autoscaler.
	Autoscaler Autoscaler `json:"autoscaler,omitempty"`
	// Metrics configures the pod scraper and the embedded metrics store.
	Metrics Metrics `json:"metrics,omitempty"`
	// Servers bounds the webhook, metrics and probe servers (servers.go).
	Servers Servers `json:"servers,omitempty"`
}

// Webhook configures admission.
type Webhook struct {
	// Port the webhook server listens on. Default 9443.
	Port int `json:"port,omitempty"`
	// Host the webhook server binds; empty means all interfaces.
	Host string `json:"host,omitempty"`
	// CertDir holds tls.crt and tls.key (reloaded when they change).
	CertDir string `json:"certDir,omitempty"`
	// MutatingConfigurationName and ValidatingConfigurationName name the
	// webhook configurations whose rules scaleplane keeps in line with its
	// profiles. Defaults: scaleplane-mutating-webhook-configuration and
	// scaleplane-validating-webhook-configuration.
	MutatingConfigurationName   string `json:"mutatingConfigurationName,omitempty"`
	ValidatingConfigurationName string `json:"validatingConfigurationName,omitempty"`
	// TimeoutSeconds for each webhook call. Default 10.
	TimeoutSeconds int32 `json:"timeoutSeconds,omitempty"`
	// NamespaceSelector and ObjectSelector restrict which objects reach the
	// webhooks.
	NamespaceSelector *metav1.LabelSelector `json:"namespaceSelector,omitempty"`
	ObjectSelector    *metav1.LabelSelector `json:"objectSelector,omitempty"`
}

// Autoscaler configures the trigger autoscaler.
type Autoscaler struct {
	// PollingIntervalSeconds between evaluations. Default 15.
	PollingIntervalSeconds int32 `json:"pollingIntervalSeconds,omitempty"`
	// PrometheusURL, when set, makes "prometheus" the default trigger source.
	PrometheusURL string `json:"prometheusURL,omitempty"`
	// Queries bound what trigger queries may cost.
	Queries Queries `json:"queries,omitempty"`
}

// Queries bound what one trigger query may cost (V10). Admission refuses a
// query over the static bounds (length, depth, points per series, regular
// expressions), every evaluation checks them again, the debug endpoint
// applies them to what it is sent, and the remote source never sends a
// query over them. Defaults and their reasons are in docs/profiles.md.
type Queries struct {
	// MaxLength of a query as written, in bytes. Default 4096.
	MaxLength int `json:"maxLength,omitempty"`
	// MaxDepth of nesting: each open parenthesis, bracket or brace and
	// each operator in a chain counts one. Default 100.
	MaxDepth int `json:"maxDepth,omitempty"`
	// MaxPointsPerSeries of every range selector and subquery. Default
	// 11000, Prometheus' own bound for range queries.
	MaxPointsPerSeries int64 `json:"maxPointsPerSeries,omitempty"`
	// MaxRegexSize is the instructions all regular expressions of a query
	// may compile to together. Default 10000.
	MaxRegexSize int `json:"maxRegexSize,omitempty"`
	// MaxSamples one evaluation may hold in memory. Default 1000000.
	MaxSamples int `json:"maxSamples,omitempty"`
	// TimeoutSeconds bounds one evaluation. Default 10.
	TimeoutSeconds int32 `json:"timeoutSeconds,omitempty"`
	// TickTimeoutSeconds bounds the evaluations of all triggers of one
	// workload in one autoscaler tick. Default 15.
	TickTimeoutSeconds int32 `json:"tickTimeoutSeconds,omitempty"`
}

// Metrics configures scraping and the embedded store.
type Metrics struct {
	// ScrapeIntervalSeconds between scrapes of a pod. Default 5.
	ScrapeIntervalSeconds int32 `json:"scrapeIntervalSeconds,omitempty"`
	// RetentionSeconds of the embedded store. Default 1800.
	RetentionSeconds int32 `json:"retentionSeconds,omitempty"`
	// MaxSeries the store keeps; more are refused and counted. Default 100000.
	MaxSeries int `json:"maxSeries,omitempty"`
	// MaxStoreBytes the store may take: series labels, a per-series
	// bookkeeping estimate and chunks. New series past it are refused and
	// counted, and samples too while existing series' chunks keep it past
	// it. Default 134217728 (128 MiB).
	MaxStoreBytes int64 `json:"maxStoreBytes,omitempty"`
	// BodySizeLimitBytes bounds one scraped (decompressed) response; a
	// larger one fails the scrape. Default 10485760 (10 MiB).
	BodySizeLimitBytes int64 `json:"bodySizeLimitBytes,omitempty"`
	// SampleLimit bounds the samples of requested metric names in one
	// scrape (Prometheus' sample_limit): more fail the scrape, which stores
	// nothing. Default 10000.
	SampleLimit int `json:"sampleLimit,omitempty"`
	// LabelLimit, LabelNameLengthLimit and LabelValueLengthLimit bound each
	// requested series, the target's labels and the metric name included
	// (Prometheus' label_limit, label_name_length_limit,
	// label_value_length_limit): one series over them fails the scrape.
	// Defaults 64, 256 and 4096.
	LabelLimit            int `json:"labelLimit,omitempty"`
	LabelNameLengthLimit  int `json:"labelNameLengthLimit,omitempty"`
	LabelValueLengthLimit int `json:"labelValueLengthLimit,omitempty"`
}

// Profile says where one workload kind keeps what the contract talks about.
// Paths are written as in kubectl's JSONPath without braces: ".spec.replicas".
type Profile struct {
	// Group, Version and Kind of the workload.
	Group   string `json:"group"`
	Version string `json:"version"`
	Kind    string `json:"kind"`
	// Resource is the plural resource name, e.g. rackedclusters.
	Resource string `json:"resource"`
	// Replicas is R's path. Default .spec.replicas.
	Replicas string `json:"replicas,omitempty"`
	// ScaleConfig is where C lives: exactly one of Path or Annotation.
	ScaleConfig ScaleConfigLocation `json:"scaleConfig"`
	// Groups describes the racks; nil for kinds without groups.
	Groups *Groups `json:"groups,omitempty"`
	// Status names status paths scaleplane writes (C2, C3).
	Status Status `json:"status,omitempty"`
	// Pods says how to find the pods of a workload (for the /scale selector
	// and for scraping).
	Pods Pods `json:"pods,omitempty"`
	// HPATarget is what a built-in HPA scales. Default: the workload itself
	// through /scale.
	HPATarget HPATarget `json:"hpaTarget,omitempty"`
	// MaxReplicas is the upper bound for R (V1). Default 1000.
	MaxReplicas int32 `json:"maxReplicas,omitempty"`
	// DefaultMetrics are used by the built-in HPA when C has a range but no
	// metrics of its own.
	DefaultMetrics []autoscalingv2.MetricSpec `json:"defaultMetrics,omitempty"`
}

// ScaleConfigLocation names where C lives.
type ScaleConfigLocation struct {
	// Path in the spec, e.g. .spec.scaleConfig.
	Path string `json:"path,omitempty"`
	// Annotation key holding C as JSON, e.g. scaleplane.io/scale-config.
	Annotation string `json:"annotation,omitempty"`
}

// Groups describes a list of groups (racks) in the spec and their status.
type Groups struct {
	// Path of the list, e.g. .spec.racks.
	Path string `json:"path"`
	// NameField and MembersField within one item. Defaults name, members.
	NameField    string `json:"nameField,omitempty"`
	MembersField string `json:"membersField,omitempty"`
	// Status says where each group's ready count is reported.
	Status *GroupStatus `json:"status,omitempty"`
}

// GroupStatusStyle is how groups are reported in status.
type GroupStatusStyle string

const (
	// GroupStatusList: a list of objects, each with a name field.
	GroupStatusList GroupStatusStyle = "List"
	// GroupStatusMap: an object keyed by group name.
	GroupStatusMap GroupStatusStyle = "Map"
)

// GroupStatus names where groups report readiness.
type GroupStatus struct {
	// Path of the list or map, e.g. .status.racks.
	Path string `json:"path"`
	// Style is List (default) or Map.
	Style GroupStatusStyle `json:"style,omitempty"`
	// NameField within a list item. Default name. Unused for Map.
	NameField string `json:"nameField,omitempty"`
	// ReadyMembersField within an item. Default readyMembers.
	ReadyMembersField string `json:"readyMembersField,omitempty"`
	// ObservedGenerationField within an item, if the kind reports one.
	ObservedGenerationField string `json:"observedGenerationField,omitempty"`
}

// Status names the status paths scaleplane owns.
type Status struct {
	// Replicas is status.replicas' path (the /scale statusReplicasPath).
	Replicas string `json:"replicas,omitempty"`
	// Selector is the /scale labelSelectorPath scaleplane fills (C3).
	Selector string `json:"selector,omitempty"`
}

// Pods says how a workload's pods are labelled. Values may use ${name}
// (the workload's name) and ${group} (a group's name).
type Pods struct {
	// Labels all pods of the workload carry.
	Labels map[string]string `json:"labels,omitempty"`
	// GroupLabel is the label holding a pod's group name; with it the /scale
	// selector picks the pods of one group (C3).
	GroupLabel string `json:"groupLabel,omitempty"`
}

// HPATarget is the object a built-in HPA scales.
type HPATarget struct {
	// APIVersion and Kind of a child object; empty means the workload itself.
	APIVersion string `json:"apiVersion,omitempty"`
	Kind       string `json:"kind,omitempty"`
	// Name of the child; ${name} is the workload's name. Default ${name}.
	Name string `json:"name,omitempty"`
}

// Self reports whether the HPA targets the workload itself.
func (t HPATarget) Self() bool { return t.Kind == "" }
