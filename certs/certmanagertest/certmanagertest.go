package certmanagertest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/scaleplane/scaleplane/certs"
)

const (
	module = "github.com/cert-manager/cert-manager"
	// BinaryEnv overrides where the cert-manager binary is looked for.
	BinaryEnv = "CERT_MANAGER_BIN"
)

// Binary returns the path of the cert-manager-lite binary: $CERT_MANAGER_BIN,
// else cert-manager in $KUBEBUILDER_ASSETS when it is there, else
// bin/controlplane/cert-manager in the repository root.
func Binary() string {
	if p := os.Getenv(BinaryEnv); p != "" {
		return p
	}
	if dir := os.Getenv("KUBEBUILDER_ASSETS"); dir != "" {
		if p := filepath.Join(dir, "cert-manager"); fileExists(p) {
			return p
		}
	}
	root, err := repoRoot()
	if err != nil {
		return filepath.Join("bin", "controlplane", "cert-manager")
	}
	return filepath.Join(root, "bin", "controlplane", "cert-manager")
}

// SkipUnlessAvailable skips t with a message saying how to build the binary
// when it is absent.
func SkipUnlessAvailable(t testing.TB) {
	t.Helper()
	if _, err := os.Stat(Binary()); err != nil {
		t.Skipf("cert-manager binary not found at %s: build it with `make tools` "+
			"(cd hack/tools/certmanager && go build -o ../../../bin/controlplane/cert-manager ./cmd/cert-manager-lite) or set %s", Binary(), BinaryEnv)
	}
}

// CRDDir returns deploy/crds of the cert-manager module that module certs
// requires, as resolved by `go list -m` in the checkout's certs folder,
// falling back to the module cache path of certs.CertManagerVersion.
func CRDDir() (string, error) {
	cmd := exec.Command("go", "list", "-m", "-json", module)
	if root, err := repoRoot(); err == nil {
		cmd.Dir = filepath.Join(root, "certs")
	}
	out, err := cmd.Output()
	if err == nil {
		var m struct{ Dir string }
		if err := json.Unmarshal(out, &m); err == nil && m.Dir != "" {
			return filepath.Join(m.Dir, "deploy", "crds"), nil
		}
	}
	modcache, merr := exec.Command("go", "env", "GOMODCACHE").Output()
	if merr != nil {
		return "", fmt.Errorf("locate module %s: %w", module, errors.Join(err, merr))
	}
	dir := filepath.Join(strings.TrimSpace(string(modcache)), module+"@"+certs.CertManagerVersion, "deploy", "crds")
	if _, serr := os.Stat(dir); serr != nil {
		return "", fmt.Errorf("locate cert-manager CRDs (run `go mod download %s`): %w", module, errors.Join(err, serr))
	}
	return dir, nil
}

// InstallCRDs installs cert-manager's CRDs and waits until they are served.
func InstallCRDs(cfg *rest.Config) error {
	dir, err := CRDDir()
	if err != nil {
		return err
	}
	if _, err := envtest.InstallCRDs(cfg, envtest.CRDInstallOptions{
		Paths:              []string{dir},
		ErrorIfPathMissing: true,
		MaxTime:            time.Minute,
	}); err != nil {
		return fmt.Errorf("install cert-manager CRDs from %s: %w", dir, err)
	}
	return nil
}

// Options tune Start. Zero values are fine.
type Options struct {
	// Binary overrides Binary().
	Binary string
	// ReadyTimeout bounds the wait for the informers to sync. Default 2m.
	ReadyTimeout time.Duration
	// Verbosity is klog's -v. Default 2.
	Verbosity int
	// Args are appended to the command line.
	Args []string
}

// CertManager is a running cert-manager-lite process.
type CertManager struct {
	cmd  *exec.Cmd
	dir  string
	done chan struct{}
	err  error

	mu  sync.Mutex
	out bytes.Buffer
}

// Start runs cert-manager against cfg and returns once its controllers and
// injector have synced their caches (it writes a ready file then), or an
// error with the process' output when it exits or the deadline passes. The
// CRDs must be installed first (InstallCRDs).
func Start(ctx context.Context, cfg *rest.Config, o Options) (*CertManager, error) {
	if o.Binary == "" {
		o.Binary = Binary()
	}
	if o.ReadyTimeout == 0 {
		o.ReadyTimeout = 2 * time.Minute
	}
	if o.Verbosity == 0 {
		o.Verbosity = 2
	}
	dir, err := os.MkdirTemp("", "cert-manager-")
	if err != nil {
		return nil, fmt.Errorf("create temp dir: %w", err)
	}
	kubeconfig := filepath.Join(dir, "kubeconfig")
	if err := WriteKubeconfig(cfg, kubeconfig); err != nil {
		_ = os.RemoveAll(dir)
		return nil, err
	}
	ready := filepath.Join(dir, "ready")
	args := append([]string{
		"--kubeconfig=" + kubeconfig,
		"--ready-file=" + ready,
		fmt.Sprintf("--v=%d", o.Verbosity),
	}, o.Args...)

	cm := &CertManager{dir: dir, done: make(chan struct{})}
	// Not CommandContext: the process must outlive a short start context and
	// be stopped with SIGTERM by Stop, not killed.
	cm.cmd = exec.Command(o.Binary, args...)
	cm.cmd.Stdout = (*lockedWriter)(cm)
	cm.cmd.Stderr = (*lockedWriter)(cm)
	if err := cm.cmd.Start(); err != nil {
		_ = os.RemoveAll(dir)
		return nil, fmt.Errorf("start %s: %w", o.Binary, err)
	}
	go func() {
		cm.err = cm.cmd.Wait()
		close(cm.done)
	}()

	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, o.ReadyTimeout, true, func(context.Context) (bool, error) {
		select {
		case <-cm.done:
			return false, fmt.Errorf("cert-manager exited: %v", cm.err)
		default:
		}
		_, err := os.Stat(ready)
		return err == nil, nil
	})
	if err != nil {
		_ = cm.Stop()
		return nil, fmt.Errorf("cert-manager not ready: %w\n%s", err, cm.Logs())
	}
	return cm, nil
}

// Stop sends SIGTERM, waits up to 30s for a clean exit, then kills.
func (cm *CertManager) Stop() error {
	defer func() { _ = os.RemoveAll(cm.dir) }()
	select {
	case <-cm.done:
		return nil
	default:
	}
	_ = cm.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-cm.done:
		var exit *exec.ExitError
		if cm.err != nil && !errors.As(cm.err, &exit) {
			return fmt.Errorf("wait for cert-manager: %w", cm.err)
		}
		return nil
	case <-time.After(30 * time.Second):
		_ = cm.cmd.Process.Kill()
		<-cm.done
		return errors.New("cert-manager did not stop within 30s of SIGTERM; killed")
	}
}

// Logs returns everything the process wrote so far.
func (cm *CertManager) Logs() string {
	cm.mu.Lock()
	defer cm.mu.Unlock()
	return cm.out.String()
}

type lockedWriter CertManager

func (w *lockedWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.out.Write(p)
}

// WriteKubeconfig writes a kubeconfig for cfg (as envtest returns it:
// client certificate or token, CA data) to path.
func WriteKubeconfig(cfg *rest.Config, path string) error {
	kc := clientcmdapi.NewConfig()
	kc.Clusters["test"] = &clientcmdapi.Cluster{
		Server:                   cfg.Host,
		CertificateAuthorityData: cfg.CAData,
		CertificateAuthority:     cfg.CAFile,
		InsecureSkipTLSVerify:    cfg.Insecure,
	}
	kc.AuthInfos["test"] = &clientcmdapi.AuthInfo{
		ClientCertificateData: cfg.CertData,
		ClientCertificate:     cfg.CertFile,
		ClientKeyData:         cfg.KeyData,
		ClientKey:             cfg.KeyFile,
		Token:                 cfg.BearerToken,
		Username:              cfg.Username,
		Password:              cfg.Password,
	}
	kc.Contexts["test"] = &clientcmdapi.Context{Cluster: "test", AuthInfo: "test"}
	kc.CurrentContext = "test"
	if err := clientcmd.WriteToFile(*kc, path); err != nil {
		return fmt.Errorf("write kubeconfig: %w", err)
	}
	return nil
}

// repoRoot finds the scaleplane module root above the working directory.
func repoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		b, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		if err == nil && strings.HasPrefix(string(b), "module github.com/scaleplane/scaleplane\n") {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("scaleplane module root not found")
		}
		dir = parent
	}
}

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}
