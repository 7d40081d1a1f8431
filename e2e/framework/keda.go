package framework

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/scaleplane/scaleplane/controlplane"
)

// Names of KEDA's programs and CRD folder in the binary folder (make
// tools builds them from github.com/kedacore/keda/v2, hack/tools/keda).
const (
	KEDAOperatorBinary = "keda-operator"
	KEDAAdapterBinary  = "keda-adapter"
	KEDACRDFolder      = "keda-crds"
)

// kedaNamespace and kedaMetricsService are where KEDA's metrics server is
// registered, as KEDA's own manifests name them: the aggregator checks the
// server's certificate for <service>.<namespace>.svc.
const (
	kedaNamespace      = "keda"
	kedaMetricsService = "keda-metrics-apiserver"
)

// KEDA is KEDA's operator and metrics API server running beside a cluster
// on 127.0.0.1: the operator (ScaledObjects, their HPAs, activation and the
// scale loop) and the metrics server behind the aggregator
// (external.metrics.k8s.io, read by the HPA controller), linked by KEDA's
// mutually authenticated gRPC metrics service.
type KEDA struct {
	Operator, Adapter *controlplane.Program
}

// StartKEDA installs KEDA's CRDs, starts its operator and metrics server
// and registers the metrics server with the aggregator. The cluster must
// have been started with Options.Aggregator (and HPAController, for
// ScaledObjects to scale). Stop ends both programs.
func StartKEDA(ctx context.Context, c *Cluster) (*KEDA, error) {
	return StartKEDAWith(ctx, c, KEDAOptions{})
}

// KEDAOptions are extra arguments for KEDA's programs, passed after the
// framework's own (so a flag given here wins): --kube-api-qps and
// --kube-api-burst, say, whose defaults (20 and 30) hold KEDA back past a
// few hundred ScaledObjects.
type KEDAOptions struct {
	OperatorArgs, AdapterArgs []string
}

// StartKEDAWith is StartKEDA with extra arguments for its programs.
func StartKEDAWith(ctx context.Context, c *Cluster, opts KEDAOptions) (k *KEDA, err error) {
	if err := controlplane.CheckBinaries(KEDAOperatorBinary, KEDAAdapterBinary, KEDACRDFolder); err != nil {
		return nil, err
	}
	if _, err := c.Kubectl(ctx, "apply", "--server-side", "-f", Binary(KEDACRDFolder)); err != nil {
		return nil, fmt.Errorf("install KEDA's CRDs: %w", err)
	}
	if _, err := c.Kubectl(ctx, "wait", "--for=condition=Established", "--timeout=60s", "-f", Binary(KEDACRDFolder)); err != nil {
		return nil, fmt.Errorf("wait for KEDA's CRDs: %w", err)
	}
	if err := c.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: kedaNamespace}}); err != nil && !apierrors.IsAlreadyExists(err) {
		return nil, fmt.Errorf("create namespace %s: %w", kedaNamespace, err)
	}

	// One key pair, as KEDA's own certificate rotation makes: the
	// operator's gRPC server, the adapter's client to it, and the adapter's
	// serving certificate, which the aggregator checks against the
	// APIService's caBundle.
	dir := filepath.Join(c.Dir, "keda-certs")
	ca, err := controlplane.NewCA("keda-e2e-ca")
	if err != nil {
		return nil, err
	}
	svc := kedaMetricsService + "." + kedaNamespace + ".svc"
	if err := ca.WriteKeyPair(dir, "keda", []string{svc, "keda-operator." + kedaNamespace + ".svc", "localhost"}, []net.IP{net.ParseIP("127.0.0.1")}); err != nil {
		return nil, fmt.Errorf("KEDA certificates: %w", err)
	}
	grpcAddr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	adapterAddr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	_, adapterPort, _ := net.SplitHostPort(adapterAddr)

	k = &KEDA{}
	defer func() {
		if err != nil {
			k.Stop()
			k = nil
		}
	}()
	env := []string{
		"KUBECONFIG=" + c.Kubeconfig,
		"WATCH_NAMESPACE=",
		"POD_NAMESPACE=" + kedaNamespace,
		"KEDA_CLUSTER_OBJECT_NAMESPACE=" + kedaNamespace,
	}
	if k.Operator, err = controlplane.StartProgram(KEDAOperatorBinary, controlplane.ProgramOptions{
		Path: Binary(KEDAOperatorBinary),
		Args: append([]string{
			"--leader-elect=false",
			"--metrics-bind-address=0",
			"--enable-prometheus-metrics=false",
			"--health-probe-bind-address=0",
			"--metrics-service-bind-address=" + grpcAddr,
			"--cert-dir=" + dir,
			"--ca-dir=" + dir,
			"--enable-cert-rotation=false",
			"--zap-log-level=info",
		}, opts.OperatorArgs...),
		Env:     env,
		LogPath: filepath.Join(c.Dir, "keda-operator.log"),
		Out:     verboseOut(),
	}); err != nil {
		return k, err
	}
	if k.Adapter, err = controlplane.StartProgram(KEDAAdapterBinary, controlplane.ProgramOptions{
		Path: Binary(KEDAAdapterBinary),
		Args: append([]string{
			"--bind-address=127.0.0.1",
			"--secure-port=" + adapterPort,
			"--cert-dir=" + dir,
			"--tls-cert-file=" + filepath.Join(dir, "tls.crt"),
			"--tls-private-key-file=" + filepath.Join(dir, "tls.key"),
			"--lister-kubeconfig=" + c.Kubeconfig,
			"--authentication-kubeconfig=" + c.Kubeconfig,
			"--authorization-kubeconfig=" + c.Kubeconfig,
			"--metrics-service-address=" + grpcAddr,
			"--zap-log-level=info",
		}, opts.AdapterArgs...),
		Env:     env,
		LogPath: filepath.Join(c.Dir, "keda-adapter.log"),
		Out:     verboseOut(),
	}); err != nil {
		return k, err
	}
	if err := registerKEDAMetrics(ctx, c, ca.CertPEM, adapterPort); err != nil {
		return k, err
	}
	return k, k.waitAvailable(ctx, c)
}

// registerKEDAMetrics points the aggregator at the metrics server: an
// ExternalName Service resolving to localhost (an Endpoints object may not
// hold a loopback address) and KEDA's APIService with our CA.
func registerKEDAMetrics(ctx context.Context, c *Cluster, caPEM []byte, port string) error {
	p, err := strconv.Atoi(port)
	if err != nil {
		return err
	}
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: kedaNamespace, Name: kedaMetricsService},
		Spec: corev1.ServiceSpec{
			Type:         corev1.ServiceTypeExternalName,
			ExternalName: "localhost",
			Ports:        []corev1.ServicePort{{Name: "https", Port: int32(p)}},
		},
	}
	if err := c.Client.Create(ctx, svc); err != nil {
		return fmt.Errorf("create Service %s/%s: %w", kedaNamespace, kedaMetricsService, err)
	}
	api := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apiregistration.k8s.io/v1",
		"kind":       "APIService",
		"metadata":   map[string]any{"name": "v1beta1.external.metrics.k8s.io"},
		"spec": map[string]any{
			"group":                "external.metrics.k8s.io",
			"version":              "v1beta1",
			"groupPriorityMinimum": int64(100),
			"versionPriority":      int64(100),
			"caBundle":             caPEM,
			"service":              map[string]any{"namespace": kedaNamespace, "name": kedaMetricsService, "port": int64(p)},
		},
	}}
	if err := c.Client.Create(ctx, api); err != nil {
		return fmt.Errorf("create APIService v1beta1.external.metrics.k8s.io: %w", err)
	}
	return nil
}

// waitAvailable waits until the aggregator reports the APIService
// available, or a program exits.
func (k *KEDA) waitAvailable(ctx context.Context, c *Cluster) error {
	var last string
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		for _, p := range []*controlplane.Program{k.Operator, k.Adapter} {
			if exited, state := p.Exited(); exited {
				return false, fmt.Errorf("%s exited (%s); its log ends:\n%s", p.Name, state, p.Log(3000))
			}
		}
		api := &unstructured.Unstructured{}
		api.SetAPIVersion("apiregistration.k8s.io/v1")
		api.SetKind("APIService")
		if err := c.Client.Get(ctx, types.NamespacedName{Name: "v1beta1.external.metrics.k8s.io"}, api); err != nil {
			last = err.Error()
			return false, nil
		}
		conds, _, _ := unstructured.NestedSlice(api.Object, "status", "conditions")
		for _, cd := range conds {
			m, _ := cd.(map[string]any)
			if m["type"] == "Available" {
				last = fmt.Sprintf("Available=%v: %v", m["status"], m["message"])
				return m["status"] == "True", nil
			}
		}
		last = "no Available condition yet"
		return false, nil
	})
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) || wait.Interrupted(err) {
			return fmt.Errorf("KEDA's metrics server did not become available through the aggregator: %s; its log ends:\n%s", last, k.Adapter.Log(3000))
		}
		return err
	}
	return nil
}

// Stop ends KEDA's programs.
func (k *KEDA) Stop() {
	if k == nil {
		return
	}
	for _, p := range []*controlplane.Program{k.Adapter, k.Operator} {
		if p != nil {
			p.Stop(10 * time.Second)
		}
	}
}

// freeAddr is a free 127.0.0.1:port.
func freeAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}

// verboseOut is where started programs log when SCALEPLANE_E2E_VERBOSE is
// set; nil (their log files) otherwise.
func verboseOut() io.Writer {
	if os.Getenv("SCALEPLANE_E2E_VERBOSE") != "" {
		return os.Stderr
	}
	return nil
}
