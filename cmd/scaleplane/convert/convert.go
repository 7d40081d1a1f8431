package convert

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/scaleplane/scaleplane/api/v1alpha1"
	"github.com/scaleplane/scaleplane/scaling"
)

// KEDA's pause annotations, read on the ScaledObject.
const (
	KEDAPaused          = "autoscaling.keda.sh/paused"
	KEDAPausedReplicas  = "autoscaling.keda.sh/paused-replicas"
	KEDAPausedScaleIn   = "autoscaling.keda.sh/paused-scale-in"
	KEDAPausedScaleOut  = "autoscaling.keda.sh/paused-scale-out"
	kedaDefaultMax      = 100
	kedaDefaultCooldown = 300
)

// ScaledObject is the part of a keda.sh/v1alpha1 ScaledObject the
// conversion reads. Every field of KEDA's spec is here, so that strict
// decoding refuses a typo instead of dropping it.
type ScaledObject struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              Spec            `json:"spec"`
	Status            json.RawMessage `json:"status,omitempty"`
}

// Spec is a ScaledObject's spec.
type Spec struct {
	ScaleTargetRef        TargetRef       `json:"scaleTargetRef"`
	PollingInterval       *int32          `json:"pollingInterval,omitempty"`
	InitialCooldownPeriod *int32          `json:"initialCooldownPeriod,omitempty"`
	CooldownPeriod        *int32          `json:"cooldownPeriod,omitempty"`
	IdleReplicaCount      *int32          `json:"idleReplicaCount,omitempty"`
	MinReplicaCount       *int32          `json:"minReplicaCount,omitempty"`
	MaxReplicaCount       *int32          `json:"maxReplicaCount,omitempty"`
	Advanced              *Advanced       `json:"advanced,omitempty"`
	Triggers              []Trigger       `json:"triggers"`
	Fallback              json.RawMessage `json:"fallback,omitempty"`
}

// TargetRef is spec.scaleTargetRef; KEDA defaults it to an apps/v1 Deployment.
type TargetRef struct {
	APIVersion             string `json:"apiVersion,omitempty"`
	Kind                   string `json:"kind,omitempty"`
	Name                   string `json:"name"`
	EnvSourceContainerName string `json:"envSourceContainerName,omitempty"`
}

// Advanced is spec.advanced.
type Advanced struct {
	HorizontalPodAutoscalerConfig *HPAConfig      `json:"horizontalPodAutoscalerConfig,omitempty"`
	RestoreToOriginalReplicaCount bool            `json:"restoreToOriginalReplicaCount,omitempty"`
	ScalingModifiers              json.RawMessage `json:"scalingModifiers,omitempty"`
}

// HPAConfig is spec.advanced.horizontalPodAutoscalerConfig.
type HPAConfig struct {
	Name     string                                         `json:"name,omitempty"`
	Behavior *autoscalingv2.HorizontalPodAutoscalerBehavior `json:"behavior,omitempty"`
}

// Trigger is one of spec.triggers.
type Trigger struct {
	Type              string            `json:"type"`
	Name              string            `json:"name,omitempty"`
	UseCachedMetrics  bool              `json:"useCachedMetrics,omitempty"`
	Metadata          map[string]string `json:"metadata"`
	AuthenticationRef json.RawMessage   `json:"authenticationRef,omitempty"`
	MetricType        string            `json:"metricType,omitempty"`
}

// Options are the choices the ScaledObject does not make.
type Options struct {
	// QuerySource is the scaleplane source of converted prometheus
	// triggers: "prometheus" (a remote server, as KEDA's) or "promql" (the
	// embedded store, scraping the pods' own metrics).
	QuerySource string
	// PrometheusURL is the component configuration's autoscaler.prometheusURL,
	// when known: a prometheus trigger naming another server is not
	// converted, since scaleplane queries one server.
	PrometheusURL string
	// Configured says PrometheusURL comes from a component configuration,
	// so an empty one means the installation has no remote server.
	Configured bool
}

// Problem is one field of the ScaledObject that was not converted.
type Problem struct {
	// Field is the ScaledObject's field path, e.g. spec.fallback.
	Field string
	// Reason says why, and what to do instead.
	Reason string
}

// Result is the conversion of one ScaledObject.
type Result struct {
	// Target is the workload the config goes on.
	APIVersion, Kind, Name, Namespace string
	// Config is the scale config; never nil.
	Config *scaling.Config
	// Annotations are scaleplane's pause annotations for the workload.
	Annotations map[string]string
	// KeepScaledObject is true when KEDA must keep running the
	// ScaledObject (nothing of it became scaleplane's); otherwise it is to
	// be deleted once the config is applied, or scaleplane stands down.
	KeepScaledObject bool
	// Notes are differences of behaviour a user should know; they do not
	// make the conversion incomplete.
	Notes []string
	// NotConverted lists what was dropped, each with its reason.
	NotConverted []Problem
}

func (r *Result) drop(p *field.Path, format string, a ...any) {
	r.NotConverted = append(r.NotConverted, Problem{Field: p.String(), Reason: fmt.Sprintf(format, a...)})
}

func (r *Result) note(format string, a ...any) {
	r.Notes = append(r.Notes, fmt.Sprintf(format, a...))
}

// Convert maps so to scaleplane's config for its target.
func Convert(so *ScaledObject, opts Options) Result {
	if opts.QuerySource == "" {
		opts.QuerySource = scaling.SourcePrometheus
	}
	spec := field.NewPath("spec")
	ref := so.Spec.ScaleTargetRef
	r := Result{APIVersion: ref.APIVersion, Kind: ref.Kind, Name: ref.Name, Namespace: so.Namespace, Config: &scaling.Config{}}
	if r.APIVersion == "" {
		r.APIVersion = "apps/v1"
	}
	if r.Kind == "" {
		r.Kind = "Deployment"
	}
	c := r.Config
	s := so.Spec

	convertBounds(&r, s, spec)
	if s.PollingInterval != nil {
		c.PollingIntervalSeconds = ptr(*s.PollingInterval)
		r.note("pollingIntervalSeconds %d: KEDA polls at this interval only to activate from zero and leaves the rest to its HPA (every 15 s); scaleplane runs every decision at it", *s.PollingInterval)
	}
	if s.InitialCooldownPeriod != nil && *s.InitialCooldownPeriod > 0 {
		r.drop(spec.Child("initialCooldownPeriod"), "scaleplane has no delay before the first scale to zero; its idle timeout already counts from each wake-up")
	}
	if len(s.Fallback) > 0 && string(s.Fallback) != "null" {
		convertFallback(&r, s.Fallback, spec.Child("fallback"))
	}
	if a := s.Advanced; a != nil {
		ap := spec.Child("advanced")

		if a.RestoreToOriginalReplicaCount {
			r.drop(ap.Child("restoreToOriginalReplicaCount"), "scaleplane leaves the count where it is when the scale config is removed; set replicas yourself")
		}
		if h := a.HorizontalPodAutoscalerConfig; h != nil {
			if h.Behavior != nil {
				c.Behavior = h.Behavior.DeepCopy()
			}
			if h.Name != "" {
				r.drop(ap.Child("horizontalPodAutoscalerConfig", "name"), "scaleplane names the HPA it creates after the workload")
			}
		}
	}
	convertPause(&r, so.Annotations)
	convertTriggers(&r, s.Triggers, spec.Child("triggers"), opts)
	if a := s.Advanced; a != nil && len(a.ScalingModifiers) > 0 && string(a.ScalingModifiers) != "null" && string(a.ScalingModifiers) != "{}" {
		convertModifiers(&r, a.ScalingModifiers, spec.Child("advanced", "scalingModifiers"), len(s.Triggers))
	}
	if len(c.Metrics) > 0 && len(c.Triggers) > 0 {
		// V6: an HPA and the trigger autoscaler would fight over replicas.
		for i, t := range s.Triggers {
			if t.Type == "cpu" || t.Type == "memory" {
				r.drop(spec.Child("triggers").Index(i), "scaleplane runs either an HPA on resource metrics or its trigger autoscaler, not both (V6); the other triggers were kept")
			}
		}
		c.Metrics = nil
	}
	if len(c.Triggers) == 0 && len(c.Metrics) > 0 && *c.MinReplicas == 0 {
		// KEDA's admission refuses it too: an HPA cannot scale to zero.
		r.drop(spec.Child("minReplicaCount"), "0 with only cpu or memory triggers: neither an HPA nor KEDA scales to zero on resource metrics; set minReplicaCount to 1 or more")
		r.KeepScaledObject = true
	}
	if len(c.Triggers) == 0 && len(c.Metrics) == 0 {
		r.KeepScaledObject = true
	}
	return r
}

// convertBounds maps the replica counts and the cooldown. KEDA's
// minReplicaCount defaults to 0 and maxReplicaCount to 100.
func convertBounds(r *Result, s Spec, spec *field.Path) {
	c := r.Config
	lo := int32(0)
	if s.MinReplicaCount != nil {
		lo = *s.MinReplicaCount
	}
	hi := int32(kedaDefaultMax)
	if s.MaxReplicaCount != nil {
		hi = *s.MaxReplicaCount
	}
	c.MaxReplicas = ptr(hi)
	c.MinReplicas = ptr(lo)
	toZero := lo == 0
	if idle := s.IdleReplicaCount; idle != nil {
		switch {
		case *idle != 0:
			r.drop(spec.Child("idleReplicaCount"), "scaleplane's only idle count is 0 (KEDA supports no other either); minReplicaCount was kept as the lower bound")
		case lo == 0:
			// Idle and minimum are both 0: nothing more to say.
		default:
			c.MinReplicas = ptr(int32(0))
			c.Idle = &scaling.Idle{ReplicasAtStart: ptr(lo)}
			toZero = true
			if lo > 1 {
				r.drop(spec.Child("minReplicaCount"), "scaleplane wakes a workload from 0 to %d (idle.replicasAtStart) but, while it is active, may scale it down to 1, not only to %d", lo, lo)
			}
		}
	}
	cooldown := int32(kedaDefaultCooldown)
	if s.CooldownPeriod != nil {
		cooldown = *s.CooldownPeriod
	}
	if toZero {
		if c.Idle == nil {
			c.Idle = &scaling.Idle{}
		}
		c.Idle.TimeoutSeconds = ptr(cooldown)
		r.note("idle.timeoutSeconds %d: KEDA's cooldownPeriod counts from the last active trigger; scaleplane's idle timeout counts from the last activity (active triggers, activity signals, scheduled wake-ups) and from the wake-up", cooldown)
	}
}

// convertPause maps KEDA's pause annotations to scaleplane's, and the
// per-direction pauses to a disabled behaviour direction.
func convertPause(r *Result, ann map[string]string) {
	ap := field.NewPath("metadata", "annotations")
	if v, ok := ann[KEDAPausedReplicas]; ok {
		if n, err := strconv.ParseInt(v, 10, 32); err == nil && n >= 0 {
			r.setAnnotation(v1alpha1.AnnotationPausedReplicas, strconv.FormatInt(n, 10))
		} else {
			r.drop(ap.Key(KEDAPausedReplicas), "%q is not a count of replicas", v)
		}
	}
	if v, ok := ann[KEDAPaused]; ok {
		if b, err := strconv.ParseBool(v); err == nil {
			if b {
				r.setAnnotation(v1alpha1.AnnotationPaused, "true")
			}
		} else {
			r.drop(ap.Key(KEDAPaused), "%q is not true or false", v)
		}
	}
	for _, d := range []struct {
		key string
		up  bool
	}{{KEDAPausedScaleIn, false}, {KEDAPausedScaleOut, true}} {
		key, up := d.key, d.up
		v, ok := ann[key]
		if !ok {
			continue
		}
		b, err := strconv.ParseBool(v)
		if err != nil {
			r.drop(ap.Key(key), "%q is not true or false", v)
			continue
		}
		if !b {
			continue
		}
		c := r.Config
		if c.Behavior == nil {
			c.Behavior = &autoscalingv2.HorizontalPodAutoscalerBehavior{}
		}
		rules := &c.Behavior.ScaleDown
		if up {
			rules = &c.Behavior.ScaleUp
		}
		if *rules == nil {
			*rules = &autoscalingv2.HPAScalingRules{}
		}
		disabled := autoscalingv2.DisabledPolicySelect
		(*rules).SelectPolicy = &disabled
	}
}

func (r *Result) setAnnotation(k, v string) {
	if r.Annotations == nil {
		r.Annotations = map[string]string{}
	}
	r.Annotations[k] = v
}

func convertTriggers(r *Result, ts []Trigger, tp *field.Path, opts Options) {
	names := map[string]int{}
	for _, t := range ts {
		names[triggerBase(t)]++
	}
	used := map[string]bool{}
	for i, t := range ts {
		p := tp.Index(i)
		name := triggerBase(t)
		if names[name] > 1 || used[name] {
			name = fmt.Sprintf("%s-%d", name, i)
		}
		used[name] = true
		if t.AuthenticationRef != nil && string(t.AuthenticationRef) != "null" {
			r.drop(p.Child("authenticationRef"), "scaleplane's remote Prometheus credentials are the installation's (autoscaler section of the component configuration), not a trigger's")
		}
		if t.UseCachedMetrics {
			r.note("%s: useCachedMetrics has no counterpart; scaleplane evaluates each trigger once per tick", p.Child("useCachedMetrics"))
		}
		switch t.Type {
		case "prometheus":
			convertPrometheus(r, t, name, p, opts)
		case "cron":
			convertCron(r, t, name, p)
		case "external", "external-push":
			convertExternal(r, t, name, p)
		case "cpu", "memory":
			convertResource(r, t, p)
		default:
			r.drop(p, "scaleplane has no %s source: its triggers read PromQL (embedded store or remote Prometheus) or a cron window; keep this ScaledObject in KEDA, or expose the value as a metric and query it", t.Type)
		}
	}
}

// triggerBase is the name a trigger gets: KEDA's name when given.
func triggerBase(t Trigger) string {
	if t.Name != "" {
		return t.Name
	}
	return t.Type
}

// metricType maps a trigger's metricType; KEDA's default is AverageValue.
func metricType(r *Result, t Trigger, p *field.Path) (scaling.TargetType, bool) {
	switch t.MetricType {
	case "", "AverageValue":
		return scaling.TargetAverageValue, true
	case "Value":
		return scaling.TargetValue, true
	}
	r.drop(p.Child("metricType"), "%q: scaleplane's triggers are Value or AverageValue", t.MetricType)
	return "", false
}

// number reads a required (or, with def, optional) number of metadata.
func number(r *Result, md map[string]string, key string, p *field.Path, required bool) (*float64, bool) {
	v, ok := md[key]
	if !ok {
		if required {
			r.drop(p.Child("metadata", key), "is required")
			return nil, false
		}
		return nil, true
	}
	f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
	if err != nil {
		r.drop(p.Child("metadata", key), "%q is not a number", v)
		return nil, false
	}
	return &f, true
}

// prometheusKeys are the metadata keys of KEDA's prometheus scaler that the
// conversion reads; ignoreNullValues is checked on its own.
var prometheusKeys = map[string]bool{"serverAddress": true, "query": true, "threshold": true, "activationThreshold": true, "ignoreNullValues": true, "metricName": true}

func convertPrometheus(r *Result, t Trigger, name string, p *field.Path, opts Options) {
	md := t.Metadata
	ok := true
	typ, tok := metricType(r, t, p)
	ok = ok && tok
	th, tok := number(r, md, "threshold", p, true)
	ok = ok && tok
	act, tok := number(r, md, "activationThreshold", p, false)
	ok = ok && tok
	q := md["query"]
	if q == "" {
		r.drop(p.Child("metadata", "query"), "is required")
		ok = false
	}
	for _, k := range sortedKeys(md) {
		if prometheusKeys[k] {
			continue
		}
		r.drop(p.Child("metadata", k), "scaleplane's remote Prometheus client (headers, authentication, TLS, timeout, tenant) is set once for the installation, in the component configuration's autoscaler section")
	}
	if v, set := md["ignoreNullValues"]; !set || v != "false" {
		r.note("%s: KEDA reads an empty result as 0 (ignoreNullValues); scaleplane reads it as no data and keeps the count", p)
	}
	src := opts.QuerySource
	if addr := strings.TrimRight(md["serverAddress"], "/"); src == scaling.SourcePrometheus {
		want := strings.TrimRight(opts.PrometheusURL, "/")
		switch {
		case addr == "":
			r.drop(p.Child("metadata", "serverAddress"), "is required")
			ok = false
		case want != "" && addr != want:
			r.drop(p.Child("metadata", "serverAddress"), "%q is not the server of autoscaler.prometheusURL (%q): scaleplane queries one server for every trigger", addr, want)
			ok = false
		case want == "" && opts.Configured:
			r.drop(p.Child("metadata", "serverAddress"), "the component configuration sets no autoscaler.prometheusURL: set it to %q, or convert with --source promql to read the embedded store", addr)
			ok = false
		case want == "":
			r.note("%s: set autoscaler.prometheusURL to %q in scaleplane's component configuration", p.Child("metadata", "serverAddress"), addr)
		}
	} else if src == scaling.SourcePromQL {
		r.note("%s: the query now reads the embedded store, which scrapes the workload's pods: its series must be ones they expose", p.Child("metadata", "query"))
	}
	if !ok {
		return
	}
	r.Config.Triggers = append(r.Config.Triggers, scaling.Trigger{Name: name, Type: typ, Source: src, Query: q, Threshold: *th, ActivationThreshold: act})
}

// externalKeys are the metadata keys of scaleplane's external scaler.
var externalKeys = map[string]bool{"query": true, "threshold": true, "activationThreshold": true, "source": true, "metricName": true, "scalerAddress": true, "enableTLS": true, "unsafeSsl": true, "podSelector": true}

// convertExternal turns a trigger served by scaleplane's external scaler
// (its metadata has a query) into the same trigger of scaleplane's own
// autoscaler; any other external scaler stays KEDA's.
func convertExternal(r *Result, t Trigger, name string, p *field.Path) {
	md := t.Metadata
	if _, ok := md["query"]; !ok {
		r.drop(p, "an external scaler other than scaleplane's (no query in its metadata): keep this ScaledObject in KEDA; scaleplane stands down while it exists")
		return
	}
	for _, k := range sortedKeys(md) {
		if !externalKeys[k] {
			r.drop(p.Child("metadata", k), "not a key of scaleplane's external scaler")
			return
		}
	}
	if _, ok := md["podSelector"]; ok {
		r.drop(p.Child("metadata", "podSelector"), "scaleplane's autoscaler finds a workload's pods through its kind's profile (pods.labels), not a trigger's selector: give the target kind a profile, or keep this ScaledObject on the external scaler")
		return
	}
	ok := true
	typ, tok := metricType(r, t, p)
	ok = ok && tok
	th, tok := number(r, md, "threshold", p, true)
	ok = ok && tok
	act, tok := number(r, md, "activationThreshold", p, false)
	ok = ok && tok
	if !ok {
		return
	}
	src := md["source"]
	if src == "" {
		src = scaling.SourcePromQL
	}
	if md["metricName"] != "" && t.Name == "" {
		name = md["metricName"]
	}
	r.note("%s: was served to KEDA by scaleplane's external scaler; it is now a trigger of scaleplane's own autoscaler (same query, source and thresholds). Keeping the ScaledObject unchanged also works", p)
	r.Config.Triggers = append(r.Config.Triggers, scaling.Trigger{Name: name, Type: typ, Source: src, Query: md["query"], Threshold: *th, ActivationThreshold: act})
}

// convertResource maps a cpu or memory trigger to an autoscaling/v2
// Resource (or ContainerResource) metric of the built-in HPA.
func convertResource(r *Result, t Trigger, p *field.Path) {
	md := t.Metadata
	for _, k := range sortedKeys(md) {
		if k != "value" && k != "containerName" {
			r.drop(p.Child("metadata", k), "not a key of KEDA's %s scaler that scaleplane maps (value, containerName)", t.Type)
			return
		}
	}
	v, ok := md["value"]
	if !ok {
		r.drop(p.Child("metadata", "value"), "is required")
		return
	}
	var target autoscalingv2.MetricTarget
	switch t.MetricType {
	case "", "Utilization":
		n, err := strconv.ParseInt(v, 10, 32)
		if err != nil || n <= 0 {
			r.drop(p.Child("metadata", "value"), "%q is not a percentage (an integer greater than 0)", v)
			return
		}
		target = autoscalingv2.MetricTarget{Type: autoscalingv2.UtilizationMetricType, AverageUtilization: ptr(int32(n))}
	case "AverageValue":
		q, err := resource.ParseQuantity(v)
		if err != nil {
			r.drop(p.Child("metadata", "value"), "%q is not a quantity", v)
			return
		}
		target = autoscalingv2.MetricTarget{Type: autoscalingv2.AverageValueMetricType, AverageValue: &q}
	default:
		r.drop(p.Child("metricType"), "%q: a %s trigger is Utilization or AverageValue", t.MetricType, t.Type)
		return
	}
	res := corev1.ResourceCPU
	if t.Type == "memory" {
		res = corev1.ResourceMemory
	}
	m := autoscalingv2.MetricSpec{Type: autoscalingv2.ResourceMetricSourceType, Resource: &autoscalingv2.ResourceMetricSource{Name: res, Target: target}}
	if cn := md["containerName"]; cn != "" {
		m = autoscalingv2.MetricSpec{Type: autoscalingv2.ContainerResourceMetricSourceType, ContainerResource: &autoscalingv2.ContainerResourceMetricSource{Name: res, Container: cn, Target: target}}
	}
	r.Config.Metrics = append(r.Config.Metrics, m)
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func ptr[T any](v T) *T { return &v }

// convertFallback maps KEDA's fallback to the config's, which has the same
// fields and meanings (V12). KEDA counts a failure on each metrics request
// of the HPA (every 15 s by default); scaleplane on each of its ticks.
func convertFallback(r *Result, raw json.RawMessage, p *field.Path) {
	var f struct {
		FailureThreshold *int32 `json:"failureThreshold"`
		Replicas         *int32 `json:"replicas"`
		Behavior         string `json:"behavior"`
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&f); err != nil {
		r.drop(p, "cannot read it: %v", err)
		return
	}
	if f.FailureThreshold == nil || f.Replicas == nil {
		r.drop(p, "KEDA requires failureThreshold and replicas; set both")
		return
	}
	r.Config.Fallback = &scaling.Fallback{FailureThreshold: *f.FailureThreshold, Replicas: *f.Replicas, Behavior: scaling.FallbackBehavior(f.Behavior)}
	r.note("fallback: a trigger's failures in a row are counted at each of scaleplane's decisions (the polling interval), where KEDA counts them at each of its HPA's metric reads")
}

// convertModifiers maps KEDA's scalingModifiers (V13). KEDA's formulas are
// expr-lang; scaleplane's are CEL, which reads most of them alike once
// integer literals are written as doubles and and/or/not as &&, ||, !.
// A formula that still does not check against the converted triggers'
// names is not converted, with CEL's reason.
func convertModifiers(r *Result, raw json.RawMessage, p *field.Path, triggers int) {
	var m struct {
		Formula          string `json:"formula"`
		Target           string `json:"target"`
		ActivationTarget string `json:"activationTarget"`
		MetricType       string `json:"metricType"`
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&m); err != nil {
		r.drop(p, "cannot read it: %v", err)
		return
	}
	if len(r.Config.Triggers) != triggers {
		r.drop(p, "its formula needs every trigger, and not all of them were converted")
		return
	}
	target, err := strconv.ParseFloat(strings.TrimSpace(m.Target), 64)
	if err != nil {
		r.drop(p.Child("target"), "%q is not a number", m.Target)
		return
	}
	out := &scaling.ScalingModifiers{Formula: celFormula(m.Formula), Target: target, MetricType: scaling.TargetType(m.MetricType)}
	if m.ActivationTarget != "" {
		a, err := strconv.ParseFloat(strings.TrimSpace(m.ActivationTarget), 64)
		if err != nil {
			r.drop(p.Child("activationTarget"), "%q is not a number", m.ActivationTarget)
			return
		}
		out.ActivationTarget = &a
	}
	c := r.Config.DeepCopy()
	c.ScalingModifiers = out
	if errs := scaling.ValidateScalingModifiers(c); len(errs) > 0 {
		r.drop(p, "%v", errs.ToAggregate())
		return
	}
	r.Config.ScalingModifiers = out
	if out.Formula != m.Formula {
		r.note("scalingModifiers.formula %q written in CEL as %q", m.Formula, out.Formula)
	}
}

// celFormula rewrites an expr-lang formula's integer literals as doubles
// and its word operators as CEL's.
func celFormula(f string) string {
	var b strings.Builder
	for i := 0; i < len(f); {
		c := f[i]
		switch {
		case c >= '0' && c <= '9':
			j := i
			for j < len(f) && (f[j] >= '0' && f[j] <= '9' || f[j] == '.' || f[j] == 'e' || f[j] == 'E') {
				j++
			}
			lit := f[i:j]
			b.WriteString(lit)
			if !strings.ContainsAny(lit, ".eE") {
				b.WriteString(".0")
			}
			i = j
		case c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z':
			j := i
			for j < len(f) && (f[j] == '_' || f[j] >= 'a' && f[j] <= 'z' || f[j] >= 'A' && f[j] <= 'Z' || f[j] >= '0' && f[j] <= '9') {
				j++
			}
			switch w := f[i:j]; w {
			case "and":
				b.WriteString("&&")
			case "or":
				b.WriteString("||")
			case "not":
				b.WriteString("!")
			default:
				b.WriteString(w)
			}
			i = j
		case c == '"' || c == '\'':
			// A string literal goes over as it is.
			j := i + 1
			for j < len(f) && f[j] != c {
				if f[j] == '\\' {
					j++
				}
				j++
			}
			j = min(j+1, len(f))
			b.WriteString(f[i:j])
			i = j
		default:
			b.WriteByte(c)
			i++
		}
	}
	return b.String()
}
