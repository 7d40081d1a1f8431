package app

import (
	"context"
	"fmt"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/scaleplane/scaleplane/profile"
)

// schemaReadTimeout bounds reading the CRDs at start.
const schemaReadTimeout = 15 * time.Second

// withSchemas returns views carrying the limits of their CRDs' served
// schemas (contract M7, S2, C6), read once at start; a live profile change
// calls profile.Compiled.WithCRD again. A profile that disagrees with its
// CRD stops the start with every problem named. A CRD that cannot be read
// (not installed yet, no RBAC to read CRDs) leaves that kind without
// limits, as before schema awareness, and says so in the log.
func withSchemas(cfg *rest.Config, views []*profile.Compiled) ([]*profile.Compiled, error) {
	scheme := runtime.NewScheme()
	if err := apiextensionsv1.AddToScheme(scheme); err != nil {
		return nil, fmt.Errorf("build CRD scheme: %w", err)
	}
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return nil, fmt.Errorf("build CRD client: %w", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), schemaReadTimeout)
	defer cancel()
	log := ctrl.Log.WithName("scaleplane")
	out := make([]*profile.Compiled, len(views))
	for i, v := range views {
		out[i] = v
		gvr := v.GVR()
		name := gvr.Resource + "." + gvr.Group
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := c.Get(ctx, client.ObjectKey{Name: name}, crd); err != nil {
			log.Info("schema limits unknown: scaleplane cannot check its writes against the CRD's schema (M7, S2, C6)", "crd", name, "error", err.Error())
			continue
		}
		if out[i], err = v.WithCRD(crd); err != nil {
			return nil, err
		}
	}
	return out, nil
}
