// Package foundation holds the e2e tests of scaleplane's foundation: the
// kustomize tree applies to a real API server, the API server calls the
// webhook over TLS, and `scaleplane dev` starts, serves the commands it
// prints and leaves no process behind.
package foundation

import (
	"os"
	"testing"

	"github.com/scaleplane/scaleplane/e2e/framework"
)

var cluster *framework.Cluster

func TestMain(m *testing.M) { os.Exit(framework.Run(m, framework.Options{}, &cluster)) }
