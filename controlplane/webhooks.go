package controlplane

import (
	"context"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// WaitForWebhooks waits until the API server sends creates of obj's kind
// through the webhooks and they answer: a server-side dry-run create of a
// copy of obj (nothing is stored) must succeed and come back with mutated
// true. It polls until ctx ends, or for a minute when ctx has no deadline,
// and then returns the last reason it was not yet so. A webhook server that
// has just started, a webhook configuration just created or repointed, a
// caBundle just injected: the API server learns of each through a watch,
// so a first admission can fail while the process itself is ready.
//
// mutated sees the object as the API server returned it; e.g. for
// scaleplane's RackedCluster sample, racks fanned out to spec.replicas.
func (c *Cluster) WaitForWebhooks(ctx context.Context, obj client.Object, mutated func(client.Object) bool) error {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, time.Minute)
		defer cancel()
	}
	last := "no attempt yet"
	err := wait.PollUntilContextCancel(ctx, 50*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		probe, ok := obj.DeepCopyObject().(client.Object)
		if !ok {
			return false, fmt.Errorf("%T is not a client.Object", obj)
		}
		if err := c.Client.Create(ctx, probe, client.DryRunAll); err != nil {
			last = fmt.Sprintf("dry-run create: %v", err)
			return false, nil
		}
		if !mutated(probe) {
			last = "dry-run create admitted but not mutated yet"
			return false, nil
		}
		return true, nil
	})
	if err != nil {
		return fmt.Errorf("webhooks do not answer for %s %s/%s: %s: %w", obj.GetObjectKind().GroupVersionKind().Kind, obj.GetNamespace(), obj.GetName(), last, err)
	}
	return nil
}
