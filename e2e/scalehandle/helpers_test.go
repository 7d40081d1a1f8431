package scalehandle_test

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
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/scaleplane/scaleplane/api/v1alpha1"
	"github.com/scaleplane/scaleplane/controllers"
	"github.com/scaleplane/scaleplane/controllers/autoscaler"
	"github.com/scaleplane/scaleplane/e2e/framework"
	"github.com/scaleplane/scaleplane/profile"
	"github.com/scaleplane/scaleplane/promql"
)

const managerUser = "scaleplane-manager"

var scyllaGVK = schema.GroupVersionKind{Group: "scylla.scylladb.com", Version: "v1", Kind: "ScyllaCluster"}

// scyllaRole is what a platform team grants scaleplane on the handle's
// target kind: the profiled-kind rules of config/rbac/profiled_kinds_role.yaml
// that a handle uses (read, watch, and the fan-out's patch).
const scyllaRole = `
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: scaleplane-e2e-scyllaclusters
rules:
- apiGroups: [scylla.scylladb.com]
  resources: [scyllaclusters]
  verbs: [get, list, watch, update, patch]
`

var (
	rbacOnce sync.Once
	rbacCfg  *rest.Config
	rbacErr  error
)

// managerConfig binds config/rbac/role.yaml and scyllaRole to a user of
// its own and returns its rest.Config: the handle needs nothing more.
func managerConfig(t *testing.T) *rest.Config {
	t.Helper()
	rbacOnce.Do(func() {
		data, err := os.ReadFile(filepath.Join(framework.RepoRoot(), "config", "rbac", "role.yaml"))
		if err != nil {
			rbacErr = err
			return
		}
		for _, doc := range [][]byte{data, []byte(scyllaRole)} {
			if rbacErr = bindClusterRole(context.Background(), doc); rbacErr != nil {
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

// managerWithoutTargetRBAC is a user bound to config/rbac/role.yaml only:
// it may not read ScyllaClusters.
func managerWithoutTargetRBAC(t *testing.T) *rest.Config {
	t.Helper()
	managerConfig(t) // creates role.yaml's ClusterRole
	const user = "scaleplane-without-target-rbac"
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "scaleplane-e2e-" + user},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "scaleplane-manager-role"},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: user}},
	}
	if err := cluster.Client.Create(context.Background(), binding); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	cfg, err := cluster.AddUser(user)
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// waitWarning waits for a Warning event of reason on the handle name whose
// message holds every one of words.
func waitWarning(t *testing.T, ns, name, reason string, words ...string) {
	t.Helper()
	framework.Eventually(t, 0, func(ctx context.Context) (bool, string) {
		var list corev1.EventList
		if err := cluster.Client.List(ctx, &list, client.InNamespace(ns)); err != nil {
			return false, err.Error()
		}
		for _, e := range list.Items {
			if e.InvolvedObject.Name != name || e.Reason != reason || e.Type != corev1.EventTypeWarning {
				continue
			}
			ok := true
			for _, w := range words {
				ok = ok && strings.Contains(e.Message, w)
			}
			if ok {
				return true, ""
			}
		}
		return false, fmt.Sprintf("a %s Warning on %s saying %q", reason, name, words)
	})
}

func bindClusterRole(ctx context.Context, data []byte) error {
	role := &rbacv1.ClusterRole{}
	if err := yaml.UnmarshalStrict(data, role); err != nil {
		return fmt.Errorf("decode role: %w", err)
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

// startManager runs scaleplane's controllers and trigger autoscaler for
// the ScaleHandle profile, as the binary does for a ScaleProfile of it,
// until the test ends.
func startManager(t *testing.T) {
	t.Helper()
	startManagerAs(t, managerConfig(t))
}

// startManagerAs is startManager as the user of cfg.
func startManagerAs(t *testing.T, cfg *rest.Config) {
	t.Helper()
	v, err := profile.Compile(profile.ScaleHandleProfile())
	if err != nil {
		t.Fatal(err)
	}
	m, err := cluster.NewManager(framework.ManagerOptions{Config: cfg, NoWebhookServer: true})
	if err != nil {
		t.Fatal(err)
	}
	views := []*profile.Compiled{v}
	if err := controllers.Setup(m, views, controllers.Options{SkipNameValidation: true, KEDADiscoveryInterval: -1}); err != nil {
		t.Fatalf("setup controllers: %v", err)
	}
	limits := promql.Limits{}
	sources, err := autoscaler.NewSources(promql.NewEvaluator(promql.NewStore(promql.Options{}), promql.EvaluatorOptions{Limits: limits}), nil, limits)
	if err != nil {
		t.Fatal(err)
	}
	as, err := autoscaler.New(autoscaler.Options{Views: views, Sources: sources, PollingInterval: time.Second, SkipNameValidation: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := as.SetupWithManager(m); err != nil {
		t.Fatalf("setup autoscaler: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- m.Manager.Start(ctx) }()
	if !m.GetCache().WaitForCacheSync(ctx) {
		cancel()
		t.Fatalf("manager caches did not sync: %v", <-done)
	}
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
			t.Errorf("manager: %v", err)
		}
	})
}

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

// scylla is a ScyllaCluster of the upstream CRD with three racks of the
// given sizes, as a user would write it.
func scylla(name string, a, b, c int) string {
	return fmt.Sprintf(`
apiVersion: scylla.scylladb.com/v1
kind: ScyllaCluster
metadata:
  name: %s
spec:
  version: 6.2.0
  agentVersion: 3.4.0
  datacenter:
    name: dc1
    racks:
    - {name: a, members: %d, storage: {capacity: 1Gi}}
    - {name: b, members: %d, storage: {capacity: 1Gi}}
    - {name: c, members: %d, storage: {capacity: 1Gi}}
`, name, a, b, c)
}

// handle is a ScaleHandle for the ScyllaCluster name, as profile init
// prints it, with extra spec lines (replicas, scaleConfig) appended.
func handle(name, extra string) string {
	return fmt.Sprintf(`
apiVersion: scaleplane.io/v1alpha1
kind: ScaleHandle
metadata:
  name: %[1]s
spec:
  targetRef: {apiVersion: scylla.scylladb.com/v1, kind: ScyllaCluster, name: %[1]s}
  memberGroups:
    path: .spec.datacenter.racks
    status: {path: .status.racks, style: Map}
  pods:
    labels: {scylla/cluster: "${name}"}
    memberGroupLabel: scylla/rack
%[2]s`, name, extra)
}

func getScylla(ctx context.Context, ns, name string) (*unstructured.Unstructured, error) {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(scyllaGVK)
	err := cluster.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, u)
	return u, err
}

func getHandle(ctx context.Context, ns, name string) (*v1alpha1.ScaleHandle, error) {
	h := &v1alpha1.ScaleHandle{}
	err := cluster.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, h)
	return h, err
}

// rackMembers lists every rack's members, -1 for absent.
func rackMembers(u *unstructured.Unstructured) []int64 {
	racks, _, _ := unstructured.NestedSlice(u.Object, "spec", "datacenter", "racks")
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

// waitRacks waits until the ScyllaCluster's racks have exactly want.
func waitRacks(t *testing.T, ns, name string, want ...int64) {
	t.Helper()
	framework.Eventually(t, 0, func(ctx context.Context) (bool, string) {
		u, err := getScylla(ctx, ns, name)
		if err != nil {
			return false, err.Error()
		}
		got := rackMembers(u)
		return slices.Equal(got, want), fmt.Sprintf("racks of %s have members %v, want %v", name, got, want)
	})
}

// setRack sets one rack's members by hand, as kubectl edit would.
func setRack(t *testing.T, ns, name string, rack int, members int) {
	t.Helper()
	kubectl(t, "patch", "-n", ns, "scyllacluster/"+name, "--type=json",
		"-p", fmt.Sprintf(`[{"op":"replace","path":"/spec/datacenter/racks/%d/members","value":%d}]`, rack, members))
}

// setReady writes status.racks.<rack>.readyMembers as scylla-operator
// would, through the status subresource.
func setReady(t *testing.T, ns, name string, ready map[string]int64) {
	t.Helper()
	racks := map[string]interface{}{}
	for r, n := range ready {
		racks[r] = map[string]interface{}{"members": n, "readyMembers": n}
	}
	patch := map[string]interface{}{"status": map[string]interface{}{"racks": racks}}
	data, err := yaml.Marshal(patch)
	if err != nil {
		t.Fatal(err)
	}
	js, err := yaml.YAMLToJSON(data)
	if err != nil {
		t.Fatal(err)
	}
	kubectl(t, "patch", "-n", ns, "scyllacluster/"+name, "--subresource=status", "--type=merge", "-p", string(js))
}

// waitHandle waits until the handle satisfies ok, described by what.
func waitHandle(t *testing.T, ns, name, what string, ok func(h *v1alpha1.ScaleHandle) bool) {
	t.Helper()
	framework.Eventually(t, 0, func(ctx context.Context) (bool, string) {
		h, err := getHandle(ctx, ns, name)
		if err != nil {
			return false, err.Error()
		}
		return ok(h), fmt.Sprintf("ScaleHandle %s: want %s; have spec.replicas %v, status %+v", name, what, ptrString(h.Spec.Replicas), statusString(h.Status))
	})
}

func ptrString(p *int32) string {
	if p == nil {
		return "unset"
	}
	return fmt.Sprint(*p)
}

func statusString(s v1alpha1.ScaleHandleStatus) string {
	return fmt.Sprintf("{replicas: %s, selector: %q}", ptrString(s.Replicas), s.Selector)
}
