// Package hostile holds the hostile-input suite. The real
// scaleplane binary runs against a real control plane inside a memory
// cgroup of its own, and well over a hundred adversarial inputs are thrown
// at everything a user or a pod can reach: objects applied with kubectl
// (wrong types, huge and negative numbers, cost-bomb queries, dangling
// references, thousands of racks), raw AdmissionReviews posted straight to
// the webhook server, the debug endpoints, the activity endpoint, and scrape
// targets that are slow, endless, huge, malformed or cardinality bombs. Each
// input is a table entry with its expected outcome. After every group of
// inputs the process must be the one started (no exit, no restart), ready,
// and still admitting a valid object; at the end the suite logs what it
// tried, what was refused with a field path, and the memory it peaked at.
//
// The webhook configurations are installed by the framework, pointing at
// its local serving address and key pair; the binary serves them there with
// --cert-mode files, as in e2e/lifecycle, so the API server calls it over
// TLS as in a cluster.
package hostile

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/scaleplane/scaleplane/api/v1alpha1"
	"github.com/scaleplane/scaleplane/e2e/framework"
	"github.com/scaleplane/scaleplane/profile"
	"github.com/scaleplane/scaleplane/profile/profiletest"
	"github.com/scaleplane/scaleplane/webhooks"
)

var cluster *framework.Cluster

// looseGVK is the LooseCluster's kind (testdata/crd).
var looseGVK = schema.GroupVersionKind{Group: "e2e.scaleplane.io", Version: "v1", Kind: "LooseCluster"}

func TestMain(m *testing.M) {
	cfg := profile.SampleConfiguration()
	cfg.Profiles = profiles()
	views, err := profile.CompileAll(cfg.Profiles)
	if err != nil {
		fmt.Fprintf(os.Stderr, "e2e: %v\n", err)
		os.Exit(1)
	}
	// The framework points every Service path at its local webhook
	// server; the Service itself is never looked up.
	mutating, validating := webhooks.Configurations(views, webhooks.ConfigurationOptionsFromConfig(cfg.Webhook),
		webhooks.ServiceClientConfig("scaleplane-system", "scaleplane-webhook-service", 443))
	os.Exit(framework.Run(m, framework.Options{
		CRDPaths: []string{
			filepath.Join(framework.RepoRoot(), "config", "samples", "crd"),
			filepath.Join("testdata", "crd"),
		},
		MutatingWebhooks:   []*admissionregistrationv1.MutatingWebhookConfiguration{mutating},
		ValidatingWebhooks: []*admissionregistrationv1.ValidatingWebhookConfiguration{validating},
	}, &cluster))
}

// twinGVK is a kind named RackedCluster in another group than the
// sample's (testdata/crd).
var twinGVK = schema.GroupVersionKind{Group: "twins.e2e.scaleplane.io", Version: "v1", Kind: "RackedCluster"}

// profiles are the binary's: the samples, the ZonedDatabase (its config in
// an annotation), the LooseCluster (RackedCluster's paths under a schema
// that checks nothing) and the twin RackedCluster of another group.
func profiles() []v1alpha1.ScaleProfileSpec {
	loose := profile.Samples()[0]
	loose.Target = v1alpha1.TargetKind{APIVersion: looseGVK.GroupVersion().String(), Kind: looseGVK.Kind, Resource: "looseclusters"}
	loose.Pods = v1alpha1.Pods{
		Labels:           map[string]string{looseGVK.Group + "/cluster": v1alpha1.NamePlaceholder},
		MemberGroupLabel: looseGVK.Group + "/rack",
	}
	twin := profile.Samples()[0]
	twin.Target = v1alpha1.TargetKind{APIVersion: twinGVK.GroupVersion().String(), Kind: twinGVK.Kind, Resource: "rackedclusters"}
	twin.Pods = v1alpha1.Pods{
		Labels:           map[string]string{twinGVK.Group + "/cluster": v1alpha1.NamePlaceholder},
		MemberGroupLabel: twinGVK.Group + "/rack",
	}
	return append(profile.Samples(), profiletest.ZonedDatabase(), loose, twin)
}
