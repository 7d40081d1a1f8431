package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	appsv1 "k8s.io/api/apps/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	configv1alpha2 "github.com/scaleplane/scaleplane/api/config/v1alpha2"
	"github.com/scaleplane/scaleplane/certs"
	"github.com/scaleplane/scaleplane/certs/certmanagertest"
	"github.com/scaleplane/scaleplane/e2e/framework"
	"github.com/scaleplane/scaleplane/profile"

	"github.com/scaleplane/scaleplane/hack/release/image"
	"github.com/scaleplane/scaleplane/hack/release/manifests"
	"github.com/scaleplane/scaleplane/hack/release/pod"
)

func requireRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("running the image as its pod needs root (a mount namespace, bind mounts, chroot, setuid); run the tests as root, as CI does")
	}
}

var (
	imgOnce  sync.Once
	imgBuilt v1.Image
	imgErr   error
)

// testImage builds the image for this machine's architecture, as `make
// image` does (same package, same layers), once per package.
func testImage(t *testing.T) v1.Image {
	t.Helper()
	requireRoot(t)
	if runtime.GOOS != "linux" {
		t.Skipf("the image is linux/%s; this is %s", runtime.GOARCH, runtime.GOOS)
	}
	imgOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
		defer cancel()
		start := time.Now()
		var idx v1.ImageIndex
		idx, imgErr = image.Build(ctx, image.Options{
			RepoRoot:  framework.RepoRoot(),
			Version:   "v0.0.0-e2e",
			Commit:    strings.Repeat("0", 40),
			Created:   time.Unix(0, 0),
			Platforms: []v1.Platform{{OS: "linux", Architecture: runtime.GOARCH}},
		})
		if imgErr == nil {
			imgBuilt, imgErr = image.PlatformImage(idx, "linux", runtime.GOARCH)
		}
		fmt.Fprintf(os.Stderr, "e2e: image for linux/%s built in %s\n", runtime.GOARCH, time.Since(start).Round(time.Second))
	})
	if imgErr != nil {
		t.Fatalf("build the image: %v", imgErr)
	}
	return imgBuilt
}

var (
	cmOnce sync.Once
	cmErr  error
)

// certManager runs the real cert-manager (controllers and CA injector)
// for the package, stopped before the control plane.
func certManager(t *testing.T) {
	t.Helper()
	certmanagertest.SkipUnlessAvailable(t)
	installCRDs(t)
	cmOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		var cm *certmanagertest.CertManager
		if cm, cmErr = certmanagertest.Start(ctx, cluster.Config, certmanagertest.Options{}); cmErr == nil {
			framework.BeforeStop(func() { _ = cm.Stop() })
		}
	})
	if cmErr != nil {
		t.Fatalf("start cert-manager: %v", cmErr)
	}
}

// install applies objs for real and removes them when the test ends,
// webhook configurations first (they fail closed). CRDs and namespaces
// stay: other tests use the sample CRDs, and no namespace controller runs
// to finish a namespace deletion.
func install(t *testing.T, objs []*unstructured.Unstructured) {
	t.Helper()
	if errs := apply(t.Context(), objs, false); len(errs) > 0 {
		t.Fatalf("install: %v", errors.Join(errs...))
	}
	t.Cleanup(func() {
		ctx := context.Background()
		var first, rest []*unstructured.Unstructured
		for _, o := range objs {
			switch o.GetKind() {
			case "CustomResourceDefinition", "Namespace":
			case "MutatingWebhookConfiguration", "ValidatingWebhookConfiguration":
				first = append(first, o)
			default:
				rest = append(rest, o)
			}
		}
		for _, o := range append(first, rest...) {
			if err := cluster.Client.Delete(ctx, o.DeepCopy()); err != nil && !apierrors.IsNotFound(err) {
				t.Errorf("uninstall %s %s: %v", o.GetKind(), o.GetName(), err)
			}
		}
	})
}

// ports are the free loopback ports the pod listens on: it shares the
// host's network with every other test, so the addresses the Deployment
// leaves to the pod's own network namespace (:9443, :8443, :8081) move to
// 127.0.0.1.
type ports struct{ webhook, metrics, probes, closed int }

func freePorts(t *testing.T) ports {
	return ports{framework.FreePort(t), framework.FreePort(t), framework.FreePort(t), framework.FreePort(t)}
}

// newPod is what a kubelet would run for the Deployment: its pod template,
// the image's configuration, a token of the pod's service account and the
// cluster's CA, the API server as KUBERNETES_SERVICE_HOST. The test changes
// only addresses: the listen ports (flags after the Deployment's), the
// webhook URL the API server calls (it runs outside any cluster network),
// the configuration's webhook host and port, and an HTTPS
// autoscaler.prometheusURL on a closed loopback port (never queried), so
// that the image's CA certificates are needed at start.
func newPod(t *testing.T, dep *appsv1.Deployment, img v1.Image, p ports) pod.Pod {
	t.Helper()
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	cs, err := kubernetes.NewForConfig(cluster.Config)
	if err != nil {
		t.Fatal(err)
	}
	tr, err := cs.CoreV1().ServiceAccounts(dep.Namespace).CreateToken(t.Context(), dep.Spec.Template.Spec.ServiceAccountName, &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("token for service account %s/%s: %v", dep.Namespace, dep.Spec.Template.Spec.ServiceAccountName, err)
	}
	host, port := apiServer(t)
	webhookURL := "https://" + net.JoinHostPort("127.0.0.1", strconv.Itoa(p.webhook))
	return pod.Pod{
		Deployment:     dep,
		Container:      manifests.ContainerName,
		Image:          cf.Config,
		Name:           dep.Name + "-7d9f8b6c5-x2x4z",
		Client:         cluster.Client,
		ServiceAccount: pod.ServiceAccount{Token: tr.Status.Token, CACert: cluster.Config.CAData},
		APIServerHost:  host,
		APIServerPort:  port,
		Dir:            t.TempDir(),
		ExtraArgs: []string{
			"--metrics-bind-address=" + net.JoinHostPort("127.0.0.1", strconv.Itoa(p.metrics)),
			"--health-probe-bind-address=" + net.JoinHostPort("127.0.0.1", strconv.Itoa(p.probes)),
			"--webhook-url=" + webhookURL,
		},
		EditFile: func(volume, key string, data []byte) ([]byte, error) {
			if key != "scaleplane-config.yaml" {
				return data, nil
			}
			var cfg map[string]any
			if err := yaml.Unmarshal(data, &cfg); err != nil {
				return nil, fmt.Errorf("configuration in volume %s: %w", volume, err)
			}
			wh, _ := cfg["webhook"].(map[string]any)
			if wh == nil {
				wh = map[string]any{}
			}
			wh["host"], wh["port"] = "127.0.0.1", p.webhook
			cfg["webhook"] = wh
			as, _ := cfg["autoscaler"].(map[string]any)
			if as == nil {
				as = map[string]any{}
			}
			as["prometheusURL"] = "https://" + net.JoinHostPort("127.0.0.1", strconv.Itoa(p.closed))
			cfg["autoscaler"] = as
			return yaml.Marshal(cfg)
		},
	}
}

func apiServer(t *testing.T) (string, int) {
	t.Helper()
	u, err := url.Parse(cluster.Config.Host)
	if err != nil {
		t.Fatal(err)
	}
	port, err := strconv.Atoi(u.Port())
	if err != nil {
		t.Fatalf("API server address %s: %v", cluster.Config.Host, err)
	}
	return u.Hostname(), port
}

// running is a started container.
type running struct {
	cmd    *exec.Cmd
	out    *lockedBuffer
	done   chan struct{}
	err    error
	probes int
}

type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// start unpacks img and runs the pod's container from it. A kubelet-level
// refusal (runAsNonRoot) is returned as the error.
func start(t *testing.T, p pod.Pod, img v1.Image, probes int) (*running, error) {
	t.Helper()
	rootfs := filepath.Join(t.TempDir(), "rootfs")
	if err := pod.Unpack(img, rootfs); err != nil {
		t.Fatalf("unpack the image: %v", err)
	}
	spec, err := p.Spec(t.Context(), rootfs)
	if err != nil {
		return nil, err
	}
	cmd, err := pod.Command(spec)
	if err != nil {
		t.Fatal(err)
	}
	r := &running{cmd: cmd, out: &lockedBuffer{}, done: make(chan struct{}), probes: probes}
	var tee io.Writer = r.out
	if os.Getenv("SCALEPLANE_E2E_VERBOSE") != "" {
		tee = io.MultiWriter(r.out, os.Stderr)
	}
	cmd.Stdout, cmd.Stderr = tee, tee
	if err := cmd.Start(); err != nil {
		t.Fatalf("start the container: %v", err)
	}
	go func() {
		r.err = cmd.Wait()
		close(r.done)
	}()
	t.Cleanup(func() {
		r.stop()
		if t.Failed() {
			t.Logf("container output:\n%s", r.out.String())
		}
	})
	return r, nil
}

// stop sends SIGTERM, as the kubelet does, and waits out the grace
// period before SIGKILL.
func (r *running) stop() {
	select {
	case <-r.done:
		return
	default:
	}
	_ = r.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-r.done:
	case <-time.After(45 * time.Second):
		_ = r.cmd.Process.Kill()
		<-r.done
	}
}

func (r *running) exitCode() int {
	var ee *exec.ExitError
	if errors.As(r.err, &ee) {
		return ee.ExitCode()
	}
	if r.err != nil {
		return -1
	}
	return 0
}

// waitReady waits for the readiness probe the Deployment declares
// (GET /readyz on the probes port) to pass, failing at once with the
// container's output when it exits.
func (r *running) waitReady(t *testing.T) {
	t.Helper()
	readyz := fmt.Sprintf("http://127.0.0.1:%d/readyz", r.probes)
	framework.Eventually(t, 2*framework.DefaultTimeout, func(ctx context.Context) (bool, string) {
		select {
		case <-r.done:
			t.Fatalf("the container exited (code %d) before it was ready:\n%s", r.exitCode(), r.out.String())
		default:
		}
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, readyz, nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return false, fmt.Sprintf("readyz: %v", err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK, fmt.Sprintf("readyz: %s %s", resp.Status, body)
	})
}

// waitExit waits for the container to exit and returns its exit code.
func (r *running) waitExit(t *testing.T) int {
	t.Helper()
	framework.Eventually(t, 2*framework.DefaultTimeout, func(context.Context) (bool, string) {
		select {
		case <-r.done:
			return true, ""
		default:
			return false, "the container is still running:\n" + r.out.String()
		}
	})
	return r.exitCode()
}

// admits creates a RackedCluster through the API server and checks that
// the webhook the container serves mutated it (M5: every rack gets the
// replicas).
func admits(t *testing.T) {
	t.Helper()
	ns := cluster.Namespace(t)
	framework.Eventually(t, 0, func(ctx context.Context) (bool, string) {
		u := framework.RackedCluster(ns, "probe", 3, 1, 2, 4)
		if err := cluster.Client.Create(ctx, u, client.DryRunAll); err != nil {
			return false, fmt.Sprintf("dry-run create: %v", err)
		}
		m, _ := framework.RackMembers(u)
		return fmt.Sprint(m) == "[3 3 3]", fmt.Sprintf("dry-run create not mutated yet: racks %v", m)
	})
	u := framework.RackedCluster(ns, "admitted", 2, 1, 5)
	if err := cluster.Client.Create(t.Context(), u); err != nil {
		t.Fatalf("create: %v", err)
	}
	got := &unstructured.Unstructured{}
	got.SetGroupVersionKind(framework.RackedClusterGVK)
	if err := cluster.Client.Get(t.Context(), client.ObjectKeyFromObject(u), got); err != nil {
		t.Fatal(err)
	}
	if m, _ := framework.RackMembers(got); fmt.Sprint(m) != "[2 2]" {
		t.Errorf("stored RackedCluster racks %v, want [2 2] (mutated by the webhook in the container)", m)
	}
}

func deployment(t *testing.T, objs []*unstructured.Unstructured) *appsv1.Deployment {
	t.Helper()
	u := manifests.Find(objs, "Deployment", manifests.ManagerName)
	if u == nil {
		t.Fatalf("no Deployment %s among %v", manifests.ManagerName, manifests.Kinds(objs))
	}
	d, err := pod.DeploymentFrom(u)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// TestImageRunsAsItsPod runs the image the way each install
// path's pod runs it, in in-cluster mode against the real API server,
// waits for the Deployment's readiness probe, and has the API server admit
// a RackedCluster through the container's webhook. The args, env,
// volumes, user and read-only root come from the rendered Deployment.
//
//   - kustomize: config/samples/deploy (config/default with the sample
//     kinds), self-signed certificate written into the cert emptyDir;
//   - helm: the chart with the sample profiles in cert-manager mode, the
//     real cert-manager issuing the serving certificate and injecting the
//     CA.
//
// Then SIGTERM, as the kubelet sends it: the container exits 0 within the
// grace period.
func TestImageRunsAsItsPod(t *testing.T) {
	img := testImage(t)
	root := framework.RepoRoot()
	t.Run("kustomize", func(t *testing.T) {
		objs, err := manifests.Kustomize(filepath.Join(root, "config", "samples", "deploy"))
		if err != nil {
			t.Fatal(err)
		}
		install(t, objs)
		p := freePorts(t)
		r, err := start(t, newPod(t, deployment(t, objs), img, p), img, p.probes)
		if err != nil {
			t.Fatalf("the kubelet would refuse the container: %v", err)
		}
		began := time.Now()
		r.waitReady(t)
		t.Logf("ready %s after start", time.Since(began).Round(time.Millisecond))
		admits(t)
		r.stop()
		if code := r.exitCode(); code != 0 {
			t.Errorf("after SIGTERM the container exited %d, want 0:\n%s", code, r.out.String())
		}
	})
	t.Run("helm", func(t *testing.T) {
		certManager(t)
		const ns = "scaleplane-helm"
		ensureNamespace(t, ns)
		c, err := manifests.LoadChart(filepath.Join(root, manifests.ChartDir))
		if err != nil {
			t.Fatal(err)
		}
		digest, err := img.Digest()
		if err != nil {
			t.Fatal(err)
		}
		var profiles []any
		data, _ := json.Marshal(profile.Samples())
		_ = json.Unmarshal(data, &profiles)
		objs, err := manifests.RenderChart(c, map[string]any{
			"image":    map[string]any{"repository": "registry.example/scaleplane", "digest": digest.String()},
			"profiles": profiles,
			"certificates": map[string]any{"mode": "cert-manager", "certManager": map[string]any{
				// The API server calls the webhook by address (see newPod).
				"ipAddresses": []any{"127.0.0.1"},
			}},
		}, ns)
		if err != nil {
			t.Fatal(err)
		}
		install(t, objs)
		cc, err := client.New(cluster.Config, client.Options{Scheme: certs.NewScheme()})
		if err != nil {
			t.Fatal(err)
		}
		crt, err := certmanagertest.WaitReady(t.Context(), cc, ns, certs.ServingCertificateName, 1, 2*time.Minute)
		if err != nil {
			t.Fatalf("cert-manager did not issue the serving certificate: %v", err)
		}
		t.Logf("cert-manager issued %s revision %d", crt.Name, *crt.Status.Revision)
		p := freePorts(t)
		r, err := start(t, newPod(t, deployment(t, objs), img, p), img, p.probes)
		if err != nil {
			t.Fatalf("the kubelet would refuse the container: %v", err)
		}
		began := time.Now()
		r.waitReady(t)
		t.Logf("ready %s after start", time.Since(began).Round(time.Millisecond))
		admits(t)
		r.stop()
		if code := r.exitCode(); code != 0 {
			t.Errorf("after SIGTERM the container exited %d, want 0:\n%s", code, r.out.String())
		}
	})
}

// TestImageE2ECatchesBrokenImagesAndPods proves the test above
// can fail: each variant breaks one thing of the image or of the pod the
// kustomize tree renders, and the run must fail with a message that names
// it. A variant that started and became ready would fail this test.
func TestImageE2ECatchesBrokenImagesAndPods(t *testing.T) {
	img := testImage(t)
	objs, err := manifests.Kustomize(filepath.Join(framework.RepoRoot(), "config", "samples", "deploy"))
	if err != nil {
		t.Fatal(err)
	}
	install(t, objs)
	withConfig := func(mod func(*v1.Config)) v1.Image {
		cf, err := img.ConfigFile()
		if err != nil {
			t.Fatal(err)
		}
		cfg := *cf.Config.DeepCopy()
		mod(&cfg)
		broken, err := mutate.Config(img, cfg)
		if err != nil {
			t.Fatal(err)
		}
		return broken
	}
	// A layer that deletes the CA bundle, as an OCI whiteout does.
	whiteout, err := image.Layer([]image.File{{Path: "/etc/ssl/certs/.wh.ca-certificates.crt"}}, time.Unix(0, 0))
	if err != nil {
		t.Fatal(err)
	}
	noCA, err := mutate.AppendLayers(img, whiteout)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		img  v1.Image
		pod  func(*appsv1.Deployment)
		// refused is the kubelet's refusal; exit and output are the
		// container's.
		refused string
		exit    int
		output  []string
	}{{
		name:   "wrong entrypoint",
		img:    withConfig(func(c *v1.Config) { c.Entrypoint = []string{"/scaleplane-manager"} }),
		exit:   pod.ExitExecFailed,
		output: []string{`exec "/scaleplane-manager"`, "no such file or directory"},
	}, {
		name:    "image runs as root",
		img:     withConfig(func(c *v1.Config) { c.User = "0:0" }),
		refused: "container has runAsNonRoot and image will run as root",
	}, {
		name:    "image user by name",
		img:     withConfig(func(c *v1.Config) { c.User = "nonroot" }),
		refused: "container has runAsNonRoot and image has non-numeric user (nonroot), cannot verify user is non-root",
	}, {
		name: "user cannot read the mounted configuration",
		img:  img,
		pod: func(d *appsv1.Deployment) {
			mode := int32(0o600)
			for i := range d.Spec.Template.Spec.Volumes {
				if cm := d.Spec.Template.Spec.Volumes[i].ConfigMap; cm != nil {
					cm.DefaultMode = &mode
				}
			}
		},
		exit:   2,
		output: []string{"scaleplane: read configuration: open /etc/scaleplane/scaleplane-config.yaml: permission denied"},
	}, {
		name:   "CA bundle missing",
		img:    noCA,
		exit:   1,
		output: []string{"autoscaler.prometheusURL https://127.0.0.1:", "is HTTPS but no CA certificates", "use an image with CA certificates (/etc/ssl/certs/ca-certificates.crt)"},
	}, {
		name: "cert dir not writable (no emptyDir over the read-only root)",
		img:  img,
		pod: func(d *appsv1.Deployment) {
			c := &d.Spec.Template.Spec.Containers[0]
			var kept []corev1.VolumeMount
			for _, vm := range c.VolumeMounts {
				if vm.MountPath != configv1alpha2.DefaultCertDir {
					kept = append(kept, vm)
				}
			}
			c.VolumeMounts = kept
		},
		exit:   1,
		output: []string{"webhook.certDir /tmp/k8s-webhook-server/serving-certs", "read-only file system", `mount a writable volume (the Deployment's emptyDir "cert")`},
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dep := deployment(t, objs)
			if tc.pod != nil {
				tc.pod(dep)
			}
			p := freePorts(t)
			r, err := start(t, newPod(t, dep, tc.img, p), tc.img, p.probes)
			if tc.refused != "" {
				if err == nil || !strings.Contains(err.Error(), tc.refused) {
					t.Fatalf("kubelet check: %v; want %q", err, tc.refused)
				}
				t.Logf("refused before start: %v", err)
				return
			}
			if err != nil {
				t.Fatalf("the kubelet would refuse the container: %v", err)
			}
			code := r.waitExit(t)
			out := r.out.String()
			if code != tc.exit {
				t.Errorf("exit code %d, want %d; output:\n%s", code, tc.exit, out)
			}
			for _, w := range tc.output {
				if !strings.Contains(out, w) {
					t.Errorf("output does not say %q:\n%s", w, out)
				}
			}
			t.Logf("exit %d: %s", code, lastLine(out))
		})
	}
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}
