package autoscaler

import (
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/scaleplane/scaleplane/api/v1alpha1"
	"github.com/scaleplane/scaleplane/profile"
)

// podLabelsOf is how the loop of v's kind finds each workload's pods when
// the kind's profile cannot say: a ScaleHandle's pods are its target's,
// labelled as the handle's spec.pods says, with ${name} the target's name.
// A built-in kind without pods.labels in its profile: its selector's.
// Nil for every other kind, whose profile's pods.labels apply.
func podLabelsOf(v *profile.Compiled) func(u *unstructured.Unstructured) map[string]string {
	if !v.Admission() && len(v.Spec().Pods.Labels) == 0 {
		return selectorPodLabels
	}
	if v.GVK() != v1alpha1.GroupVersion.WithKind(v1alpha1.ScaleHandleKind) {
		return nil
	}
	return handlePodLabels
}

// selectorPodLabels are the pods of a built-in kind such as a Deployment
// or a StatefulSet, whose profile names no pod labels: the labels of its
// own spec.selector.matchLabels (matchExpressions are not read; name the
// labels in the profile's pods.labels when the selector has only those).
func selectorPodLabels(u *unstructured.Unstructured) map[string]string {
	labels, _, _ := unstructured.NestedStringMap(u.Object, "spec", "selector", "matchLabels")
	if len(labels) == 0 {
		return nil
	}
	return labels
}

// handlePodLabels are the labels of a handle's target's pods; nil when the
// handle names none (nothing is scraped: every pod of the namespace would
// match).
func handlePodLabels(u *unstructured.Unstructured) map[string]string {
	labels, _, _ := unstructured.NestedStringMap(u.Object, "spec", "pods", "labels")
	target, _, _ := unstructured.NestedString(u.Object, "spec", "targetRef", "name")
	if len(labels) == 0 || target == "" {
		return nil
	}
	for k, v := range labels {
		labels[k] = strings.ReplaceAll(v, v1alpha1.NamePlaceholder, target)
	}
	return labels
}
