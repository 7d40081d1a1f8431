package crdcorpus_test

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
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
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/util/jsonpath"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/yaml"

	configv1alpha2 "github.com/scaleplane/scaleplane/api/config/v1alpha2"
	"github.com/scaleplane/scaleplane/cmd/scaleplane/app"
	"github.com/scaleplane/scaleplane/controllers/autoscaler"
	"github.com/scaleplane/scaleplane/e2e/crdcorpus"
	"github.com/scaleplane/scaleplane/e2e/framework"
	"github.com/scaleplane/scaleplane/webhooks"
)

var cluster *framework.Cluster

// appNamespace is where the shared scaleplane keeps its own objects, and the
// Scalings of cluster-scoped kinds.
const appNamespace = "scaleplane-crdcorpus-e2e"

func crdDir() string { return filepath.Join(framework.RepoRoot(), "testdata", "crds") }

// binary is the scaleplane binary, built while the control plane starts.
var binary struct {
	path string
	err  error
	done chan struct{}
}

func TestMain(m *testing.M) {
	log.SetLogger(logr.Discard())
	flag.Parse()
	// The CRDs' subtests mostly wait on the API server and the
	// controllers; run more of them at once than the default (GOMAXPROCS)
	// unless -parallel was given.
	if !flagSet("test.parallel") {
		_ = flag.Set("test.parallel", "6")
	}
	dir, err := os.MkdirTemp("", "crdcorpus-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binary.done = make(chan struct{})
	go func() {
		defer close(binary.done)
		binary.path = filepath.Join(dir, "scaleplane")
		build := exec.Command("go", "build", "-o", binary.path, ".")
		build.Dir = framework.BinaryModuleDir()
		if out, err := build.CombinedOutput(); err != nil {
			binary.err = fmt.Errorf("build scaleplane: %w\n%s", err, out)
		}
	}()
	code := framework.Run(m, framework.Options{
		CRDPaths: []string{filepath.Join(framework.RepoRoot(), "config", "crd", "bases"), crdDir()},
		// The real HPA controller, for `kubectl autoscale`.
		HPAController: true,
	}, &cluster)
	<-binary.done
	_ = os.RemoveAll(dir)
	os.Exit(code)
}

func flagSet(name string) bool {
	set := false
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}

func scaleplane(t *testing.T) string {
	t.Helper()
	<-binary.done
	if binary.err != nil {
		t.Fatal(binary.err)
	}
	return binary.path
}

// startApp runs the binary's wiring (app.New, in-process) with a
// configuration that profiles nothing, until the test ends.
func startApp(t *testing.T) {
	t.Helper()
	port := framework.FreePort(t)
	cfg := &configv1alpha2.Configuration{}
	cfg.APIVersion, cfg.Kind = configv1alpha2.APIVersion, configv1alpha2.Kind
	cfg.Default()
	cfg.Webhook.Host = "127.0.0.1"
	cfg.Webhook.Port = port
	cfg.Webhook.CertDir = filepath.Join(t.TempDir(), "certs")
	a, err := app.New(app.Options{
		Config:      cfg,
		RestConfig:  cluster.Config,
		CertMode:    app.CertSelfSigned,
		Namespace:   appNamespace,
		WebhookURL:  "https://" + net.JoinHostPort("127.0.0.1", strconv.Itoa(port)),
		WebhookIPs:  []string{"127.0.0.1"},
		MetricsAddr: "0",
		ProbeAddr:   "0",
	})
	if err != nil {
		t.Fatalf("build app: %v", err)
	}
	framework.RunApp(t, a)
}

// TestCompatibilityDocIsTheTable: docs/crd-compatibility.md and
// testdata/crds/README.md are what the corpus table renders. Regenerate
// them with UPDATE_GOLDEN=1.
func TestCompatibilityDocIsTheTable(t *testing.T) {
	for file, got := range map[string]string{
		filepath.Join(framework.RepoRoot(), "docs", "crd-compatibility.md"): crdcorpus.Markdown(),
		filepath.Join(crdDir(), "README.md"):                                crdcorpus.README(),
	} {
		if os.Getenv("UPDATE_GOLDEN") != "" {
			if err := os.WriteFile(file, []byte(got), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		want, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(string(want), got); diff != "" {
			t.Errorf("%s disagrees with the table in e2e/crdcorpus/corpus.go; regenerate it with UPDATE_GOLDEN=1 go -C e2e test ./crdcorpus -run TestCompatibilityDoc (-file +table):\n%s", file, diff)
		}
	}
}

// TestCorpusTableSaysEveryOutcome: every step of a CRD profile init
// accepts has an expected outcome; every refusal and bug says what its
// message holds and why; a CRD profile init refuses expects nothing of the
// later steps.
func TestCorpusTableSaysEveryOutcome(t *testing.T) {
	for _, c := range crdcorpus.Corpus {
		steps := map[string]crdcorpus.Result{"Unset": c.Unset, "Scale": c.Scale, "Zero": c.Zero, "HPA": c.HPA, "Range": c.Range, "Trigger": c.Trigger, "Explain": c.Explain, "Sleep": c.Sleep, "Delete": c.Delete}
		check := func(step string, r crdcorpus.Result) {
			switch r.Outcome {
			case crdcorpus.Works:
			case crdcorpus.Refused, crdcorpus.Broken:
				if r.Says == "" || r.Why == "" {
					t.Errorf("%s %s: a refusal or a bug needs the text it says and why", c.Kind, step)
				}
			case crdcorpus.NotRun:
				if r.Why == "" {
					t.Errorf("%s %s: a step not run needs why", c.Kind, step)
				}
			default:
				t.Errorf("%s %s: no expected outcome", c.Kind, step)
			}
		}
		check("Init", c.Init)
		if c.License == "" || c.Shape == "" {
			t.Errorf("%s: license and shape are required", c.Kind)
		}
		if c.Init.Outcome != crdcorpus.Works {
			for step, r := range steps {
				if r != (crdcorpus.Result{}) {
					t.Errorf("%s %s: profile init does not work, so no later step runs; leave it out", c.Kind, step)
				}
			}
			continue
		}
		if c.Body == "" || c.Replicas == "" {
			t.Errorf("%s: an object body and its replicas path are required", c.Kind)
		}
		for step, r := range steps {
			check(step, r)
		}
		if c.Handle {
			for step, r := range steps {
				if step != "Scale" && step != "Delete" && r.Outcome != crdcorpus.NotRun {
					t.Errorf("%s %s: the path of a ScaleHandle runs Scale and Delete only", c.Kind, step)
				}
			}
			continue
		}
		if c.Range.Outcome != crdcorpus.Works && c.Range.Outcome != crdcorpus.Broken {
			t.Errorf("%s Range: only Works (refused naming %s) or Broken", c.Kind, c.Replicas)
		}
	}
}

// TestCorpusFilesAreTheTablesCRDs: every vendored file is in the table,
// names its upstream source in its header, and holds the CRD the table
// says, with /scale exactly when profile init is expected to accept it.
func TestCorpusFilesAreTheTablesCRDs(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(crdDir(), "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	inTable := map[string]bool{}
	for _, c := range crdcorpus.Corpus {
		inTable[c.File] = true
	}
	for _, f := range files {
		if !inTable[filepath.Base(f)] {
			t.Errorf("%s is not in the table of e2e/crdcorpus/corpus.go", f)
		}
	}
	if len(crdcorpus.Corpus) < 10 {
		t.Errorf("the corpus has %d CRDs, want at least 10", len(crdcorpus.Corpus))
	}
	for _, c := range crdcorpus.Corpus {
		data, err := os.ReadFile(filepath.Join(crdDir(), c.File))
		if err != nil {
			t.Error(err)
			continue
		}
		if !bytes.HasPrefix(data, []byte("# Source: "+c.Source()+"\n")) {
			t.Errorf("%s: its header does not name its source %s", c.File, c.Source())
		}
		var crd apiextensionsv1.CustomResourceDefinition
		if err := yaml.Unmarshal(data, &crd); err != nil {
			t.Errorf("%s: %v", c.File, err)
			continue
		}
		short := ""
		if len(crd.Spec.Names.ShortNames) > 0 {
			short = crd.Spec.Names.ShortNames[0]
		}
		got := []string{crd.Name, crd.Spec.Group, crd.Spec.Names.Plural, crd.Spec.Names.Kind, strconv.FormatBool(crd.Spec.Scope == apiextensionsv1.ClusterScoped), short}
		want := []string{c.Name, c.Group, c.Resource, c.Kind, strconv.FormatBool(c.Clustered), c.ShortName}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("%s (-table +file):\n%s", c.File, diff)
		}
		scale := false
		for _, v := range crd.Spec.Versions {
			if v.Name == c.Version && v.Served && v.Subresources != nil && v.Subresources.Scale != nil {
				scale = true
			}
		}
		if noScale := c.Handle || strings.Contains(c.Init.Says, "no served version with a /scale subresource"); scale == noScale {
			t.Errorf("%s: /scale on %s: %v, but the table expects profile init to say %q (ScaleHandle: %v)", c.File, c.Version, scale, c.Init.Says, c.Handle)
		}
	}
}

// trigger is a scale config the trigger autoscaler moves to 5: a query
// worth 50 at 10 per replica.
const trigger = `{"minReplicas":1,"maxReplicas":5,"pollingIntervalSeconds":1,"triggers":[{"name":"load","type":"AverageValue","threshold":10,"query":"vector(50)"}]}`

// sleep is a scale config with which the trigger autoscaler takes a
// workload to zero: a trigger asking for nothing and a 1 s idle timeout.
const sleep = `{"minReplicas":0,"maxReplicas":5,"pollingIntervalSeconds":1,"idle":{"timeoutSeconds":1},"triggers":[{"name":"load","type":"AverageValue","threshold":10,"query":"vector(0)"}]}`

// TestCorpusThroughTheWholePath runs every CRD of the corpus through
// profile init, config check, kubectl apply, kubectl scale (to 0 too),
// the real HPA controller, scaleplane's trigger autoscaler and deletion,
// against one control plane and one scaleplane, and checks that each step
// does what the table says.
func TestCorpusThroughTheWholePath(t *testing.T) {
	startApp(t)
	// ScaleProfiles are cluster-scoped: they outlive the subtests'
	// namespaces.
	t.Cleanup(func() { _, _ = cluster.Kubectl(context.Background(), "delete", "sprof", "--all") })
	bin := scaleplane(t)
	// Entries with an edited profile serve a kind another entry serves
	// too: they run once those are done (a group's parallel subtests end
	// before t.Run returns), and each entry removes its ScaleProfile.
	for _, edited := range []bool{false, true} {
		group := "as printed"
		if edited {
			group = "edited"
		}
		t.Run(group, func(t *testing.T) {
			for _, c := range crdcorpus.Corpus {
				if (c.Edit != nil) != edited {
					continue
				}
				t.Run(c.Kind, func(t *testing.T) {
					t.Parallel()
					path(t, bin, c)
				})
			}
		})
	}
}

func path(t *testing.T, bin string, c crdcorpus.CRD) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	crdFile := filepath.Join(crdDir(), c.File)

	// profile init against the served CRD.
	args := []string{"profile", "init", "--crd", c.Name, "--kubeconfig", cluster.Kubeconfig}
	if c.Handle {
		args = append(args, "--name", "demo")
	}
	cmd := exec.CommandContext(ctx, bin, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if c.Handle && c.Init.Outcome == crdcorpus.Broken {
		// profile init prints a ScaleHandle; config check of its output
		// fails saying Init.Says.
		if err != nil {
			t.Fatalf("profile init --crd %s: %v\n%s", c.Name, err, stderr.String())
		}
		file := filepath.Join(t.TempDir(), "handle.yaml")
		if err := os.WriteFile(file, stdout.Bytes(), 0o600); err != nil {
			t.Fatal(err)
		}
		out, err := exec.CommandContext(ctx, bin, "config", "check", "-f", file, "--crd", filepath.Join(framework.RepoRoot(), "config", "crd", "bases", "scaleplane.io_scalehandles.yaml")).CombinedOutput()
		if err == nil || !strings.Contains(string(out), c.Init.Says) {
			t.Fatalf("scaleplane config check of profile init's ScaleHandle: %v\n%s\nthe table records a refusal containing %q; update it", err, out, c.Init.Says)
		}
		return
	}
	if c.Init.Outcome != crdcorpus.Works {
		if err == nil || !strings.Contains(stderr.String(), c.Init.Says) {
			t.Fatalf("profile init --crd %s: %v\n%s\nwant a refusal containing %q", c.Name, err, stderr.String(), c.Init.Says)
		}
		return
	}
	if err != nil {
		t.Fatalf("profile init --crd %s: %v\n%s", c.Name, err, stderr.String())
	}
	profile := stdout.Bytes()
	if c.Handle {
		handlePath(ctx, t, bin, c, profile)
		return
	}
	if c.Edit != nil {
		edited := bytes.Replace(profile, []byte(c.Edit.Old), []byte(c.Edit.New), 1)
		if bytes.Equal(edited, profile) {
			t.Fatalf("profile init's output has no %q to edit:\n%s", c.Edit.Old, profile)
		}
		profile = edited
	}
	profileFile := filepath.Join(t.TempDir(), "profile.yaml")
	if err := os.WriteFile(profileFile, profile, 0o600); err != nil {
		t.Fatal(err)
	}
	check := exec.CommandContext(ctx, bin, "config", "check", "-f", profileFile, "--crd", crdFile)
	if out, err := check.CombinedOutput(); err != nil {
		t.Fatalf("scaleplane config check -f <profile init's output> --crd %s: %v\n%s", crdFile, err, out)
	}
	configPath := scaleConfigPath(t, profile)
	if out, err := cluster.Kubectl(ctx, "apply", "--server-side", "-f", profileFile); err != nil {
		t.Fatalf("kubectl apply the profile: %v\n%s", err, out)
	}
	t.Cleanup(func() {
		if out, err := cluster.Kubectl(context.Background(), "delete", "sprof", c.Name, "--wait=true"); err != nil {
			t.Errorf("kubectl delete sprof %s: %v\n%s", c.Name, err, out)
		}
	})
	framework.Eventually(t, 0, func(ctx context.Context) (bool, string) {
		out, err := cluster.Kubectl(ctx, "get", "sprof", c.Name, "-o", `jsonpath={.status.conditions[?(@.type=="Active")].status} {.status.conditions[?(@.type=="Active")].reason}`)
		return err == nil && out == "True Active", fmt.Sprintf("kubectl get sprof %s: Active %q %v", c.Name, out, err)
	})
	// The leader writes the webhook entries after the status: objects are
	// judged once the kind's entry calls the dispatcher.
	gvr := schema.GroupVersionResource{Group: c.Group, Version: c.Version, Resource: c.Resource}
	framework.Eventually(t, 0, func(ctx context.Context) (bool, string) {
		got, err := entries(ctx, gvr)
		return err == nil && len(got) == 1 && strings.HasSuffix(got[0], webhooks.DispatchPath(webhooks.DispatchMutatePrefix, gvr)),
			fmt.Sprintf("mutating entries for %s: %q %v", gvr, got, err)
	})

	// An object of the kind, at 2.
	ns := cluster.Namespace(t)
	name, nsArgs, meta := "demo", []string{"-n", ns}, fmt.Sprintf("{name: demo, namespace: %s}", ns)
	if c.Clustered {
		name = "demo-" + ns
		nsArgs, meta = nil, "{name: "+name+"}"
	}
	res := c.Resource + "." + c.Group
	manifest := fmt.Sprintf("apiVersion: %s/%s\nkind: %s\nmetadata: %s\nspec: %s\n", c.Group, c.Version, c.Kind, meta, c.Body)
	if out, err := cluster.KubectlWithInput(ctx, manifest, "apply", "--server-side", "-f", "-"); err != nil {
		t.Fatalf("create: %v\n%s", err, out)
	}
	key := client.ObjectKey{Name: name}
	if !c.Clustered {
		key.Namespace = ns
	}
	gvk := unstructured.Unstructured{}
	gvk.SetAPIVersion(c.Group + "/" + c.Version)
	gvk.SetKind(c.Kind)
	want := map[string]string{c.Replicas: "%d"}
	at := func(n int) {
		t.Helper()
		framework.EventuallyFields(t, cluster.Client, gvk.GroupVersionKind(), key, n, want, field)
	}
	at(2)
	if configPath != "" {
		// M1: a count without a config gets a config pinned to it.
		pinned := map[string]string{configPath + ".minReplicas": "%d", configPath + ".maxReplicas": "%d"}
		framework.EventuallyFields(t, cluster.Client, gvk.GroupVersionKind(), key, 2, pinned, field)
	}
	unset(ctx, t, c, ns)
	kubectl := func(args ...string) (string, error) {
		return cluster.Kubectl(ctx, append(args, nsArgs...)...)
	}
	step := func(what string, r crdcorpus.Result, out string, err error) bool {
		t.Helper()
		t.Logf("%s: %v\n%s", what, err, out)
		switch {
		case r.Outcome == crdcorpus.Works && err != nil:
			t.Fatalf("%s: %v\n%s", what, err, out)
		case r.Outcome == crdcorpus.Refused && (err == nil || !strings.Contains(out+err.Error(), r.Says)):
			t.Fatalf("%s: %v\n%s\nwant a refusal containing %q", what, err, out, r.Says)
		case r.Outcome != crdcorpus.Works && r.Outcome != crdcorpus.Refused:
			t.Fatalf("%s: the table's outcome %d is not one this step checks (Works or Refused)", what, r.Outcome)
		}
		return r.Outcome == crdcorpus.Works
	}
	// setConfig writes a scale config where the profile keeps it.
	setConfig := func(config string) (string, error) {
		if configPath == "" {
			return kubectl("annotate", res+"/"+name, "--overwrite", "scaleplane.io/scale-config="+config)
		}
		return kubectl("patch", res+"/"+name, "--type=merge", "-p", mergePatch(configPath, config))
	}
	scale := func(n int) (string, error) {
		return kubectl("scale", res+"/"+name, fmt.Sprintf("--replicas=%d", n))
	}

	out, err := scale(3)
	if step("kubectl scale --replicas=3", c.Scale, out, err) {
		at(3)
	}
	out, err = scale(0)
	if step("kubectl scale --replicas=0", c.Zero, out, err) {
		at(0)
	}
	if out, err := scale(2); err != nil {
		t.Fatalf("kubectl scale --replicas=2: %v\n%s", err, out)
	}
	at(2)

	// scalingSays waits until the object's Scaling's Active condition
	// (reason: message) contains want.
	scalingNS := ns
	if c.Clustered {
		scalingNS = appNamespace
	}
	scalingSays := func(want string) {
		t.Helper()
		framework.Eventually(t, 0, func(ctx context.Context) (bool, string) {
			out, err := cluster.Kubectl(ctx, "get", "scalings", "-n", scalingNS, autoscaler.ScalingName(name, schema.GroupKind{Group: c.Group, Kind: c.Kind}), "-o", `jsonpath={.status.conditions[?(@.type=="Active")].reason}: {.status.conditions[?(@.type=="Active")].message}`)
			return err == nil && strings.Contains(out, want), fmt.Sprintf("kubectl get scaling, its Active condition: %q %v; want %q", out, err, want)
		})
	}

	current := 2
	if c.HPA.Outcome != crdcorpus.NotRun {
		// An HPA is namespaced, whatever the scope of its target.
		if out, err := cluster.Kubectl(ctx, "autoscale", res+"/"+name, "--min=4", "--max=6", "--cpu-percent=80", "-n", ns); err != nil {
			t.Fatalf("kubectl autoscale: %v\n%s", err, out)
		}
		switch c.HPA.Outcome {
		case crdcorpus.Works:
			// The HPA controller raises a count below the HPA's minimum
			// through /scale, metrics or not.
			at(4)
			current = 4
			// Its Scaling says who sets the count.
			scalingSays("ForeignAutoscaler")
		case crdcorpus.Broken:
			at(4)
			current = 4
			scalingSays(c.HPA.Says)
		default:
			framework.Eventually(t, 0, func(ctx context.Context) (bool, string) {
				out, err := cluster.Kubectl(ctx, "get", "hpa", name, "-n", ns, "-o", `jsonpath={.status.conditions[?(@.type=="AbleToScale")].message}`)
				return err == nil && strings.Contains(out, c.HPA.Says), fmt.Sprintf("the HPA's AbleToScale: %q %v; want %q", out, err, c.HPA.Says)
			})
		}
		if out, err := cluster.Kubectl(ctx, "delete", "hpa", name, "-n", ns); err != nil {
			t.Fatalf("kubectl delete hpa: %v\n%s", err, out)
		}
	}

	if c.Range.Outcome != crdcorpus.NotRun {
		// S1: with a range, kubectl scale above it is refused, saying how
		// to widen it.
		if out, err := setConfig(`{"minReplicas":2,"maxReplicas":4}`); err != nil {
			t.Fatalf("give the scale config a range: %v\n%s", err, out)
		}
		out, err := scale(6)
		t.Logf("kubectl scale --replicas=6 above the range: %v\n%s", err, out)
		var says string
		switch c.Range.Outcome {
		case crdcorpus.Works:
			says = strings.TrimPrefix(c.Replicas, ".") + ": Invalid value: 6: outside the autoscaling range [2, 4]"
		case crdcorpus.Broken:
			says = c.Range.Says
		default:
			t.Fatalf("the table's Range outcome is %d: only Works or Broken say what the refusal says", c.Range.Outcome)
		}
		if err == nil || !strings.Contains(out+err.Error(), says) {
			t.Fatalf("kubectl scale --replicas=6 above the range [2, 4]: %v\n%s\nwant a refusal containing %q", err, out, says)
		}
		at(current)
	}

	if c.Trigger.Outcome != crdcorpus.NotRun {
		out, err := setConfig(trigger)
		if step("write a scale config with a trigger", c.Trigger, out, err) {
			at(5)
			framework.Eventually(t, 0, func(ctx context.Context) (bool, string) {
				out, err := cluster.Kubectl(ctx, "get", "scalings", "-n", scalingNS, autoscaler.ScalingName(name, schema.GroupKind{Group: c.Group, Kind: c.Kind}), "-o", "jsonpath={.status.mode} {.status.desiredReplicas}")
				return err == nil && out == "triggers 5", fmt.Sprintf("kubectl get scaling: %q %v", out, err)
			})
			// explain, by the kind's resource and group, says so too.
			want := fmt.Sprintf("%s %s: triggers", c.Kind, strings.TrimPrefix(key.String(), "/"))
			if out, err := explain(ctx, bin, scalingNS+"/"+res+"/"+name); err != nil || !strings.HasPrefix(out, want) {
				t.Errorf("scaleplane explain %s/%s/%s: %v\n%s\nwant a summary starting %q", scalingNS, res, name, err, out, want)
			}
		}
	}

	// explain, by the kind's first short name, as one types kubectl.
	if c.Explain.Outcome != crdcorpus.NotRun {
		out, err := explain(ctx, bin, scalingNS+"/"+c.ShortName+"/"+name)
		t.Logf("scaleplane explain %s/%s/%s: %v\n%s", scalingNS, c.ShortName, name, err, out)
		switch c.Explain.Outcome {
		case crdcorpus.Works:
			if err != nil || !strings.HasPrefix(out, c.Kind+" ") {
				t.Fatalf("scaleplane explain by the short name %s: %v\n%s", c.ShortName, err, out)
			}
		case crdcorpus.Broken:
			if err == nil || !strings.Contains(out, c.Explain.Says) {
				t.Fatalf("scaleplane explain by the short name %s: %v\n%s\nthe table records a failure containing %q; update it", c.ShortName, err, out, c.Explain.Says)
			}
		default:
			t.Fatalf("the table's Explain outcome %d is not one this step checks (Works or Broken)", c.Explain.Outcome)
		}
	}

	if c.Sleep.Outcome != crdcorpus.NotRun {
		out, err := setConfig(sleep)
		switch {
		case c.Sleep.Outcome == crdcorpus.Broken:
			if err != nil {
				t.Fatalf("write a scale config with an idle timeout: %v\n%s\nthe table says it is admitted", err, out)
			}
			scalingSays(c.Sleep.Says)
			u := &unstructured.Unstructured{}
			u.SetGroupVersionKind(gvk.GroupVersionKind())
			if err := cluster.Client.Get(ctx, key, u); err != nil {
				t.Fatal(err)
			}
			if got, err := field(u, c.Replicas); err != nil || got == "0" {
				t.Fatalf("%s is %q (%v) while the Scaling says %q: the table records this as broken; update it", c.Replicas, got, err, c.Sleep.Says)
			}
		case step("write a scale config with an idle timeout", c.Sleep, out, err):
			at(0)
			scalingSays("ScaledToZero")
		}
	}

	out, err = kubectl("delete", res, name, "--wait=true", "--timeout=60s")
	step("kubectl delete", c.Delete, out, err)
}

// handlePath applies what profile init printed for a kind without /scale
// (the ScaleHandle kind's profile, a ClusterRole and the handle demo) in a
// namespace of its own, creates the object demo, scales the handle with
// kubectl scale and waits for every member group to follow, then deletes
// the handle and the object. The handle kind's ScaleProfile is shared by
// every such entry: the test's cleanup removes it.
func handlePath(ctx context.Context, t *testing.T, bin string, c crdcorpus.CRD, printed []byte) {
	t.Helper()
	file := filepath.Join(t.TempDir(), "handle.yaml")
	if err := os.WriteFile(file, printed, 0o600); err != nil {
		t.Fatal(err)
	}
	check := exec.CommandContext(ctx, bin, "config", "check", "-f", file, "--crd", filepath.Join(framework.RepoRoot(), "config", "crd", "bases", "scaleplane.io_scalehandles.yaml"))
	if out, err := check.CombinedOutput(); err != nil {
		t.Fatalf("scaleplane config check -f <profile init's output>: %v\n%s", err, out)
	}
	ns := cluster.Namespace(t)
	if out, err := cluster.Kubectl(ctx, "apply", "--server-side", "-n", ns, "-f", file); err != nil {
		t.Fatalf("kubectl apply profile init's output: %v\n%s", err, out)
	}
	framework.Eventually(t, 0, func(ctx context.Context) (bool, string) {
		out, err := cluster.Kubectl(ctx, "get", "sprof", "scalehandles.scaleplane.io", "-o", `jsonpath={.status.conditions[?(@.type=="Active")].status}`)
		return err == nil && out == "True", fmt.Sprintf("ScaleProfile scalehandles.scaleplane.io Active = %q (%v)", out, err)
	})
	res := c.Resource + "." + c.Group
	manifest := fmt.Sprintf("apiVersion: %s/%s\nkind: %s\nmetadata: {name: demo, namespace: %s}\nspec: %s\n", c.Group, c.Version, c.Kind, ns, c.Body)
	if out, err := cluster.KubectlWithInput(ctx, manifest, "apply", "--server-side", "-f", "-"); err != nil {
		t.Fatalf("create: %v\n%s", err, out)
	}
	// kubectl scale on the handle, once its webhooks and controller serve
	// it; every member group of the object follows.
	var groups int
	if c.Scale.Outcome == crdcorpus.Works {
		framework.Eventually(t, 0, func(ctx context.Context) (bool, string) {
			out, err := cluster.Kubectl(ctx, "scale", "-n", ns, "scalehandle/demo", "--replicas=3")
			return err == nil, fmt.Sprintf("kubectl scale scalehandle/demo --replicas=3: %v %s", err, out)
		})
		framework.Eventually(t, 0, func(ctx context.Context) (bool, string) {
			out, err := cluster.Kubectl(ctx, "get", res, "demo", "-n", ns, "-o", "jsonpath={"+c.Replicas+"}")
			got := strings.Fields(out)
			groups = len(got)
			ok := err == nil && len(got) > 1
			for _, n := range got {
				ok = ok && n == "3"
			}
			return ok, fmt.Sprintf("%s of %s/demo: %q %v; want 3 in every group", c.Replicas, res, out, err)
		})
		t.Logf("kubectl scale scalehandle/demo --replicas=3: %d member groups at 3", groups)
	}
	if c.Delete.Outcome == crdcorpus.Works {
		if out, err := cluster.Kubectl(ctx, "delete", "-n", ns, "scalehandle/demo", "--wait=true", "--timeout=60s"); err != nil {
			t.Fatalf("kubectl delete scalehandle/demo: %v\n%s", err, out)
		}
		if out, err := cluster.Kubectl(ctx, "delete", "-n", ns, res, "demo", "--wait=true", "--timeout=60s"); err != nil {
			t.Fatalf("kubectl delete %s demo: %v\n%s", res, err, out)
		}
	}
}

// explain runs scaleplane explain on ref (NAMESPACE/RESOURCE/NAME).
func explain(ctx context.Context, bin, ref string) (string, error) {
	out, err := exec.CommandContext(ctx, bin, "explain", ref, "--kubeconfig", cluster.Kubeconfig, "--scaleplane-namespace", appNamespace).CombinedOutput()
	return string(out), err
}

// unset creates an object of the kind without its replicas field, checks
// what the field then reads, and deletes it.
func unset(ctx context.Context, t *testing.T, c crdcorpus.CRD, ns string) {
	t.Helper()
	var body map[string]any
	if err := yaml.Unmarshal([]byte(c.Body), &body); err != nil {
		t.Fatalf("the table's body of %s: %v", c.Kind, err)
	}
	// The replicas field is a direct child of spec in every /scale CRD of
	// the corpus.
	delete(body, strings.TrimPrefix(c.Replicas, ".spec."))
	spec, err := json.Marshal(body)
	if err != nil {
		t.Fatal(err)
	}
	name, nsArgs, meta := "unset", []string{"-n", ns}, fmt.Sprintf("{name: unset, namespace: %s}", ns)
	if c.Clustered {
		name = "unset-" + ns
		nsArgs, meta = nil, "{name: "+name+"}"
	}
	manifest := fmt.Sprintf("apiVersion: %s/%s\nkind: %s\nmetadata: %s\nspec: %s\n", c.Group, c.Version, c.Kind, meta, spec)
	out, err := cluster.KubectlWithInput(ctx, manifest, "create", "-o", "jsonpath={"+c.Replicas+"}", "-f", "-")
	t.Logf("create without %s: %v\n%s", c.Replicas, err, out)
	switch c.Unset.Outcome {
	case crdcorpus.Works:
		if err != nil {
			t.Fatalf("create without %s: %v\n%s", c.Replicas, err, out)
		}
		if out != c.UnsetReads {
			t.Errorf("created without %s, it reads %q; the table says %q", c.Replicas, out, c.UnsetReads)
		}
		if out, err := cluster.Kubectl(ctx, append([]string{"delete", c.Resource + "." + c.Group, name}, nsArgs...)...); err != nil {
			t.Fatalf("delete: %v\n%s", err, out)
		}
	case crdcorpus.Refused:
		if err == nil || !strings.Contains(out+err.Error(), c.Unset.Says) {
			t.Fatalf("create without %s: %v\n%s\nwant a refusal containing %q", c.Replicas, err, out, c.Unset.Says)
		}
	default:
		t.Fatalf("the table's Unset outcome %d is not one this step checks (Works or Refused)", c.Unset.Outcome)
	}
}

// scaleConfigPath is the spec path of the scale config in profile init's
// output, or "" for the annotation.
func scaleConfigPath(t *testing.T, out []byte) string {
	t.Helper()
	var profile struct {
		Spec struct {
			ScaleConfig struct{ Path, Annotation string } `json:"scaleConfig"`
		} `json:"spec"`
	}
	doc, _, _ := bytes.Cut(out, []byte("\n---"))
	if err := yaml.Unmarshal(doc, &profile); err != nil {
		t.Fatalf("read profile init's output: %v\n%s", err, out)
	}
	return profile.Spec.ScaleConfig.Path
}

// mergePatch is a JSON merge patch setting the object at a dotted path to
// value (JSON).
func mergePatch(path, value string) string {
	keys := strings.Split(strings.TrimPrefix(path, "."), ".")
	patch := value
	for i := len(keys) - 1; i >= 0; i-- {
		patch = fmt.Sprintf("{%q:%s}", keys[i], patch)
	}
	return patch
}

// entries are the URLs of the mutating entries routing gvr.
func entries(ctx context.Context, gvr schema.GroupVersionResource) ([]string, error) {
	var m admissionregistrationv1.MutatingWebhookConfiguration
	if err := cluster.Client.Get(ctx, client.ObjectKey{Name: configv1alpha2.DefaultMutatingConfigurationName}, &m); err != nil {
		return nil, err
	}
	var out []string
	for _, w := range m.Webhooks {
		for _, r := range w.Rules {
			if len(r.APIGroups) == 1 && r.APIGroups[0] == gvr.Group && len(r.Resources) == 1 && r.Resources[0] == gvr.Resource && w.ClientConfig.URL != nil {
				out = append(out, *w.ClientConfig.URL)
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
