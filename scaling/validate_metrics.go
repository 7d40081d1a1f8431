package scaling

import (
	"fmt"
	"slices"
	"strings"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/api/validate/content"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// The limits the API server applies to an HPA's behavior.
const (
	maxStabilizationWindowSeconds = 3600
	maxPolicyPeriodSeconds        = 1800
)

var metricSourceTypes = []string{
	string(autoscalingv2.ContainerResourceMetricSourceType),
	string(autoscalingv2.ExternalMetricSourceType),
	string(autoscalingv2.ObjectMetricSourceType),
	string(autoscalingv2.PodsMetricSourceType),
	string(autoscalingv2.ResourceMetricSourceType),
}

// metricSource is one of a MetricSpec's five mutually exclusive sources.
type metricSource struct {
	typ   autoscalingv2.MetricSourceType
	field string // JSON name of the source field
	set   bool
	// targets are the target types the HPA controller acts on for this
	// source; it silently ignores the others, so admission rejects them.
	targets []autoscalingv2.MetricTargetType
}

// The target types each source allows, shared by every review.
var (
	valueOrAverage       = []autoscalingv2.MetricTargetType{autoscalingv2.ValueMetricType, autoscalingv2.AverageValueMetricType}
	averageOnly          = []autoscalingv2.MetricTargetType{autoscalingv2.AverageValueMetricType}
	utilizationOrAverage = []autoscalingv2.MetricTargetType{autoscalingv2.UtilizationMetricType, autoscalingv2.AverageValueMetricType}
)

// lazyPath builds a field path only when an error is reported: validation
// runs on every admission review, and most values have none.
type lazyPath func() *field.Path

// validateMetric is V3: the checks the API server applies to one
// autoscaling/v2 HPA metric, so a config that passes admission never yields
// an HPA the API server refuses. It is stricter in one way, on purpose: the
// target type must be one the HPA controller honours for the source and the
// matching value must be set (the API server accepts, for example, a
// Utilization target on a Pods metric, and the HPA then never scales).
func validateMetric(m autoscalingv2.MetricSpec, p lazyPath) field.ErrorList {
	var errs field.ErrorList
	// In a fixed order, so that errors come out the same way every time; an
	// array rather than a map keyed by type, because validation runs on
	// every admission review.
	sources := [...]metricSource{
		{typ: autoscalingv2.ObjectMetricSourceType, field: "object", set: m.Object != nil, targets: valueOrAverage},
		{typ: autoscalingv2.PodsMetricSourceType, field: "pods", set: m.Pods != nil, targets: averageOnly},
		{typ: autoscalingv2.ResourceMetricSourceType, field: "resource", set: m.Resource != nil, targets: utilizationOrAverage},
		{typ: autoscalingv2.ContainerResourceMetricSourceType, field: "containerResource", set: m.ContainerResource != nil, targets: utilizationOrAverage},
		{typ: autoscalingv2.ExternalMetricSourceType, field: "external", set: m.External != nil, targets: valueOrAverage},
	}
	var want *metricSource
	for i := range sources {
		if sources[i].typ == m.Type {
			want = &sources[i]
		}
	}
	known := want != nil
	switch {
	case m.Type == "":
		errs = append(errs, field.Required(p().Child("type"),
			"must name the metric's source: one of "+strings.Join(metricSourceTypes, ", ")))
	case !known:
		errs = append(errs, field.NotSupported(p().Child("type"), m.Type, metricSourceTypes))
	case !want.set:
		errs = append(errs, field.Required(p().Child(want.field),
			fmt.Sprintf("must be set because type is %s; set %s or change type to the source you filled in", m.Type, want.field)))
	}
	present := 0
	for _, s := range sources {
		if s.set {
			present++
		}
	}
	// One source per metric: the HPA reads only the one type names, so any
	// other would be silently ignored.
	if present > 1 || (known && present == 1 && !want.set) {
		for i := range sources {
			if s := &sources[i]; s.set && (!known || s != want) {
				errs = append(errs, field.Forbidden(p().Child(s.field),
					fmt.Sprintf("must not be set: a metric has exactly one source, the one its type names (%s)", typeOrNone(m.Type))))
			}
		}
	}
	if !known || !want.set {
		return errs
	}

	sp := func() *field.Path { return p().Child(want.field) }
	switch m.Type {
	case autoscalingv2.ObjectMetricSourceType:
		errs = append(errs, validateObjectReference(m.Object.DescribedObject, func() *field.Path { return sp().Child("describedObject") })...)
		errs = append(errs, validateMetricIdentifier(m.Object.Metric, func() *field.Path { return sp().Child("metric") })...)
		errs = append(errs, validateMetricTarget(m.Object.Target, want.targets, func() *field.Path { return sp().Child("target") })...)
	case autoscalingv2.PodsMetricSourceType:
		errs = append(errs, validateMetricIdentifier(m.Pods.Metric, func() *field.Path { return sp().Child("metric") })...)
		errs = append(errs, validateMetricTarget(m.Pods.Target, want.targets, func() *field.Path { return sp().Child("target") })...)
	case autoscalingv2.ResourceMetricSourceType:
		errs = append(errs, validateResourceName(string(m.Resource.Name), false, func() *field.Path { return sp().Child("name") })...)
		errs = append(errs, validateMetricTarget(m.Resource.Target, want.targets, func() *field.Path { return sp().Child("target") })...)
	case autoscalingv2.ContainerResourceMetricSourceType:
		errs = append(errs, validateResourceName(string(m.ContainerResource.Name), true, func() *field.Path { return sp().Child("name") })...)
		if m.ContainerResource.Container == "" {
			errs = append(errs, field.Required(sp().Child("container"), "must name the container whose usage counts"))
		} else {
			for _, msg := range validation.IsDNS1123Label(m.ContainerResource.Container) {
				errs = append(errs, field.Invalid(sp().Child("container"), m.ContainerResource.Container, msg))
			}
		}
		errs = append(errs, validateMetricTarget(m.ContainerResource.Target, want.targets, func() *field.Path { return sp().Child("target") })...)
	case autoscalingv2.ExternalMetricSourceType:
		errs = append(errs, validateMetricIdentifier(m.External.Metric, func() *field.Path { return sp().Child("metric") })...)
		errs = append(errs, validateMetricTarget(m.External.Target, want.targets, func() *field.Path { return sp().Child("target") })...)
	}
	return errs
}

func typeOrNone(t autoscalingv2.MetricSourceType) string {
	if t == "" {
		return "none given"
	}
	return string(t)
}

// validateResourceName accepts what the API server accepts for a resource
// metric: cpu, memory and the other standard names, or a qualified extended
// resource name such as example.com/gpu.
func validateResourceName(name string, container bool, p lazyPath) field.ErrorList {
	if name == "" {
		return field.ErrorList{field.Required(p(), "must name a resource, such as cpu or memory")}
	}
	var errs field.ErrorList
	for _, msg := range validation.IsQualifiedName(name) {
		errs = append(errs, field.Invalid(p(), name, msg))
	}
	if len(errs) > 0 || strings.Contains(name, "/") {
		return errs
	}
	standard := name == "cpu" || name == "memory" || name == "ephemeral-storage" || strings.HasPrefix(name, "hugepages-")
	if !container {
		// Quota names such as pods or requests.cpu are standard too, but
		// meaningless for an HPA; only container resources are measured.
		standard = standard || name == "storage"
	}
	if !standard {
		return field.ErrorList{field.Invalid(p(), name,
			"must be a standard resource (cpu, memory, ephemeral-storage, hugepages-<size>) or a qualified name such as example.com/gpu")}
	}
	return nil
}

func validateObjectReference(ref autoscalingv2.CrossVersionObjectReference, p lazyPath) field.ErrorList {
	var errs field.ErrorList
	if ref.Kind == "" {
		errs = append(errs, field.Required(p().Child("kind"), "must name the kind of the object the metric describes, e.g. Service"))
	} else {
		for _, msg := range content.IsPathSegmentName(ref.Kind) {
			errs = append(errs, field.Invalid(p().Child("kind"), ref.Kind, msg))
		}
	}
	if ref.Name == "" {
		errs = append(errs, field.Required(p().Child("name"), "must name the object the metric describes"))
	} else {
		for _, msg := range content.IsPathSegmentName(ref.Name) {
			errs = append(errs, field.Invalid(p().Child("name"), ref.Name, msg))
		}
	}
	// An empty group is fine here: described objects are often core
	// objects such as a Service (apiVersion v1).
	if _, err := schema.ParseGroupVersion(ref.APIVersion); err != nil {
		errs = append(errs, field.Invalid(p().Child("apiVersion"), ref.APIVersion, err.Error()+"; use group/version, e.g. networking.k8s.io/v1, or v1"))
	}
	return errs
}

func validateMetricIdentifier(id autoscalingv2.MetricIdentifier, p lazyPath) field.ErrorList {
	var errs field.ErrorList
	if id.Name == "" {
		errs = append(errs, field.Required(p().Child("name"), "must name the metric"))
	} else {
		for _, msg := range content.IsPathSegmentName(id.Name) {
			errs = append(errs, field.Invalid(p().Child("name"), id.Name, msg))
		}
	}
	if id.Selector != nil {
		sp := p().Child("selector")
		selErrs := metav1validation.ValidateLabelSelector(id.Selector, metav1validation.LabelSelectorValidationOptions{}, sp)
		if len(selErrs) == 0 {
			// Belt and braces: what the metrics client will do with it.
			if _, err := metav1.LabelSelectorAsSelector(id.Selector); err != nil {
				selErrs = append(selErrs, field.Invalid(sp, metav1.FormatLabelSelector(id.Selector), err.Error()))
			}
		}
		errs = append(errs, selErrs...)
	}
	return errs
}

// validateMetricTarget checks a target against the types allowed for its
// source, and the one value field that type reads.
func validateMetricTarget(t autoscalingv2.MetricTarget, allowed []autoscalingv2.MetricTargetType, p lazyPath) field.ErrorList {
	var errs field.ErrorList
	ok := slices.Contains(allowed, t.Type)
	// The names are only needed for a message.
	names := func() []string {
		out := make([]string, len(allowed))
		for i, a := range allowed {
			out[i] = string(a)
		}
		return out
	}
	switch {
	case t.Type == "":
		errs = append(errs, field.Required(p().Child("type"), "must be one of "+strings.Join(names(), ", ")+" for this source"))
	case !ok:
		errs = append(errs, field.NotSupported(p().Child("type"), t.Type, names()))
	}
	if t.Value != nil && t.Value.Sign() != 1 {
		errs = append(errs, field.Invalid(p().Child("value"), t.Value.String(), "must be greater than 0"))
	}
	if t.AverageValue != nil && t.AverageValue.Sign() != 1 {
		errs = append(errs, field.Invalid(p().Child("averageValue"), t.AverageValue.String(), "must be greater than 0"))
	}
	if t.AverageUtilization != nil && *t.AverageUtilization < 1 {
		errs = append(errs, field.Invalid(p().Child("averageUtilization"), *t.AverageUtilization, "must be greater than 0 (a percentage of the requests)"))
	}
	if !ok {
		return errs
	}
	values := [...]struct {
		name string
		set  bool
	}{{"value", t.Value != nil}, {"averageValue", t.AverageValue != nil}, {"averageUtilization", t.AverageUtilization != nil}}
	var needed string
	switch t.Type {
	case autoscalingv2.ValueMetricType:
		needed = "value"
	case autoscalingv2.AverageValueMetricType:
		needed = "averageValue"
	case autoscalingv2.UtilizationMetricType:
		needed = "averageUtilization"
	}
	for _, v := range values {
		if v.name == needed && !v.set {
			errs = append(errs, field.Required(p().Child(needed), fmt.Sprintf("must be set because type is %s", t.Type)))
		}
	}
	for _, v := range values {
		if v.name != needed && v.set {
			errs = append(errs, field.Forbidden(p().Child(v.name),
				fmt.Sprintf("must not be set when type is %s; remove it, or change type to the one it belongs to", t.Type)))
		}
	}
	return errs
}

// validateBehavior is V4: the behavior limits the API server applies to an
// HPA; the trigger autoscaler uses the same limits so one behavior means the
// same under both.
func validateBehavior(b *autoscalingv2.HorizontalPodAutoscalerBehavior, p lazyPath) field.ErrorList {
	if b == nil {
		return nil
	}
	var errs field.ErrorList
	errs = append(errs, validateScalingRules(b.ScaleUp, func() *field.Path { return p().Child("scaleUp") })...)
	errs = append(errs, validateScalingRules(b.ScaleDown, func() *field.Path { return p().Child("scaleDown") })...)
	return errs
}

var selectPolicies = []string{
	string(autoscalingv2.DisabledPolicySelect), string(autoscalingv2.MaxChangePolicySelect), string(autoscalingv2.MinChangePolicySelect),
}

var scalingPolicyTypes = []string{string(autoscalingv2.PercentScalingPolicy), string(autoscalingv2.PodsScalingPolicy)}

func validateScalingRules(r *autoscalingv2.HPAScalingRules, p lazyPath) field.ErrorList {
	if r == nil {
		return nil
	}
	var errs field.ErrorList
	if w := r.StabilizationWindowSeconds; w != nil && (*w < 0 || *w > maxStabilizationWindowSeconds) {
		errs = append(errs, field.Invalid(p().Child("stabilizationWindowSeconds"), *w,
			fmt.Sprintf("must be between 0 and %d seconds", maxStabilizationWindowSeconds)))
	}
	if s := r.SelectPolicy; s != nil {
		switch *s {
		case autoscalingv2.MaxChangePolicySelect, autoscalingv2.MinChangePolicySelect, autoscalingv2.DisabledPolicySelect:
		default:
			errs = append(errs, field.NotSupported(p().Child("selectPolicy"), *s, selectPolicies))
		}
	}
	// An absent list takes the API server's default policies; an explicit
	// empty one is what the API server refuses.
	if r.Policies != nil && len(r.Policies) == 0 {
		errs = append(errs, field.Required(p().Child("policies"),
			"must list at least one policy; remove policies to get the default ones"))
	}
	for i, pol := range r.Policies {
		// Built only for an error: most policies have none.
		pp := func() *field.Path { return p().Child("policies").Index(i) }
		switch pol.Type {
		case autoscalingv2.PodsScalingPolicy, autoscalingv2.PercentScalingPolicy:
		default:
			errs = append(errs, field.NotSupported(pp().Child("type"), pol.Type, scalingPolicyTypes))
		}
		if pol.Value <= 0 {
			errs = append(errs, field.Invalid(pp().Child("value"), pol.Value, "must be greater than 0"))
		}
		if pol.PeriodSeconds < 1 || pol.PeriodSeconds > maxPolicyPeriodSeconds {
			errs = append(errs, field.Invalid(pp().Child("periodSeconds"), pol.PeriodSeconds,
				fmt.Sprintf("must be between 1 and %d seconds", maxPolicyPeriodSeconds)))
		}
	}
	if r.Tolerance != nil && r.Tolerance.Cmp(resource.Quantity{}) < 0 {
		errs = append(errs, field.Invalid(p().Child("tolerance"), r.Tolerance.String(),
			"must be greater than or equal to 0, e.g. 0.1 for a 10% dead band"))
	}
	return errs
}
