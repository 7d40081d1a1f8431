package autoscaler

import (
	"context"
	"errors"
	"fmt"
	"strings"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	k8slabels "k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/scaleplane/scaleplane/api/v1alpha1"
	"github.com/scaleplane/scaleplane/controllers"
	"github.com/scaleplane/scaleplane/controllers/autoscaler/internal/foreign"
	"github.com/scaleplane/scaleplane/controllers/autoscaler/internal/scalings"
	internalobjects "github.com/scaleplane/scaleplane/internal/objects"
	"github.com/scaleplane/scaleplane/profile"
	"github.com/scaleplane/scaleplane/promql"
)

// ControllerPrefix names the controllers:
// scaleplane-autoscaler-<kind>.<group> (controllers.ControllerName).
const ControllerPrefix = "scaleplane-autoscaler-"

// SetupWithManager registers one controller per kind with mgr. They run
// only on the elected leader (controller-runtime controllers need leader
// election), and every tick ends with a requeue after the polling
// interval, so the work queue is the timer.
func (a *Autoscaler) SetupWithManager(mgr manager.Manager) error {
	if err := a.setupManager(mgr); err != nil {
		return err
	}
	for _, k := range a.kindList() {
		if err := a.setupKind(mgr, k); err != nil {
			return err
		}
	}
	return nil
}

// SetupKind adds the loop of one more profiled kind and registers its
// controller with mgr, for callers that set kinds up one at a time (the
// library builder). Call it before the manager starts; the first call on a
// manager (or SetupWithManager) does the manager-wide part once. An
// autoscaler belongs to one manager.
func (a *Autoscaler) SetupKind(mgr manager.Manager, v *profile.Compiled) error {
	if err := a.setupManager(mgr); err != nil {
		return err
	}
	k, err := a.addKind(v)
	if err != nil {
		return fmt.Errorf("set up autoscaler: %w", err)
	}
	return a.setupKind(mgr, k)
}

// setupManager registers what every kind shares, once.
func (a *Autoscaler) setupManager(mgr manager.Manager) error {
	switch {
	case a.mgr == mgr:
		return nil
	case a.mgr != nil:
		return errors.New("set up autoscaler: it is set up with another manager already; build one autoscaler per manager")
	}
	if err := mgr.GetFieldIndexer().IndexField(context.Background(), &autoscalingv2.HorizontalPodAutoscaler{}, foreign.HPATargetIndex, controllers.IndexHPATarget); err != nil {
		return fmt.Errorf("index HPAs by scale target: %w", err)
	}
	// Workloads are read as the manager's scheme knows them: typed kinds
	// from the typed informer the embedding operator shares.
	cached := internalobjects.Reader(mgr.GetCache(), mgr.GetScheme())
	writer := scalings.NewWriter(mgr.GetClient(), a.opts.ScalingWrites, a.opts.Now)
	aw := scalings.NewActivityWriter(mgr.GetClient(), mgr.GetAPIReader(), a.opts.Namespace)
	aw.Now = a.opts.Now
	a.env.Store(&env{
		cache:    cached,
		writer:   mgr.GetClient(),
		events:   controllers.EventRecorder(mgr),
		foreign:  &foreign.Finder{Cache: cached, Owner: a.opts.Owner, Mapper: mgr.GetRESTMapper(), Interval: a.opts.ForeignCheckInterval, Now: a.opts.Now},
		scalings: writer,
		activity: aw,
		api:      mgr.GetAPIReader(),
		elected:  mgr.Elected(),
	})
	// Scalings (internal/scalings): the writer and the watch that learns of
	// activity recorded by any replica, both on the leader.
	if err := mgr.Add(writer); err != nil {
		return fmt.Errorf("add the Scaling writer: %w", err)
	}
	if err := mgr.Add(scalings.Watch{Cache: mgr.GetCache(), Mapper: mgr.GetRESTMapper(), Every: a.opts.ForeignCheckInterval, Writer: writer, Wake: a.wakeFromScaling}); err != nil {
		return fmt.Errorf("add the Scaling watch: %w", err)
	}
	// The worker gauges follow the manager's life, on every replica (a
	// replica that is not the leader shows its workers idle).
	if err := mgr.Add(gaugesWhileRunning{a}); err != nil {
		return fmt.Errorf("add the autoscaler's worker gauges: %w", err)
	}
	a.mgr = mgr
	return nil
}

// setupKind registers k's loop with mgr for the manager's life, built as
// StartKind builds a kind activated later.
func (a *Autoscaler) setupKind(mgr manager.Manager, k *kindLoop) error {
	b, err := a.buildKind(k, false)
	if err != nil {
		return err
	}
	if err := mgr.Add(managedKind{a: a, k: k, b: b}); err != nil {
		return fmt.Errorf("set up autoscaler for %s: %w", k.kind, err)
	}
	return nil
}

// Scrape labels added to every sample of an autoscaled workload's pods, so
// a trigger selects its own workload's series with
// {namespace="${namespace}",job="${name}"}.
const (
	LabelJob          = "job"
	LabelWorkload     = "workload"
	LabelWorkloadKind = "workload_kind"
)

// ScrapeWorkloads lists what the scraper should scrape now: the pods of
// every autoscaled workload with a trigger on the embedded store, found by
// the profile's pod labels (${name} substituted; a label holding ${group}
// is left out so that every group's pods match).
func (a *Autoscaler) ScrapeWorkloads() []promql.Workload {
	var out []promql.Workload
	for _, k := range a.kindList() {
		if len(k.podLabels) == 0 && k.podLabelsOf == nil {
			continue
		}
		// A copy of the map, so that no workload's lock is taken under the
		// map's (see the lock order in lifecycle.go).
		k.mu.RLock()
		states := make([]*workload, 0, len(k.workloads))
		for _, st := range k.workloads {
			states = append(states, st)
		}
		k.mu.RUnlock()
		for _, st := range states {
			st.mu.Lock()
			scrape := st.scrape && st.state == StateAutoscaling
			labels := k.podLabels
			if k.podLabelsOf != nil {
				labels = st.podLabels
			}
			st.mu.Unlock()
			if !scrape || len(labels) == 0 {
				continue
			}
			out = append(out, ScrapeWorkload(k.kind, labels, st.nn.Namespace, st.nn.Name))
		}
	}
	return out
}

// ScrapeWorkload is what the scraper reads for one workload: its pods,
// found by the profile's pod labels (${name} substituted; a label holding
// ${group} is left out so that every group's pods match), with the job,
// workload and workload_kind labels on every sample. The external scaler
// scrapes a ScaledObject's target the same way, so one query reads alike
// in a trigger and in KEDA.
func ScrapeWorkload(kind string, podLabels map[string]string, namespace, name string) promql.Workload {
	set := k8slabels.Set{}
	for key, v := range podLabels {
		if strings.Contains(v, v1alpha1.MemberGroupPlaceholder) {
			continue
		}
		set[key] = strings.ReplaceAll(v, v1alpha1.NamePlaceholder, name)
	}
	return promql.Workload{
		Namespace: namespace,
		Selector:  k8slabels.SelectorFromSet(set),
		Labels:    map[string]string{LabelJob: name, LabelWorkload: name, LabelWorkloadKind: kind},
	}
}

// Discoverer is the scraper's Discoverer: the pods of ScrapeWorkloads,
// read from the manager's cache. Before SetupWithManager it finds nothing.
func (a *Autoscaler) Discoverer() promql.Discoverer {
	return promql.DiscovererFunc(func(ctx context.Context) ([]promql.Target, error) {
		e := a.env.Load()
		if e == nil {
			return nil, nil
		}
		d := promql.PodDiscoverer{Client: e.cache, Workloads: a.ScrapeWorkloads}
		return d.Targets(ctx)
	})
}

// gaugesWhileRunning exports the autoscaler's worker gauges from the
// manager's start to its stop.
type gaugesWhileRunning struct{ a *Autoscaler }

func (g gaugesWhileRunning) Start(ctx context.Context) error {
	liveAutoscalers.add(g.a)
	defer liveAutoscalers.remove(g.a)
	<-ctx.Done()
	return nil
}

// NeedLeaderElection is false: every replica reports its workers.
func (gaugesWhileRunning) NeedLeaderElection() bool { return false }
