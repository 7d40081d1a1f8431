package certs

import (
	"errors"
	"fmt"
	"net"
	"time"
)

// Mode says who issues the webhook's serving certificate.
type Mode string

const (
	// ModeSelfSigned: the Rotator generates a CA and a serving certificate,
	// stores them in the Secret and injects the CA into the webhook
	// configurations itself. It is what `scaleplane dev` uses.
	ModeSelfSigned Mode = "self-signed"
	// ModeCertManager: cert-manager issues the Secret and its CA injector
	// fills caBundle; the Rotator only mirrors the Secret into CertDir (when
	// the kubelet does not) and gates readiness.
	ModeCertManager Mode = "cert-manager"
)

// ParseMode parses a --cert-mode flag value.
func ParseMode(s string) (Mode, error) {
	switch m := Mode(s); m {
	case ModeSelfSigned, ModeCertManager:
		return m, nil
	}
	return "", fmt.Errorf("cert mode %q is not one of %q, %q", s, ModeSelfSigned, ModeCertManager)
}

// Default file and Secret keys. They are the keys cert-manager writes and the
// names controller-runtime's webhook server reads by default, so a Secret
// issued by either mode can be mounted unchanged.
const (
	CertKey   = "tls.crt"
	KeyKey    = "tls.key"
	CAKey     = "ca.crt"
	CAKeyKey  = "ca.key"
	defaultCN = "scaleplane-webhook-ca"
)

// Defaults applied by Options.Default. The CA outlives many serving
// certificates so that most renewals leave caBundle unchanged.
const (
	DefaultCAValidity         = 5 * 365 * 24 * time.Hour
	DefaultServingValidity    = 365 * 24 * time.Hour
	DefaultCAPropagationDelay = 30 * time.Second
)

// Options configures a Rotator. Zero values are replaced by Default.
type Options struct {
	// Mode selects who issues the certificate. Default ModeSelfSigned.
	Mode Mode

	// SecretNamespace and SecretName name the Secret (type kubernetes.io/tls)
	// holding tls.crt, tls.key and ca.crt (and, in self-signed mode, ca.key).
	// In a cluster this is the Secret the webhook Deployment mounts, e.g.
	// scaleplane-system/scaleplane-webhook-server-cert. Required.
	SecretNamespace string
	SecretName      string

	// DNSNames are the subject alternative names of the serving certificate,
	// normally ServiceDNSNames(service, namespace). Self-signed mode needs
	// DNSNames or IPAddresses; a change here reissues the certificate.
	DNSNames []string
	// IPAddresses are IP subject alternative names, for an API server that
	// calls the webhook by URL on an address rather than through a Service
	// (`scaleplane dev`, tests: 127.0.0.1).
	IPAddresses []net.IP

	// CACommonName is the subject of the self-signed CA. Default
	// "scaleplane-webhook-ca".
	CACommonName string
	// CAValidity is how long a generated CA is valid. Default 5 years.
	CAValidity time.Duration
	// CARenewBefore is how long before the CA expires a new CA is staged.
	// Default CAValidity/3. Must exceed RenewBefore+CAPropagationDelay so a
	// serving certificate (which never outlives its CA) is always reissued
	// under the new CA before its own renewal is due.
	CARenewBefore time.Duration
	// ServingValidity is how long a serving certificate is valid (capped at
	// the CA's expiry). Default 1 year.
	ServingValidity time.Duration
	// RenewBefore is how long before the serving certificate expires it is
	// reissued with a new key. Default ServingValidity/3.
	RenewBefore time.Duration
	// CAPropagationDelay is how long a new CA sits in caBundle next to the
	// old one before any serving certificate signed by it is presented. The
	// API server picks up webhook configuration changes through an informer,
	// so switching immediately could make it reject the new chain for a
	// moment. Default 30s.
	CAPropagationDelay time.Duration

	// MutatingWebhookConfigurations and ValidatingWebhookConfigurations
	// name scaleplane's own webhook configurations. In self-signed mode the
	// Rotator writes the CA bundle into caBundle of every webhook in each;
	// configurations that do not exist yet are injected when they appear.
	MutatingWebhookConfigurations   []string
	ValidatingWebhookConfigurations []string
	// OwnsEntry, when set, limits the injection to the webhooks it accepts
	// by name (webhooks.OwnsEntry for the owner): another embedder's entry
	// kept in the same configuration calls its own server, with its own
	// CA, and must keep it. Nil injects every webhook of the named
	// configurations.
	OwnsEntry func(entryName string) bool

	// CertDir is where the Rotator writes CertName, KeyName and CAName for
	// the webhook server (webhook.Options.CertDir). Empty: no files are
	// written (a Secret volume provides them, see MountedSecret).
	CertDir string
	// CertName, KeyName and CAName are the file names in CertDir. Defaults
	// tls.crt, tls.key, ca.crt, matching controller-runtime's defaults.
	CertName string
	KeyName  string
	CAName   string
	// MountedSecret says CertDir is a Secret volume kept up to date by the
	// kubelet: the Rotator never writes it and readiness only checks that a
	// valid pair is present there.
	MountedSecret bool

	// CertManager configures the objects EnsureCertManager creates; only
	// cert-manager mode uses it.
	CertManager CertManagerOptions
}

// ServiceDNSNames returns the names the API server uses to reach a webhook
// Service: name.namespace.svc and its cluster.local form.
func ServiceDNSNames(service, namespace string) []string {
	return []string{
		fmt.Sprintf("%s.%s.svc", service, namespace),
		fmt.Sprintf("%s.%s.svc.cluster.local", service, namespace),
	}
}

// Default returns a copy of o with every zero field set to its default.
func (o Options) Default() Options {
	if o.Mode == "" {
		o.Mode = ModeSelfSigned
	}
	if o.CACommonName == "" {
		o.CACommonName = defaultCN
	}
	if o.CAValidity == 0 {
		o.CAValidity = DefaultCAValidity
	}
	if o.CARenewBefore == 0 {
		o.CARenewBefore = o.CAValidity / 3
	}
	if o.ServingValidity == 0 {
		o.ServingValidity = DefaultServingValidity
	}
	if o.RenewBefore == 0 {
		o.RenewBefore = o.ServingValidity / 3
	}
	if o.CAPropagationDelay == 0 {
		o.CAPropagationDelay = DefaultCAPropagationDelay
	}
	if o.CertName == "" {
		o.CertName = CertKey
	}
	if o.KeyName == "" {
		o.KeyName = KeyKey
	}
	if o.CAName == "" {
		o.CAName = CAKey
	}
	return o
}

// Validate reports every problem of defaulted options at once.
func (o Options) Validate() error {
	var errs []error
	switch o.Mode {
	case ModeSelfSigned, ModeCertManager:
	default:
		errs = append(errs, fmt.Errorf("mode %q is not one of %q, %q", o.Mode, ModeSelfSigned, ModeCertManager))
	}
	if o.SecretNamespace == "" || o.SecretName == "" {
		errs = append(errs, errors.New("secret namespace and name are required"))
	}
	if o.Mode == ModeSelfSigned && len(o.DNSNames) == 0 && len(o.IPAddresses) == 0 {
		errs = append(errs, errors.New("self-signed mode needs DNSNames or IPAddresses for the serving certificate"))
	}
	if o.RenewBefore <= 0 || o.RenewBefore >= o.ServingValidity {
		errs = append(errs, fmt.Errorf("renewBefore %s must be positive and shorter than servingValidity %s", o.RenewBefore, o.ServingValidity))
	}
	if o.CARenewBefore >= o.CAValidity {
		errs = append(errs, fmt.Errorf("caRenewBefore %s must be shorter than caValidity %s", o.CARenewBefore, o.CAValidity))
	}
	if o.CARenewBefore < o.RenewBefore+o.CAPropagationDelay {
		errs = append(errs, fmt.Errorf("caRenewBefore %s must be at least renewBefore+caPropagationDelay (%s)", o.CARenewBefore, o.RenewBefore+o.CAPropagationDelay))
	}
	return errors.Join(errs...)
}
