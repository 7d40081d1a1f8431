package admission

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/scaleplane/scaleplane/api/v1alpha1"
	"github.com/scaleplane/scaleplane/controlplane"
	"github.com/scaleplane/scaleplane/e2e/framework"
	"github.com/scaleplane/scaleplane/profile"
)

type obj = map[string]interface{}
type list = []interface{}

// The kinds under test, and how kubectl names them.
var gvks = map[string]schema.GroupVersionKind{
	"RackedCluster": {Group: profile.SampleGroup, Version: profile.SampleVersion, Kind: "RackedCluster"},
	"Function":      {Group: profile.SampleGroup, Version: profile.SampleVersion, Kind: "Function"},
	"WorkerGroup":   {Group: profile.SampleGroup, Version: profile.SampleVersion, Kind: "WorkerGroup"},
	"ZonedDatabase": {Group: "data.example.org", Version: "v1beta1", Kind: "ZonedDatabase"},
}

var resources = map[string]string{
	"RackedCluster": "rackedclusters.samples.scaleplane.io",
	"Function":      "samplefunctions.samples.scaleplane.io",
	"WorkerGroup":   "workergroups.samples.scaleplane.io",
	"ZonedDatabase": "zoneddatabases.data.example.org",
}

// manifest is a workload as a user writes it; kubectl reads JSON as YAML.
type manifest struct {
	kind, name, namespace string
	spec                  obj
	annotations           map[string]string
}

func (m manifest) json() string {
	gvk := gvks[m.kind]
	md := obj{"name": m.name, "namespace": m.namespace}
	if len(m.annotations) > 0 {
		md["annotations"] = m.annotations
	}
	o := obj{"apiVersion": gvk.GroupVersion().String(), "kind": gvk.Kind, "metadata": md}
	if m.spec != nil {
		o["spec"] = m.spec
	}
	data, err := json.Marshal(o)
	if err != nil {
		panic(err)
	}
	return string(data)
}

// scaleConfigJSON is an annotation value.
func scaleConfigJSON(c obj) map[string]string {
	data, err := json.Marshal(c)
	if err != nil {
		panic(err)
	}
	return map[string]string{v1alpha1.AnnotationScaleConfig: string(data)}
}

func kubectl(t *testing.T, args ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	return cluster.Kubectl(ctx, args...)
}

func apply(t *testing.T, m manifest) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	return cluster.KubectlWithInput(ctx, m.json(), "apply", "-f", "-")
}

func mustApply(t *testing.T, m manifest) string {
	t.Helper()
	out, err := apply(t, m)
	if err != nil {
		t.Fatalf("apply %s %s: %v", m.kind, m.name, err)
	}
	return out
}

// get reads an object through the API (not the manager's cache).
func get(t *testing.T, kind, namespace, name string) *unstructured.Unstructured {
	t.Helper()
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(gvks[kind])
	if err := cluster.Client.Get(context.Background(), client.ObjectKey{Namespace: namespace, Name: name}, u); err != nil {
		t.Fatalf("get %s %s/%s: %v", kind, namespace, name, err)
	}
	return u
}

// field returns the value at a dotted path, nil when absent.
func field(u *unstructured.Unstructured, path string) interface{} {
	v, _, _ := unstructured.NestedFieldNoCopy(u.Object, strings.Split(path, ".")...)
	return v
}

// groupSizes lists every group's members field, in order.
func groupSizes(u *unstructured.Unstructured, path, membersField string) []interface{} {
	l, _ := field(u, path).([]interface{})
	var out []interface{}
	for _, item := range l {
		out = append(out, item.(map[string]interface{})[membersField])
	}
	return out
}

// wantFields compares the values at paths with want.
func wantFields(t *testing.T, u *unstructured.Unstructured, want map[string]interface{}) {
	t.Helper()
	got := map[string]interface{}{}
	for p := range want {
		got[p] = field(u, p)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("%s %s (-want +got):\n%s", u.GetKind(), u.GetName(), diff)
	}
}

// annotationConfig decodes the scale config annotation of u.
func annotationConfig(t *testing.T, u *unstructured.Unstructured) obj {
	t.Helper()
	s := u.GetAnnotations()[v1alpha1.AnnotationScaleConfig]
	var c obj
	if err := json.Unmarshal([]byte(s), &c); err != nil {
		t.Fatalf("annotation %q: %v", s, err)
	}
	return c
}

func i64(n int) int64 { return int64(n) }

func namespace(t *testing.T) string {
	t.Helper()
	startWebhooks(t)
	return cluster.Namespace(t)
}

// eventually is framework.Eventually with the suite's default deadline.
func eventually(t *testing.T, cond func(ctx context.Context) (bool, string)) {
	t.Helper()
	framework.Eventually(t, 0, cond)
}

func mustJSON(t *testing.T, v interface{}) string {
	t.Helper()
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// kubectlStderr runs kubectl and returns its standard error too, where it
// prints admission warnings.
func kubectlStderr(t *testing.T, stdin string, args ...string) (string, string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, framework.Binary(controlplane.KubectlBinary), append([]string{"--kubeconfig=" + cluster.Kubeconfig}, args...)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if stdin != "" {
		cmd.Stdin = strings.NewReader(stdin)
	}
	err := cmd.Run()
	if err != nil {
		err = fmt.Errorf("kubectl %s: %w: %s", strings.Join(args, " "), err, stderr.String())
	}
	return stdout.String(), stderr.String(), err
}

func clientKey(u *unstructured.Unstructured) client.ObjectKey {
	return client.ObjectKey{Namespace: u.GetNamespace(), Name: u.GetName()}
}
