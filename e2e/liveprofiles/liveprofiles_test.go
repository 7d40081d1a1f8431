// Package liveprofiles_test proves live ScaleProfiles through the binary's
// own wiring (app.New, in-process) and the real kubectl: scaleplane runs
// with no profile for the third-party-shaped CRDs of
// cmd/scaleplane/testdata/profileinit; what `scaleplane profile init`
// prints for one is applied with `kubectl apply --server-side`, `kubectl
// get sprof` shows it Active, and objects of the kind are then defaulted,
// scaled (to 0 where the schema allows) and deleted with kubectl, all
// without a restart. A profile that disagrees with its CRD shows its
// reason in `kubectl get sprof`; deleting a ScaleProfile removes its
// webhook entries.
package liveprofiles_test

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/google/go-cmp/cmp"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/util/jsonpath"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/yaml"

	configv1alpha2 "github.com/scaleplane/scaleplane/api/config/v1alpha2"
	"github.com/scaleplane/scaleplane/cmd/scaleplane/app"
	"github.com/scaleplane/scaleplane/controllers/autoscaler"
	"github.com/scaleplane/scaleplane/e2e/framework"
	"github.com/scaleplane/scaleplane/webhooks"
)

var cluster *framework.Cluster

const appNamespace = "scaleplane-liveprofiles-e2e"

func testdata() string {
	return filepath.Join(framework.RepoRoot(), "cmd", "scaleplane", "testdata", "profileinit")
}

func TestMain(m *testing.M) {
	log.SetLogger(logr.Discard())
	os.Exit(framework.Run(m, framework.Options{
		CRDPaths: []string{filepath.Join(framework.RepoRoot(), "config", "crd", "bases"), testdata()},
		// The real HPA controller, for `kubectl autoscale` of live kinds.
		HPAController: true,
	}, &cluster))
}

// startApp runs the binary's wiring with a configuration file that
// profiles nothing, until the test ends, and returns its webhook port.
func startApp(t *testing.T, leaderElection bool) int {
	t.Helper()
	port, _ := startOwnerApp(t, "", leaderElection)
	return port
}

// startOwnerApp is startApp for owner (empty: the default owner); stop
// ends it before the test does (the test's end still waits for it).
func startOwnerApp(t *testing.T, owner string, leaderElection bool) (port int, stop func()) {
	t.Helper()
	return startAppWith(t, owner, "", leaderElection)
}

// startAppWith is startOwnerApp with webhook.admission set to admission
// (empty: the default).
func startAppWith(t *testing.T, owner, admission string, leaderElection bool) (port int, stop func()) {
	t.Helper()
	port = framework.FreePort(t)
	cfg := &configv1alpha2.Configuration{}
	cfg.APIVersion, cfg.Kind = configv1alpha2.APIVersion, configv1alpha2.Kind
	cfg.Webhook.Owner = owner
	cfg.Webhook.Admission = admission
	cfg.Default()
	cfg.Webhook.Host = "127.0.0.1"
	cfg.Webhook.Port = port
	cfg.Webhook.CertDir = filepath.Join(t.TempDir(), "certs")
	opts := app.Options{
		Config:      cfg,
		RestConfig:  cluster.Config,
		CertMode:    app.CertSelfSigned,
		Namespace:   appNamespace,
		WebhookURL:  "https://" + net.JoinHostPort("127.0.0.1", strconv.Itoa(port)),
		WebhookIPs:  []string{"127.0.0.1"},
		MetricsAddr: "0",
		ProbeAddr:   "0",
		// Several Apps run one after the other in this process.
		SkipControllerNameValidation: true,
		LeaderElection:               leaderElection,
	}
	if owner != "" {
		opts.SecretName = owner + "-webhook-server-cert"
	}
	a, err := app.New(opts)
	if err != nil {
		t.Fatalf("build app: %v", err)
	}
	return port, framework.RunApp(t, a)
}

func buildBinary(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "scaleplane")
	build := exec.Command("go", "build", "-o", bin, ".")
	build.Dir = framework.BinaryModuleDir()
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build scaleplane: %v\n%s", err, out)
	}
	return bin
}

// sprof is `kubectl get sprof NAME` as columns by header.
func sprof(ctx context.Context, name string) (map[string]string, error) {
	out, err := cluster.Kubectl(ctx, "get", "sprof", name)
	if err != nil {
		return nil, fmt.Errorf("%w: %s", err, out)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 2 {
		return nil, fmt.Errorf("kubectl get sprof %s printed %q", name, out)
	}
	head, row := strings.Fields(lines[0]), strings.Fields(lines[1])
	if len(head) != len(row) {
		return nil, fmt.Errorf("kubectl get sprof %s: columns %q, values %q", name, head, row)
	}
	cols := map[string]string{}
	for i := range head {
		cols[head[i]] = row[i]
	}
	return cols, nil
}

// entries are the names of the mutating entries routing gvr, and the
// paths they call.
func entries(ctx context.Context, gvr schema.GroupVersionResource) ([]string, error) {
	var m admissionregistrationv1.MutatingWebhookConfiguration
	if err := cluster.Client.Get(ctx, client.ObjectKey{Name: configv1alpha2.DefaultMutatingConfigurationName}, &m); err != nil {
		return nil, err
	}
	var out []string
	for _, w := range m.Webhooks {
		for _, r := range w.Rules {
			if len(r.APIGroups) == 1 && r.APIGroups[0] == gvr.Group && len(r.Resources) == 1 && r.Resources[0] == gvr.Resource {
				path := ""
				if w.ClientConfig.URL != nil {
					path = *w.ClientConfig.URL
				}
				out = append(out, path)
			}
		}
	}
	return out, nil
}

func field(u *unstructured.Unstructured, path string) (string, error) {
	jp := jsonpath.New("f")
	if err := jp.Parse("{" + path + "}"); err != nil {
		return "", err
	}
	var b bytes.Buffer
	if err := jp.Execute(&b, u.Object); err != nil {
		return "", err
	}
	return b.String(), nil
}

// TestLiveProfilesThroughKubectl: profiles applied to a
// running scaleplane with kubectl take effect without a restart.
func TestLiveProfilesThroughKubectl(t *testing.T) {
	bin := buildBinary(t)
	startApp(t, false)
	// ScaleProfiles are cluster-scoped: they outlive the test's namespace.
	t.Cleanup(func() { _, _ = cluster.Kubectl(context.Background(), "delete", "sprof", "--all") })
	ns := cluster.Namespace(t)
	big := writeBigCRD(t)
	// trigger is a scale config the trigger autoscaler moves to 5: a
	// query worth 50 at 10 per replica.
	const trigger = `{"minReplicas":1,"maxReplicas":5,"pollingIntervalSeconds":1,"triggers":[{"name":"load","type":"AverageValue","threshold":10,"query":"vector(50)"}]}`
	cases := []struct {
		crd       string
		crdFile   string
		gvr       schema.GroupVersionResource
		kind      string
		body      string
		want      map[string]string // path -> value at n replicas (%d)
		refuses0  string
		clustered bool
		// refusesRange is part of the refusal of a scale-config
		// annotation with a range from zero and idle settings, for a kind
		// that cannot reach zero; "" when it has none to refuse.
		refusesRange string
		// autoscale is how the kind is autoscaled: "hpa" (kubectl
		// autoscale; the real HPA controller raises it to the HPA's
		// minimum, 4), "annotation" or a spec path (a scale config with a
		// trigger; scaleplane's trigger autoscaler takes it to 5).
		autoscale string
	}{{
		// A scale config with schema minimums and a defaulted spec.replicas.
		crd: "functions.serverless.example.org", kind: "Function", crdFile: filepath.Join(testdata(), "function.yaml"),
		gvr:       schema.GroupVersionResource{Group: "serverless.example.org", Version: "v1alpha2", Resource: "functions"},
		body:      "{runtime: python312, replicas: 2}",
		want:      map[string]string{".spec.replicas": "%d", ".spec.scaleConfig.minReplicas": "%d", ".spec.scaleConfig.maxReplicas": "%d"},
		refuses0:  "the CRD's schema requires a value of at least 1 (minimum)",
		autoscale: "hpa",
	}, {
		// No room in the schema: the scale config is an annotation.
		crd: "workers.batch.example.org", kind: "Worker", crdFile: filepath.Join(testdata(), "no-room.json"),
		gvr:       schema.GroupVersionResource{Group: "batch.example.org", Version: "v1", Resource: "workers"},
		body:      "{replicas: 2, queue: jobs}",
		want:      map[string]string{".spec.replicas": "%d"},
		autoscale: "annotation",
	}, {
		// The count at .spec.instances with minimum 1 and maximum 10, the
		// scale config in the annotation: every refusal names
		// spec.instances, and no config can make it reach zero.
		crd: "instancesets.db.example.org", kind: "InstanceSet", crdFile: filepath.Join(testdata(), "instances.yaml"),
		gvr:  schema.GroupVersionResource{Group: "db.example.org", Version: "v1", Resource: "instancesets"},
		body: "{instances: 2, imageName: postgres}",
		want: map[string]string{".spec.instances": "%d"},
		// The API server's schema validation of the updated object runs
		// before the /scale webhook: either refusal names spec.instances.
		refuses0:     "spec.instances: Invalid value: 0",
		refusesRange: "metadata.annotations[scaleplane.io/scale-config].minReplicas: Invalid value: 0: the autoscaler writes every count from minReplicas to maxReplicas to spec.instances, and the CRD's schema requires a value of at least 1 (minimum)",
		autoscale:    "annotation",
	}, {
		// Member groups (racks) and a map of ready counts in status.
		crd: "cassandraclusters.db.example.org", kind: "CassandraCluster", crdFile: filepath.Join(testdata(), "database.yaml"),
		gvr:       schema.GroupVersionResource{Group: "db.example.org", Version: "v1", Resource: "cassandraclusters"},
		body:      "{topology: {nodesPerRack: 2, racks: [{rackName: a}, {rackName: b}]}}",
		want:      map[string]string{".spec.topology.nodesPerRack": "%d", ".spec.topology.racks[*].nodes": "%d %d"},
		autoscale: "hpa",
	}, {
		// Cluster-scoped: KEDA's and the HPA's namespaced scale client
		// cannot scale it (kedacore/keda#6798); scaleplane's triggers can.
		crd: "edgepools.infra.example.org", kind: "EdgePool", clustered: true, crdFile: filepath.Join(testdata(), "cluster-scoped.yaml"),
		gvr:       schema.GroupVersionResource{Group: "infra.example.org", Version: "v1", Resource: "edgepools"},
		body:      "{size: 2, region: west}",
		want:      map[string]string{".spec.size": "%d"},
		autoscale: "annotation",
	}, {
		// Larger than 256 KiB: installed (and only installable) with
		// server-side apply.
		crd: big.name, kind: "Analyzer", crdFile: big.file,
		gvr:       schema.GroupVersionResource{Group: "analytics.example.org", Version: "v1", Resource: "analyzers"},
		body:      "{replicas: 2}",
		want:      map[string]string{".spec.replicas": "%d"},
		autoscale: "spec.autoscaling",
	}}
	for _, tc := range cases {
		t.Run(tc.kind, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
			defer cancel()
			// 1. What profile init prints for the served CRD.
			cmd := exec.CommandContext(ctx, bin, "profile", "init", "--crd", tc.crd, "--kubeconfig", cluster.Kubeconfig)
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			if err := cmd.Run(); err != nil && stdout.Len() == 0 {
				t.Fatalf("profile init --crd %s: %v\n%s", tc.crd, err, stderr.String())
			}
			profileFile := filepath.Join(t.TempDir(), "profile.yaml")
			if err := os.WriteFile(profileFile, stdout.Bytes(), 0o600); err != nil {
				t.Fatal(err)
			}
			// 2. config check of that output against the CRD file, offline.
			check := exec.CommandContext(ctx, bin, "config", "check", "-f", profileFile, "--crd", tc.crdFile)
			if out, err := check.CombinedOutput(); err != nil {
				t.Fatalf("scaleplane config check -f <profile init's output> --crd %s: %v\n%s", tc.crdFile, err, out)
			}
			// 3. Applied as is, to the running scaleplane.
			if out, err := cluster.Kubectl(ctx, "apply", "--server-side", "-f", profileFile); err != nil {
				t.Fatalf("kubectl apply the profile: %v\n%s", err, out)
			}
			framework.Eventually(t, 0, func(ctx context.Context) (bool, string) {
				cols, err := sprof(ctx, tc.crd)
				if err != nil {
					return false, err.Error()
				}
				want := map[string]string{"NAME": tc.crd, "TARGET": tc.kind, "ACTIVE": "True", "REASON": "Active"}
				delete(cols, "AGE")
				return cmp.Equal(want, cols), fmt.Sprintf("kubectl get sprof (-want +got):\n%s", cmp.Diff(want, cols))
			})
			// The leader writes the entries after the status: objects are
			// judged once they call the dispatcher.
			framework.Eventually(t, 0, func(ctx context.Context) (bool, string) {
				got, err := entries(ctx, tc.gvr)
				if err != nil {
					return false, err.Error()
				}
				return len(got) == 1 && strings.HasSuffix(got[0], webhooks.DispatchPath(webhooks.DispatchMutatePrefix, tc.gvr)),
					fmt.Sprintf("mutating entries for %s: %q", tc.gvr, got)
			})

			// 4. Create, scale (to 0 too), autoscale and delete.
			name, nsArgs, meta := "demo", []string{"-n", ns}, fmt.Sprintf("{name: demo, namespace: %s}", ns)
			if tc.clustered {
				name = "demo-" + ns
				nsArgs, meta = nil, "{name: "+name+"}"
			}
			res := tc.gvr.Resource + "." + tc.gvr.Group
			manifest := fmt.Sprintf("apiVersion: %s/%s\nkind: %s\nmetadata: %s\nspec: %s\n", tc.gvr.Group, tc.gvr.Version, tc.kind, meta, tc.body)
			if out, err := cluster.KubectlWithInput(ctx, manifest, "apply", "--server-side", "-f", "-"); err != nil {
				t.Fatalf("create: %v\n%s", err, out)
			}
			key := client.ObjectKey{Name: name}
			if !tc.clustered {
				key.Namespace = ns
			}
			at := func(n int) {
				t.Helper()
				framework.EventuallyFields(t, cluster.Client, tc.gvr.GroupVersion().WithKind(tc.kind), key, n, tc.want, field)
			}
			at(2)
			kubectl := func(args ...string) {
				t.Helper()
				if out, err := cluster.Kubectl(ctx, append(args, nsArgs...)...); err != nil {
					t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
				}
			}
			scale := func(n int) (string, error) {
				return cluster.Kubectl(ctx, append([]string{"scale", res + "/" + name, fmt.Sprintf("--replicas=%d", n)}, nsArgs...)...)
			}
			kubectl("scale", res+"/"+name, "--replicas=3")
			at(3)
			out, err := scale(0)
			switch {
			case tc.refuses0 == "" && err != nil:
				t.Fatalf("kubectl scale --replicas=0: %v\n%s", err, out)
			case tc.refuses0 == "":
				at(0)
			case err == nil || !strings.Contains(out+err.Error(), tc.refuses0):
				t.Fatalf("kubectl scale --replicas=0: %v\n%s\nwant a refusal containing %q", err, out, tc.refuses0)
			default:
				at(3)
			}
			kubectl("scale", res+"/"+name, "--replicas=2")
			at(2)
			switch tc.autoscale {
			case "hpa":
				// The HPA controller raises a count below the HPA's
				// minimum through /scale, metrics or not; scaleplane fans
				// it out and re-pins the scale config.
				kubectl("autoscale", res+"/"+name, "--min=4", "--max=6", "--cpu-percent=80")
				at(4)
				kubectl("delete", "hpa", name)
			case "annotation":
				if tc.refusesRange != "" {
					// The autoscaler would write 0 on every poll, each
					// write refused by the API server.
					zero := `{"minReplicas":0,"maxReplicas":5,"idle":{"timeoutSeconds":60}}`
					out, err := cluster.Kubectl(ctx, append([]string{"annotate", res + "/" + name, "--overwrite", "scaleplane.io/scale-config=" + zero}, nsArgs...)...)
					if err == nil || !strings.Contains(out+err.Error(), tc.refusesRange) {
						t.Fatalf("kubectl annotate a range from zero: %v\n%s\nwant a refusal containing %q", err, out, tc.refusesRange)
					}
				}
				kubectl("annotate", res+"/"+name, "--overwrite", "scaleplane.io/scale-config="+trigger)
				at(5)
			default:
				patch := `{"spec":{"` + strings.TrimPrefix(tc.autoscale, "spec.") + `":` + trigger + `}}`
				kubectl("patch", res+"/"+name, "--type=merge", "-p", patch)
				at(5)
			}
			if tc.autoscale != "hpa" {
				// Its Scaling says the trigger autoscaler set the count.
				scalingNS := ns
				if tc.clustered {
					scalingNS = appNamespace
				}
				framework.Eventually(t, 0, func(ctx context.Context) (bool, string) {
					out, err := cluster.Kubectl(ctx, "get", "scalings", "-n", scalingNS, autoscaler.ScalingName(name, schema.GroupKind{Group: tc.gvr.Group, Kind: tc.kind}), "-o", "jsonpath={.status.mode} {.status.desiredReplicas}")
					return err == nil && out == "triggers 5", fmt.Sprintf("kubectl get scaling: %q %v", out, err)
				})
			}
			kubectl("delete", res, name, "--wait=true", "--timeout=60s")
		})
	}

	t.Run("broken profile and deletion", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		// LeaderWorkerSet's /scale specReplicasPath is .spec.replicas: a
		// profile writing .spec.size disagrees with its CRD.
		broken := `apiVersion: scaleplane.io/v1alpha1
kind: ScaleProfile
metadata:
  name: broken-lws
spec:
  target: {apiVersion: leaderworkerset.x-k8s.io/v1, kind: LeaderWorkerSet, resource: leaderworkersets}
  replicasPath: .spec.size
  status: {replicasPath: .status.replicas}
  scaleConfig: {annotation: scaleplane.io/scale-config}
`
		if out, err := cluster.KubectlWithInput(ctx, broken, "apply", "--server-side", "-f", "-"); err != nil {
			t.Fatalf("kubectl apply: %v\n%s", err, out)
		}
		framework.Eventually(t, 0, func(ctx context.Context) (bool, string) {
			cols, err := sprof(ctx, "broken-lws")
			if err != nil {
				return false, err.Error()
			}
			return cols["ACTIVE"] == "False" && cols["REASON"] == "SchemaMismatch", fmt.Sprintf("kubectl get sprof broken-lws: %v", cols)
		})
		msg, err := cluster.Kubectl(ctx, "get", "sprof", "broken-lws", "-o", `jsonpath={.status.conditions[?(@.type=="Active")].message}`)
		if err != nil || !strings.Contains(msg, "replicasPath") {
			t.Errorf("the SchemaMismatch message names no field path: %v %q", err, msg)
		}
		lws := schema.GroupVersionResource{Group: "leaderworkerset.x-k8s.io", Version: "v1", Resource: "leaderworkersets"}
		if got, err := entries(ctx, lws); err != nil || len(got) != 0 {
			t.Errorf("a profile that is not active has webhook entries: %q %v", got, err)
		}

		// Deleting an active ScaleProfile removes its entries.
		worker := schema.GroupVersionResource{Group: "batch.example.org", Version: "v1", Resource: "workers"}
		if out, err := cluster.Kubectl(ctx, "delete", "sprof", "workers.batch.example.org"); err != nil {
			t.Fatalf("kubectl delete sprof: %v\n%s", err, out)
		}
		framework.Eventually(t, 0, func(ctx context.Context) (bool, string) {
			got, err := entries(ctx, worker)
			if err != nil {
				return false, err.Error()
			}
			return len(got) == 0, fmt.Sprintf("entries for workers after the ScaleProfile's deletion: %q", got)
		})
	})
}

// TestStartupSyncKeepsLiveEntries: a replica's start-up sync,
// which runs before its ScaleProfile reconciler and whether or not it
// leads, keeps the entries of the active ScaleProfiles; otherwise every
// start would remove them and objects of those kinds would be admitted
// unjudged until the leader resynced. The replica here never leads
// (another holds the lease), so only its start-up sync writes entries.
func TestStartupSyncKeepsLiveEntries(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	golden, err := os.ReadFile(filepath.Join(testdata(), "leaderworkerset.golden"))
	if err != nil {
		t.Fatal(err)
	}
	profileYAML := strings.SplitN(string(golden), "# stdout:\n", 2)[1]
	if out, err := cluster.KubectlWithInput(ctx, profileYAML, "apply", "--server-side", "-f", "-"); err != nil {
		t.Fatalf("kubectl apply the profile: %v\n%s", err, out)
	}
	t.Cleanup(func() { _, _ = cluster.Kubectl(context.Background(), "delete", "sprof", "--all") })
	lws := schema.GroupVersionResource{Group: "leaderworkerset.x-k8s.io", Version: "v1", Resource: "leaderworkersets"}
	if got, err := entries(ctx, lws); err == nil && len(got) != 0 {
		t.Fatalf("entries for %s before any scaleplane ran: %q", lws, got)
	}

	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: appNamespace}}
	if err := cluster.Client.Create(ctx, ns); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	now := metav1.NewMicroTime(time.Now())
	lease := &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: app.LeaderElectionID, Namespace: appNamespace},
		Spec:       coordinationv1.LeaseSpec{HolderIdentity: ptr.To("another-replica"), LeaseDurationSeconds: ptr.To(int32(3600)), AcquireTime: &now, RenewTime: &now},
	}
	if err := cluster.Client.Create(ctx, lease); err != nil {
		t.Fatalf("hold the lease: %v", err)
	}
	t.Cleanup(func() { _ = cluster.Client.Delete(context.Background(), lease) })

	port := startApp(t, true)
	// The webhook server starts after the start-up sync.
	framework.Eventually(t, 0, func(ctx context.Context) (bool, string) {
		c, err := (&net.Dialer{}).DialContext(ctx, "tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
		if err != nil {
			return false, err.Error()
		}
		_ = c.Close()
		return true, ""
	})
	got, err := entries(ctx, lws)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || !strings.HasSuffix(got[0], webhooks.DispatchPath(webhooks.DispatchMutatePrefix, lws)) {
		t.Errorf("after a start that does not lead, mutating entries for %s: %q, want one calling the dispatcher", lws, got)
	}
}

// bigCRD is a CRD larger than 256 KiB the test installed.
type bigCRD struct{ name, file string }

// writeBigCRD writes a CRD over 256 KiB, as generated CRDs of large
// operators are (every field documented), and installs it the only way
// kubectl can: client-side apply stores the whole object in an annotation
// the API server caps at 256 KiB and is refused; server-side apply is not.
func writeBigCRD(t *testing.T) bigCRD {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	integer := apiextensionsv1.JSONSchemaProps{Type: "integer", Format: "int32"}
	options := map[string]apiextensionsv1.JSONSchemaProps{}
	doc := strings.Repeat("A setting of the analyzer, documented at length as generated API references are. ", 12)
	for i := range 300 {
		options[fmt.Sprintf("option%03d", i)] = apiextensionsv1.JSONSchemaProps{Type: "string", Description: fmt.Sprintf("Option %d. %s", i, doc)}
	}
	crd := &apiextensionsv1.CustomResourceDefinition{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apiextensions.k8s.io/v1", Kind: "CustomResourceDefinition"},
		ObjectMeta: metav1.ObjectMeta{Name: "analyzers.analytics.example.org"},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: "analytics.example.org",
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "analyzers", Singular: "analyzer", Kind: "Analyzer", ListKind: "AnalyzerList"},
			Scope: apiextensionsv1.NamespaceScoped,
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{
				Name: "v1", Served: true, Storage: true,
				Subresources: &apiextensionsv1.CustomResourceSubresources{
					Status: &apiextensionsv1.CustomResourceSubresourceStatus{},
					Scale:  &apiextensionsv1.CustomResourceSubresourceScale{SpecReplicasPath: ".spec.replicas", StatusReplicasPath: ".status.replicas"},
				},
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
					Type: "object",
					Properties: map[string]apiextensionsv1.JSONSchemaProps{
						"spec": {Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{
							"replicas": integer,
							"autoscaling": {
								Type:                   "object",
								XPreserveUnknownFields: ptr.To(true),
								Properties:             map[string]apiextensionsv1.JSONSchemaProps{"minReplicas": integer, "maxReplicas": integer},
							},
							"options": {Type: "object", Properties: options},
						}},
						"status": {Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{"replicas": integer}},
					},
				}},
			}},
		},
	}
	data, err := yaml.Marshal(crd)
	if err != nil {
		t.Fatal(err)
	}
	if len(data) <= 256<<10 {
		t.Fatalf("the big CRD is %d bytes, not over 256 KiB", len(data))
	}
	file := filepath.Join(t.TempDir(), "analyzers.yaml")
	if err := os.WriteFile(file, data, 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := cluster.Kubectl(ctx, "apply", "-f", file)
	if err == nil || !strings.Contains(out+err.Error(), "Too long") {
		t.Fatalf("client-side kubectl apply of a %d KiB CRD: %v\n%s\nwant the API server's refusal of the last-applied annotation", len(data)>>10, err, out)
	}
	if out, err := cluster.Kubectl(ctx, "apply", "--server-side", "-f", file); err != nil {
		t.Fatalf("kubectl apply --server-side the big CRD: %v\n%s", err, out)
	}
	t.Cleanup(func() { _, _ = cluster.Kubectl(context.Background(), "delete", "-f", file, "--ignore-not-found") })
	if out, err := cluster.Kubectl(ctx, "wait", "--for=condition=Established", "--timeout=60s", "crd/"+crd.Name); err != nil {
		t.Fatalf("wait for the big CRD: %v\n%s", err, out)
	}
	t.Logf("CRD %s: %d KiB, installed with kubectl apply --server-side (client-side apply refused)", crd.Name, len(data)>>10)
	return bigCRD{name: crd.Name, file: file}
}
