//go:build !nodev

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// devFieldManager owns what `scaleplane dev --crd` applies.
const devFieldManager = "scaleplane-dev"

// readDevCRDs reads every CRD in the --crd files.
func readDevCRDs(files []string) ([]*apiextensionsv1.CustomResourceDefinition, error) {
	var out []*apiextensionsv1.CustomResourceDefinition
	for _, f := range files {
		crds, err := readCRDFile(f, nil)
		if err != nil {
			return nil, fmt.Errorf("--crd: %w", err)
		}
		if len(crds) == 0 {
			return nil, fmt.Errorf("--crd %s holds no CustomResourceDefinition", f)
		}
		out = append(out, crds...)
	}
	return out, nil
}

// applyCRDs installs crds with server-side apply and waits until each is
// established. Server-side apply keeps no last-applied annotation, whose
// 256 KiB limit refuses big CRDs (LeaderWorkerSet's is 1.3 MB) under
// client-side kubectl apply; applying again (a reused --data-dir) updates
// them.
func applyCRDs(ctx context.Context, c client.Client, crds []*apiextensionsv1.CustomResourceDefinition, timeout time.Duration) error {
	for _, crd := range crds {
		data, err := json.Marshal(crd)
		if err != nil {
			return fmt.Errorf("encode CRD %s: %w", crd.Name, err)
		}
		u := &unstructured.Unstructured{}
		if err := u.UnmarshalJSON(data); err != nil {
			return fmt.Errorf("encode CRD %s: %w", crd.Name, err)
		}
		u.SetGroupVersionKind(apiextensionsv1.SchemeGroupVersion.WithKind("CustomResourceDefinition"))
		u.SetResourceVersion("")
		u.SetManagedFields(nil)
		unstructured.RemoveNestedField(u.Object, "status")
		unstructured.RemoveNestedField(u.Object, "metadata", "creationTimestamp")
		if err := c.Patch(ctx, u, client.Apply, client.FieldOwner(devFieldManager), client.ForceOwnership); err != nil { //nolint:staticcheck // client.Apply is the patch type for unstructured objects
			return fmt.Errorf("apply CRD %s: %w", crd.Name, err)
		}
	}
	for _, crd := range crds {
		err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
			got := &apiextensionsv1.CustomResourceDefinition{}
			if err := c.Get(ctx, client.ObjectKey{Name: crd.Name}, got); err != nil {
				return false, nil
			}
			for _, cond := range got.Status.Conditions {
				if cond.Type == apiextensionsv1.Established && cond.Status == apiextensionsv1.ConditionTrue {
					return true, nil
				}
			}
			return false, nil
		})
		if err != nil {
			return fmt.Errorf("wait for CRD %s to be established: %w", crd.Name, err)
		}
	}
	return nil
}
