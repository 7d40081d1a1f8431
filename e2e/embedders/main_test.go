// Package embedders proves that operators embedding scaleplane's library
// and the scaleplane binary share one cluster: each keeps only its own
// webhook configurations and entries, kinds are set up one
// by one on a manager without a manager-wide unstructured cache,
// and the library builder resolves each kind from the cluster.
package embedders

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/go-logr/logr"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/scaleplane/scaleplane/e2e/framework"
)

var cluster *framework.Cluster

func TestMain(m *testing.M) {
	if os.Getenv("SCALEPLANE_E2E_VERBOSE") != "" {
		log.SetLogger(zap.New(zap.UseDevMode(true)))
	} else {
		log.SetLogger(logr.Discard())
	}
	// The sample CRDs and scaleplane's own (ScaleProfile); no webhook
	// configuration is installed up front: each embedder creates its own.
	os.Exit(framework.Run(m, framework.Options{CRDPaths: []string{
		filepath.Join(framework.RepoRoot(), "config", "samples", "crd"),
		filepath.Join(framework.RepoRoot(), "config", "crd", "bases"),
	}}, &cluster))
}
