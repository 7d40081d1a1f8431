// Package certmanager holds the end-to-end proof of cert-manager mode with
// scaleplane's own webhooks: the real cert-manager controllers and CA
// injector (certs/certmanagertest) issue the serving certificate from the
// kustomize tree in config/certmanager, applied with the real kubectl as
// docs/certs.md "Deploy with cert-manager" says; the binary's own wiring
// (cmd/scaleplane/app) serves the webhooks with it; the real API server
// admits through it across a forced renewal; and cert-manager mode without
// cert-manager's CRDs fails with what to install.
//
// The package owns no product code: it drives certs, app and kubectl.
package certmanager

import (
	"context"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/scaleplane/scaleplane/certs/certmanagertest"
	"github.com/scaleplane/scaleplane/e2e/framework"
)

var cluster *framework.Cluster

var (
	cmOnce    sync.Once
	cmProcess *certmanagertest.CertManager
	cmErr     error
	// anyFailed says a test that used cert-manager failed, so its output
	// is worth showing.
	anyFailed atomic.Bool
)

func TestMain(m *testing.M) {
	// controller-runtime logs through this; SCALEPLANE_E2E_VERBOSE shows it.
	if os.Getenv("SCALEPLANE_E2E_VERBOSE") != "" {
		log.SetLogger(zap.New(zap.UseDevMode(true)))
	} else {
		log.SetLogger(logr.Discard())
	}
	os.Exit(framework.Run(m, framework.Options{}, &cluster))
}

// certManager installs cert-manager's CRDs into the package's cluster and
// starts the real cert-manager once for the package; tests that need it call
// this first. It is started on first use because framework.Run runs the
// tests right after the cluster is up; it stops before the cluster does
// (framework.BeforeStop), since a process still watching holds
// kube-apiserver up past its stop timeout.
func certManager(t *testing.T) *certmanagertest.CertManager {
	t.Helper()
	certmanagertest.SkipUnlessAvailable(t)
	cmOnce.Do(func() {
		start := time.Now()
		if cmErr = certmanagertest.InstallCRDs(cluster.Config); cmErr != nil {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		cmProcess, cmErr = certmanagertest.Start(ctx, cluster.Config, certmanagertest.Options{})
		if cmErr == nil {
			framework.BeforeStop(stopCertManager)
			fmt.Fprintf(os.Stderr, "e2e: cert-manager CRDs installed and controllers started in %s\n", time.Since(start).Round(time.Millisecond))
		}
	})
	if cmErr != nil {
		t.Fatalf("start cert-manager: %v", cmErr)
	}
	t.Cleanup(func() {
		if t.Failed() {
			anyFailed.Store(true)
		}
	})
	return cmProcess
}

// stopCertManager stops the package's cert-manager and shows its output
// when a test failed.
func stopCertManager() {
	if err := cmProcess.Stop(); err != nil {
		fmt.Fprintf(os.Stderr, "e2e: %v\n", err)
	}
	if anyFailed.Load() {
		fmt.Fprintf(os.Stderr, "e2e: cert-manager output:\n%s\n", cmProcess.Logs())
	}
}
