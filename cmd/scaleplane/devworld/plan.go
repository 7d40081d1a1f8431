package devworld

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/scaleplane/scaleplane/api/v1alpha1"
)

// The pure part of the world: which pods a workload should have and what
// its status should say. reconcile.go applies them.

// Shape is which operator dev plays for a kind.
type Shape string

const (
	// ShapeRacks: one pod per member of each rack (.spec.racks[].members),
	// readiness in .status.racks[].readyMembers (RackedCluster).
	ShapeRacks Shape = "racks"
	// ShapeDeployment: a runtime Deployment named after the workload, one
	// pod per Deployment replica; .status.replicas is the pods' count
	// (Function, whose HPA scales that Deployment).
	ShapeDeployment Shape = "deployment"
	// ShapeLeaders: one leader pod per .spec.replicas; .status.replicas and
	// .status.readyReplicas are the leaders' counts (WorkerGroup).
	ShapeLeaders Shape = "leaders"
)

// Labels and annotations dev puts on what it creates.
const (
	// LabelManagedBy marks dev's pods and Deployments; dev touches nothing
	// without it.
	LabelManagedBy = "app.kubernetes.io/managed-by"
	ManagedByValue = "scaleplane-dev"
	// annotationGroup is the group a pod belongs to (racks).
	annotationGroup = "dev.scaleplane.io/group"
	// containerName and image name the one container of every pod; no
	// image is ever pulled (there is no kubelet).
	containerName = "app"
	image         = "scaleplane.invalid/dev-sample-app"
	// portName names the container port serving /metrics and the work
	// path; `scaleplane dev load` sends its requests there.
	portName = "http"
)

// podPlan is one pod a workload should have.
type podPlan struct {
	Name   string
	Group  string
	Labels map[string]string
}

// plan is what a workload should have now.
type plan struct {
	Pods []podPlan
	// Wanted is how many pods the workload asks for; more than len(Pods)
	// when the cap or invalid names left some out.
	Wanted int
	// Problems say why pods were left out (cap, names).
	Problems []string
}

// group is one group of a racked workload.
type group struct {
	Name    string
	Members int
}

// racks reads .spec.racks of a racked workload. A rack without members
// has none (the mutating webhook writes them).
func racks(u *unstructured.Unstructured) []group {
	list, _, _ := unstructured.NestedSlice(u.Object, "spec", "racks")
	var out []group
	for _, item := range list {
		m, ok := item.(map[string]any)
		if !ok {
			continue
		}
		name, _, _ := unstructured.NestedString(m, "name")
		members, _, _ := unstructured.NestedInt64(m, "members")
		out = append(out, group{Name: name, Members: int(max(members, 0))})
	}
	return out
}

// specReplicas is .spec.replicas, 0 when absent or negative.
func specReplicas(u *unstructured.Unstructured) int {
	n, _, _ := unstructured.NestedInt64(u.Object, "spec", "replicas")
	return int(max(n, 0))
}

// planPods lists the pods of workload name: for racks, member i of every
// rack before member i+1 of any, so that a cap leaves the racks even; for
// the other shapes, replicas pods named <name>-<i>. At most maxPods are
// listed; names that cannot be pod names and label values that labels
// cannot hold are left out with a problem each, never half-created.
func planPods(k Kind, name string, groups []group, replicas, maxPods int) plan {
	var p plan
	seen := map[string]bool{}
	add := func(podName, groupName string) {
		p.Wanted++
		if len(p.Pods) >= maxPods {
			return
		}
		labels := podLabels(k, name, groupName)
		if errs := validation.IsDNS1123Subdomain(podName); len(errs) > 0 {
			p.Problems = append(p.Problems, fmt.Sprintf("pod name %q: %s", podName, strings.Join(errs, "; ")))
			return
		}
		if seen[podName] {
			p.Problems = append(p.Problems, fmt.Sprintf("pod name %q: two groups map to it", podName))
			return
		}
		for _, key := range slices.Sorted(maps.Keys(labels)) {
			if errs := validation.IsValidLabelValue(labels[key]); len(errs) > 0 {
				p.Problems = append(p.Problems, fmt.Sprintf("pod %s: label %s=%q: %s", podName, key, labels[key], strings.Join(errs, "; ")))
				return
			}
		}
		seen[podName] = true
		p.Pods = append(p.Pods, podPlan{Name: podName, Group: groupName, Labels: labels})
	}
	if k.Shape == ShapeRacks {
		most := 0
		for _, g := range groups {
			most = max(most, g.Members)
		}
		for i := range most {
			for _, g := range groups {
				if i < g.Members {
					add(name+"-"+podNamePart(g.Name)+"-"+strconv.Itoa(i), g.Name)
				}
			}
		}
	} else {
		for i := range replicas {
			add(name+"-"+strconv.Itoa(i), "")
		}
	}
	if p.Wanted > maxPods {
		p.Problems = append(p.Problems, fmt.Sprintf("asks for %d pods; dev runs at most %d per workload, so %d are not started and its status counts only the pods that run",
			p.Wanted, maxPods, p.Wanted-maxPods))
	}
	return p
}

// podNamePart is a group name as it can appear in a pod name: lower case,
// anything else than [a-z0-9-] as '-'.
func podNamePart(s string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9', r == '-':
			return r
		case r >= 'A' && r <= 'Z':
			return r - 'A' + 'a'
		}
		return '-'
	}, s)
}

// podLabels are the profile's pod labels with ${name} and ${group}
// replaced, the group label for grouped kinds, and dev's own mark.
func podLabels(k Kind, name, groupName string) map[string]string {
	out := map[string]string{LabelManagedBy: ManagedByValue}
	for key, v := range k.Labels {
		out[key] = strings.ReplaceAll(strings.ReplaceAll(v, v1alpha1.NamePlaceholder, name), v1alpha1.MemberGroupPlaceholder, groupName)
	}
	if k.MemberGroupLabel != "" && groupName != "" {
		out[k.MemberGroupLabel] = groupName
	}
	return out
}

// selectorLabels are the labels every pod of workload name carries
// whatever its group: the Deployment's selector.
func selectorLabels(k Kind, name string) map[string]string {
	out := map[string]string{}
	for key, v := range k.Labels {
		if strings.Contains(v, v1alpha1.MemberGroupPlaceholder) {
			continue
		}
		out[key] = strings.ReplaceAll(v, v1alpha1.NamePlaceholder, name)
	}
	return out
}

// podReady reports whether a pod is Running and Ready.
func podReady(p *corev1.Pod) bool {
	if p.Status.Phase != corev1.PodRunning {
		return false
	}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// readyStatus is the status a kubelet reports for a pod whose one
// container started at started and is ready now.
func readyStatus(started, now time.Time) corev1.PodStatus {
	st, n := metav1.NewTime(started), metav1.NewTime(now)
	cond := func(t corev1.PodConditionType) corev1.PodCondition {
		return corev1.PodCondition{Type: t, Status: corev1.ConditionTrue, LastTransitionTime: n}
	}
	return corev1.PodStatus{
		Phase:     corev1.PodRunning,
		HostIP:    loopback,
		HostIPs:   []corev1.HostIP{{IP: loopback}},
		PodIP:     loopback,
		PodIPs:    []corev1.PodIP{{IP: loopback}},
		StartTime: &st,
		Conditions: []corev1.PodCondition{
			cond(corev1.PodScheduled), cond(corev1.PodInitialized), cond(corev1.ContainersReady), cond(corev1.PodReady),
		},
		ContainerStatuses: []corev1.ContainerStatus{{
			Name:    containerName,
			Image:   image,
			ImageID: image,
			Ready:   true,
			Started: ptrTo(true),
			State:   corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: st}},
		}},
	}
}

func ptrTo[T any](v T) *T { return &v }

// rackStatus is .status.racks for groups given each group's ready pods,
// in spec order, and whether it differs from what u reports.
func rackStatus(u *unstructured.Unstructured, groups []group, ready map[string]int) ([]any, bool) {
	want := make([]any, 0, len(groups))
	for _, g := range groups {
		want = append(want, map[string]any{"name": g.Name, "readyMembers": int64(ready[g.Name])})
	}
	cur, _, _ := unstructured.NestedSlice(u.Object, "status", "racks")
	if len(cur) != len(want) {
		return want, true
	}
	for i := range cur {
		m, _ := cur[i].(map[string]any)
		name, _, _ := unstructured.NestedString(m, "name")
		n, found, _ := unstructured.NestedInt64(m, "readyMembers")
		if !found || name != groups[i].Name || n != int64(ready[groups[i].Name]) || len(m) != 2 {
			return want, true
		}
	}
	return want, false
}

// countsDiffer reports whether u's status fields differ from want.
func countsDiffer(u *unstructured.Unstructured, want map[string]int64) bool {
	for field, v := range want {
		cur, found, _ := unstructured.NestedInt64(u.Object, "status", field)
		if !found || cur != v {
			return true
		}
	}
	return false
}
