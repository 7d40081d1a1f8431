package devworld

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/scaleplane/scaleplane/promql"
)

// readyTogether is how close to its due time a pod is made ready with the
// others of its reconcile.
const readyTogether = 250 * time.Millisecond

// reconciler is one kind's operator and kubelet.
type reconciler struct {
	w    *World
	kind Kind
}

// Reconcile brings one workload's pods to what it asks for, marks pods
// Ready once their start-up delay has passed, and reports readiness in the
// workload's status.
func (r *reconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	key := workloadKey{kind: r.kind.GVK.Kind, nn: req.NamespacedName}
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(r.kind.GVK)
	if err := r.w.mgr.GetClient().Get(ctx, req.NamespacedName, u); err != nil {
		if apierrors.IsNotFound(err) {
			return reconcile.Result{}, r.deleteAll(ctx, key, "")
		}
		return reconcile.Result{}, err
	}
	if u.GetDeletionTimestamp() != nil {
		return reconcile.Result{}, r.deleteAll(ctx, key, u.GetUID())
	}

	groups := racks(u)
	replicas := specReplicas(u)
	var deploy *appsv1.Deployment
	if r.kind.Shape == ShapeDeployment {
		var err error
		if deploy, err = r.ensureDeployment(ctx, u); err != nil {
			return reconcile.Result{}, err
		}
		replicas = int(deref(deploy.Spec.Replicas))
	}
	p := planPods(r.kind, u.GetName(), groups, replicas, r.w.opts.MaxPodsPerWorkload)

	// Read through the API, not the cache: a pod this reconcile's
	// predecessor just created must be seen, or it would be made twice.
	pods, err := r.podsOf(ctx, u.GetNamespace(), func(ref *metav1.OwnerReference) bool { return ref.UID == u.GetUID() })
	if err != nil {
		return reconcile.Result{}, err
	}
	wanted := map[string]podPlan{}
	for _, pp := range p.Pods {
		wanted[pp.Name] = pp
	}
	var errs []error
	stopped, started := 0, 0
	existing := map[string]*corev1.Pod{}
	for i := range pods {
		pod := &pods[i]
		nn := client.ObjectKeyFromObject(pod)
		s := r.w.server(nn)
		_, want := wanted[pod.Name]
		// A pod this process does not serve (left by a previous run) has
		// no server behind its port: replace it.
		if want && s != nil && s.podServer != nil && s.uid == pod.UID {
			existing[pod.Name] = pod
			continue
		}
		if err := r.deletePod(ctx, pod); err != nil {
			errs = append(errs, err)
			continue
		}
		stopped++
	}
	// Servers whose pods someone else deleted.
	for _, nn := range r.w.ownedServers(u.GetUID()) {
		if _, ok := existing[nn.Name]; !ok {
			if s := r.w.server(nn); s != nil && s.podServer != nil {
				r.w.release(nn)
			}
		}
	}
	problems := p.Problems
	for _, pp := range p.Pods {
		if existing[pp.Name] != nil {
			continue
		}
		pod, err := r.createPod(ctx, u, pp)
		switch {
		case errors.Is(err, errAtMaxPods):
			problems = append(problems, fmt.Sprintf("pod %s not started: dev runs at most %d pods in all", pp.Name, r.w.opts.MaxPods))
			continue
		case err != nil:
			errs = append(errs, err)
			continue
		}
		existing[pp.Name] = pod
		started++
	}

	// The kubelet's part: Ready once the start-up delay has passed.
	now := r.w.opts.Now()
	var next time.Duration
	readyBy := map[string]int{}
	ready, becameReady := 0, 0
	for _, pp := range p.Pods {
		pod := existing[pp.Name]
		if pod == nil {
			continue
		}
		if !podReady(pod) {
			s := r.w.server(client.ObjectKeyFromObject(pod))
			// Pods started together get ready together: a pod due within
			// readyTogether of now is ready now, so groups do not report
			// a member at a time.
			due := s.started.Add(r.w.opts.StartupDelay)
			if now.Add(readyTogether).Before(due) {
				if wait := due.Sub(now); next == 0 || wait < next {
					next = wait
				}
				continue
			}
			pod.Status = readyStatus(s.started, now)
			if err := r.w.mgr.GetClient().Status().Update(ctx, pod); err != nil {
				errs = append(errs, fmt.Errorf("mark pod %s/%s ready: %w", pod.Namespace, pod.Name, err))
				continue
			}
			becameReady++
		}
		ready++
		readyBy[pp.Group]++
	}
	if err := r.writeStatus(ctx, u, deploy, groups, readyBy, len(existing), ready); err != nil {
		errs = append(errs, err)
	}
	r.w.report(key, started, stopped, becameReady, podState{pods: len(existing), ready: ready, wanted: p.Wanted, problems: strings.Join(problems, "; ")})
	if err := errors.Join(errs...); err != nil {
		return reconcile.Result{}, err
	}
	return reconcile.Result{RequeueAfter: next}, nil
}

// podsOf lists dev's pods in namespace whose controller reference owned
// accepts.
func (r *reconciler) podsOf(ctx context.Context, namespace string, owned func(*metav1.OwnerReference) bool) ([]corev1.Pod, error) {
	var list corev1.PodList
	if err := r.w.mgr.GetAPIReader().List(ctx, &list, client.InNamespace(namespace), client.MatchingLabels{LabelManagedBy: ManagedByValue}); err != nil {
		return nil, fmt.Errorf("list pods in %s: %w", namespace, err)
	}
	var out []corev1.Pod
	for _, pod := range list.Items {
		ref := metav1.GetControllerOf(&pod)
		if ref != nil && ref.Kind == r.kind.GVK.Kind && ref.APIVersion == r.kind.GVK.GroupVersion().String() && owned(ref) {
			out = append(out, pod)
		}
	}
	return out, nil
}

// createPod starts pp's server, then creates its Pod pointing at it; a
// Pod that cannot be created stops its server again.
func (r *reconciler) createPod(ctx context.Context, u *unstructured.Unstructured, pp podPlan) (*corev1.Pod, error) {
	nn := types.NamespacedName{Namespace: u.GetNamespace(), Name: pp.Name}
	s, err := r.w.reserve(nn, u.GetUID())
	if err != nil {
		return nil, err
	}
	port := strconv.Itoa(s.port)
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: nn.Namespace,
			Name:      nn.Name,
			Labels:    pp.Labels,
			Annotations: map[string]string{
				promql.AnnotationScrape: "true",
				promql.AnnotationPort:   port,
				promql.AnnotationPath:   MetricsPath,
			},
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(u, r.kind.GVK)},
		},
		// No nodeName: an unscheduled pod is deleted at once, without
		// waiting for a kubelet to confirm.
		Spec: corev1.PodSpec{Containers: []corev1.Container{{
			Name:  containerName,
			Image: image,
			Ports: []corev1.ContainerPort{{Name: portName, ContainerPort: int32(s.port), Protocol: corev1.ProtocolTCP}},
		}}},
	}
	if pp.Group != "" {
		pod.Annotations[annotationGroup] = pp.Group
	}
	if err := r.w.mgr.GetClient().Create(ctx, pod); err != nil {
		r.w.release(nn)
		return nil, fmt.Errorf("create pod %s: %w", nn, err)
	}
	r.w.mu.Lock()
	s.uid = pod.UID
	r.w.mu.Unlock()
	return pod, nil
}

func (r *reconciler) deletePod(ctx context.Context, pod *corev1.Pod) error {
	err := r.w.mgr.GetClient().Delete(ctx, pod, client.Preconditions{UID: &pod.UID})
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		return fmt.Errorf("delete pod %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	r.w.release(client.ObjectKeyFromObject(pod))
	return nil
}

// deleteAll removes the pods (and Deployment) of a workload that is gone
// or going: there is no garbage collector in dev's control plane. uid is
// empty when the workload is gone; then its pods are found by name.
func (r *reconciler) deleteAll(ctx context.Context, key workloadKey, uid types.UID) error {
	pods, err := r.podsOf(ctx, key.nn.Namespace, func(ref *metav1.OwnerReference) bool {
		return ref.Name == key.nn.Name && (uid == "" || ref.UID == uid)
	})
	if err != nil {
		return err
	}
	var errs []error
	for i := range pods {
		errs = append(errs, r.deletePod(ctx, &pods[i]))
	}
	if r.kind.Shape == ShapeDeployment {
		errs = append(errs, r.deleteDeployment(ctx, key, uid))
	}
	if len(pods) > 0 {
		r.w.report(key, 0, len(pods), 0, podState{})
	}
	return errors.Join(errs...)
}

// ensureDeployment is the runtime Deployment of a Function: named after
// it, with its replicas when it sets them (external scaling) and otherwise
// the HPA's (built-in scaling, starting at minReplicas).
func (r *reconciler) ensureDeployment(ctx context.Context, u *unstructured.Unstructured) (*appsv1.Deployment, error) {
	d := &appsv1.Deployment{}
	nn := client.ObjectKeyFromObject(u)
	err := r.w.mgr.GetClient().Get(ctx, nn, d)
	switch {
	case apierrors.IsNotFound(err):
		sel := selectorLabels(r.kind, u.GetName())
		tmplLabels := map[string]string{LabelManagedBy: ManagedByValue}
		for k, v := range sel {
			tmplLabels[k] = v
		}
		d = &appsv1.Deployment{
			ObjectMeta: metav1.ObjectMeta{
				Namespace:       nn.Namespace,
				Name:            nn.Name,
				Labels:          tmplLabels,
				OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(u, r.kind.GVK)},
			},
			Spec: appsv1.DeploymentSpec{
				Replicas: ptrTo(int32(startReplicas(u))),
				Selector: &metav1.LabelSelector{MatchLabels: sel},
				Template: corev1.PodTemplateSpec{
					ObjectMeta: metav1.ObjectMeta{Labels: tmplLabels},
					Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: containerName, Image: image}}},
				},
			},
		}
		if err := r.w.mgr.GetClient().Create(ctx, d); err != nil {
			return nil, fmt.Errorf("create deployment %s: %w", nn, err)
		}
		return d, nil
	case err != nil:
		return nil, fmt.Errorf("get deployment %s: %w", nn, err)
	}
	if ref := metav1.GetControllerOf(d); ref == nil || ref.UID != u.GetUID() {
		return nil, fmt.Errorf("deployment %s exists and is not this %s's; delete it or rename the %s", nn, r.kind.GVK.Kind, r.kind.GVK.Kind)
	}
	if _, set, _ := unstructured.NestedInt64(u.Object, "spec", "replicas"); set {
		if want := int32(specReplicas(u)); deref(d.Spec.Replicas) != want {
			patch := client.MergeFrom(d.DeepCopy())
			d.Spec.Replicas = &want
			if err := r.w.mgr.GetClient().Patch(ctx, d, patch); err != nil {
				return nil, fmt.Errorf("scale deployment %s to %d: %w", nn, want, err)
			}
		}
	}
	return d, nil
}

// startReplicas is a new runtime Deployment's count: spec.replicas when
// set, else scaleConfig.minReplicas, else 1.
func startReplicas(u *unstructured.Unstructured) int64 {
	if n, ok, _ := unstructured.NestedInt64(u.Object, "spec", "replicas"); ok {
		return max(n, 0)
	}
	if n, ok, _ := unstructured.NestedInt64(u.Object, "spec", "scaleConfig", "minReplicas"); ok {
		return max(n, 0)
	}
	return 1
}

func (r *reconciler) deleteDeployment(ctx context.Context, key workloadKey, uid types.UID) error {
	d := &appsv1.Deployment{}
	if err := r.w.mgr.GetAPIReader().Get(ctx, key.nn, d); err != nil {
		return client.IgnoreNotFound(err)
	}
	ref := metav1.GetControllerOf(d)
	if ref == nil || ref.Kind != key.kind || ref.Name != key.nn.Name || (uid != "" && ref.UID != uid) || d.Labels[LabelManagedBy] != ManagedByValue {
		return nil
	}
	if err := r.w.mgr.GetClient().Delete(ctx, d, client.Preconditions{UID: &d.UID}); client.IgnoreNotFound(err) != nil {
		return fmt.Errorf("delete deployment %s: %w", key.nn, err)
	}
	return nil
}

// writeStatus reports the pods' readiness where the kind's operator
// would, with a merge patch of only those fields, and only when it
// changed.
func (r *reconciler) writeStatus(ctx context.Context, u *unstructured.Unstructured, d *appsv1.Deployment, groups []group, readyBy map[string]int, pods, ready int) error {
	var status map[string]any
	switch r.kind.Shape {
	case ShapeRacks:
		if list, changed := rackStatus(u, groups, readyBy); changed {
			status = map[string]any{"racks": list}
		}
	case ShapeLeaders:
		want := map[string]int64{"replicas": int64(pods), "readyReplicas": int64(ready)}
		if countsDiffer(u, want) {
			status = map[string]any{"replicas": want["replicas"], "readyReplicas": want["readyReplicas"]}
		}
	case ShapeDeployment:
		want := map[string]int64{"replicas": int64(pods)}
		if countsDiffer(u, want) {
			status = map[string]any{"replicas": want["replicas"]}
		}
		if d != nil {
			if err := r.writeDeploymentStatus(ctx, d, int32(pods), int32(ready)); err != nil {
				return err
			}
		}
	}
	if status == nil {
		return nil
	}
	patch := &unstructured.Unstructured{Object: map[string]any{"status": status}}
	data, err := patch.MarshalJSON()
	if err != nil {
		return err
	}
	if err := r.w.mgr.GetClient().Status().Patch(ctx, u, client.RawPatch(types.MergePatchType, data)); client.IgnoreNotFound(err) != nil {
		return fmt.Errorf("write status of %s %s/%s: %w", r.kind.GVK.Kind, u.GetNamespace(), u.GetName(), err)
	}
	return nil
}

// writeDeploymentStatus is what the Deployment controller would report;
// the HPA reads the Deployment's /scale, whose status comes from it.
func (r *reconciler) writeDeploymentStatus(ctx context.Context, d *appsv1.Deployment, pods, ready int32) error {
	want := appsv1.DeploymentStatus{
		ObservedGeneration: d.Generation,
		Replicas:           pods,
		UpdatedReplicas:    pods,
		ReadyReplicas:      ready,
		AvailableReplicas:  ready,
	}
	if d.Status.ObservedGeneration == want.ObservedGeneration && d.Status.Replicas == want.Replicas && d.Status.UpdatedReplicas == want.UpdatedReplicas &&
		d.Status.ReadyReplicas == want.ReadyReplicas && d.Status.AvailableReplicas == want.AvailableReplicas {
		return nil
	}
	patch := client.MergeFrom(d.DeepCopy())
	d.Status.ObservedGeneration, d.Status.Replicas, d.Status.UpdatedReplicas = want.ObservedGeneration, want.Replicas, want.UpdatedReplicas
	d.Status.ReadyReplicas, d.Status.AvailableReplicas = want.ReadyReplicas, want.AvailableReplicas
	if err := r.w.mgr.GetClient().Status().Patch(ctx, d, patch); client.IgnoreNotFound(err) != nil {
		return fmt.Errorf("write status of deployment %s/%s: %w", d.Namespace, d.Name, err)
	}
	return nil
}

func deref(p *int32) int32 {
	if p == nil {
		return 0
	}
	return *p
}
