package policies

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/scaleplane/scaleplane/e2e/framework"
	"github.com/scaleplane/scaleplane/policies"
	"github.com/scaleplane/scaleplane/profile"
	"github.com/scaleplane/scaleplane/profile/profiletest"
)

var (
	cluster *framework.Cluster
	// racked is the sample RackedCluster's compiled profile (a config at
	// a spec path), zoned e2e/admission's ZonedDatabase (a config in an
	// annotation, groups with other field names, a bound of 50).
	racked, zoned *profile.Compiled
	// views are every kind's profile under test, by kind: the samples'
	// and ZonedDatabase's.
	views = map[string]*profile.Compiled{}
)

func TestMain(m *testing.M) {
	for _, spec := range append(profile.Samples(), profiletest.ZonedDatabase()) {
		v, err := profile.Compile(spec)
		if err != nil {
			fmt.Fprintf(os.Stderr, "e2e: %v\n", err)
			os.Exit(1)
		}
		views[v.GVK().Kind] = v
	}
	racked, zoned = views["RackedCluster"], views["ZonedDatabase"]
	// No webhook configuration and no scaleplane process: the policies
	// are all the admission the kinds get.
	opts := framework.Options{CRDPaths: []string{
		filepath.Join(framework.RepoRoot(), "config", "samples", "crd"),
		filepath.Join(framework.RepoRoot(), "e2e", "admission", "testdata", "crd"),
		// The real-CRD corpus (e2e/crdcorpus) and scaleplane's own kinds
		// (the ScaleHandle that profiles a kind without /scale).
		filepath.Join(framework.RepoRoot(), "testdata", "crds"),
		filepath.Join(framework.RepoRoot(), "config", "crd", "bases"),
	}}
	os.Exit(framework.Run(m, opts, &cluster))
}

var installOnce sync.Once

// install applies every view's policies once and waits until the API
// server enforces each kind's: a probe object with R and one group is
// defaulted as the webhook defaults it, and one with R over the
// profile's bound is refused by the validating policy (not by the schema).
// Policies take effect when the API server's informers see them, which
// can take seconds after many policies were compiled.
func install(t *testing.T) {
	t.Helper()
	installOnce.Do(func() {
		ctx := context.Background()
		for _, view := range views {
			for _, obj := range policies.For(view).Objects() {
				if err := cluster.Client.Create(ctx, obj); err != nil {
					t.Fatalf("create %T %s: %v", obj, obj.GetName(), err)
				}
			}
		}
	})
	ns := cluster.Namespace(t)
	n := 0
	for _, view := range views {
		segs := strings.Split(strings.TrimPrefix(view.Spec().ReplicasPath, "."), ".")
		probe := func(name string, r int64) *unstructured.Unstructured {
			u := object(view, ns, name, obj{}, "")
			_ = unstructured.SetNestedField(u.Object, r, segs...)
			if g := view.Spec().MemberGroups; g != nil {
				group := map[string]interface{}{g.NameField: "a", g.MembersField: int64(1)}
				_ = unstructured.SetNestedSlice(u.Object, []interface{}{group}, strings.Split(strings.TrimPrefix(g.Path, "."), ".")...)
			}
			return u
		}
		framework.Eventually(t, 0, func(ctx context.Context) (bool, string) {
			n++
			sent := probe(fmt.Sprintf("probe-%d", n), 2)
			want, _ := webhookDecision(view, nil, sent)
			got, err := create(ctx, sent)
			if err != nil {
				return false, fmt.Sprintf("create probe: %v", err)
			}
			if diff := decisionDiff(want, nil, got, nil); diff != "" {
				return false, fmt.Sprintf("%s: the mutating policy is not enforced yet: %s", view.GVK().Kind, diff)
			}
			_, err = create(ctx, probe(fmt.Sprintf("bad-%d", n), int64(view.Layout().MaxReplicas)+1))
			return err != nil && fromPolicy(err), fmt.Sprintf("%s: the validating policy is not enforced yet: %v", view.GVK().Kind, err)
		})
	}
}

// create sends u and returns the stored object or the refusal.
func create(ctx context.Context, u *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	u = u.DeepCopy()
	err := cluster.Client.Create(ctx, u)
	return u, err
}

// update sends u over the stored object of its name.
func update(ctx context.Context, u *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	cur := &unstructured.Unstructured{}
	cur.SetGroupVersionKind(u.GroupVersionKind())
	if err := cluster.Client.Get(ctx, client.ObjectKeyFromObject(u), cur); err != nil {
		return nil, err
	}
	u = u.DeepCopy()
	u.SetResourceVersion(cur.GetResourceVersion())
	err := cluster.Client.Update(ctx, u)
	return u, err
}

// refusal is the text of a policy's refusal, one cause per "; ".
func refusal(err error) string {
	if s, ok := err.(apierrors.APIStatus); ok {
		return s.Status().Message
	}
	return strings.TrimSpace(err.Error())
}

// fromPolicy reports whether err is a ValidatingAdmissionPolicy's refusal.
func fromPolicy(err error) bool {
	return strings.Contains(refusal(err), "ValidatingAdmissionPolicy ")
}

// statusFields are the field paths of err's causes, without the leading
// dot the API server's schema validation writes.
func statusFields(err error) []string {
	s, ok := err.(apierrors.APIStatus)
	if !ok || s.Status().Details == nil {
		return nil
	}
	var out []string
	for _, c := range s.Status().Details.Causes {
		out = append(out, strings.TrimPrefix(c.Field, "."))
	}
	return out
}
