package policies

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/scaleplane/scaleplane/e2e/framework"
)

// sampleDifferences are the samples the policies decide otherwise than
// the webhook, and why (docs/contract.md lists them).
var sampleDifferences = map[string]string{
	"rackedcluster-promql.yaml/0": "triggers (V5, V10, V11) are the webhook's: the policies alone admit the sample; with admission: policies its create matches the webhook entries' condition and the webhook judges it",
}

// TestSamplesDecideAsTheWebhook sends every object of config/samples (the
// manifests users copy first, valid and invalid) to the API server with
// only the policies, and compares the answer with the webhook's decision
// as TestPoliciesDecideAsTheWebhook does.
func TestSamplesDecideAsTheWebhook(t *testing.T) {
	install(t)
	ns := cluster.Namespace(t)
	ctx := context.Background()
	files, err := filepath.Glob(filepath.Join(framework.RepoRoot(), "config", "samples", "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	compared, differences := 0, 0
	for _, f := range files {
		if filepath.Base(f) == "kustomization.yaml" {
			continue
		}
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for i, doc := range strings.Split(string(data), "\n---\n") {
			js, err := yaml.YAMLToJSON([]byte(doc))
			if err != nil {
				t.Fatalf("%s document %d: %v", f, i, err)
			}
			if string(js) == "null" {
				continue
			}
			// Through JSON, so numbers are int64 as the API server's are.
			u := &unstructured.Unstructured{}
			if err := u.UnmarshalJSON(js); err != nil {
				t.Fatalf("%s document %d: %v", f, i, err)
			}
			view := views[u.GetKind()]
			if view == nil {
				continue
			}
			name := fmt.Sprintf("%s/%d", filepath.Base(f), i)
			t.Run(name, func(t *testing.T) {
				u.SetNamespace(ns)
				want, causes := webhookDecision(view, nil, u)
				got, err := create(ctx, u)
				compared++
				diff := decisionDiff(want, causes, got, err)
				reason := sampleDifferences[name]
				switch {
				case reason == "" && diff != "":
					t.Errorf("the policies decide otherwise than the webhook:\n%s", diff)
				case reason != "" && diff == "":
					t.Errorf("listed as a difference (%s), but the policies decide as the webhook", reason)
				case reason != "":
					differences++
					t.Logf("known difference: %s:\n%s", reason, diff)
				}
			})
		}
	}
	t.Logf("samples compared: %d; known differences: %d", compared, differences)
}
