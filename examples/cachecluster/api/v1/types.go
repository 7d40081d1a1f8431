package v1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	scaleplanev1alpha1 "github.com/scaleplane/scaleplane/api/v1alpha1"
)

// CacheCluster is a sharded cache: spec.replicas is the member count of
// every shard, which scaleplane fans out to spec.shards[].members.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:subresource:scale:specpath=.spec.replicas,statuspath=.status.replicas,selectorpath=.status.selector
// +kubebuilder:resource:shortName=cachec
// +kubebuilder:printcolumn:name="Replicas",type=integer,JSONPath=".spec.replicas"
// +kubebuilder:printcolumn:name="Ready",type=integer,JSONPath=".status.replicas"
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=".metadata.creationTimestamp"
type CacheCluster struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   CacheClusterSpec   `json:"spec,omitempty"`
	Status CacheClusterStatus `json:"status,omitempty"`
}

// CacheClusterSpec is the desired cluster.
type CacheClusterSpec struct {
	// Replicas is the member count of every shard.
	// +kubebuilder:validation:Minimum=0
	// +optional
	Replicas *int32 `json:"replicas,omitempty"`
	// Shards of the cluster; scaleplane keeps each one's members equal to
	// replicas.
	// +listType=map
	// +listMapKey=name
	// +optional
	Shards []Shard `json:"shards,omitempty"`
	// Autoscaling is scaleplane's scale config: a range, an HPA's metrics,
	// or PromQL triggers down to zero.
	// +optional
	Autoscaling *scaleplanev1alpha1.TriggerAutoscaling `json:"autoscaling,omitempty"`
}

// Shard is one shard of the cluster.
type Shard struct {
	// Name of the shard.
	Name string `json:"name"`
	// Members of the shard.
	// +kubebuilder:validation:Minimum=0
	// +optional
	Members int32 `json:"members,omitempty"`
}

// CacheClusterStatus is what the operator observed.
type CacheClusterStatus struct {
	// Replicas is the ready member count every shard reports, written by
	// scaleplane when they agree.
	// +optional
	Replicas int32 `json:"replicas,omitempty"`
	// Selector of one shard's pods, for the HPA (written by scaleplane).
	// +optional
	Selector string `json:"selector,omitempty"`
	// Shards are each shard's ready members (written by this operator).
	// +listType=map
	// +listMapKey=name
	// +optional
	Shards []ShardStatus `json:"shards,omitempty"`
}

// ShardStatus is one shard's observed state.
type ShardStatus struct {
	Name         string `json:"name"`
	ReadyMembers int32  `json:"readyMembers"`
}

// +kubebuilder:object:root=true

// CacheClusterList is a list of CacheClusters.
type CacheClusterList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []CacheCluster `json:"items"`
}

// CacheProxy is a stateless front of a cache: plain replicas, scaled by
// an HPA on its own metrics (no triggers: it embeds Autoscaling only).
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:subresource:scale:specpath=.spec.replicas,statuspath=.status.replicas,selectorpath=.status.selector
// +kubebuilder:resource:shortName=cachep
type CacheProxy struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   CacheProxySpec   `json:"spec,omitempty"`
	Status CacheProxyStatus `json:"status,omitempty"`
}

// CacheProxySpec is the desired proxy.
type CacheProxySpec struct {
	// Replicas of the proxy.
	// +kubebuilder:validation:Minimum=0
	// +optional
	Replicas *int32 `json:"replicas,omitempty"`
	// Autoscaling is scaleplane's scale config (range, HPA metrics).
	// +optional
	Autoscaling *scaleplanev1alpha1.Autoscaling `json:"autoscaling,omitempty"`
}

// CacheProxyStatus is what the operator observed.
type CacheProxyStatus struct {
	// +optional
	Replicas int32 `json:"replicas,omitempty"`
	// +optional
	Selector string `json:"selector,omitempty"`
}

// +kubebuilder:object:root=true

// CacheProxyList is a list of CacheProxies.
type CacheProxyList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []CacheProxy `json:"items"`
}

func init() {
	SchemeBuilder.Register(&CacheCluster{}, &CacheClusterList{}, &CacheProxy{}, &CacheProxyList{})
}
