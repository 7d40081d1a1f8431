package app

import (
	"context"
	"fmt"
	"sort"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	cmapi "github.com/cert-manager/cert-manager/pkg/apis/certmanager/v1"

	configv1alpha2 "github.com/scaleplane/scaleplane/api/config/v1alpha2"
	"github.com/scaleplane/scaleplane/certs"
	"github.com/scaleplane/scaleplane/profile"
	"github.com/scaleplane/scaleplane/webhooks"
)

// RenderWebhookConfigurations returns the two webhook configurations a
// start outside GitOps mode would leave in the cluster for opts and views
// (the configuration file's kinds, and the ScaleProfiles' kinds the user
// wants routed): an entry per kind and role calling the dispatcher at the
// Service (or opts.WebhookURL), the owner's label, and in cert-manager mode
// the annotation that has cert-manager's CA injector fill caBundle. The
// CA bundle itself is left out: cert-manager (or, in files mode, the user)
// owns it. `scaleplane render webhooks` prints them.
//
// With webhook.admission policies or auto, the profiles' admission
// policies and bindings (policies.ForOwner) come first, and the entries
// carry the match conditions of policies mode: a repository targets a
// cluster it knows, so auto renders as policies (use webhooks for an API
// server before Kubernetes 1.36).
func RenderWebhookConfigurations(opts Options, views []*profile.Compiled) []client.Object {
	opts = opts.withDefaults()
	var out []client.Object
	wc := webhooks.ConfigurationOptionsFromConfig(opts.Config.Webhook)
	if wc.Admission == configv1alpha2.AdmissionPolicies || wc.Admission == configv1alpha2.AdmissionAuto {
		wc.Admission = configv1alpha2.AdmissionPolicies
		for _, view := range views {
			out = append(out, webhooks.PolicySet(view, wc).Objects()...)
		}
	}
	m, v := webhooks.DispatchConfigurations(views, wc, clientConfigFor(opts))
	if opts.CertMode == CertCertManager {
		ann := map[string]string{certs.InjectCAFromAnnotation: certs.InjectCAFrom(certsOptionsFor(opts).Default())}
		m.SetAnnotations(ann)
		v.SetAnnotations(map[string]string{certs.InjectCAFromAnnotation: ann[certs.InjectCAFromAnnotation]})
	}
	return append(out, m, v)
}

// RenderCertificates returns, in the order to apply them, the cert-manager
// objects a start in cert-manager mode creates when they are missing: the
// self-signed bootstrap Issuer, the CA Certificate and Issuer, and the
// webhook's serving Certificate. `scaleplane render certificates` prints
// them.
func RenderCertificates(opts Options) ([]client.Object, error) {
	opts = opts.withDefaults()
	if opts.CertMode != CertCertManager {
		return nil, fmt.Errorf("certificates are cert-manager objects: render them with --cert-mode=%s (in %s mode there are none to render)", CertCertManager, opts.CertMode)
	}
	return certs.CertManagerObjects(certsOptionsFor(opts).Default()), nil
}

// prepareGitOps is prepareWebhooks in GitOps mode: it reads, and writes
// nothing but the serving key pair's files. What the repository left out
// is logged with the command that prints it, and does not stop the start:
// Argo CD and Flux may apply the configurations after the Deployment.
func (a *App) prepareGitOps(ctx context.Context) error {
	log := ctrl.Log.WithName("scaleplane").WithName("gitops")
	views, err := a.withLiveProfiles(ctx)
	if err != nil {
		return err
	}
	missing, err := webhooks.MissingDispatchEntries(ctx, a.direct, views, webhooks.ConfigurationOptionsFromConfig(a.opts.Config.Webhook))
	if err != nil {
		return err
	}
	if msg := describeMissing(missing); msg != "" {
		log.Info("GitOps mode: the webhook configurations do not route every profiled kind to scaleplane; objects of these kinds are admitted without defaulting or validation until the entries are applied: run scaleplane render webhooks with this configuration and commit its output", "missing", msg)
	}
	if a.opts.CertMode != CertCertManager {
		return nil
	}
	o := certsOptionsFor(a.opts).Default()
	crt := &cmapi.Certificate{}
	key := client.ObjectKey{Namespace: o.SecretNamespace, Name: certs.ServingCertificateName}
	switch err := a.direct.Get(ctx, key, crt); {
	case apierrors.IsNotFound(err):
		log.Info("GitOps mode: the serving Certificate is not in the cluster, and scaleplane does not create it; run scaleplane render certificates and commit its output", "certificate", key.String())
	case err != nil:
		return fmt.Errorf("read certificate %s: %w", key, err)
	default:
		if gaps := certs.MissingIPAddresses(crt, o.IPAddresses); len(gaps) > 0 {
			return fmt.Errorf("certificate %s lacks %s in spec.ipAddresses, the address the API server calls the webhook on; render it again with --webhook-url and commit it", key, strings.Join(gaps, ", "))
		}
	}
	if err := a.rotator.Bootstrap(ctx); err != nil {
		return fmt.Errorf("webhook certificate: %w", err)
	}
	return nil
}

// describeMissing lists missing entries by kind, sorted, for a log line or
// a condition's message; empty when nothing is missing.
func describeMissing(missing map[schema.GroupVersionResource][]string) string {
	var parts []string
	for gvr, entries := range missing {
		parts = append(parts, gvr.GroupResource().String()+" ("+strings.Join(entries, ", ")+")")
	}
	sort.Strings(parts)
	return strings.Join(parts, "; ")
}
