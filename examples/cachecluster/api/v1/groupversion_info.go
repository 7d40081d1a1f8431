// Package v1 is the example operator's API, group cache.example.com: a
// CacheCluster (shards of members, scaled as one count) and a CacheProxy
// (plain replicas). Both have a /scale subresource and embed scaleplane's
// scale config type, so kubectl scale, HPA, KEDA and scaleplane's trigger
// autoscaler work on them with no scaling code in this operator.
//
// +kubebuilder:object:generate=true
// +groupName=cache.example.com
package v1

import (
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/scheme"
)

var (
	// GroupVersion is the API group and version of this package's types.
	GroupVersion = schema.GroupVersion{Group: "cache.example.com", Version: "v1"}
	// SchemeBuilder registers the types with a scheme.
	SchemeBuilder = &scheme.Builder{GroupVersion: GroupVersion}
	// AddToScheme adds the types to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)
