package objects

import (
	"context"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
)

// TestTypedStaysTyped: a kind the scheme knows is read through
// its typed object (one typed informer in a cache), and comes back as the
// unstructured object package profile reads; a kind it does not know is
// read unstructured.
func TestTypedStaysTyped(t *testing.T) {
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	deploy := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web"},
		Spec:       appsv1.DeploymentSpec{Replicas: ptr.To(int32(3))},
	}
	var asked []string
	c := fake.NewClientBuilder().WithScheme(s).WithObjects(deploy).WithInterceptorFuncs(interceptor.Funcs{
		Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			asked = append(asked, fmt.Sprintf("get %T", obj))
			return c.Get(ctx, key, obj, opts...)
		},
		List: func(ctx context.Context, c client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
			asked = append(asked, fmt.Sprintf("list %T", list))
			return c.List(ctx, list, opts...)
		},
	}).Build()
	r := Reader(c, s)

	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(appsv1.SchemeGroupVersion.WithKind("Deployment"))
	if err := r.Get(context.Background(), client.ObjectKey{Namespace: "ns", Name: "web"}, u); err != nil {
		t.Fatal(err)
	}
	if got, _, _ := unstructured.NestedInt64(u.Object, "spec", "replicas"); got != 3 {
		t.Errorf("spec.replicas %d, want 3", got)
	}
	if got := u.GroupVersionKind(); got != appsv1.SchemeGroupVersion.WithKind("Deployment") {
		t.Errorf("kind %s, want apps/v1 Deployment", got)
	}
	l := &unstructured.UnstructuredList{}
	l.SetGroupVersionKind(appsv1.SchemeGroupVersion.WithKind("DeploymentList"))
	if err := r.List(context.Background(), l, client.InNamespace("ns")); err != nil {
		t.Fatal(err)
	}
	if len(l.Items) != 1 || l.Items[0].GetName() != "web" || l.Items[0].GetKind() != "Deployment" {
		t.Errorf("list %+v, want the Deployment web", l.Items)
	}
	unknown := &unstructured.Unstructured{}
	unknown.SetGroupVersionKind(schema.GroupVersionKind{Group: "example.org", Version: "v1", Kind: "Thing"})
	_ = r.Get(context.Background(), client.ObjectKey{Namespace: "ns", Name: "x"}, unknown)

	want := []string{"get *v1.Deployment", "list *v1.DeploymentList", "get *unstructured.Unstructured"}
	if diff := cmp.Diff(want, asked); diff != "" {
		t.Errorf("reads (-want +got):\n%s", diff)
	}
	if _, typed := Prototype(s, appsv1.SchemeGroupVersion.WithKind("Deployment")).(*appsv1.Deployment); !typed {
		t.Error("the prototype of a known kind is not typed")
	}
	if _, un := Prototype(s, unknown.GroupVersionKind()).(*unstructured.Unstructured); !un {
		t.Error("the prototype of an unknown kind is not unstructured")
	}
}
