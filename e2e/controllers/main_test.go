// Package controllers_test proves issue 4 against a real control plane:
// etcd, kube-apiserver, the real HPA controller of kube-controller-manager
// and the real kubectl. The manager runs in this process under a user bound
// only to config/rbac/role.yaml, with no webhook server and no webhook
// configurations installed: every /scale write reaches the racks through
// the controllers alone.
package controllers_test

import (
	"os"
	"testing"

	"github.com/scaleplane/scaleplane/e2e/framework"
)

var cluster *framework.Cluster

func TestMain(m *testing.M) {
	os.Exit(framework.Run(m, framework.Options{HPAController: true}, &cluster))
}
