// Package e2e proves what `make image` and `make release` ship against a
// real control plane (etcd, kube-apiserver, the real cert-manager): every
// object the chart and config/default render is accepted by the API server
// (server-side dry run), and the image runs the way its pod would
// (package pod) from the Deployment those trees render, in in-cluster mode,
// serving admission through the API server; deliberately broken variants of
// the image and the pod fail with messages that say what is wrong.
//
// The image tests need root (mount namespace, chroot, setuid) and skip
// without it, saying so; CI runs as root.
package e2e

import (
	"os"
	"testing"

	"github.com/scaleplane/scaleplane/e2e/framework"

	"github.com/scaleplane/scaleplane/hack/release/pod"
)

var cluster *framework.Cluster

func TestMain(m *testing.M) {
	// A re-executed copy of this binary becomes the container's init here
	// and never returns.
	pod.Init()
	os.Exit(framework.Run(m, framework.Options{}, &cluster))
}
