package embedders

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	"github.com/scaleplane/scaleplane"
	"github.com/scaleplane/scaleplane/e2e/framework"
)

// workerGroup is the sample WorkerGroup as an operator's own Go type,
// registered in its manager's scheme.
type workerGroup struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              workerGroupSpec   `json:"spec,omitempty"`
	Status            workerGroupStatus `json:"status,omitempty"`
}

type workerGroupSpec struct {
	Replicas    *int32         `json:"replicas,omitempty"`
	ScalePolicy map[string]any `json:"scalePolicy,omitempty"`
	Template    map[string]any `json:"template,omitempty"`
}

type workerGroupStatus struct {
	Replicas       int32  `json:"replicas,omitempty"`
	ReadyReplicas  int32  `json:"readyReplicas,omitempty"`
	HPAPodSelector string `json:"hpaPodSelector,omitempty"`
}

type workerGroupList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []workerGroup `json:"items"`
}

// deepCopy through JSON: a test type needs no generated code.
func deepCopy[T any](in *T) *T {
	data, err := json.Marshal(in)
	if err != nil {
		panic(err)
	}
	out := new(T)
	if err := json.Unmarshal(data, out); err != nil {
		panic(err)
	}
	return out
}

func (w *workerGroup) DeepCopyObject() runtime.Object     { return deepCopy(w) }
func (w *workerGroupList) DeepCopyObject() runtime.Object { return deepCopy(w) }

// informerLog records the object type of every informer the manager's
// cache is asked for.
type informerLog struct {
	cache.Cache
	mu    sync.Mutex
	types []string
}

func (l *informerLog) GetInformer(ctx context.Context, obj client.Object, opts ...cache.InformerGetOption) (cache.Informer, error) {
	l.mu.Lock()
	l.types = append(l.types, fmt.Sprintf("%T %s", obj, obj.GetObjectKind().GroupVersionKind().Kind))
	l.mu.Unlock()
	return l.Cache.GetInformer(ctx, obj, opts...)
}

func (l *informerLog) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	if u, ok := obj.(*unstructured.Unstructured); ok {
		l.mu.Lock()
		l.types = append(l.types, "get *unstructured.Unstructured "+u.GetKind())
		l.mu.Unlock()
	}
	return l.Cache.Get(ctx, key, obj, opts...)
}

func (l *informerLog) seen() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.types...)
}

// TestTypedKindOneInformer: an operator's typed kind, set up
// with the builder on a manager without Cache.Unstructured, is watched once,
// typed (the informer the operator's own controllers share), and
// scaleplane's controller still reads and writes it (C3 writes its /scale
// selector).
func TestTypedKindOneInformer(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	gv := workerGroupGVK.GroupVersion()
	scheme.AddKnownTypeWithName(workerGroupGVK, &workerGroup{})
	scheme.AddKnownTypeWithName(gv.WithKind("WorkerGroupList"), &workerGroupList{})
	metav1.AddToGroupVersion(scheme, gv)

	var log *informerLog
	skip := true
	mgr, err := ctrl.NewManager(cluster.Config, ctrl.Options{
		Scheme:                 scheme,
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		Controller:             config.Controller{SkipNameValidation: &skip},
		WebhookServer:          webhook.NewServer(webhook.Options{Host: "127.0.0.1", Port: framework.FreePort(t), CertDir: cluster.WebhookCertDir}),
		NewCache: func(cfg *rest.Config, opts cache.Options) (cache.Cache, error) {
			c, err := cache.New(cfg, opts)
			log = &informerLog{Cache: c}
			return log, err
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	sp, err := scaleplane.New(mgr, scaleplane.Options{Owner: "typed-operator"})
	if err != nil {
		t.Fatal(err)
	}
	if err := sp.For(&workerGroup{}).WithProfile(sampleProfile(t, workerGroupGVK)).Complete(); err != nil {
		t.Fatalf("set up the typed WorkerGroup: %v", err)
	}
	startManager(t, mgr)

	ns := cluster.Namespace(t)
	wg := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{
		"replicas": int64(2), "scalePolicy": map[string]any{"minReplicas": int64(2), "maxReplicas": int64(2)},
	}}}
	wg.SetGroupVersionKind(workerGroupGVK)
	wg.SetNamespace(ns)
	wg.SetName("typed")
	// The API server may still call the webhooks of an earlier test for a
	// moment after their configurations went (it learns through a watch).
	framework.Eventually(t, 0, func(ctx context.Context) (bool, string) {
		if err := cluster.Client.Create(ctx, wg.DeepCopy()); err != nil {
			return false, err.Error()
		}
		return true, ""
	})
	want := "samples.scaleplane.io/role=leader,samples.scaleplane.io/workergroup=typed"
	framework.Eventually(t, 0, func(ctx context.Context) (bool, string) {
		got := &unstructured.Unstructured{}
		got.SetGroupVersionKind(workerGroupGVK)
		if err := cluster.Client.Get(ctx, client.ObjectKeyFromObject(wg), got); err != nil {
			return false, err.Error()
		}
		sel, _, _ := unstructured.NestedString(got.Object, "status", "hpaPodSelector")
		return sel == want, fmt.Sprintf("status.hpaPodSelector %q, want %q", sel, want)
	})
	for _, s := range log.seen() {
		if s == "*unstructured.Unstructured WorkerGroup" || s == "get *unstructured.Unstructured WorkerGroup" {
			t.Errorf("the typed kind was watched or read unstructured too: %q (every informer asked for: %v)", s, log.seen())
		}
	}
	t.Logf("informers asked for: %v", log.seen())
}

func (l *informerLog) RemoveInformer(ctx context.Context, obj client.Object) error {
	l.mu.Lock()
	l.types = append(l.types, fmt.Sprintf("remove %T %s", obj, obj.GetObjectKind().GroupVersionKind().Kind))
	l.mu.Unlock()
	return l.Cache.RemoveInformer(ctx, obj)
}
