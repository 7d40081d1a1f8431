package webhooks

import (
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/scaleplane/scaleplane/api/v1alpha1"
)

// MutatePath is the per-kind path of gvr's mutating webhook, served only
// for entries an older release wrote (perkind.go); entries call DispatchPath.
func MutatePath(gvr schema.GroupVersionResource) string { return "/mutate-" + pathSuffix(gvr) }

// ValidatePath is the per-kind path of gvr's validating webhook (see
// MutatePath).
func ValidatePath(gvr schema.GroupVersionResource) string { return "/validate-" + pathSuffix(gvr) }

// ValidateScalePath is the per-kind path of the validating webhook on gvr's
// /scale subresource (see MutatePath).
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

// Webhook entry names are "<resource>.<version>.<group>.<owner>.scaleplane.io":
// the first three segments are the form kubectl accepts for a fully
// qualified resource, so an API server message such as `admission webhook
// "rackedclusters.v1alpha1.samples.scaleplane.scaleplane.io" denied the
// request` names the resource it guards and who judged it. The version is
// part of the name because two profiles may name two versions of one
// resource; the owner, because two embedders may profile one kind, and
// the suffix is how a sync tells its own entries from everyone else's
// (ownsEntry). The /scale entry is prefixed with "scale.".
func mutateName(gvr schema.GroupVersionResource, owner string) string {
	return entryName(gvr, owner)
}
func validateName(gvr schema.GroupVersionResource, owner string) string {
	return entryName(gvr, owner)
}
func scaleName(gvr schema.GroupVersionResource, owner string) string {
	return "scale." + entryName(gvr, owner)
}

func entryName(gvr schema.GroupVersionResource, owner string) string {
	return legacyEntryName(gvr) + "." + owner + v1alpha1.OwnerEntrySuffix
}

// legacyEntryName is an entry's name before owners (releases up to issue
// 16): an unlabelled configuration from such a release is adopted and its
// entries renamed, keeping what an administrator tuned in them.
func legacyEntryName(gvr schema.GroupVersionResource) string {
	return gvr.Resource + "." + gvr.Version + "." + groupOrCore(gvr.Group)
}

// ownsEntry reports whether an entry name is owner's. The owner is a DNS
// label (no dots), so the segment before the suffix is exactly the owner
// and no other owner's entry matches.
func ownsEntry(name, owner string) bool {
	return strings.HasSuffix(name, "."+owner+v1alpha1.OwnerEntrySuffix)
}
