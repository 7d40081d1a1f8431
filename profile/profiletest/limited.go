package profiletest

import (
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	"github.com/scaleplane/scaleplane/api/v1alpha1"
)

// InstanceSet is the profile of a third-party shape common among real
// workload CRDs: the count at .spec.instances, whose schema has minimum 1
// (it cannot be scaled to zero), and the scale config in the
// scaleplane.io/scale-config annotation, since the schema has no room for
// it. InstanceSetCRD is its CRD.
func InstanceSet() v1alpha1.ScaleProfileSpec {
	return v1alpha1.ScaleProfileSpec{
		Target:       v1alpha1.TargetKind{APIVersion: "db.example.org/v1", Kind: "InstanceSet", Resource: "instancesets"},
		ReplicasPath: ".spec.instances",
		ScaleConfig:  v1alpha1.ScaleConfigLocation{Annotation: v1alpha1.AnnotationScaleConfig},
		Status:       v1alpha1.StatusPaths{ReplicasPath: ".status.instances", SelectorPath: ".status.selector"},
		Pods:         v1alpha1.Pods{Labels: map[string]string{"db.example.org/set": v1alpha1.NamePlaceholder}},
		MaxReplicas:  20,
	}
}

// InstanceSetCRD is InstanceSet's CRD: .spec.instances with minimum 1 and
// maximum 10.
func InstanceSetCRD() *apiextensionsv1.CustomResourceDefinition {
	return crd("db.example.org", "v1", "InstanceSet", "instancesets", ".spec.instances", ".status.instances", map[string]apiextensionsv1.JSONSchemaProps{
		"instances": {Type: "integer", Format: "int32", Minimum: float(1), Maximum: float(10)},
	}, map[string]apiextensionsv1.JSONSchemaProps{
		"instances": {Type: "integer"},
		"selector":  {Type: "string"},
	})
}

// PinnedFunction is the profile of a Function-like kind whose schema holds
// every count it has to at least 1: replicas (minimum 1, default 1) and
// both bounds of its scale config at .spec.scaleConfig. PinnedFunctionCRD
// is its CRD.
func PinnedFunction() v1alpha1.ScaleProfileSpec {
	return v1alpha1.ScaleProfileSpec{
		Target:       v1alpha1.TargetKind{APIVersion: "serverless.example.org/v1alpha2", Kind: "Function", Resource: "functions"},
		ReplicasPath: ".spec.replicas",
		ScaleConfig:  v1alpha1.ScaleConfigLocation{Path: ".spec.scaleConfig"},
		Status:       v1alpha1.StatusPaths{ReplicasPath: ".status.replicas", SelectorPath: ".status.podSelector"},
		Pods:         v1alpha1.Pods{Labels: map[string]string{"serverless.example.org/function": v1alpha1.NamePlaceholder}},
	}
}

// PinnedFunctionCRD is PinnedFunction's CRD.
func PinnedFunctionCRD() *apiextensionsv1.CustomResourceDefinition {
	one := float(1)
	return crd("serverless.example.org", "v1alpha2", "Function", "functions", ".spec.replicas", ".status.replicas", map[string]apiextensionsv1.JSONSchemaProps{
		"replicas": {Type: "integer", Format: "int32", Minimum: one, Default: &apiextensionsv1.JSON{Raw: []byte("1")}},
		"scaleConfig": {Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{
			"minReplicas": {Type: "integer", Format: "int32", Minimum: one},
			"maxReplicas": {Type: "integer", Format: "int32", Minimum: one},
		}},
	}, map[string]apiextensionsv1.JSONSchemaProps{
		"replicas":    {Type: "integer"},
		"podSelector": {Type: "string"},
	})
}

func float(f float64) *float64 { return &f }

func crd(group, version, kind, plural, specReplicas, statusReplicas string, spec, status map[string]apiextensionsv1.JSONSchemaProps) *apiextensionsv1.CustomResourceDefinition {
	selector := ".status.selector"
	if _, ok := status["podSelector"]; ok {
		selector = ".status.podSelector"
	}
	c := &apiextensionsv1.CustomResourceDefinition{
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: group,
			Names: apiextensionsv1.CustomResourceDefinitionNames{Kind: kind, Plural: plural, ListKind: kind + "List"},
			Scope: apiextensionsv1.NamespaceScoped,
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{
				Name: version, Served: true, Storage: true,
				Subresources: &apiextensionsv1.CustomResourceSubresources{
					Status: &apiextensionsv1.CustomResourceSubresourceStatus{},
					Scale: &apiextensionsv1.CustomResourceSubresourceScale{
						SpecReplicasPath: specReplicas, StatusReplicasPath: statusReplicas, LabelSelectorPath: &selector,
					},
				},
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
					Type: "object",
					Properties: map[string]apiextensionsv1.JSONSchemaProps{
						"spec":   {Type: "object", Properties: spec},
						"status": {Type: "object", Properties: status},
					},
				}},
			}},
		},
	}
	c.Name = plural + "." + group
	return c
}
