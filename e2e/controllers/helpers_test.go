package controllers_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/scaleplane/scaleplane/controllers"
	"github.com/scaleplane/scaleplane/e2e/framework"
	"github.com/scaleplane/scaleplane/profile"
)

const managerUser = "scaleplane-manager"

var (
	rbacOnce sync.Once
	rbacCfg  *rest.Config
	rbacErr  error
)

// managerConfig creates the ClusterRoles of config/rbac/role.yaml and of
// the sample kinds' rules (config/samples/deploy/profiled_kinds_role.yaml),
// binds them to a user of its own and returns that user's rest.Config: the
// controllers are proven to need nothing beyond the roles they ship.
func managerConfig(t *testing.T) *rest.Config {
	t.Helper()
	rbacOnce.Do(func() {
		ctx := context.Background()
		for _, file := range []string{"config/rbac/role.yaml", "config/samples/deploy/profiled_kinds_role.yaml"} {
			if rbacErr = bindClusterRole(ctx, file); rbacErr != nil {
				return
			}
		}
		rbacCfg, rbacErr = cluster.AddUser(managerUser)
	})
	if rbacErr != nil {
		t.Fatalf("manager RBAC: %v", rbacErr)
	}
	return rest.CopyConfig(rbacCfg)
}

// bindClusterRole creates the ClusterRole in file (relative to the
// repository) and binds it to managerUser.
func bindClusterRole(ctx context.Context, file string) error {
	data, err := os.ReadFile(filepath.Join(framework.RepoRoot(), file))
	if err != nil {
		return fmt.Errorf("read role: %w", err)
	}
	role := &rbacv1.ClusterRole{}
	if err := yaml.UnmarshalStrict(data, role); err != nil {
		return fmt.Errorf("decode role %s: %w", file, err)
	}
	if err := cluster.Client.Create(ctx, role); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create role: %w", err)
	}
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "scaleplane-e2e-" + role.Name},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: managerUser}},
	}
	if err := cluster.Client.Create(ctx, binding); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create binding: %w", err)
	}
	return nil
}

// startManager runs scaleplane's controllers for the sample kinds, as the
// RBAC user, until the test ends or the returned stop is called.
func startManager(t *testing.T, opts controllers.Options) (stop func()) {
	t.Helper()
	var views []*profile.Compiled
	for _, p := range profile.Samples() {
		if p.Target.Kind == "Function" && len(p.DefaultMetrics) == 0 {
			// A Kyma-style scaleConfig holds only min and max (the sample
			// CRD prunes anything else), so without profile default metrics
			// C4 never gives a Function an HPA.
			t.Fatal("the Function sample profile must carry default metrics")
		}
		v, err := profile.Compile(p)
		if err != nil {
			t.Fatal(err)
		}
		views = append(views, v)
	}
	return startManagerFor(t, managerConfig(t), views, opts)
}

// startManagerFor runs scaleplane's controllers for views as the user of
// cfg, until the test ends or the returned stop is called.
func startManagerFor(t *testing.T, cfg *rest.Config, views []*profile.Compiled, opts controllers.Options) (stop func()) {
	t.Helper()
	m, err := cluster.NewManager(framework.ManagerOptions{Config: cfg, NoWebhookServer: true})
	if err != nil {
		t.Fatal(err)
	}
	// Every test starts its own manager in this process.
	opts.SkipNameValidation = true
	if err := controllers.Setup(m, views, opts); err != nil {
		t.Fatalf("setup controllers: %v", err)
	}
	// Not framework.Manager.Start: it asks for the webhook server to probe
	// it, which makes controller-runtime create and start a default one
	// (needing certificates) even with NoWebhookServer.
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- m.Manager.Start(ctx) }()
	if !m.GetCache().WaitForCacheSync(ctx) {
		cancel()
		t.Fatalf("manager caches did not sync: %v", <-done)
	}
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
				t.Errorf("manager: %v", err)
			}
		})
	}
	t.Cleanup(stop)
	return stop
}

// apply creates obj from YAML with kubectl, as a user would.
func kubectlApply(t *testing.T, ns, manifest string) {
	t.Helper()
	if _, err := cluster.KubectlWithInput(context.Background(), manifest, "apply", "-n", ns, "-f", "-"); err != nil {
		t.Fatal(err)
	}
}

func kubectl(t testing.TB, args ...string) string {
	t.Helper()
	out, err := cluster.Kubectl(context.Background(), args...)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func get(ctx context.Context, kind, ns, name string) (*unstructured.Unstructured, error) {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion(profile.SampleGroup + "/" + profile.SampleVersion)
	u.SetKind(kind)
	err := cluster.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, u)
	return u, err
}

// members lists every rack's members, -1 for absent.
func members(u *unstructured.Unstructured) []int64 {
	racks, _, _ := unstructured.NestedSlice(u.Object, "spec", "racks")
	out := make([]int64, len(racks))
	for i, r := range racks {
		m, ok := r.(map[string]interface{})["members"].(int64)
		if !ok {
			m = -1
		}
		out[i] = m
	}
	return out
}

func allEqual(ms []int64, n int64) bool {
	return len(ms) > 0 && !slices.ContainsFunc(ms, func(m int64) bool { return m != n })
}

// waitRacks waits until every rack of a RackedCluster has n members.
func waitRacks(t *testing.T, ns, name string, n int64) {
	t.Helper()
	framework.Eventually(t, 0, func(ctx context.Context) (bool, string) {
		u, err := get(ctx, "RackedCluster", ns, name)
		if err != nil {
			return false, err.Error()
		}
		ms := members(u)
		return allEqual(ms, n), fmt.Sprintf("racks of %s have members %v, want all %d", name, ms, n)
	})
}

func getHPA(ctx context.Context, ns, name string) (*autoscalingv2.HorizontalPodAutoscaler, error) {
	h := &autoscalingv2.HorizontalPodAutoscaler{}
	err := cluster.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, h)
	return h, err
}

// waitHPA waits until the HPA exists and ok accepts it.
func waitHPA(t *testing.T, ns, name string, ok func(h *autoscalingv2.HorizontalPodAutoscaler) (bool, string)) *autoscalingv2.HorizontalPodAutoscaler {
	t.Helper()
	var last *autoscalingv2.HorizontalPodAutoscaler
	framework.Eventually(t, 0, func(ctx context.Context) (bool, string) {
		h, err := getHPA(ctx, ns, name)
		if err != nil {
			return false, fmt.Sprintf("HPA %s: %v", name, err)
		}
		last = h
		return ok(h)
	})
	return last
}

// waitNoHPA waits until the HPA is gone.
func waitNoHPA(t *testing.T, ns, name string) {
	t.Helper()
	framework.Eventually(t, 0, func(ctx context.Context) (bool, string) {
		h, err := getHPA(ctx, ns, name)
		if apierrors.IsNotFound(err) {
			return true, ""
		}
		if err != nil {
			return false, err.Error()
		}
		return false, fmt.Sprintf("HPA %s still exists (min %v, max %d)", name, derefInt32(h.Spec.MinReplicas), h.Spec.MaxReplicas)
	})
}

func derefInt32(p *int32) any {
	if p == nil {
		return "nil"
	}
	return *p
}

// waitEvent waits for an event about the named object with this type and
// reason whose message contains each of words, and returns its message.
func waitEvent(t *testing.T, ns, name, eventType, reason string, words ...string) string {
	t.Helper()
	var msg string
	framework.Eventually(t, 0, func(ctx context.Context) (bool, string) {
		var list corev1.EventList
		if err := cluster.Client.List(ctx, &list, client.InNamespace(ns)); err != nil {
			return false, err.Error()
		}
		var seen []string
		for _, e := range list.Items {
			if e.InvolvedObject.Name != name {
				continue
			}
			seen = append(seen, e.Type+"/"+e.Reason+": "+e.Message)
			if e.Type != eventType || e.Reason != reason {
				continue
			}
			if !slices.ContainsFunc(words, func(w string) bool { return !strings.Contains(e.Message, w) }) {
				msg = e.Message
				return true, ""
			}
		}
		return false, fmt.Sprintf("no %s event %s about %s containing %q; events: %q", eventType, reason, name, words, seen)
	})
	return msg
}

func isControlledBy(h *autoscalingv2.HorizontalPodAutoscaler, u *unstructured.Unstructured) bool {
	return metav1.IsControlledBy(h, u)
}

func cpuMetric(pct int32) autoscalingv2.MetricSpec {
	return autoscalingv2.MetricSpec{
		Type: autoscalingv2.ResourceMetricSourceType,
		Resource: &autoscalingv2.ResourceMetricSource{
			Name:   corev1.ResourceCPU,
			Target: autoscalingv2.MetricTarget{Type: autoscalingv2.UtilizationMetricType, AverageUtilization: &pct},
		},
	}
}

// installCRD creates crd (unless it exists) and waits until it is
// established.
func installCRD(t *testing.T, crd *apiextensionsv1.CustomResourceDefinition) {
	t.Helper()
	if err := cluster.Client.Create(context.Background(), crd); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	framework.Eventually(t, 0, func(ctx context.Context) (bool, string) {
		got := &apiextensionsv1.CustomResourceDefinition{}
		if err := cluster.Client.Get(ctx, types.NamespacedName{Name: crd.Name}, got); err != nil {
			return false, err.Error()
		}
		for _, c := range got.Status.Conditions {
			if c.Type == apiextensionsv1.Established && c.Status == apiextensionsv1.ConditionTrue {
				return true, ""
			}
		}
		return false, fmt.Sprintf("CRD %s not established: %v", crd.Name, got.Status.Conditions)
	})
}
