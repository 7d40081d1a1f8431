package v1alpha2

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"reflect"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	kjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"
)

// The type of the configuration file.
const (
	GroupName  = "config.scaleplane.io"
	APIVersion = GroupName + "/v1alpha2"
	Kind       = "Configuration"
)

// Component defaults, also named in docs/profiles.md.
const (
	DefaultWebhookPort           = 9443
	DefaultWebhookTimeoutSeconds = int32(10)
	// DefaultExcludedNamespace is the namespace no webhook entry reaches
	// unless the configuration says otherwise: the cluster's own.
	DefaultExcludedNamespace = "kube-system"
	// FailurePolicyFail and FailurePolicyIgnore are the values of
	// Webhook.FailurePolicy's fields.
	FailurePolicyFail   = "Fail"
	FailurePolicyIgnore = "Ignore"
	// AdmissionWebhooks, AdmissionPolicies and AdmissionAuto are the
	// values of Webhook.Admission.
	AdmissionWebhooks                  = "webhooks"
	AdmissionPolicies                  = "policies"
	AdmissionAuto                      = "auto"
	DefaultOwner                       = "scaleplane"
	DefaultMutatingConfigurationName   = DefaultOwner + MutatingConfigurationSuffix
	DefaultValidatingConfigurationName = DefaultOwner + ValidatingConfigurationSuffix
	// MutatingConfigurationSuffix and ValidatingConfigurationSuffix follow
	// the owner in the default configuration names (kubebuilder's names).
	MutatingConfigurationSuffix   = "-mutating-webhook-configuration"
	ValidatingConfigurationSuffix = "-validating-webhook-configuration"
	DefaultCertDir                = "/tmp/k8s-webhook-server/serving-certs"
	DefaultPollingIntervalSeconds = int32(15)
	DefaultScrapeIntervalSeconds  = int32(5)
	DefaultRetentionSeconds       = int32(1800)
	DefaultMaxSeries              = 100000

	// Scrape and store bounds; package promql has the same defaults
	// (promql.Default*), which a test of cmd/scaleplane/app holds equal.
	// docs/profiles.md has the arithmetic for a 512 MiB pod.
	DefaultMaxStoreBytes         = int64(128 << 20)
	DefaultBodySizeLimitBytes    = int64(10 << 20)
	DefaultSampleLimit           = 10000
	DefaultLabelLimit            = 64
	DefaultLabelNameLengthLimit  = 256
	DefaultLabelValueLengthLimit = 4096

	// Query bounds (V10); package promql has the same defaults
	// (promql.Default*), which a test of cmd/scaleplane/app holds equal.
	DefaultQueryMaxLength          = 4096
	DefaultQueryMaxDepth           = 100
	DefaultQueryMaxPointsPerSeries = int64(11000)
	DefaultQueryMaxRegexSize       = 10000
	DefaultQueryMaxSamples         = 1000000
	DefaultQueryTimeoutSeconds     = int32(10)
	DefaultQueryTickTimeoutSeconds = int32(15)

	// Upper bounds of the query limits: past them a single query costs
	// more than a webhook call may take.
	maxQueryMaxLength = 64 << 10
	maxQueryMaxDepth  = 1000
)

// Load reads the configuration file at path (YAML or JSON) and returns it
// defaulted and validated, with the warnings of its conversion when it is
// of the previous version; see Parse.
func Load(path string) (*Configuration, []string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, fmt.Errorf("read configuration: %w", err)
	}
	c, warnings, err := Parse(data)
	if err != nil {
		return nil, warnings, fmt.Errorf("configuration %s: %w", path, err)
	}
	return c, warnings, nil
}

// Parse decodes a configuration (YAML or JSON) with Decode, defaults it and
// validates it. The profiles are left as written: package profile defaults
// and validates them (profile.ValidateAll), as the binary does when it
// loads the file.
func Parse(data []byte) (*Configuration, []string, error) {
	c, warnings, err := Decode(data)
	if err != nil {
		return nil, warnings, fmt.Errorf("decode: %w", err)
	}
	c.Default()
	if errs := c.Validate(); len(errs) > 0 {
		return nil, warnings, errs.ToAggregate()
	}
	return c, warnings, nil
}

// Decode decodes a configuration (YAML or JSON) without defaulting or
// validating it. Decoding is strict, as the API server's strict field
// validation: field names are case-sensitive and every unknown or repeated
// field is an error naming it, because a misspelt field would otherwise be
// silently ignored and its default used instead.
//
// A file of the previous version, config.scaleplane.io/v1alpha1, is decoded
// as that version (strictly too) and converted; the warning returned then
// names every field the file should rename.
func Decode(data []byte) (*Configuration, []string, error) {
	if n, err := documents(data); err != nil {
		return nil, nil, err
	} else if n > 1 {
		// The YAML decoder reads the first document only: the others
		// would be silently ignored.
		return nil, nil, fmt.Errorf("the file holds %d YAML documents; a configuration file holds one Configuration (ScaleProfiles are applied to the cluster, or listed under profiles)", n)
	}
	js, err := yaml.YAMLToJSONStrict(data)
	if err != nil {
		return nil, nil, err
	}
	// Which version the file is decides the fields it may have; a file
	// that is no object is left to the strict decoder to report.
	var tm metav1.TypeMeta
	if json.Unmarshal(js, &tm) == nil && tm.APIVersion == LegacyAPIVersion {
		old := &legacyConfiguration{}
		if err := decodeStrict(js, old, func() any { return &legacyConfiguration{} }); err != nil {
			return nil, nil, err
		}
		c, warning := old.convert()
		return c, []string{warning}, nil
	}
	c := &Configuration{}
	if err := decodeStrict(js, c, func() any { return &Configuration{} }); err != nil {
		return nil, nil, err
	}
	return c, nil, nil
}

// decodeStrict decodes js into into, case-sensitively, refusing unknown and
// repeated fields; fresh makes another value of into's type.
func decodeStrict(js []byte, into any, fresh func() any) error {
	strict, err := kjson.UnmarshalStrict(js, into)
	if err != nil {
		// The case-sensitive decoder does not say which field has the wrong
		// type; the standard one does.
		var te *json.UnmarshalTypeError
		if errors.As(json.Unmarshal(js, fresh()), &te) && te.Field != "" {
			return fmt.Errorf("field %q must be %s, not a JSON %s", te.Field, jsonKind(te.Type), te.Value)
		}
		return err
	}
	if len(strict) > 0 {
		errs := make([]error, len(strict))
		for i, e := range strict {
			errs[i] = fmt.Errorf("%w; remove it or fix its spelling (field names are case-sensitive)", e)
		}
		return errors.Join(errs...)
	}
	return nil
}

// jsonKind names the JSON a Go type decodes from.
func jsonKind(t reflect.Type) string {
	switch t.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "an integer"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	case reflect.Slice, reflect.Array:
		return "a list"
	}
	return "an object"
}

// Default fills every field left out with its default. It only fills what
// is absent, so defaulting twice changes nothing. The apiVersion and kind
// are not defaulted: a file must say what it is. Nor are the profiles:
// their defaults are package profile's (profile.Default).
func (c *Configuration) Default() {
	w := &c.Webhook
	if w.Port == 0 {
		w.Port = DefaultWebhookPort
	}
	if w.TimeoutSeconds == 0 {
		w.TimeoutSeconds = DefaultWebhookTimeoutSeconds
	}
	if w.Owner == "" {
		w.Owner = DefaultOwner
	}
	if w.MutatingConfigurationName == "" {
		w.MutatingConfigurationName = w.Owner + MutatingConfigurationSuffix
	}
	if w.ValidatingConfigurationName == "" {
		w.ValidatingConfigurationName = w.Owner + ValidatingConfigurationSuffix
	}
	if w.CertDir == "" {
		w.CertDir = DefaultCertDir
	}
	if w.ExcludedNamespaces == nil {
		w.ExcludedNamespaces = []string{DefaultExcludedNamespace}
	}
	for _, p := range []*string{&w.FailurePolicy.Mutate, &w.FailurePolicy.Validate, &w.FailurePolicy.Scale} {
		if *p == "" {
			*p = FailurePolicyFail
		}
	}
	if w.Admission == "" {
		w.Admission = AdmissionWebhooks
	}
	if c.Autoscaler.PollingIntervalSeconds == 0 {
		c.Autoscaler.PollingIntervalSeconds = DefaultPollingIntervalSeconds
	}
	c.Autoscaler.Queries.Default()
	c.Autoscaler.Fairness.Default()
	m := &c.Metrics
	if m.ScrapeIntervalSeconds == 0 {
		m.ScrapeIntervalSeconds = DefaultScrapeIntervalSeconds
	}
	if m.RetentionSeconds == 0 {
		m.RetentionSeconds = DefaultRetentionSeconds
	}
	if m.MaxSeries == 0 {
		m.MaxSeries = DefaultMaxSeries
	}
	if m.MaxSeriesPerNamespace == 0 {
		m.MaxSeriesPerNamespace = max(1, m.MaxSeries/4)
	}
	if m.MaxStoreBytes == 0 {
		m.MaxStoreBytes = DefaultMaxStoreBytes
	}
	if m.MaxStoreBytesPerNamespace == 0 {
		m.MaxStoreBytesPerNamespace = max(1, m.MaxStoreBytes/4)
	}
	if m.BodySizeLimitBytes == 0 {
		m.BodySizeLimitBytes = DefaultBodySizeLimitBytes
	}
	for _, f := range []struct {
		v *int
		d int
	}{{&m.SampleLimit, DefaultSampleLimit}, {&m.LabelLimit, DefaultLabelLimit},
		{&m.LabelNameLengthLimit, DefaultLabelNameLengthLimit}, {&m.LabelValueLengthLimit, DefaultLabelValueLengthLimit}} {
		if *f.v == 0 {
			*f.v = f.d
		}
	}
	c.Servers.Default()
}

// Validate checks a defaulted configuration's component settings and
// reports every problem as a field error whose path names the setting to
// change, such as webhook.timeoutSeconds. The profiles are package
// profile's to check (profile.ValidateAll).
func (c *Configuration) Validate() field.ErrorList {
	var errs field.ErrorList
	if c.APIVersion != APIVersion {
		errs = append(errs, field.Invalid(field.NewPath("apiVersion"), c.APIVersion, fmt.Sprintf("must be %q (files of %q are still read, and converted)", APIVersion, LegacyAPIVersion)))
	}
	if c.Kind != Kind {
		errs = append(errs, field.Invalid(field.NewPath("kind"), c.Kind, fmt.Sprintf("must be %q", Kind)))
	}
	errs = append(errs, validateWebhook(&c.Webhook, field.NewPath("webhook"))...)
	errs = append(errs, validateServers(&c.Servers, c.Webhook.TimeoutSeconds, field.NewPath("servers"))...)

	ap := field.NewPath("autoscaler")
	if c.Autoscaler.PollingIntervalSeconds < 1 {
		errs = append(errs, field.Invalid(ap.Child("pollingIntervalSeconds"), c.Autoscaler.PollingIntervalSeconds, "must be at least 1 (or left out for the default, 15)"))
	}
	if s := c.Autoscaler.PrometheusURL; s != "" {
		if u, err := url.Parse(s); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			errs = append(errs, field.Invalid(ap.Child("prometheusURL"), s, `must be an absolute http or https URL, e.g. "http://prometheus.monitoring:9090"`))
		}
	}

	errs = append(errs, c.Autoscaler.Queries.validate(ap.Child("queries"))...)
	errs = append(errs, c.Autoscaler.Fairness.validate(ap.Child("fairness"))...)
	// Every address the configuration sets, and that no two are the same
	// (listeners.go).
	errs = append(errs, c.validateConfigListeners()...)
	if c.Autoscaler.ExternalScaler.BindAddress == "" && c.Autoscaler.ExternalScaler.CertDir != "" {
		errs = append(errs, field.Invalid(ap.Child("externalScaler", "certDir"), c.Autoscaler.ExternalScaler.CertDir, "is only used with bindAddress: set externalScaler.bindAddress too"))
	}

	mp := field.NewPath("metrics")
	if c.Metrics.ScrapeIntervalSeconds < 1 {
		errs = append(errs, field.Invalid(mp.Child("scrapeIntervalSeconds"), c.Metrics.ScrapeIntervalSeconds, "must be at least 1 (or left out for the default, 5)"))
	}
	if c.Metrics.RetentionSeconds < max(1, c.Metrics.ScrapeIntervalSeconds) {
		errs = append(errs, field.Invalid(mp.Child("retentionSeconds"), c.Metrics.RetentionSeconds, "must be at least scrapeIntervalSeconds (or left out for the default, 1800)"))
	}
	if c.Metrics.MaxSeries < 1 {
		errs = append(errs, field.Invalid(mp.Child("maxSeries"), c.Metrics.MaxSeries, "must be at least 1 (or left out for the default, 100000)"))
	}
	if n := c.Metrics.MaxSeriesPerNamespace; n < 1 || n > max(1, c.Metrics.MaxSeries) {
		errs = append(errs, field.Invalid(mp.Child("maxSeriesPerNamespace"), n, fmt.Sprintf("must be between 1 and maxSeries (%d), or left out for a quarter of maxSeries", c.Metrics.MaxSeries)))
	}
	if n := c.Metrics.MaxStoreBytesPerNamespace; n < 1 || n > max(1, c.Metrics.MaxStoreBytes) {
		errs = append(errs, field.Invalid(mp.Child("maxStoreBytesPerNamespace"), n, fmt.Sprintf("must be between 1 and maxStoreBytes (%d), or left out for a quarter of maxStoreBytes", c.Metrics.MaxStoreBytes)))
	}
	// The store and the scrapes are what a pod's exposition can make
	// scaleplane hold: every bound is required, none can be switched off.
	for _, b := range []struct {
		name     string
		v, least int64
		dflt     string
	}{
		{"maxStoreBytes", c.Metrics.MaxStoreBytes, 1 << 20, "134217728 (128 MiB)"},
		{"bodySizeLimitBytes", c.Metrics.BodySizeLimitBytes, 1 << 10, "10485760 (10 MiB)"},
		{"sampleLimit", int64(c.Metrics.SampleLimit), 1, "10000"},
		{"labelLimit", int64(c.Metrics.LabelLimit), 4, "64"},
		{"labelNameLengthLimit", int64(c.Metrics.LabelNameLengthLimit), 16, "256"},
		{"labelValueLengthLimit", int64(c.Metrics.LabelValueLengthLimit), 16, "4096"},
	} {
		if b.v < b.least {
			errs = append(errs, field.Invalid(mp.Child(b.name), b.v, fmt.Sprintf("must be at least %d (or left out for the default, %s)", b.least, b.dflt)))
		}
	}
	return errs
}

// Defaults of Fairness, as docs/promql.md names them.
const (
	DefaultEvaluationSlots        = 8
	DefaultMaxWaitingPerNamespace = 64
	DefaultSamplesPerMinute       = int64(50_000_000)
	DefaultEvalSecondsPerMinute   = 30
)

// Default fills every fairness setting left out with its default.
func (f *Fairness) Default() {
	if f.EvaluationSlots == 0 {
		f.EvaluationSlots = DefaultEvaluationSlots
	}
	if f.EvaluationSlotsPerNamespace == 0 {
		f.EvaluationSlotsPerNamespace = max(1, f.EvaluationSlots/2)
	}
	if f.MaxWaitingPerNamespace == 0 {
		f.MaxWaitingPerNamespace = DefaultMaxWaitingPerNamespace
	}
	if f.SamplesPerMinute == 0 {
		f.SamplesPerMinute = DefaultSamplesPerMinute
	}
	if f.EvalSecondsPerMinute == 0 {
		f.EvalSecondsPerMinute = DefaultEvalSecondsPerMinute
	}
}

func (f *Fairness) validate(fp *field.Path) field.ErrorList {
	var errs field.ErrorList
	if f.EvaluationSlots < 1 {
		errs = append(errs, field.Invalid(fp.Child("evaluationSlots"), f.EvaluationSlots, fmt.Sprintf("must be at least 1 (or left out for the default, %d)", DefaultEvaluationSlots)))
	}
	if n := f.EvaluationSlotsPerNamespace; n < 1 || n > max(1, f.EvaluationSlots) {
		errs = append(errs, field.Invalid(fp.Child("evaluationSlotsPerNamespace"), n, fmt.Sprintf("must be between 1 and evaluationSlots (%d), or left out for half of them", f.EvaluationSlots)))
	}
	if f.MaxWaitingPerNamespace < 1 {
		errs = append(errs, field.Invalid(fp.Child("maxWaitingPerNamespace"), f.MaxWaitingPerNamespace, fmt.Sprintf("must be at least 1 (or left out for the default, %d)", DefaultMaxWaitingPerNamespace)))
	}
	if f.SamplesPerMinute < 1 {
		errs = append(errs, field.Invalid(fp.Child("samplesPerMinute"), f.SamplesPerMinute, fmt.Sprintf("must be at least 1 (or left out for the default, %d)", DefaultSamplesPerMinute)))
	}
	if f.EvalSecondsPerMinute < 1 {
		errs = append(errs, field.Invalid(fp.Child("evalSecondsPerMinute"), f.EvalSecondsPerMinute, fmt.Sprintf("must be at least 1 (or left out for the default, %d)", DefaultEvalSecondsPerMinute)))
	}
	return errs
}

// Default fills every query bound left out with its default.
func (q *Queries) Default() {
	if q.MaxLength == 0 {
		q.MaxLength = DefaultQueryMaxLength
	}
	if q.MaxDepth == 0 {
		q.MaxDepth = DefaultQueryMaxDepth
	}
	if q.MaxPointsPerSeries == 0 {
		q.MaxPointsPerSeries = DefaultQueryMaxPointsPerSeries
	}
	if q.MaxRegexSize == 0 {
		q.MaxRegexSize = DefaultQueryMaxRegexSize
	}
	if q.MaxSamples == 0 {
		q.MaxSamples = DefaultQueryMaxSamples
	}
	if q.TimeoutSeconds == 0 {
		q.TimeoutSeconds = DefaultQueryTimeoutSeconds
	}
	if q.TickTimeoutSeconds == 0 {
		q.TickTimeoutSeconds = DefaultQueryTickTimeoutSeconds
	}
}

func (q *Queries) validate(fp *field.Path) field.ErrorList {
	var errs field.ErrorList
	atLeast1 := func(name string, v int64, def any) {
		if v < 1 {
			errs = append(errs, field.Invalid(fp.Child(name), v, fmt.Sprintf("must be at least 1 (or left out for the default, %v)", def)))
		}
	}
	if q.MaxLength > maxQueryMaxLength {
		errs = append(errs, field.Invalid(fp.Child("maxLength"), q.MaxLength, fmt.Sprintf("must be at most %d bytes: parsing a longer query costs more than an admission request may take", maxQueryMaxLength)))
	}
	atLeast1("maxLength", int64(q.MaxLength), DefaultQueryMaxLength)
	if q.MaxDepth > maxQueryMaxDepth {
		errs = append(errs, field.Invalid(fp.Child("maxDepth"), q.MaxDepth, fmt.Sprintf("must be at most %d: parsing costs length times depth", maxQueryMaxDepth)))
	}
	atLeast1("maxDepth", int64(q.MaxDepth), DefaultQueryMaxDepth)
	atLeast1("maxPointsPerSeries", q.MaxPointsPerSeries, DefaultQueryMaxPointsPerSeries)
	atLeast1("maxRegexSize", int64(q.MaxRegexSize), DefaultQueryMaxRegexSize)
	atLeast1("maxSamples", int64(q.MaxSamples), DefaultQueryMaxSamples)
	atLeast1("timeoutSeconds", int64(q.TimeoutSeconds), DefaultQueryTimeoutSeconds)
	atLeast1("tickTimeoutSeconds", int64(q.TickTimeoutSeconds), DefaultQueryTickTimeoutSeconds)
	return errs
}

func validateWebhook(w *Webhook, fp *field.Path) field.ErrorList {
	var errs field.ErrorList
	if w.Port < 1 || w.Port > 65535 {
		errs = append(errs, field.Invalid(fp.Child("port"), w.Port, "must be between 1 and 65535 (or left out for the default, 9443)"))
	}
	// The API server accepts webhook timeouts of 1 to 30 seconds only.
	if w.TimeoutSeconds < 1 || w.TimeoutSeconds > 30 {
		errs = append(errs, field.Invalid(fp.Child("timeoutSeconds"), w.TimeoutSeconds, "must be between 1 and 30 (or left out for the default, 10)"))
	}
	// The owner is a label value and one segment of every entry name.
	for _, msg := range validation.IsDNS1123Label(w.Owner) {
		errs = append(errs, field.Invalid(fp.Child("owner"), w.Owner, msg))
	}
	for _, n := range []struct {
		name  string
		value string
	}{{"mutatingConfigurationName", w.MutatingConfigurationName}, {"validatingConfigurationName", w.ValidatingConfigurationName}} {
		for _, msg := range validation.IsDNS1123Subdomain(n.value) {
			errs = append(errs, field.Invalid(fp.Child(n.name), n.value, msg))
		}
	}
	opts := metav1validation.LabelSelectorValidationOptions{}
	if w.NamespaceSelector != nil {
		errs = append(errs, metav1validation.ValidateLabelSelector(w.NamespaceSelector, opts, fp.Child("namespaceSelector"))...)
	}
	if w.ObjectSelector != nil {
		errs = append(errs, metav1validation.ValidateLabelSelector(w.ObjectSelector, opts, fp.Child("objectSelector"))...)
	}
	for i, ns := range w.ExcludedNamespaces {
		for _, msg := range validation.IsDNS1123Label(ns) {
			errs = append(errs, field.Invalid(fp.Child("excludedNamespaces").Index(i), ns, msg))
		}
	}
	for _, p := range []struct {
		name  string
		value string
	}{{"mutate", w.FailurePolicy.Mutate}, {"validate", w.FailurePolicy.Validate}, {"scale", w.FailurePolicy.Scale}} {
		if p.value != FailurePolicyFail && p.value != FailurePolicyIgnore {
			errs = append(errs, field.NotSupported(fp.Child("failurePolicy", p.name), p.value, []string{FailurePolicyFail, FailurePolicyIgnore}))
		}
	}
	switch w.Admission {
	case AdmissionWebhooks, AdmissionPolicies, AdmissionAuto:
	default:
		errs = append(errs, field.NotSupported(fp.Child("admission"), w.Admission, []string{AdmissionWebhooks, AdmissionPolicies, AdmissionAuto}))
	}
	return errs
}

// documents counts the YAML documents of data that hold more than
// comments.
func documents(data []byte) (int, error) {
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	n := 0
	for {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			return n, nil
		}
		if err != nil {
			return n, err
		}
		js, err := yaml.YAMLToJSON(doc)
		if err != nil {
			return n, err
		}
		if t := bytes.TrimSpace(js); len(t) > 0 && string(t) != "null" {
			n++
		}
	}
}
