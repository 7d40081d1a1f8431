// Package objects lets scaleplane read workloads as unstructured objects
// (package profile reads every kind through field paths) while the cache
// holds them as whatever the manager's scheme knows them as: a kind
// registered in the scheme is watched once, typed, and shared with the
// embedding operator's own controllers, instead of a second, unstructured
// informer beside the operator's typed one. A kind the scheme does not know
// (the binary's profiled CRDs) is watched unstructured, with no manager-wide
// Cache.Unstructured setting.
//
// It must not decide or write anything.
package objects

import (
	"context"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Prototype is an empty object of gvk for watches and informers: typed when
// s knows gvk, else unstructured with gvk set.
func Prototype(s *runtime.Scheme, gvk schema.GroupVersionKind) client.Object {
	if s != nil && s.Recognizes(gvk) {
		if o, err := s.New(gvk); err == nil {
			if co, ok := o.(client.Object); ok {
				return co
			}
		}
	}
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(gvk)
	return u
}

// Reader returns a reader that reads an *unstructured.Unstructured of a kind
// s knows through r as the typed object (so a cache serves it from the
// typed informer) and converts the result; every other read goes to r
// unchanged.
func Reader(r client.Reader, s *runtime.Scheme) client.Reader { return reader{r, s} }

type reader struct {
	client.Reader
	scheme *runtime.Scheme
}

func (r reader) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return r.Reader.Get(ctx, key, obj, opts...)
	}
	gvk := u.GroupVersionKind()
	typed := Prototype(r.scheme, gvk)
	if _, still := typed.(*unstructured.Unstructured); still {
		return r.Reader.Get(ctx, key, obj, opts...)
	}
	if err := r.Reader.Get(ctx, key, typed, opts...); err != nil {
		return err
	}
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(typed)
	if err != nil {
		return fmt.Errorf("convert %s %s to unstructured: %w", gvk.Kind, key, err)
	}
	u.Object = m
	// Typed objects from a cache carry no TypeMeta.
	u.SetGroupVersionKind(gvk)
	return nil
}

func (r reader) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	ul, ok := list.(*unstructured.UnstructuredList)
	if !ok {
		return r.Reader.List(ctx, list, opts...)
	}
	gvk := ul.GroupVersionKind()
	listGVK := gvk
	if !r.scheme.Recognizes(listGVK) {
		return r.Reader.List(ctx, list, opts...)
	}
	o, err := r.scheme.New(listGVK)
	typed, ok := o.(client.ObjectList)
	if err != nil || !ok {
		return r.Reader.List(ctx, list, opts...)
	}
	if err := r.Reader.List(ctx, typed, opts...); err != nil {
		return err
	}
	items, err := meta.ExtractList(typed)
	if err != nil {
		return fmt.Errorf("read %s: %w", gvk.Kind, err)
	}
	itemGVK := gvk.GroupVersion().WithKind(strings.TrimSuffix(gvk.Kind, "List"))
	ul.Items = make([]unstructured.Unstructured, 0, len(items))
	for _, it := range items {
		m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(it)
		if err != nil {
			return fmt.Errorf("convert %s to unstructured: %w", itemGVK.Kind, err)
		}
		u := unstructured.Unstructured{Object: m}
		u.SetGroupVersionKind(itemGVK)
		ul.Items = append(ul.Items, u)
	}
	if lm, err := meta.ListAccessor(typed); err == nil {
		ul.SetResourceVersion(lm.GetResourceVersion())
		ul.SetContinue(lm.GetContinue())
	}
	return nil
}
