package admission

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/go-logr/logr"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/scaleplane/scaleplane/api/v1alpha1"
	"github.com/scaleplane/scaleplane/controllers/autoscaler"
	"github.com/scaleplane/scaleplane/e2e/framework"
	"github.com/scaleplane/scaleplane/profile"
	"github.com/scaleplane/scaleplane/profile/profiletest"
	"github.com/scaleplane/scaleplane/promql"
	"github.com/scaleplane/scaleplane/webhooks"
)

var (
	cluster *framework.Cluster
	// views are the sample profiles' and the foreign profile's.
	views []*profile.Compiled
	// webhookConfig is what the suite's webhook configurations are made
	// from: defaults, plus a namespace selector that lets the latency test
	// create objects the webhooks never see.
	webhookConfig = webhooks.ConfigurationOptions{NamespaceSelector: &metav1.LabelSelector{
		MatchExpressions: []metav1.LabelSelectorRequirement{{
			Key: webhooksOffLabel, Operator: metav1.LabelSelectorOpDoesNotExist,
		}},
	}}
)

// webhooksOffLabel on a namespace keeps the webhooks away from it.
const webhooksOffLabel = "e2e.scaleplane.io/webhooks-off"

func TestMain(m *testing.M) {
	// controller-runtime logs through this; SCALEPLANE_E2E_VERBOSE shows it.
	if os.Getenv("SCALEPLANE_E2E_VERBOSE") != "" {
		log.SetLogger(zap.New(zap.UseDevMode(true)))
	} else {
		log.SetLogger(logr.Discard())
	}
	var err error
	if views, err = allViews(); err != nil {
		fmt.Fprintf(os.Stderr, "e2e: %v\n", err)
		os.Exit(1)
	}
	// The framework points every Service path at its local webhook server;
	// the Service itself is never looked up.
	service := webhooks.ServiceClientConfig("scaleplane-system", "scaleplane-webhook-service", 443)
	mutating, validating := webhooks.Configurations(views, webhookConfig, service)
	opts := framework.Options{
		CRDPaths: []string{
			filepath.Join(framework.RepoRoot(), "config", "samples", "crd"),
			filepath.Join("testdata", "crd"),
		},
		MutatingWebhooks:   []*admissionregistrationv1.MutatingWebhookConfiguration{mutating},
		ValidatingWebhooks: []*admissionregistrationv1.ValidatingWebhookConfiguration{validating},
	}
	// The latency benchmark's controls: no-op webhooks of the same shape,
	// served by the same webhook server, in namespaces of their own.
	for _, side := range noopSides {
		m, v := noopConfigurations(side, service)
		opts.MutatingWebhooks = append(opts.MutatingWebhooks, m)
		opts.ValidatingWebhooks = append(opts.ValidatingWebhooks, v)
	}
	code := framework.Run(m, opts, &cluster)
	os.Exit(code)
}

func allViews() ([]*profile.Compiled, error) {
	var out []*profile.Compiled
	for _, p := range append(profile.Samples(), foreignProfile()) {
		v, err := profile.Compile(p)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, nil
}

// foreignProfile is the profile of testdata/crd's ZonedDatabase.
func foreignProfile() v1alpha1.ScaleProfileSpec { return profiletest.ZonedDatabase() }

// startWebhooks starts an in-process manager whose webhook server serves
// scaleplane's handlers where the installed configurations point, and stops
// it when the test ends: a manager left running holds connections that keep
// kube-apiserver from stopping in time. Top-level tests run one at a time,
// so the fixed serving port is never shared.
func startWebhooks(t testing.TB) {
	t.Helper()
	startWebhooksWith(t, nil)
}

// startWebhooksWith is startWebhooks with more handlers on the same
// webhook server, registered by extra before it starts.
func startWebhooksWith(t testing.TB, extra func(*framework.Manager)) {
	t.Helper()
	m, err := cluster.NewManager(framework.ManagerOptions{})
	if err != nil {
		t.Fatalf("build the webhook manager: %v", err)
	}
	// The trigger sources of scaleplane's autoscaler, as cmd/scaleplane/app
	// builds them: triggers are admitted against them (V10, V11).
	limits := promql.Limits{}
	sources, err := autoscaler.NewSources(promql.NewEvaluator(promql.NewStore(promql.Options{}), promql.EvaluatorOptions{Limits: limits}), nil, limits)
	if err != nil {
		t.Fatalf("build trigger sources: %v", err)
	}
	if err := webhooks.Setup(m, views, webhooks.Options{Sources: sources}); err != nil {
		t.Fatalf("set up webhooks: %v", err)
	}
	if extra != nil {
		extra(m)
	}
	if err := m.Start(context.Background()); err != nil {
		t.Fatalf("start the webhook manager: %v", err)
	}
	t.Cleanup(func() {
		if err := m.Stop(); err != nil {
			t.Errorf("stop the webhook manager: %v", err)
		}
	})
}
