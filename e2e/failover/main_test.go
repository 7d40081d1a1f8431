// Package failover holds the e2e test of scaleplane's failover: two
// replicas of the built binary, run as the Deployment runs them (shipped
// RBAC, ServiceAccount token, leader election, one self-signed serving
// Secret, the shipped webhook Service and configurations), behind a
// stand-in for the cluster network, and the leader killed with SIGKILL
// while kubectl scales workloads and admissions keep flowing.
//
// The API server reaches the webhook Service through its egress selector
// (HTTP CONNECT on a unix socket, as it reaches konnectivity), so the
// webhook configurations keep their Service reference; see service for
// why not EndpointSlices and aggregator routing.
package failover

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/scaleplane/scaleplane/e2e/framework"
)

var (
	cluster *framework.Cluster
	network *service
)

// Each replica is started as this test binary in a UTS namespace of its
// own, which names itself like a pod and then becomes the scaleplane
// binary (see startReplica). In a cluster the hostname is the pod's name,
// and controller-runtime makes the lease holder identity from it.
const (
	podNameEnv = "SCALEPLANE_FAILOVER_POD_NAME"
	execEnv    = "SCALEPLANE_FAILOVER_EXEC"
)

func TestMain(m *testing.M) {
	if name := os.Getenv(podNameEnv); name != "" {
		os.Exit(becomePod(name))
	}
	os.Exit(run(m))
}

func run(m *testing.M) int {
	dir, err := os.MkdirTemp("", "scaleplane-failover-")
	if err != nil {
		fmt.Fprintf(os.Stderr, "failover: %v\n", err)
		return 1
	}
	defer func() {
		if err := os.RemoveAll(dir); err != nil {
			fmt.Fprintf(os.Stderr, "failover: %v\n", err)
		}
	}()
	sock := filepath.Join(dir, "cluster-network.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		fmt.Fprintf(os.Stderr, "failover: listen for the API server's egress: %v\n", err)
		return 1
	}
	network = newService(ln)
	defer network.Close()
	egress := filepath.Join(dir, "egress-selector.yaml")
	if err := os.WriteFile(egress, []byte(egressSelectorConfig(sock)), 0o600); err != nil {
		fmt.Fprintf(os.Stderr, "failover: %v\n", err)
		return 1
	}
	return framework.Run(m, framework.Options{
		APIServerFlags: map[string]string{"egress-selector-config-file": egress},
	}, &cluster)
}

// egressSelectorConfig sends only the "cluster" network (webhooks and
// aggregated APIs called through a Service, pod and node proxies) to the
// socket; etcd and the control plane stay direct.
func egressSelectorConfig(sock string) string {
	return fmt.Sprintf(`apiVersion: apiserver.k8s.io/v1beta1
kind: EgressSelectorConfiguration
egressSelections:
- name: cluster
  connection:
    proxyProtocol: HTTPConnect
    transport:
      uds:
        udsName: %s
`, sock)
}

// becomePod runs in the child: it takes the pod's name as hostname in its
// own UTS namespace and replaces itself with the scaleplane binary, so the
// process the test kills is scaleplane itself.
func becomePod(name string) int {
	bin := os.Getenv(execEnv)
	if err := syscall.Sethostname([]byte(name)); err != nil {
		fmt.Fprintf(os.Stderr, "failover: set hostname %s: %v\n", name, err)
		return 1
	}
	env := make([]string, 0, len(os.Environ()))
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, podNameEnv+"=") && !strings.HasPrefix(kv, execEnv+"=") {
			env = append(env, kv)
		}
	}
	err := syscall.Exec(bin, append([]string{bin}, os.Args[1:]...), env)
	fmt.Fprintf(os.Stderr, "failover: exec %s: %v\n", bin, err)
	return 1
}
