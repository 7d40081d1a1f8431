package controllers_test

import (
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/scaleplane/scaleplane/controllers"
)

// installScaledObjectCRD serves keda.sh/v1alpha1 ScaledObject with a
// schema that keeps every field: enough to be a foreign autoscaler to
// scaleplane, without running KEDA. The real KEDA is e2e/keda; this stand-in
// stays for what that package does not cover quickly: the kind appearing
// after scaleplane's controllers started.
func installScaledObjectCRD(t *testing.T) {
	t.Helper()
	yes := true
	crd := &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "scaledobjects.keda.sh"},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: "keda.sh",
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "scaledobjects", Singular: "scaledobject", Kind: "ScaledObject", ListKind: "ScaledObjectList"},
			Scope: apiextensionsv1.NamespaceScoped,
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{
				Name: "v1alpha1", Served: true, Storage: true,
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
					Type: "object", XPreserveUnknownFields: &yes,
				}},
			}},
		},
	}
	installCRD(t, crd)
}

// C5 with KEDA installed after the controllers started: the ScaledObject
// kind is discovered (KEDADiscoveryInterval), a ScaledObject on the workload
// removes our HPA with a Warning naming it, and removing it brings our HPA
// back. The same with the real KEDA operator, its HPA scaling the workload
// and its pause annotations: e2e/keda.
func TestKEDAScaledObjectIsForeign(t *testing.T) {
	startManager(t, controllers.Options{KEDADiscoveryInterval: 200 * time.Millisecond})
	ns := cluster.Namespace(t)
	kubectlApply(t, ns, autoscaled)
	const ours = "auto-rackedcluster.samples.scaleplane.io"
	waitHPA(t, ns, ours, minMax(2, 6))

	installScaledObjectCRD(t)
	// Until discovery picks the kind up, a ScaledObject may not be seen;
	// Eventually below covers that window.
	kubectlApply(t, ns, `
apiVersion: keda.sh/v1alpha1
kind: ScaledObject
metadata:
  name: queue
spec:
  scaleTargetRef: {apiVersion: samples.scaleplane.io/v1alpha1, kind: RackedCluster, name: auto}
  minReplicaCount: 2
  maxReplicaCount: 10
  triggers:
  - type: cpu
    metadata: {value: "60"}
`)
	waitNoHPA(t, ns, ours)
	waitEvent(t, ns, "auto", "Warning", "ForeignAutoscaler", "ScaledObject/"+ns+"/queue")

	kubectl(t, "delete", "-n", ns, "scaledobject", "queue")
	waitHPA(t, ns, ours, minMax(2, 6))
}
