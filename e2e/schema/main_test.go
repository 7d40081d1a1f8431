// Package schema_test proves schema-aware profiles (contract
// M7, S2, C6) against a real control plane with the real kubectl:
// a third-party-shaped kind (profile/testdata/crd's ScaledApp) whose
// spec.replicas has a default, whose scale config's bounds have a minimum
// of 1 and whose shards hold at most 10 members. scaleplane's webhooks and
// controllers run in this process with the profile compiled against the
// CRD the API server serves, as cmd/scaleplane/app does at start.
//
// SCALEPLANE_E2E_NO_SCHEMA=1 runs the same tests without the limits (the
// behaviour before schema awareness), to show that they fail there.
package schema_test

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/go-logr/logr"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/scaleplane/scaleplane/e2e/framework"
	"github.com/scaleplane/scaleplane/profile"
	"github.com/scaleplane/scaleplane/profile/profiletest"
	"github.com/scaleplane/scaleplane/webhooks"
)

var cluster *framework.Cluster

func TestMain(m *testing.M) {
	if os.Getenv("SCALEPLANE_E2E_VERBOSE") != "" {
		log.SetLogger(zap.New(zap.UseDevMode(true)))
	} else {
		log.SetLogger(logr.Discard())
	}
	// The configurations only need the kind; the limits are read from the
	// served CRD once the control plane runs (startScaleplane).
	v, err := profile.Compile(profiletest.ScaledApp())
	if err != nil {
		fmt.Fprintf(os.Stderr, "e2e: %v\n", err)
		os.Exit(1)
	}
	service := webhooks.ServiceClientConfig("scaleplane-system", "scaleplane-webhook-service", 443)
	mutating, validating := webhooks.Configurations([]*profile.Compiled{v}, webhooks.ConfigurationOptions{}, service)
	os.Exit(framework.Run(m, framework.Options{
		CRDPaths:           []string{filepath.Join(framework.RepoRoot(), "profile", "testdata", "crd")},
		MutatingWebhooks:   []*admissionregistrationv1.MutatingWebhookConfiguration{mutating},
		ValidatingWebhooks: []*admissionregistrationv1.ValidatingWebhookConfiguration{validating},
	}, &cluster))
}
