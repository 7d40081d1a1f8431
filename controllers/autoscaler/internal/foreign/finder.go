package foreign

import (
	"context"
	"fmt"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/scaleplane/scaleplane/controllers"
	"github.com/scaleplane/scaleplane/profile"
)

// HPATargetIndex indexes HPAs by controllers.TargetKey of their target:
// the autoscaler's own index, apart from the HPA controller's.
const HPATargetIndex = "scaleplane.io/autoscaler-hpa-target"

// Finder lists foreign autoscalers from the manager's cache.
type Finder struct {
	// Cache reads HPAs (indexed by HPATargetIndex) and ScaledObjects.
	Cache client.Reader
	// Owner is the owner of the HPA controller beside the autoscaler: an
	// HPA of the workload labelled for another owner is foreign.
	Owner string
	// Mapper says whether ScaledObjects are served, asked at most once per
	// Interval.
	Mapper   meta.RESTMapper
	Interval time.Duration
	Now      func() time.Time

	mu      sync.Mutex
	keda    bool
	checked time.Time
}

// kedaServed says whether ScaledObjects are served, asking the RESTMapper
// at most once per interval, so that installing KEDA later is noticed
// without a restart and without a discovery call per tick. The lock is not
// held while the mapper asks the API server: the other workers meanwhile
// use the previous answer instead of queueing behind a slow discovery.
func (f *Finder) kedaServed() (bool, error) {
	f.mu.Lock()
	if f.keda || (!f.checked.IsZero() && f.Now().Sub(f.checked) < f.Interval) {
		keda := f.keda
		f.mu.Unlock()
		return keda, nil
	}
	f.checked = f.Now()
	f.mu.Unlock()
	if _, err := f.Mapper.RESTMapping(controllers.ScaledObjectGVK.GroupKind(), controllers.ScaledObjectGVK.Version); err != nil {
		if meta.IsNoMatchError(err) {
			return false, nil
		}
		return false, fmt.Errorf("look up %s: %w", controllers.ScaledObjectGVK, err)
	}
	f.mu.Lock()
	f.keda = true
	f.mu.Unlock()
	return true, nil
}

// Find names the foreign autoscalers of u (controllers.ForeignAutoscalers,
// over the autoscaler's own HPA index). Ours (C4) never exists for a config
// with triggers; one left from a config that had metrics is being deleted by
// C4 and, being controlled by u, is not counted, unless another owner's
// scaleplane made it (labelled for an owner other than f.Owner), which
// stands the HPA controller down as a foreign autoscaler too.
func (f *Finder) Find(ctx context.Context, v *profile.Compiled, u *unstructured.Unstructured) ([]string, error) {
	served, err := f.kedaServed()
	if err != nil {
		return nil, err
	}
	return controllers.ForeignAutoscalers(ctx, f.Cache, HPATargetIndex, controllers.WorkloadTargets(v, u), u, f.Owner, served)
}
