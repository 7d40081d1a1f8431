// Package v1alpha2 is the scaleplane binary's component configuration, the
// file given with --config (group config.scaleplane.io, version v1alpha2):
// its types, their defaults and validation with field paths, and Load and
// Parse, which decode it strictly. The loader also reads the files of the
// previous version, config.scaleplane.io/v1alpha1, and converts them, with
// a deprecation warning naming every renamed field (legacy.go).
//
// A configuration's profiles are api/v1alpha1 ScaleProfileSpecs, the same
// as a ScaleProfile's spec; package profile defaults, validates and
// compiles them (profile.ValidateAll, profile.CompileAll), which the binary
// does as it loads the file. This package must stay light: it imports API
// types only, so that anything may read a configuration.
package v1alpha2

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/scaleplane/scaleplane/api/v1alpha1"
)

// Configuration is the component configuration read from --config.
type Configuration struct {
	metav1.TypeMeta `json:",inline"`
	// Profiles describe the workload kinds scaleplane manages, one
	// ScaleProfile spec each.
	Profiles []v1alpha1.ScaleProfileSpec `json:"profiles"`
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
	// Owner names who owns the webhook configurations and entries this
	// process keeps in line with its profiles: the configurations carry the
	// label scaleplane.io/owner=<owner>, each entry's name ends in
	// ".<owner>.scaleplane.io", and the sync touches nothing else, so any
	// number of scaleplane binaries and embedding operators share a cluster.
	// A DNS label (lower case, at most 63 characters). Default scaleplane.
	Owner string `json:"owner,omitempty"`
	// MutatingConfigurationName and ValidatingConfigurationName name the
	// webhook configurations whose rules scaleplane keeps in line with its
	// profiles. Defaults: <owner>-mutating-webhook-configuration and
	// <owner>-validating-webhook-configuration.
	MutatingConfigurationName   string `json:"mutatingConfigurationName,omitempty"`
	ValidatingConfigurationName string `json:"validatingConfigurationName,omitempty"`
	// TimeoutSeconds for each webhook call. Default 10.
	TimeoutSeconds int32 `json:"timeoutSeconds,omitempty"`
	// NamespaceSelector and ObjectSelector restrict which objects reach the
	// webhooks.
	NamespaceSelector *metav1.LabelSelector `json:"namespaceSelector,omitempty"`
	ObjectSelector    *metav1.LabelSelector `json:"objectSelector,omitempty"`
	// ExcludedNamespaces never reach the webhooks, whatever
	// NamespaceSelector says: every entry's namespace selector also
	// requires kubernetes.io/metadata.name NotIn these. Default
	// [kube-system]; the binary adds the namespace it runs in, so a
	// scaleplane that is down never blocks its own repair. An explicit
	// empty list excludes only that namespace.
	ExcludedNamespaces []string `json:"excludedNamespaces,omitempty"`
	// FailurePolicy is what the API server does with a write when the
	// webhook cannot be called (scaleplane down, timed out), per kind of
	// entry. Default Fail for all three: a profiled kind's writes are
	// refused while admission cannot judge them (docs/production.md says
	// when to choose Ignore, and the break-glass steps).
	FailurePolicy FailurePolicies `json:"failurePolicy,omitempty"`
	// Admission is who admits the profiled kinds' writes: "webhooks" (the
	// default) calls scaleplane for every write; "policies" has the API
	// server run each profile's own admission policies (package policies)
	// and calls the webhooks only for what CEL cannot decide (their
	// entries' matchConditions; docs/design.md lists what, per rule);
	// "auto" is "policies" where the API server serves
	// admissionregistration.k8s.io/v1 MutatingAdmissionPolicy, found by
	// discovery at start, and "webhooks" otherwise.
	Admission string `json:"admission,omitempty"`
}

// FailurePolicies are the failure policies of the three entries each kind
// gets: Fail or Ignore (admissionregistration.k8s.io/v1's values).
type FailurePolicies struct {
	// Mutate is the defaulting and fan-out entry on CREATE and UPDATE.
	Mutate string `json:"mutate,omitempty"`
	// Validate is the validating entry on CREATE and UPDATE.
	Validate string `json:"validate,omitempty"`
	// Scale is the validating entry on UPDATE of <resource>/scale, which
	// kubectl scale, the HPA and KEDA write through. Ignore here keeps
	// autoscaling going through an outage; the controller still fans the
	// count out when scaleplane is back (C1), and the CRD's schema still
	// holds (S1 checks the range only).
	Scale string `json:"scale,omitempty"`
}

// Autoscaler configures the trigger autoscaler.
type Autoscaler struct {
	// PollingIntervalSeconds between evaluations. Default 15.
	PollingIntervalSeconds int32 `json:"pollingIntervalSeconds,omitempty"`
	// PrometheusURL, when set, makes "prometheus" the default trigger source.
	PrometheusURL string `json:"prometheusURL,omitempty"`
	// Queries bound what trigger queries may cost.
	Queries Queries `json:"queries,omitempty"`
	// ExternalScaler serves KEDA's external scaler protocol from the same
	// triggers and metrics (docs/autoscaling.md).
	ExternalScaler ExternalScaler `json:"externalScaler,omitempty"`
	// Fairness shares the autoscaler's workers and the evaluation slots
	// among namespaces and bounds what each namespace's evaluations may
	// cost per minute (docs/promql.md).
	Fairness Fairness `json:"fairness,omitempty"`
}

// Fairness shares what evaluating triggers takes among namespaces, after
// the API server's priority and fairness: every evaluation (the
// autoscaler's ticks, the external scaler's calls, the remote source's
// requests) takes one of EvaluationSlots, one namespace takes at most
// EvaluationSlotsPerNamespace of them and queues the rest, and a namespace
// that spent its budget of samples or evaluation time per minute is
// refused until it refills. Zero fields take the defaults.
type Fairness struct {
	// EvaluationSlots is how many evaluations run at once. Default 8.
	EvaluationSlots int `json:"evaluationSlots,omitempty"`
	// EvaluationSlotsPerNamespace is one namespace's share of
	// EvaluationSlots. Default half of them.
	EvaluationSlotsPerNamespace int `json:"evaluationSlotsPerNamespace,omitempty"`
	// MaxWaitingPerNamespace bounds one namespace's evaluations waiting for
	// a slot; more are refused at once. Default 64.
	MaxWaitingPerNamespace int `json:"maxWaitingPerNamespace,omitempty"`
	// SamplesPerMinute is one namespace's budget of samples its
	// evaluations load per minute. Default 50000000.
	SamplesPerMinute int64 `json:"samplesPerMinute,omitempty"`
	// EvalSecondsPerMinute is one namespace's budget of evaluation time
	// per minute, in seconds. Default 30.
	EvalSecondsPerMinute int32 `json:"evalSecondsPerMinute,omitempty"`
}

// ExternalScaler configures the KEDA external scaler (gRPC) server. It runs
// on the elected leader, where the embedded store is.
type ExternalScaler struct {
	// BindAddress is where it listens, e.g. ":9090"; empty turns it off.
	BindAddress string `json:"bindAddress,omitempty"`
	// CertDir holds tls.crt and tls.key (reloaded when they change) for a
	// ScaledObject with enableTLS, and optionally ca.crt: then every caller
	// must present a client certificate of that CA (KEDA's tlsClientCert).
	// Empty serves plaintext gRPC, KEDA's default for external scalers.
	CertDir string `json:"certDir,omitempty"`
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
	// MaxSeriesPerNamespace the store keeps of one namespace's pods (the
	// store is shared by every tenant's triggers); more are refused and
	// counted. Default a quarter of maxSeries.
	MaxSeriesPerNamespace int `json:"maxSeriesPerNamespace,omitempty"`
	// MaxStoreBytes the store may take: series labels, a per-series
	// bookkeeping estimate and chunks. New series past it are refused and
	// counted, and samples too while existing series' chunks keep it past
	// it. Default 134217728 (128 MiB).
	MaxStoreBytes int64 `json:"maxStoreBytes,omitempty"`
	// MaxStoreBytesPerNamespace one namespace's series may take of
	// maxStoreBytes, so one tenant's long labels cannot fill the store for
	// every other; past it that namespace's new series and samples are
	// refused and counted. Default a quarter of maxStoreBytes.
	MaxStoreBytesPerNamespace int64 `json:"maxStoreBytesPerNamespace,omitempty"`
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
