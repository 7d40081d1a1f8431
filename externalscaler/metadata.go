package externalscaler

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/scaleplane/scaleplane/scaling"
)

// Trigger metadata keys a ScaledObject gives scaleplane:
//
//	triggers:
//	- type: external            # or external-push
//	  metadata:
//	    scalerAddress: scaleplane-external-scaler.scaleplane-system:9090
//	    query: sum(rate(http_requests_total{namespace="${namespace}",job="${name}"}[1m]))
//	    threshold: "10"
//	    activationThreshold: "1"   # optional
//
// ${namespace} is the ScaledObject's namespace, ${name} its target's name,
// ${kind} and ${resource} its target's kind and resource, as in a trigger
// of the built-in autoscaler.
const (
	// MetadataQuery is the PromQL query (required).
	MetadataQuery = "query"
	// MetadataThreshold is the target value, per replica for KEDA's
	// default metricType AverageValue (required, > 0).
	MetadataThreshold = "threshold"
	// MetadataActivationThreshold is the value above which the workload is
	// active (KEDA wakes it from zero); default 0.
	MetadataActivationThreshold = "activationThreshold"
	// MetadataSource is the trigger source: promql (the embedded store, the
	// default) or prometheus (the configured remote server).
	MetadataSource = "source"
	// MetadataMetricName names the metric in KEDA's HPA (KEDA prefixes the
	// trigger's index); default "scaleplane".
	MetadataMetricName = "metricName"
	// MetadataPodSelector is a label selector for the pods to scrape, for
	// a target whose kind has no scaleplane profile (a Deployment, say).
	// For a profiled kind the profile's pod labels are used.
	MetadataPodSelector = "podSelector"
)

// kedaKeys are KEDA's own keys of an external trigger's metadata, which it
// passes along with ours.
var kedaKeys = []string{"scalerAddress", "enableTLS", "unsafeSsl"}

var ourKeys = []string{MetadataQuery, MetadataThreshold, MetadataActivationThreshold, MetadataSource, MetadataMetricName, MetadataPodSelector}

// maxPodSelector bounds metadata.podSelector, in bytes.
const maxPodSelector = 1024

// DefaultMetricName is the metric's name when the metadata gives none.
const DefaultMetricName = "scaleplane"

// spec is one external trigger, read from a ScaledObject's metadata.
type spec struct {
	trigger     scaling.Trigger
	podSelector labels.Selector
}

// parseMetadata reads the metadata of one external trigger. Every problem
// is reported at once, at metadata.<key>, saying what to change; unknown
// keys are errors, so a typo (treshold) is not silently a default.
// An absent source is sources' default; sources also check the query
// (V5, V10), as they do at admission.
func parseMetadata(md map[string]string, sources *scaling.Sources) (spec, field.ErrorList) {
	fp := field.NewPath("metadata")
	var errs field.ErrorList
	for _, k := range slices.Sorted(maps.Keys(md)) {
		if !slices.Contains(ourKeys, k) && !slices.Contains(kedaKeys, k) {
			errs = append(errs, field.NotSupported(fp.Key(k), k, ourKeys))
		}
	}
	t := scaling.Trigger{
		Name:   DefaultMetricName,
		Type:   scaling.TargetAverageValue,
		Source: md[MetadataSource],
		Query:  md[MetadataQuery],
	}
	if t.Source == "" {
		t.Source = sources.Default()
	}
	if n, ok := md[MetadataMetricName]; ok {
		t.Name = n
		if msgs := validation.IsDNS1123Label(n); len(msgs) > 0 {
			errs = append(errs, field.Invalid(fp.Child(MetadataMetricName), n, strings.Join(msgs, "; ")))
		}
	}
	number := func(key string, required bool) *float64 {
		v, ok := md[key]
		if !ok {
			if required {
				errs = append(errs, field.Required(fp.Child(key), "must be a number, e.g. \"10\""))
			}
			return nil
		}
		f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
		if err != nil {
			errs = append(errs, field.Invalid(fp.Child(key), v, "must be a number, e.g. \"10\""))
			return nil
		}
		return &f
	}
	if th := number(MetadataThreshold, true); th != nil {
		t.Threshold = *th
	} else {
		// Reported above; a placeholder keeps the checks below from
		// reporting it twice.
		t.Threshold = 1
	}
	t.ActivationThreshold = number(MetadataActivationThreshold, false)
	switch t.Source {
	case scaling.SourcePromQL, scaling.SourcePrometheus:
	default:
		errs = append(errs, field.NotSupported(fp.Child(MetadataSource), t.Source, []string{scaling.SourcePromQL, scaling.SourcePrometheus}))
	}
	// The query (required, PromQL, an instant vector or scalar), the
	// threshold and the activation threshold are checked as a workload
	// trigger's are.
	errs = append(errs, validateTrigger(t, fp, sources)...)

	s := spec{trigger: t}
	if sel, ok := md[MetadataPodSelector]; ok {
		parsed, err := labels.Parse(sel)
		switch {
		case len(sel) > maxPodSelector:
			// The scraper's discovery matches it against every pod of the
			// namespace on every cycle.
			errs = append(errs, field.TooLong(fp.Child(MetadataPodSelector), "", maxPodSelector))
		case err != nil:
			errs = append(errs, field.Invalid(fp.Child(MetadataPodSelector), sel, err.Error()))
		case parsed.Empty():
			errs = append(errs, field.Invalid(fp.Child(MetadataPodSelector), sel, "must select some pods, e.g. app=web"))
		default:
			s.podSelector = parsed
		}
	}
	return s, errs
}

// validateTrigger applies the admission rules of a workload's trigger (V5,
// and whatever else package scaling checks of one) to t, and reports them
// at the metadata keys they concern.
func validateTrigger(t scaling.Trigger, fp *field.Path, sources *scaling.Sources) field.ErrorList {
	one, two := int32(1), int32(2)
	cfgPath := field.NewPath("scaleConfig")
	errs, _ := scaling.Validate(
		scaling.Workload{Config: &scaling.Config{MinReplicas: &one, MaxReplicas: &two, Triggers: []scaling.Trigger{t}}},
		scaling.Layout{ConfigPath: cfgPath},
		sources,
	)
	prefix := cfgPath.Child("triggers").Index(0).String() + "."
	var out field.ErrorList
	for _, e := range errs {
		if !strings.HasPrefix(e.Field, prefix) {
			out = append(out, field.InternalError(fp, fmt.Errorf("trigger: %s", e.Error())))
			continue
		}
		key := strings.TrimPrefix(e.Field, prefix)
		if key == "source" {
			// Checked above: a query source, and whether this scaleplane has
			// it configured is the scaler's answer (FailedPrecondition).
			continue
		}
		if key == "name" {
			key = MetadataMetricName
		}
		e := *e
		e.Field = fp.Child(key).String()
		out = append(out, &e)
	}
	return out
}

// kindPattern is what a Kubernetes kind looks like (a Go type name).
var kindPattern = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9]{0,62}$`)

// validateTarget checks the ScaledObject's target, which KEDA's CRD does
// not: its name and kind become placeholder values of the query (inside a
// regex, ${name} is a regex) and labels of every sample scraped for it, so
// they must be what an object's name and kind can be.
func validateTarget(kind, name string) field.ErrorList {
	fp := field.NewPath("spec", "scaleTargetRef")
	var errs field.ErrorList
	if name == "" {
		errs = append(errs, field.Required(fp.Child("name"), "must name the object the ScaledObject scales"))
	} else if msgs := validation.IsDNS1123Subdomain(name); len(msgs) > 0 {
		errs = append(errs, field.Invalid(fp.Child("name"), name, strings.Join(msgs, "; ")))
	}
	if !kindPattern.MatchString(kind) {
		errs = append(errs, field.Invalid(fp.Child("kind"), kind, "must be a kind, e.g. Deployment: a letter, then letters and digits, at most 63"))
	}
	return errs
}
