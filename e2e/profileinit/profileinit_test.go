// Package profileinit_test proves `scaleplane profile init`
// against a real API server and the real kubectl: for every
// third-party-shaped CRD of cmd/scaleplane/testdata/profileinit installed
// in the cluster, `profile init --crd NAME` prints what the golden file of
// its CRD file holds, `config check` passes it against the CRD file, and
// the output applies as is with
// `kubectl apply --server-side --dry-run=server` (the ScaleProfile CRD
// installed).
package profileinit_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/yaml"

	"github.com/scaleplane/scaleplane/e2e/framework"
	"github.com/scaleplane/scaleplane/profile"
	"github.com/scaleplane/scaleplane/webhooks"
)

var cluster *framework.Cluster

func testdata() string {
	return filepath.Join(framework.RepoRoot(), "cmd", "scaleplane", "testdata", "profileinit")
}

// inferred are the profiles profile init infers from the CRD files, as
// compiled profiles; the suite's webhook configurations are made from them.
var inferred []*profile.Compiled

func TestMain(m *testing.M) {
	log.SetLogger(logr.Discard())
	var err error
	if inferred, err = inferAll(); err != nil {
		fmt.Fprintf(os.Stderr, "e2e: %v\n", err)
		os.Exit(1)
	}
	service := webhooks.ServiceClientConfig("scaleplane-system", "scaleplane-webhook-service", 443)
	mutating, validating := webhooks.Configurations(inferred, webhooks.ConfigurationOptions{}, service)
	os.Exit(framework.Run(m, framework.Options{
		CRDPaths:           []string{filepath.Join(framework.RepoRoot(), "config", "crd", "bases"), testdata()},
		HPAController:      true,
		MutatingWebhooks:   []*admissionregistrationv1.MutatingWebhookConfiguration{mutating},
		ValidatingWebhooks: []*admissionregistrationv1.ValidatingWebhookConfiguration{validating},
	}, &cluster))
}

// inferAll infers a profile from every CRD with /scale in testdata().
func inferAll() ([]*profile.Compiled, error) {
	files, err := filepath.Glob(filepath.Join(testdata(), "*.*"))
	if err != nil {
		return nil, err
	}
	var out []*profile.Compiled
	for _, f := range files {
		if strings.HasSuffix(f, ".golden") {
			continue
		}
		data, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		for _, doc := range strings.Split(string(data), "\n---\n") {
			crd := &apiextensionsv1.CustomResourceDefinition{}
			if err := yaml.Unmarshal([]byte(doc), crd); err != nil {
				return nil, fmt.Errorf("%s: %w", f, err)
			}
			in, err := profile.Infer(crd, "")
			if err != nil {
				continue // the kind without /scale
			}
			v, err := profile.Compile(in.Spec)
			if err != nil {
				return nil, err
			}
			if v, err = v.WithCRD(crd); err != nil {
				return nil, err
			}
			out = append(out, v)
		}
	}
	return out, nil
}

func TestProfileInitAppliesAsIs(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "scaleplane")
	build := exec.Command("go", "build", "-o", bin, ".")
	build.Dir = framework.BinaryModuleDir()
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build scaleplane: %v\n%s", err, out)
	}
	cases := map[string]string{
		"leaderworkersets.leaderworkerset.x-k8s.io": "leaderworkerset",
		"functions.serverless.example.org":          "function",
		"cassandraclusters.db.example.org":          "database",
		"workers.batch.example.org":                 "no-room",
		"edgepools.infra.example.org":               "cluster-scoped",
	}
	for crd, file := range cases {
		t.Run(crd, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, bin, "profile", "init", "--crd", crd, "--kubeconfig", cluster.Kubeconfig)
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			if err := cmd.Run(); err != nil {
				t.Fatalf("profile init --crd %s: %v\n%s", crd, err, stderr.String())
			}
			golden, err := os.ReadFile(filepath.Join(testdata(), file+".golden"))
			if err != nil {
				t.Fatal(err)
			}
			// The golden file of the CRD file: a document per CRD, the
			// one for this CRD among them.
			want := strings.SplitN(string(golden), "# stdout:\n", 2)[1]
			if !strings.Contains(want, stdout.String()) {
				t.Errorf("profile init --crd %s printed\n%s\nwhich is not in %s.golden", crd, stdout.String(), file)
			}
			// config check passes it against the CRD file, offline.
			crdFile := filepath.Join(testdata(), file+".yaml")
			if _, err := os.Stat(crdFile); err != nil {
				crdFile = filepath.Join(testdata(), file+".json")
			}
			profileFile := filepath.Join(t.TempDir(), "profile.yaml")
			if err := os.WriteFile(profileFile, stdout.Bytes(), 0o644); err != nil {
				t.Fatal(err)
			}
			if out, err := exec.CommandContext(ctx, bin, "config", "check", "-f", profileFile, "--crd", crdFile).CombinedOutput(); err != nil {
				t.Errorf("config check of the output: %v\n%s", err, out)
			}
			out, err := cluster.KubectlWithInput(ctx, stdout.String(), "apply", "--server-side", "--dry-run=server", "-f", "-")
			if err != nil {
				t.Fatalf("kubectl apply --server-side --dry-run=server: %v\n%s", err, out)
			}
			for _, w := range []string{"scaleprofile.scaleplane.io/" + crd + " serverside-applied (server dry run)", "clusterrole.rbac.authorization.k8s.io/scaleplane:" + crd + " serverside-applied (server dry run)"} {
				if !strings.Contains(out, w) {
					t.Errorf("kubectl apply said %q, want %q", out, w)
				}
			}
		})
	}
}
