package deployments

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/scaleplane/scaleplane/api/v1alpha1"
	"github.com/scaleplane/scaleplane/controllers/autoscaler"
	"github.com/scaleplane/scaleplane/e2e/framework"
)

// rpsQuery reads the request rate of the workload's pods from the
// embedded store (${name} is the workload, the job label of its pods'
// samples).
const rpsQuery = `sum(rate(http_requests_total{namespace="${namespace}",job="${name}"}[5s]))`

var (
	deploymentGK  = schema.GroupKind{Group: "apps", Kind: "Deployment"}
	statefulSetGK = schema.GroupKind{Group: "apps", Kind: "StatefulSet"}
)

func TestBuiltInKinds(t *testing.T) {
	installScaledObjectCRD(t)
	e := startApp(t)
	t.Run("NoWebhookOnBuiltInKinds", testNoWebhookOnBuiltInKinds)
	t.Run("scenarios", func(t *testing.T) {
		for name, fn := range map[string]func(*testing.T, *env){
			"SlimFaasFunctionWakesScalesAndSleeps":  testSlimFaasFunctionWakesScalesAndSleeps,
			"SlimFaasScheduleWakesIt":               testSlimFaasScheduleWakesIt,
			"SlimFaasBadJSONIsReported":             testSlimFaasBadJSONIsReported,
			"StatefulSetAnnotationConfigScales":     testStatefulSetAnnotationConfigScales,
			"StatefulSetInvalidConfigIsReported":    testStatefulSetInvalidConfigIsReported,
			"ReplicaSetThroughALiveScaleProfile":    testReplicaSetThroughALiveScaleProfile,
			"ScaledObjectOnADeploymentStandsItDown": testScaledObjectOnADeploymentStandsItDown,
		} {
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				fn(t, e)
			})
		}
	})
}

// The app keeps its webhook configurations, with no entry for the two
// built-in kinds it scales.
func testNoWebhookOnBuiltInKinds(t *testing.T) {
	framework.Eventually(t, 0, func(ctx context.Context) (bool, string) {
		var m admissionregistrationv1.MutatingWebhookConfigurationList
		var v admissionregistrationv1.ValidatingWebhookConfigurationList
		if err := cluster.Client.List(ctx, &m); err != nil {
			return false, err.Error()
		}
		if err := cluster.Client.List(ctx, &v); err != nil {
			return false, err.Error()
		}
		var groups []string
		for _, c := range m.Items {
			for _, w := range c.Webhooks {
				for _, r := range w.Rules {
					groups = append(groups, r.APIGroups...)
				}
			}
		}
		for _, c := range v.Items {
			for _, w := range c.Webhooks {
				for _, r := range w.Rules {
					groups = append(groups, r.APIGroups...)
				}
			}
		}
		for _, g := range groups {
			if g == "apps" {
				return false, fmt.Sprintf("a webhook entry on apps: %v", groups)
			}
		}
		return len(m.Items) > 0, fmt.Sprintf("%d mutating configurations", len(m.Items))
	})
}

// A Deployment annotated as SlimFaas documents a function: it goes to 0
// after TimeoutSecondBeforeSetReplicasMin without activity, POST /activity
// wakes it to ReplicasAtStart, its PromQL trigger scales it up, and with
// the requests gone it goes back to 0. The setting scaleplane does not act
// on is named in a Warning.
func testSlimFaasFunctionWakesScalesAndSleeps(t *testing.T, e *env) {
	ns := cluster.Namespace(t)
	ex := framework.NewExporter(t, 0)
	framework.AddPod(t, cluster, ns, "fibonacci-0", map[string]string{"app": "fibonacci"}, ex)
	createDeployment(t, ns, "fibonacci", 1, map[string]string{
		"SlimFaas/Function":                          "true",
		"SlimFaas/ReplicasMin":                       "0",
		"SlimFaas/ReplicasAtStart":                   "1",
		"SlimFaas/TimeoutSecondBeforeSetReplicasMin": "3",
		"SlimFaas/NumberParallelRequest":             "10",
		"SlimFaas/Scale": `{"ReplicaMax": 4, "Triggers": [{"MetricType": "AverageValue", "MetricName": "rps", "Query": ` + jsonString(rpsQuery) + `, "Threshold": 10}],
			"Behavior": {"ScaleDown": {"StabilizationWindowSeconds": 0}}}`,
	})
	waitReplicas(t, ns, "fibonacci", "0", func(r int32) bool { return r == 0 })
	findEvent(t, ns, "fibonacci", autoscaler.ReasonSlimFaasSettingIgnored, func(n string) bool {
		return strings.Contains(n, "SlimFaas/NumberParallelRequest")
	})

	e.post(t, autoscaler.ActivityPath+ns+"/deployments/fibonacci")
	waitReplicas(t, ns, "fibonacci", "1", func(r int32) bool { return r == 1 })
	findEvent(t, ns, "fibonacci", v1alpha1.ReasonScaled, func(n string) bool { return strings.HasPrefix(n, "Woke up from 0 to 1") })

	ex.SetRate(35)
	waitReplicas(t, ns, "fibonacci", ">= 3", func(r int32) bool { return r >= 3 })
	ex.SetRate(0)
	waitReplicas(t, ns, "fibonacci", "0", func(r int32) bool { return r == 0 })

	// kubectl get scalings and scaleplane explain show who scales it.
	framework.Eventually(t, 0, func(ctx context.Context) (bool, string) {
		s, err := getScaling(ctx, ns, autoscaler.ScalingName("fibonacci", deploymentGK))
		if err != nil {
			return false, err.Error()
		}
		return s.Status.Mode == v1alpha1.ScalingModeTriggers && len(s.Status.Triggers) == 1,
			fmt.Sprintf("mode %q, triggers %v", s.Status.Mode, s.Status.Triggers)
	})
	out, err := cluster.Kubectl(context.Background(), "get", "scalings", "-n", ns)
	if err != nil || !strings.Contains(out, "Deployment/fibonacci") {
		t.Errorf("kubectl get scalings: %v\n%s", err, out)
	}
	out = kubectlPlugin(t, "scaleplane", "explain", ns+"/deployments/fibonacci")
	for _, want := range []string{"Deployment " + ns + "/fibonacci: triggers", "rps"} {
		if !strings.Contains(out, want) {
			t.Errorf("kubectl scaleplane explain lacks %q:\n%s", want, out)
		}
	}
}

// A function at 0 whose SlimFaas/Schedule wakes it at this minute wakes to
// ReplicasAtStart without any request.
func testSlimFaasScheduleWakesIt(t *testing.T, _ *env) {
	ns := cluster.Namespace(t)
	now := time.Now().UTC().Format("15:04")
	createDeployment(t, ns, "morning", 0, map[string]string{
		"SlimFaas/Function":                          "true",
		"SlimFaas/ReplicasAtStart":                   "2",
		"SlimFaas/TimeoutSecondBeforeSetReplicasMin": "600",
		"SlimFaas/Schedule":                          `{"TimeZoneID": "UTC", "Default": {"WakeUp": ["` + now + `"]}}`,
	})
	waitReplicas(t, ns, "morning", "2", func(r int32) bool { return r == 2 })
	findEvent(t, ns, "morning", v1alpha1.ReasonScaled, func(n string) bool {
		return strings.HasPrefix(n, "Woke up from 0 to 2") && strings.Contains(n, "scheduled wake-up at")
	})
}

// Bad JSON in SlimFaas/Scale is a clear reason on the Scaling and a
// Warning, and the count is left alone.
func testSlimFaasBadJSONIsReported(t *testing.T, _ *env) {
	ns := cluster.Namespace(t)
	createDeployment(t, ns, "broken", 2, map[string]string{
		"SlimFaas/Function": "true",
		"SlimFaas/Scale":    `{"ReplicaMax": 3, "Triggers": [`,
	})
	framework.Eventually(t, 0, func(ctx context.Context) (bool, string) {
		s, err := getScaling(ctx, ns, autoscaler.ScalingName("broken", deploymentGK))
		if err != nil {
			return false, err.Error()
		}
		var msgs []string
		for _, c := range s.Status.Conditions {
			msgs = append(msgs, c.Reason+": "+c.Message)
		}
		all := strings.Join(msgs, "\n")
		return strings.Contains(all, "SlimFaas/Scale") && strings.Contains(all, "not valid JSON"), all
	})
	findEvent(t, ns, "broken", "InvalidWorkload", func(n string) bool { return strings.Contains(n, "SlimFaas/Scale") })
	if r := replicas(t, ns, "broken"); r != 2 {
		t.Errorf("replicas %d, want the 2 it was created with", r)
	}
}

// A StatefulSet with scaleplane's own annotation config is scaled by its
// trigger.
func testStatefulSetAnnotationConfigScales(t *testing.T, _ *env) {
	ns := cluster.Namespace(t)
	ex := framework.NewExporter(t, 0)
	framework.AddPod(t, cluster, ns, "store-0", map[string]string{"app": "store"}, ex)
	cfg := map[string]any{"minReplicas": 1, "maxReplicas": 5, "triggers": []any{map[string]any{
		"name": "rps", "type": "AverageValue", "source": "promql", "query": rpsQuery, "threshold": 10}}}
	b, _ := json.Marshal(cfg)
	labels := map[string]string{"app": "store"}
	sts := &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "store", Annotations: map[string]string{"scaleplane.io/scale-config": string(b)}},
		Spec: appsv1.StatefulSetSpec{Replicas: ptr(int32(1)), ServiceName: "store",
			Selector: &metav1.LabelSelector{MatchLabels: labels}, Template: podTemplate(labels)},
	}
	if err := cluster.Client.Create(context.Background(), sts); err != nil {
		t.Fatal(err)
	}
	ex.SetRate(35)
	framework.Eventually(t, 0, func(ctx context.Context) (bool, string) {
		got := &appsv1.StatefulSet{}
		if err := cluster.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "store"}, got); err != nil {
			return false, err.Error()
		}
		return *got.Spec.Replicas >= 3, fmt.Sprintf("replicas %d, want >= 3", *got.Spec.Replicas)
	})
	findEvent(t, ns, "store", v1alpha1.ReasonScaled, func(n string) bool { return strings.HasPrefix(n, "Scaled up from 1 to ") })
}

// With no webhook to refuse it, a config that breaks a validating rule
// (V2: minReplicas above maxReplicas) is not acted on: the Scaling and a
// Warning InvalidScaleConfig name the field.
func testStatefulSetInvalidConfigIsReported(t *testing.T, _ *env) {
	ns := cluster.Namespace(t)
	labels := map[string]string{"app": "bad"}
	sts := &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "bad", Annotations: map[string]string{
			"scaleplane.io/scale-config": `{"minReplicas": 4, "maxReplicas": 2, "idle": {"timeoutSeconds": 1}}`}},
		Spec: appsv1.StatefulSetSpec{Replicas: ptr(int32(3)), ServiceName: "bad",
			Selector: &metav1.LabelSelector{MatchLabels: labels}, Template: podTemplate(labels)},
	}
	if err := cluster.Client.Create(context.Background(), sts); err != nil {
		t.Fatal(err)
	}
	findEvent(t, ns, "bad", autoscaler.ReasonInvalidConfig, func(n string) bool { return strings.Contains(n, "minReplicas") })
	framework.Eventually(t, 0, func(ctx context.Context) (bool, string) {
		s, err := getScaling(ctx, ns, autoscaler.ScalingName("bad", statefulSetGK))
		if err != nil {
			return false, err.Error()
		}
		var msgs []string
		for _, c := range s.Status.Conditions {
			msgs = append(msgs, c.Message)
		}
		all := strings.Join(msgs, "\n")
		return strings.Contains(all, "scale config refused"), all
	})
	got := &appsv1.StatefulSet{}
	if err := cluster.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "bad"}, got); err != nil {
		t.Fatal(err)
	}
	if *got.Spec.Replicas != 3 {
		t.Errorf("replicas %d, want the 3 it was created with", *got.Spec.Replicas)
	}
}

// Any built-in kind with /scale, here ReplicaSets, joins at run time
// through a ScaleProfile: it becomes Active (its access review asks no
// status verbs), gets no webhook entry, and its workloads go to zero.
func testReplicaSetThroughALiveScaleProfile(t *testing.T, _ *env) {
	ctx := context.Background()
	sp := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": v1alpha1.GroupVersion.String(), "kind": "ScaleProfile",
		"metadata": map[string]any{"name": "replicasets"},
		"spec": map[string]any{
			"target":      map[string]any{"apiVersion": "apps/v1", "kind": "ReplicaSet", "resource": "replicasets"},
			"scaleConfig": map[string]any{"annotation": "scaleplane.io/scale-config"},
		},
	}}
	if err := cluster.Client.Create(ctx, sp); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cluster.Client.Delete(context.Background(), sp) })
	framework.Eventually(t, 0, func(ctx context.Context) (bool, string) {
		got := &unstructured.Unstructured{}
		got.SetGroupVersionKind(v1alpha1.GroupVersion.WithKind("ScaleProfile"))
		if err := cluster.Client.Get(ctx, client.ObjectKey{Name: "replicasets"}, got); err != nil {
			return false, err.Error()
		}
		conds, _, _ := unstructured.NestedSlice(got.Object, "status", "conditions")
		for _, c := range conds {
			m := c.(map[string]any)
			if m["type"] == v1alpha1.ConditionActive {
				return m["status"] == "True", fmt.Sprintf("%v: %v", m["reason"], m["message"])
			}
		}
		return false, "no Active condition yet"
	})
	ns := cluster.Namespace(t)
	labels := map[string]string{"app": "worker"}
	rs := &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "worker", Annotations: map[string]string{
			"scaleplane.io/scale-config": `{"minReplicas": 0, "maxReplicas": 2, "idle": {"timeoutSeconds": 1}}`}},
		Spec: appsv1.ReplicaSetSpec{Replicas: ptr(int32(1)), Selector: &metav1.LabelSelector{MatchLabels: labels}, Template: podTemplate(labels)},
	}
	if err := cluster.Client.Create(ctx, rs); err != nil {
		t.Fatal(err)
	}
	framework.Eventually(t, 0, func(ctx context.Context) (bool, string) {
		got := &appsv1.ReplicaSet{}
		if err := cluster.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "worker"}, got); err != nil {
			return false, err.Error()
		}
		return *got.Spec.Replicas == 0, fmt.Sprintf("replicas %d, want 0", *got.Spec.Replicas)
	})
	var v admissionregistrationv1.ValidatingWebhookConfigurationList
	if err := cluster.Client.List(ctx, &v); err != nil {
		t.Fatal(err)
	}
	for _, c := range v.Items {
		for _, w := range c.Webhooks {
			for _, r := range w.Rules {
				for _, g := range r.APIGroups {
					if g == "apps" {
						t.Errorf("webhook entry %s on apps %v", w.Name, r.Resources)
					}
				}
			}
		}
	}
}

// A KEDA ScaledObject whose scaleTargetRef names only the Deployment (KEDA
// defaults it to apps/v1 Deployment) makes scaleplane stand down: the
// Scaling says who scales it, a Warning names it, and the count is left
// to it.
func testScaledObjectOnADeploymentStandsItDown(t *testing.T, e *env) {
	ns := cluster.Namespace(t)
	createDeployment(t, ns, "kedafn", 1, map[string]string{
		"SlimFaas/Function":                          "true",
		"SlimFaas/TimeoutSecondBeforeSetReplicasMin": "600",
	})
	waitMode(t, ns, "kedafn", v1alpha1.ScalingModeTriggers)
	so := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "keda.sh/v1alpha1", "kind": "ScaledObject",
		"metadata": map[string]any{"namespace": ns, "name": "kedafn"},
		"spec":     map[string]any{"scaleTargetRef": map[string]any{"name": "kedafn"}},
	}}
	if err := cluster.Client.Create(context.Background(), so); err != nil {
		t.Fatal(err)
	}
	findEvent(t, ns, "kedafn", v1alpha1.ReasonForeignAutoscaler, func(n string) bool { return strings.Contains(n, "ScaledObject/"+ns+"/kedafn") })
	framework.Eventually(t, 0, func(ctx context.Context) (bool, string) {
		s, err := getScaling(ctx, ns, autoscaler.ScalingName("kedafn", deploymentGK))
		if err != nil {
			return false, err.Error()
		}
		return s.Status.Mode == v1alpha1.ScalingModeExternal, fmt.Sprintf("mode %q", s.Status.Mode)
	})
	// Standing down, it leaves the count to KEDA: activity does not wake
	// anything, and a count KEDA would write stays.
	setReplicas(t, ns, "kedafn", 3)
	e.post(t, autoscaler.ActivityPath+ns+"/deployments/kedafn")
	framework.Eventually(t, 0, func(ctx context.Context) (bool, string) {
		s, err := getScaling(ctx, ns, autoscaler.ScalingName("kedafn", deploymentGK))
		if err != nil {
			return false, err.Error()
		}
		return s.Status.LastActivity != nil, "activity not recorded yet"
	})
	if r := replicas(t, ns, "kedafn"); r != 3 {
		t.Errorf("replicas %d beside a ScaledObject, want the 3 it was set to", r)
	}
}

func createDeployment(t *testing.T, ns, name string, replicas int32, annotations map[string]string) {
	t.Helper()
	labels := map[string]string{"app": name}
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Annotations: annotations},
		Spec: appsv1.DeploymentSpec{Replicas: &replicas, Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: podTemplate(labels)},
	}
	if err := cluster.Client.Create(context.Background(), d); err != nil {
		t.Fatalf("create Deployment %s: %v", name, err)
	}
}

func podTemplate(labels map[string]string) corev1.PodTemplateSpec {
	return corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "example.invalid/app"}}}}
}

func replicas(t *testing.T, ns, name string) int32 {
	t.Helper()
	d := &appsv1.Deployment{}
	if err := cluster.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, d); err != nil {
		t.Fatal(err)
	}
	return *d.Spec.Replicas
}

func setReplicas(t *testing.T, ns, name string, n int32) {
	t.Helper()
	framework.Eventually(t, 0, func(ctx context.Context) (bool, string) {
		d := &appsv1.Deployment{}
		if err := cluster.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, d); err != nil {
			return false, err.Error()
		}
		d.Spec.Replicas = &n
		if err := cluster.Client.Update(ctx, d); err != nil {
			return false, err.Error()
		}
		return true, ""
	})
}

func waitReplicas(t *testing.T, ns, name, want string, ok func(int32) bool) {
	t.Helper()
	framework.Eventually(t, 0, func(ctx context.Context) (bool, string) {
		d := &appsv1.Deployment{}
		if err := cluster.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, d); err != nil {
			return false, err.Error()
		}
		return ok(*d.Spec.Replicas), fmt.Sprintf("replicas %d, want %s", *d.Spec.Replicas, want)
	})
}

func waitMode(t *testing.T, ns, name string, mode v1alpha1.ScalingMode) {
	t.Helper()
	framework.Eventually(t, 0, func(ctx context.Context) (bool, string) {
		s, err := getScaling(ctx, ns, autoscaler.ScalingName(name, deploymentGK))
		if err != nil {
			return false, err.Error()
		}
		return s.Status.Mode == mode, fmt.Sprintf("mode %q, want %q", s.Status.Mode, mode)
	})
}

func getScaling(ctx context.Context, ns, name string) (*v1alpha1.Scaling, error) {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(autoscaler.ScalingGVK)
	if err := cluster.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, u); err != nil {
		return nil, err
	}
	s := &v1alpha1.Scaling{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, s); err != nil {
		return nil, err
	}
	return s, nil
}

// findEvent waits for an event about name with reason whose message
// passes match, and returns it.
func findEvent(t *testing.T, ns, name, reason string, match func(string) bool) string {
	t.Helper()
	var note string
	framework.Eventually(t, 0, func(ctx context.Context) (bool, string) {
		notes, err := framework.EventNotes(ctx, cluster, ns, name, reason)
		if err != nil {
			return false, err.Error()
		}
		for _, n := range notes {
			if match(n) {
				note = n
				return true, ""
			}
		}
		return false, fmt.Sprintf("no %s event for %s matches; seen %q", reason, name, notes)
	})
	return note
}

// installScaledObjectCRD serves keda.sh/v1alpha1 ScaledObjects (KEDA
// itself need not run: scaleplane only reads them).
func installScaledObjectCRD(t *testing.T) {
	t.Helper()
	yes := true
	crd := &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "scaledobjects.keda.sh"},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: "keda.sh",
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "scaledobjects", Singular: "scaledobject", Kind: "ScaledObject", ListKind: "ScaledObjectList"},
			Scope: apiextensionsv1.NamespaceScoped,
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{
				Name: "v1alpha1", Served: true, Storage: true,
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{Type: "object", XPreserveUnknownFields: &yes}},
			}},
		},
	}
	if err := cluster.Client.Create(context.Background(), crd); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	framework.Eventually(t, 0, func(ctx context.Context) (bool, string) {
		var list unstructured.UnstructuredList
		list.SetAPIVersion("keda.sh/v1alpha1")
		list.SetKind("ScaledObjectList")
		if err := cluster.Client.List(ctx, &list); err != nil {
			return false, err.Error()
		}
		return true, ""
	})
}

func jsonString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

func ptr[T any](v T) *T { return &v }
