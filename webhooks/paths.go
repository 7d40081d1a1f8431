package webhooks

import (
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

// MutatePath is the webhook server path of gvr's mutating webhook.
func MutatePath(gvr schema.GroupVersionResource) string { return "/mutate-" + pathSuffix(gvr) }

// ValidatePath is the webhook server path of gvr's validating webhook.
func ValidatePath(gvr schema.GroupVersionResource) string { return "/validate-" + pathSuffix(gvr) }

// ValidateScalePath is the webhook server path of the validating webhook on
// gvr's /scale subresource.
func ValidateScalePath(gvr schema.GroupVersionResource) string {
	return "/validate-scale-" + pathSuffix(gvr)
}

func pathSuffix(gvr schema.GroupVersionResource) string {
	return strings.ReplaceAll(groupOrCore(gvr.Group), ".", "-") + "-" + gvr.Version + "-" + gvr.Resource
}

// groupOrCore names the core group, which is empty, so that names and paths
// never have an empty segment.
func groupOrCore(g string) string {
	if g == "" {
		return "core"
	}
	return g
}

// Webhook entry names are "<resource>.<version>.<group>", the form kubectl
// accepts for a fully qualified resource, so an API server message such as
// `admission webhook "rackedclusters.v1alpha1.samples.scaleplane.io" denied
// the request` names the resource it guards. The API server requires at
// least three dot-separated segments, which the version guarantees even for
// single-word groups. The version is part of the name because two profiles
// may name two versions of one resource. The /scale entry is prefixed with
// "scale.".
func mutateName(gvr schema.GroupVersionResource) string   { return entryName(gvr) }
func validateName(gvr schema.GroupVersionResource) string { return entryName(gvr) }
func scaleName(gvr schema.GroupVersionResource) string    { return "scale." + entryName(gvr) }

func entryName(gvr schema.GroupVersionResource) string {
	return gvr.Resource + "." + gvr.Version + "." + groupOrCore(gvr.Group)
}
