package sidebyside

import (
	"fmt"
	"strconv"
	"time"
)

// Environment variables of the side-by-side run's settings (ParseSettings).
const (
	// intervalVar is the polling interval of every arm: scaleplane's
	// polling interval, KEDA's pollingInterval and the HPA controller's
	// sync period.
	intervalVar = "SCALEPLANE_SIDE_BY_SIDE_INTERVAL"
	// scrapeVar is the scrape interval of scaleplane's scraper and of
	// Prometheus.
	scrapeVar = "SCALEPLANE_SIDE_BY_SIDE_SCRAPE"
	// rateVar is how many metric steps a second every arm is driven at.
	rateVar = "SCALEPLANE_SIDE_BY_SIDE_STEPS_PER_SECOND"
	// windowVar is how long each arm is stepped and measured.
	windowVar = "SCALEPLANE_SIDE_BY_SIDE_WINDOW"
	// restVar is how long each arm is measured running, with no step.
	restVar = "SCALEPLANE_SIDE_BY_SIDE_REST"
	// settleVar is how long each arm runs, unmeasured, between its
	// warm-up and its stepped window.
	settleVar = "SCALEPLANE_SIDE_BY_SIDE_SETTLE"
	// limitsVar=default keeps KEDA's and kube-controller-manager's
	// client-side limits at their defaults (20 requests/s, bursts of 30);
	// unset or "raised", they are raised to RaisedQPS and RaisedBurst.
	limitsVar = "SCALEPLANE_SIDE_BY_SIDE_CLIENT_LIMITS"
)

// The raised client-side limits of KEDA's programs and of
// kube-controller-manager: far above what N = 1,000 needs, so no arm waits
// on its own client.
const (
	RaisedQPS   = 500
	RaisedBurst = 1000
)

// Settings are the side-by-side run's knobs, the same for every arm.
type Settings struct {
	Interval, Scrape time.Duration
	StepsPerSecond   float64
	Window, Rest     time.Duration
	// Settle is the unmeasured time between the warm-up, which changes
	// every workload at once, and the stepped window: the warm-up's
	// trailing writes (events, Scalings through scaleplane's writer budget,
	// HPA status) must not count as the steps'.
	Settle       time.Duration
	RaisedLimits bool
}

// DefaultSettings: a 15 s polling interval (the HPA controller's default
// sync period, half KEDA's default), scrapes every 5 s (scaleplane's
// default), one step a second for two minutes, a minute at rest, raised
// client limits, 90 s to settle after the warm-up.
var DefaultSettings = Settings{
	Interval: 15 * time.Second, Scrape: 5 * time.Second,
	StepsPerSecond: 1, Window: 2 * time.Minute, Rest: time.Minute, Settle: 90 * time.Second, RaisedLimits: true,
}

// ParseSettings reads the settings from getenv, DefaultSettings where a
// variable is unset; the scrape interval is at most the polling interval.
func ParseSettings(getenv func(string) string) (Settings, error) {
	s := DefaultSettings
	durations := []struct {
		name string
		into *time.Duration
	}{{intervalVar, &s.Interval}, {scrapeVar, &s.Scrape}, {windowVar, &s.Window}, {restVar, &s.Rest}, {settleVar, &s.Settle}}
	scrapeSet := false
	for _, d := range durations {
		v := getenv(d.name)
		if v == "" {
			continue
		}
		got, err := time.ParseDuration(v)
		if err != nil || got <= 0 {
			return s, fmt.Errorf("%s=%q: want a positive duration such as 15s", d.name, v)
		}
		*d.into = got
		scrapeSet = scrapeSet || d.name == scrapeVar
	}
	for _, d := range []struct {
		name string
		v    time.Duration
	}{{intervalVar, s.Interval}, {scrapeVar, s.Scrape}} {
		if d.v < time.Second || d.v%time.Second != 0 {
			return s, fmt.Errorf("%s=%s: want whole seconds, at least 1s (KEDA's pollingInterval is in seconds)", d.name, d.v)
		}
	}
	if !scrapeSet {
		s.Scrape = min(s.Scrape, s.Interval)
	}
	if s.Scrape > s.Interval {
		return s, fmt.Errorf("%s=%s is longer than %s=%s: scrape at most as often as the polling interval", scrapeVar, s.Scrape, intervalVar, s.Interval)
	}
	if v := getenv(rateVar); v != "" {
		r, err := strconv.ParseFloat(v, 64)
		if err != nil || r <= 0 {
			return s, fmt.Errorf("%s=%q: want a positive number of steps a second, such as 1 or 0.5", rateVar, v)
		}
		s.StepsPerSecond = r
	}
	if s.Steps() < 1 {
		return s, fmt.Errorf("%s=%s at %s=%g steps a second makes no step: lengthen the window or raise the rate", windowVar, s.Window, rateVar, s.StepsPerSecond)
	}
	switch v := getenv(limitsVar); v {
	case "", "raised":
		s.RaisedLimits = true
	case "default":
		s.RaisedLimits = false
	default:
		return s, fmt.Errorf("%s=%q: want raised or default", limitsVar, v)
	}
	return s, nil
}

// Steps is how many steps a window drives: the same for every arm.
func (s Settings) Steps() int { return int(s.Window.Seconds() * s.StepsPerSecond) }

// ControllerManagerFlags are kube-controller-manager's flags for the run:
// the HPA controller syncs at the polling interval, and with raised limits
// its client's QPS and burst are raised.
func (s Settings) ControllerManagerFlags() map[string]string {
	f := map[string]string{"horizontal-pod-autoscaler-sync-period": s.Interval.String()}
	if s.RaisedLimits {
		f["kube-api-qps"] = strconv.Itoa(RaisedQPS)
		f["kube-api-burst"] = strconv.Itoa(RaisedBurst)
	}
	return f
}

// KEDAOperatorArgs are the extra arguments of KEDA's operator: none with
// the default limits. KEDA's metrics server (bin/controlplane's
// keda-adapter, hack/tools/keda) takes none: its API client only lists and
// watches ScaledObjects (the HPA controller's reads are served from its
// cache), and the clients it authenticates and authorizes requests with
// run at 200 requests/s, bursts of 400 (k8s.io/apiserver's delegating
// options).
func (s Settings) KEDAOperatorArgs() []string {
	if !s.RaisedLimits {
		return nil
	}
	return []string{"--kube-api-qps=" + strconv.Itoa(RaisedQPS), "--kube-api-burst=" + strconv.Itoa(RaisedBurst)}
}

// ClientLimits says which client-side limits KEDA's programs and the HPA
// controller ran with.
func (s Settings) ClientLimits() string {
	adapter := "keda-adapter: 20 requests/s, bursts of 30 (list and watch of ScaledObjects only), 200/400 for authentication and authorization"
	if s.RaisedLimits {
		return fmt.Sprintf("keda-operator and kube-controller-manager: %d requests/s, bursts of %d (raised); %s", RaisedQPS, RaisedBurst, adapter)
	}
	return "keda-operator and kube-controller-manager: 20 requests/s, bursts of 30 (their defaults); " + adapter
}

// StepsDue is how many of total steps, paced at perSecond from the start
// of a window, are due after elapsed: the first at once, then one every
// 1/perSecond.
func StepsDue(elapsed time.Duration, perSecond float64, total int) int {
	if elapsed < 0 {
		return 0
	}
	return min(total, int(elapsed.Seconds()*perSecond)+1)
}

// Rotation hands out workloads in turn for steps, passing over those whose
// last step is still being waited for, so that every step is one change of
// one workload's count.
type Rotation struct {
	names []string
	next  int
}

// NewRotation rotates over names.
func NewRotation(names []string) *Rotation { return &Rotation{names: names} }

// Next is the next name in turn not busy, or false when every one is.
func (r *Rotation) Next(busy func(string) bool) (string, bool) {
	for range r.names {
		n := r.names[r.next%len(r.names)]
		r.next++
		if !busy(n) {
			return n, true
		}
	}
	return "", false
}

// Charges say which shared processes an arm is charged for, besides its
// own: Prometheus whole (its scrapes and its queries) while it serves only
// the arm's targets, and kube-controller-manager's CPU above its idle rate
// (the HPA controller's share: its garbage collector has nothing to do by
// then, the idle window having waited for the previous arm's objects to go).
type Charges struct {
	Prometheus, HPAController bool
}

// ChargedCPU is what an arm is charged, in CPU seconds a minute, from the
// window's rates of its own processes, Prometheus and
// kube-controller-manager, and kube-controller-manager's idle rate.
func ChargedCPU(own, prom, kcm, kcmIdle float64, c Charges) float64 {
	sum := own
	if c.Prometheus {
		sum += prom
	}
	if c.HPAController {
		sum += max(0, kcm-kcmIdle)
	}
	return sum
}
