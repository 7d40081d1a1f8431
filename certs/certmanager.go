package certs

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	cmapi "github.com/cert-manager/cert-manager/pkg/apis/certmanager/v1"
	cmmeta "github.com/cert-manager/cert-manager/pkg/apis/meta/v1"
)

// Names of the objects of the default cert-manager setup; config/certmanager
// uses the same names.
const (
	SelfSignedIssuerName   = "scaleplane-selfsigned-issuer"
	CACertificateName      = "scaleplane-ca"
	CASecretName           = "scaleplane-ca"
	CAIssuerName           = "scaleplane-ca-issuer"
	ServingCertificateName = "scaleplane-serving-cert"
)

// CertManagerVersion is the cert-manager release whose API types (and CRDs,
// in tests) this package is built against.
const CertManagerVersion = "v1.21.2"

// ErrCertManagerNotInstalled is returned (wrapped, with what to do) when
// cert-manager mode is chosen but cert-manager's CRDs are not served.
var ErrCertManagerNotInstalled = errors.New("cert-manager is not installed")

// CertManagerOptions are the settings only cert-manager mode uses.
type CertManagerOptions struct {
	// IssuerRef names an issuer of the user's own (Issuer in the Secret's
	// namespace, or a ClusterIssuer). Nil: a self-signed Issuer bootstraps a
	// CA Certificate and a CA Issuer that signs the serving certificate.
	IssuerRef *cmmeta.IssuerReference
	// CertificateName names the serving Certificate. Default
	// "scaleplane-serving-cert".
	CertificateName string
	// Duration and RenewBefore of the serving Certificate; zero leaves
	// cert-manager's defaults (90 days, renewed at two thirds).
	Duration    time.Duration
	RenewBefore time.Duration
}

func (o Options) certificateName() string {
	if o.CertManager.CertificateName != "" {
		return o.CertManager.CertificateName
	}
	return ServingCertificateName
}

// InjectCAFrom is the value of InjectCAFromAnnotation for o's Certificate:
// "namespace/name".
func InjectCAFrom(o Options) string {
	return o.SecretNamespace + "/" + o.certificateName()
}

// SelfSignedIssuer returns the Issuer that signs the bootstrap CA.
func SelfSignedIssuer(namespace string) *cmapi.Issuer {
	return &cmapi.Issuer{
		TypeMeta:   metav1.TypeMeta{APIVersion: cmapi.SchemeGroupVersion.String(), Kind: cmapi.IssuerKind},
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: SelfSignedIssuerName},
		Spec: cmapi.IssuerSpec{IssuerConfig: cmapi.IssuerConfig{
			SelfSigned: &cmapi.SelfSignedIssuer{},
		}},
	}
}

// CACertificate returns the CA Certificate issued by SelfSignedIssuer into
// the Secret CASecretName.
func CACertificate(namespace string) *cmapi.Certificate {
	return &cmapi.Certificate{
		TypeMeta:   metav1.TypeMeta{APIVersion: cmapi.SchemeGroupVersion.String(), Kind: cmapi.CertificateKind},
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: CACertificateName},
		Spec: cmapi.CertificateSpec{
			IsCA:       true,
			CommonName: defaultCN,
			SecretName: CASecretName,
			// As long-lived as the self-signed mode's CA, so serving renewals
			// leave caBundle unchanged.
			Duration:    &metav1.Duration{Duration: DefaultCAValidity},
			RenewBefore: &metav1.Duration{Duration: DefaultCAValidity / 3},
			PrivateKey:  &cmapi.CertificatePrivateKey{Algorithm: cmapi.ECDSAKeyAlgorithm, Size: 256},
			IssuerRef:   cmmeta.IssuerReference{Name: SelfSignedIssuerName, Kind: cmapi.IssuerKind, Group: cmapi.SchemeGroupVersion.Group},
		},
	}
}

// CAIssuer returns the Issuer that signs serving certificates with the CA
// in CASecretName.
func CAIssuer(namespace string) *cmapi.Issuer {
	return &cmapi.Issuer{
		TypeMeta:   metav1.TypeMeta{APIVersion: cmapi.SchemeGroupVersion.String(), Kind: cmapi.IssuerKind},
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: CAIssuerName},
		Spec: cmapi.IssuerSpec{IssuerConfig: cmapi.IssuerConfig{
			CA: &cmapi.CAIssuer{SecretName: CASecretName},
		}},
	}
}

// ServingCertificate returns the webhook's serving Certificate: o's names,
// written to o's Secret, with a new private key on every renewal.
func ServingCertificate(o Options) *cmapi.Certificate {
	ref := cmmeta.IssuerReference{Name: CAIssuerName, Kind: cmapi.IssuerKind, Group: cmapi.SchemeGroupVersion.Group}
	if o.CertManager.IssuerRef != nil {
		ref = *o.CertManager.IssuerRef
	}
	var ips []string
	for _, ip := range o.IPAddresses {
		ips = append(ips, ip.String())
	}
	cert := &cmapi.Certificate{
		TypeMeta:   metav1.TypeMeta{APIVersion: cmapi.SchemeGroupVersion.String(), Kind: cmapi.CertificateKind},
		ObjectMeta: metav1.ObjectMeta{Namespace: o.SecretNamespace, Name: o.certificateName()},
		Spec: cmapi.CertificateSpec{
			DNSNames:    o.DNSNames,
			IPAddresses: ips,
			SecretName:  o.SecretName,
			IssuerRef:   ref,
			Usages:      []cmapi.KeyUsage{cmapi.UsageDigitalSignature, cmapi.UsageServerAuth},
			PrivateKey: &cmapi.CertificatePrivateKey{
				Algorithm:      cmapi.ECDSAKeyAlgorithm,
				Size:           256,
				RotationPolicy: cmapi.RotationPolicyAlways,
			},
		},
	}
	if o.CertManager.Duration > 0 {
		cert.Spec.Duration = &metav1.Duration{Duration: o.CertManager.Duration}
	}
	if o.CertManager.RenewBefore > 0 {
		cert.Spec.RenewBefore = &metav1.Duration{Duration: o.CertManager.RenewBefore}
	}
	return cert
}

// CertManagerObjects returns, in creation order, the cert-manager objects
// for o: the bootstrap chain (unless o names its own issuer) and the serving
// Certificate.
func CertManagerObjects(o Options) []client.Object {
	var objs []client.Object
	if o.CertManager.IssuerRef == nil {
		objs = append(objs, SelfSignedIssuer(o.SecretNamespace), CACertificate(o.SecretNamespace), CAIssuer(o.SecretNamespace))
	}
	return append(objs, ServingCertificate(o))
}

// CheckCertManager returns an error wrapping ErrCertManagerNotInstalled,
// saying what to install, when the API server does not serve cert-manager's
// Issuer and Certificate kinds.
func CheckCertManager(c client.Client) error {
	var missing []string
	for _, kind := range []string{cmapi.IssuerKind, cmapi.CertificateKind} {
		gk := schema.GroupKind{Group: cmapi.SchemeGroupVersion.Group, Kind: kind}
		if _, err := c.RESTMapper().RESTMapping(gk, cmapi.SchemeGroupVersion.Version); err != nil {
			if meta.IsNoMatchError(err) {
				missing = append(missing, kind)
				continue
			}
			return fmt.Errorf("look up %s: %w", gk, err)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("%w: the API server has no %s in %s; install cert-manager %s or newer "+
			"(kubectl apply -f https://github.com/cert-manager/cert-manager/releases/download/%s/cert-manager.yaml) "+
			"or run scaleplane with --cert-mode=self-signed",
			ErrCertManagerNotInstalled, strings.Join(missing, ", "), cmapi.SchemeGroupVersion, CertManagerVersion, CertManagerVersion)
	}
	return nil
}

// EnsureCertManager creates whichever of CertManagerObjects(o) are missing
// and annotates o's webhook configurations with InjectCAFromAnnotation.
// Existing objects are left as they are: they may be the user's. c's scheme
// must include cert-manager's types (NewScheme), and c should read from the
// API server directly (client.New), since it usually runs before a manager's
// cache is started. Returns CheckCertManager's error when cert-manager is
// not installed, and an error saying what to add when the serving
// Certificate exists without one of o.IPAddresses.
func EnsureCertManager(ctx context.Context, c client.Client, o Options) error {
	o = o.Default()
	if err := CheckCertManager(c); err != nil {
		return err
	}
	for _, obj := range CertManagerObjects(o) {
		// Marked as scaleplane's, so that what an uninstall leaves is
		// found (scaleplane cleanup); what render prints is not, since
		// a repository owns it.
		obj.SetLabels(map[string]string{LabelManagedBy: ManagedByValue})
		if err := c.Create(ctx, obj); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("create %s %s/%s: %w", obj.GetObjectKind().GroupVersionKind().Kind, obj.GetNamespace(), obj.GetName(), err)
		}
	}
	if len(o.IPAddresses) > 0 {
		if err := checkIPAddresses(ctx, c, o); err != nil {
			return err
		}
	}
	value := InjectCAFrom(o)
	for _, name := range o.MutatingWebhookConfigurations {
		if err := annotate(ctx, c, &admissionregistrationv1.MutatingWebhookConfiguration{}, name, value); err != nil {
			return err
		}
	}
	for _, name := range o.ValidatingWebhookConfigurations {
		if err := annotate(ctx, c, &admissionregistrationv1.ValidatingWebhookConfiguration{}, name, value); err != nil {
			return err
		}
	}
	return nil
}

// checkIPAddresses fails when the serving Certificate, which may be the
// user's and is never edited, lacks an address the API server calls the
// webhook on: every admission would fail the TLS check while scaleplane
// looks ready.
func checkIPAddresses(ctx context.Context, c client.Client, o Options) error {
	crt := &cmapi.Certificate{}
	key := client.ObjectKey{Namespace: o.SecretNamespace, Name: o.certificateName()}
	if err := c.Get(ctx, key, crt); err != nil {
		return fmt.Errorf("get certificate %s: %w", key, err)
	}
	if missing := MissingIPAddresses(crt, o.IPAddresses); len(missing) > 0 {
		return fmt.Errorf("certificate %s lacks %s in spec.ipAddresses, the address the API server calls the webhook on; "+
			"add it with an overlay patch (docs/certs.md, \"API server outside the cluster network\") "+
			"or delete the Certificate so that scaleplane creates it with the address", key, strings.Join(missing, ", "))
	}
	return nil
}

// MissingIPAddresses returns those of ips that crt's spec.ipAddresses
// does not list.
func MissingIPAddresses(crt *cmapi.Certificate, ips []net.IP) []string {
	var missing []string
	for _, ip := range ips {
		found := false
		for _, s := range crt.Spec.IPAddresses {
			if ip.Equal(net.ParseIP(s)) {
				found = true
				break
			}
		}
		if !found {
			missing = append(missing, ip.String())
		}
	}
	return missing
}

// annotate sets InjectCAFromAnnotation with a merge patch that names only
// that annotation; a missing configuration is skipped (whoever creates it
// later must carry the annotation, as config/certmanager does).
func annotate(ctx context.Context, c client.Client, obj client.Object, name, value string) error {
	if err := c.Get(ctx, client.ObjectKey{Name: name}, obj); err != nil {
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("get webhook configuration %q: %w", name, err)
	}
	if obj.GetAnnotations()[InjectCAFromAnnotation] == value {
		return nil
	}
	patch := fmt.Appendf(nil, `{"metadata":{"annotations":{%q:%q}}}`, InjectCAFromAnnotation, value)
	if err := c.Patch(ctx, obj, client.RawPatch("application/merge-patch+json", patch)); err != nil {
		return fmt.Errorf("annotate webhook configuration %q: %w", name, err)
	}
	return nil
}
