package scalings

import (
	"context"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/scaleplane/scaleplane/api/v1alpha1"
)

// Watch runs on the leader: it learns whether Scalings are served (the
// writer holds its writes until they are), renames the Scalings of the
// name without the group (Migrate), and turns a Scaling whose lastActivity
// moved into a wake-up of its workload, so that activity posted to any
// replica reaches the leader's loop.
type Watch struct {
	Cache  cache.Cache
	Mapper meta.RESTMapper
	// Every is how often it asks again whether Scalings are served while
	// they are not.
	Every time.Duration
	// Writer is told whether Scalings are served, and of the deleted ones.
	Writer *Writer
	// Wake queues a tick of the workload Scaling s names (the loop's
	// side).
	Wake func(s *unstructured.Unstructured)
}

// NeedLeaderElection is true: only the leader's loops are woken.
func (s Watch) NeedLeaderElection() bool { return true }

// Start watches until ctx ends.
func (s Watch) Start(ctx context.Context) error {
	log := ctrl.LoggerFrom(ctx).WithName("scalings")
	warned := false
	for {
		_, err := s.Mapper.RESTMapping(GVK.GroupKind(), GVK.Version)
		if err == nil {
			break
		}
		wait := time.Second
		if meta.IsNoMatchError(err) {
			// Known not served: the loops run without Scalings.
			s.Writer.MarkKnown()
			wait = s.Every
			if !warned {
				log.Error(err, "scalings.scaleplane.io is not served: install scaleplane's CRDs (config/crd); until then no Scaling is written and activity reaches only the replica that receives it")
				warned = true
			}
		} else {
			// Discovery failed: the loops wait (a new leader must not
			// decide before it could restore the History); ask again soon.
			log.Info("cannot tell whether Scalings are served yet; retrying", "error", err.Error())
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(wait):
		}
	}
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(GVK)
	inf, err := s.Cache.GetInformer(ctx, u)
	if err != nil {
		return fmt.Errorf("watch Scalings: %w", err)
	}
	if _, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		UpdateFunc: func(oldObj, newObj any) {
			o, ok1 := oldObj.(*unstructured.Unstructured)
			n, ok2 := newObj.(*unstructured.Unstructured)
			if !ok1 || !ok2 {
				return
			}
			before, _, _ := unstructured.NestedString(o.Object, "status", "lastActivity")
			after, _, _ := unstructured.NestedString(n.Object, "status", "lastActivity")
			if after != "" && after != before {
				s.Wake(n)
			}
		},
		DeleteFunc: func(obj any) {
			if t, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
				obj = t.Obj
			}
			if u, ok := obj.(*unstructured.Unstructured); ok {
				// A Scaling deleted while its workload lives is written
				// again at once.
				s.Writer.Gone(types.NamespacedName{Namespace: u.GetNamespace(), Name: u.GetName()})
				s.Wake(u)
			}
		},
	}); err != nil {
		return fmt.Errorf("watch Scalings: %w", err)
	}
	// Only the Scalings' informer: a workload kind not served yet must
	// not hold the rename (nor the loops) back.
	if toolscache.WaitForCacheSync(ctx.Done(), inf.HasSynced) && s.Writer.Client() != nil {
		Migrate(ctx, s.Cache, s.Writer.Client())
	}
	s.Writer.MarkServed()
	<-ctx.Done()
	return nil
}

// Targets reports whether Scaling u is the one of workload name of kind gk.
func Targets(u *unstructured.Unstructured, gk schema.GroupKind, name string) bool {
	apiVersion, _, _ := unstructured.NestedString(u.Object, "spec", "targetRef", "apiVersion")
	kind, _, _ := unstructured.NestedString(u.Object, "spec", "targetRef", "kind")
	n, _, _ := unstructured.NestedString(u.Object, "spec", "targetRef", "name")
	gv, err := schema.ParseGroupVersion(apiVersion)
	return err == nil && gv.Group == gk.Group && kind == gk.Kind && n == name
}

// Migrate renames the Scalings of the name without the group
// (<workload>-<kind>) that scaleplane wrote before the group was part of
// it: each is written again under ScalingName with its status, the
// activity under its own field manager, then deleted. Until the watch
// shows the rename, the loop reads the old one. A failure is logged:
// the leader then writes the new one from what it restores, and the old
// one stays until its workload is deleted.
func Migrate(ctx context.Context, r client.Reader, c client.Client) {
	log := ctrl.LoggerFrom(ctx).WithName("scalings")
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(GVK.GroupVersion().WithKind("ScalingList"))
	if err := r.List(ctx, list, client.MatchingLabels{v1alpha1.LabelManagedBy: v1alpha1.ManagedByValue}); err != nil {
		log.Info("list Scalings to rename; leaving the old names", "error", err.Error())
		return
	}
	for i := range list.Items {
		old := &list.Items[i]
		next, ok := renamedScaling(old)
		if !ok {
			continue
		}
		if err := renameScaling(ctx, r, c, old, next); err != nil {
			log.Info("rename a Scaling to include the API group; leaving the old one", "scaling", old.GetNamespace()+"/"+old.GetName(), "error", err.Error())
			continue
		}
		log.Info("renamed a Scaling to include the API group", "from", old.GetName(), "to", next.GetName(), "namespace", old.GetNamespace())
	}
}

// renamedScaling is old under its new name (metadata, labels and spec;
// the status is copied by renameScaling), when old has a name without
// the group.
func renamedScaling(old *unstructured.Unstructured) (*unstructured.Unstructured, bool) {
	apiVersion, _, _ := unstructured.NestedString(old.Object, "spec", "targetRef", "apiVersion")
	kind, _, _ := unstructured.NestedString(old.Object, "spec", "targetRef", "kind")
	name, _, _ := unstructured.NestedString(old.Object, "spec", "targetRef", "name")
	gv, err := schema.ParseGroupVersion(apiVersion)
	if err != nil || kind == "" || name == "" {
		return nil, false
	}
	gk := schema.GroupKind{Group: gv.Group, Kind: kind}
	if old.GetName() != LegacyName(name, kind) || old.GetName() == Name(name, gk) {
		return nil, false
	}
	w := &unstructured.Unstructured{}
	w.SetGroupVersionKind(gv.WithKind(kind))
	w.SetName(name)
	next := Object(w, old.GetNamespace())
	next.SetNamespace(old.GetNamespace())
	next.SetOwnerReferences(old.GetOwnerReferences())
	return next, true
}

// renameScaling writes next with old's status, then deletes old.
func renameScaling(ctx context.Context, r client.Reader, c client.Client, old, next *unstructured.Unstructured) error {
	have := &unstructured.Unstructured{}
	have.SetGroupVersionKind(GVK)
	err := r.Get(ctx, types.NamespacedName{Namespace: next.GetNamespace(), Name: next.GetName()}, have)
	switch {
	case apierrors.IsNotFound(err):
		if err := c.Apply(ctx, client.ApplyConfigurationFromUnstructured(next.DeepCopy()), client.FieldOwner(v1alpha1.FieldManager), client.ForceOwnership); err != nil {
			return fmt.Errorf("create %s: %w", next.GetName(), err)
		}
		status, _, _ := unstructured.NestedMap(old.Object, "status")
		activity, _, _ := unstructured.NestedString(status, "lastActivity")
		delete(status, "lastActivity")
		if len(status) > 0 {
			u := &unstructured.Unstructured{Object: map[string]any{"status": status}}
			u.SetGroupVersionKind(GVK)
			u.SetNamespace(next.GetNamespace())
			u.SetName(next.GetName())
			if err := c.Status().Apply(ctx, client.ApplyConfigurationFromUnstructured(u), client.FieldOwner(v1alpha1.FieldManager), client.ForceOwnership); err != nil {
				return fmt.Errorf("copy the status to %s: %w", next.GetName(), err)
			}
		}
		if activity != "" {
			u := &unstructured.Unstructured{}
			u.SetGroupVersionKind(GVK)
			u.SetNamespace(next.GetNamespace())
			u.SetName(next.GetName())
			patch := client.RawPatch(types.MergePatchType, []byte(fmt.Sprintf(`{"status":{"lastActivity":%q}}`, activity)))
			if err := c.Status().Patch(ctx, u, patch, client.FieldOwner(v1alpha1.ActivityFieldManager)); err != nil {
				return fmt.Errorf("copy the last activity to %s: %w", next.GetName(), err)
			}
		}
	case err != nil:
		return fmt.Errorf("read %s: %w", next.GetName(), err)
	}
	uid := old.GetUID()
	if err := c.Delete(ctx, old, client.Preconditions{UID: &uid}); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("delete %s: %w", old.GetName(), err)
	}
	return nil
}
