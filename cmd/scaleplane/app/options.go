package app

import (
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	cmmeta "github.com/cert-manager/cert-manager/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/rest"

	configv1alpha2 "github.com/scaleplane/scaleplane/api/config/v1alpha2"
	"github.com/scaleplane/scaleplane/certs"
	"github.com/scaleplane/scaleplane/webhooks"
)

// CertMode says how the webhook's serving certificate is obtained.
type CertMode string

const (
	// CertSelfSigned: scaleplane generates a CA and serving certificate into
	// a Secret and injects the CA into its webhook configurations.
	CertSelfSigned CertMode = CertMode(certs.ModeSelfSigned)
	// CertCertManager: cert-manager issues the Secret (copied into CertDir)
	// and its CA injector fills caBundle; scaleplane creates the Issuer and
	// Certificate when they are missing.
	CertCertManager CertMode = CertMode(certs.ModeCertManager)
	// CertFiles: the key pair in CertDir is provided by someone else (tests,
	// a hand-made Secret); scaleplane only reloads it when it changes.
	CertFiles CertMode = "files"
)

// Options configures the manager. Every field is documented with its
// default; New rejects combinations that cannot work with an error that
// says what to change.
type Options struct {
	// Config is the component configuration (profiles, webhook, autoscaler,
	// metrics, and the servers' limits: timeouts, requests in flight, body
	// sizes, HTTP/2). Required; already defaulted and validated.
	Config *configv1alpha2.Configuration
	// RestConfig reaches the API server. Required.
	RestConfig *rest.Config

	// Namespace is where scaleplane runs: its Secret, leader-election lease
	// and cert-manager objects live there. Default scaleplane-system.
	Namespace string
	// ServiceName is the webhook Service; its DNS names go in the serving
	// certificate. Default scaleplane-webhook-service.
	ServiceName string
	// SecretName holds the serving key pair. Default
	// scaleplane-webhook-server-cert.
	SecretName string
	// CertMode selects who issues the serving certificate. Default
	// self-signed.
	CertMode CertMode
	// CertManagerIssuer, in cert-manager mode, names the issuer that signs
	// the serving certificate (a platform's ClusterIssuer, say; see
	// ParseIssuerRef). Nil: scaleplane makes its own self-signed Issuer, CA
	// Certificate and CA Issuer, as config/certmanager does. With it set,
	// scaleplane creates none of those, only the serving Certificate.
	CertManagerIssuer *cmmeta.IssuerReference
	// WebhookURL, when set, makes the webhook configurations call
	// https://<WebhookURL><path> instead of the Service: for an API server
	// outside the cluster network (`scaleplane dev`). The serving certificate
	// then carries WebhookIPs.
	WebhookURL string
	// WebhookIPs are IP SANs for the serving certificate (dev: 127.0.0.1).
	WebhookIPs []string
	// ManageWebhookConfigurations creates the webhook configurations when
	// they are missing and keeps their rules in line with the profiles.
	// Default true; tests that install their own set it false.
	ManageWebhookConfigurations *bool
	// GitOps leaves the webhook configurations and the cert-manager
	// objects to the user's repository (Argo CD, Flux): scaleplane creates,
	// syncs, re-points and annotates none of them, and creates no
	// namespace, so what the repository applies is what stays.
	// `scaleplane render webhooks|certificates` prints them as a start
	// outside GitOps mode would write them (Render). A kind whose entries
	// are missing is logged at start and, for a ScaleProfile, shown in its
	// Active condition (WebhooksNotInstalled). Needs CertMode cert-manager
	// (cert-manager's CA injector fills caBundle) or files: the
	// self-signed CA is made in the cluster and would have to be written
	// into the configurations. Default false.
	GitOps bool
	// NoWebhookServer runs only the controllers (a webhook outage drill).
	NoWebhookServer bool

	// MetricsAddr is the metrics server's address ("0" disables it).
	// Default :8443, served over TLS behind Kubernetes authentication and
	// authorization; the debug endpoints share it.
	MetricsAddr string
	// MetricsCertDir holds the metrics server's certificate and key
	// (MetricsCertName, MetricsKeyName; default tls.crt and tls.key),
	// reloaded when they change: a Secret mounted from cert-manager, so
	// Prometheus can verify the server. Empty: a self-signed certificate
	// made at start.
	MetricsCertDir  string
	MetricsCertName string
	MetricsKeyName  string
	// ProbeAddr serves /healthz and /readyz. Default :8081. "0" disables.
	ProbeAddr string
	// LeaderElection makes only one replica run controllers and the
	// autoscaler; every replica serves webhooks. Default false (the
	// Deployment manifest turns it on).
	LeaderElection bool
	// Dev opens the debug endpoints without authentication and serves
	// metrics over plain HTTP. Only `scaleplane dev` sets it.
	Dev bool
	// OnAdmission, when set, is told about every admission review the
	// webhooks answer (see webhooks.Options.OnReview). Only `scaleplane dev`
	// sets it, to print refusals as they happen.
	OnAdmission webhooks.ReviewHook
	// OnMetricsRequest, when set, is told about every request the metrics
	// server answered, with its status. Only `scaleplane dev` sets it, to
	// print activity signals (POST /activity/...) as they arrive.
	OnMetricsRequest func(r *http.Request, status int)
	// SkipControllerNameValidation lets several managers run in one process
	// (tests that start the app more than once); controller-runtime refuses
	// duplicate controller names otherwise.
	SkipControllerNameValidation bool
	// GracefulShutdownTimeout bounds how long runnables get to stop.
	// Default 30 s.
	GracefulShutdownTimeout time.Duration
}

func (o Options) withDefaults() Options {
	if o.Namespace == "" {
		o.Namespace = "scaleplane-system"
	}
	if o.ServiceName == "" {
		o.ServiceName = "scaleplane-webhook-service"
	}
	if o.SecretName == "" {
		o.SecretName = "scaleplane-webhook-server-cert"
	}
	if o.CertMode == "" {
		o.CertMode = CertSelfSigned
	}
	if o.ManageWebhookConfigurations == nil {
		yes := true
		o.ManageWebhookConfigurations = &yes
	}
	if o.MetricsAddr == "" {
		o.MetricsAddr = ":8443"
	}
	if o.MetricsCertName == "" {
		o.MetricsCertName = "tls.crt"
	}
	if o.MetricsKeyName == "" {
		o.MetricsKeyName = "tls.key"
	}
	if o.ProbeAddr == "" {
		o.ProbeAddr = ":8081"
	}
	if o.GracefulShutdownTimeout == 0 {
		o.GracefulShutdownTimeout = 30 * time.Second
	}
	o.Config = excludingOwnNamespace(o.Config, o.Namespace)
	return o
}

// excludingOwnNamespace returns cfg with namespace among the namespaces no
// webhook entry reaches (a copy when it adds it; cfg itself is the
// caller's): a fail-closed scaleplane that is down must never refuse the
// writes that repair it, such as a profiled object an operator keeps beside
// it (docs/production.md).
func excludingOwnNamespace(cfg *configv1alpha2.Configuration, namespace string) *configv1alpha2.Configuration {
	if cfg == nil {
		return nil
	}
	excluded := cfg.Webhook.ExcludedNamespaces
	if excluded == nil {
		excluded = []string{configv1alpha2.DefaultExcludedNamespace}
	}
	if slices.Contains(excluded, namespace) {
		return cfg
	}
	out := *cfg
	out.Webhook.ExcludedNamespaces = append(slices.Clone(excluded), namespace)
	return &out
}

// ParseIssuerRef reads an issuer reference written KIND/NAME, with KIND
// Issuer or ClusterIssuer (group cert-manager.io), or KIND.GROUP/NAME for
// an external issuer's own kind (e.g. AWSPCAClusterIssuer.awspca.cert-manager.io/ca).
func ParseIssuerRef(s string) (*cmmeta.IssuerReference, error) {
	kind, name, ok := strings.Cut(s, "/")
	if !ok || kind == "" || name == "" || strings.Contains(name, "/") {
		return nil, fmt.Errorf("issuer %q: write it KIND/NAME, e.g. ClusterIssuer/platform-ca (or KIND.GROUP/NAME for an external issuer)", s)
	}
	for _, msg := range validation.IsDNS1123Subdomain(name) {
		return nil, fmt.Errorf("issuer %q: name %q: %s", s, name, msg)
	}
	group := "cert-manager.io"
	if k, g, dotted := strings.Cut(kind, "."); dotted {
		kind, group = k, g
		for _, msg := range validation.IsDNS1123Subdomain(group) {
			return nil, fmt.Errorf("issuer %q: group %q: %s", s, group, msg)
		}
	} else if kind != "Issuer" && kind != "ClusterIssuer" {
		return nil, fmt.Errorf("issuer %q: kind %q is not Issuer or ClusterIssuer; an external issuer's kind needs its group: KIND.GROUP/NAME", s, kind)
	}
	return &cmmeta.IssuerReference{Kind: kind, Name: name, Group: group}, nil
}

func (o Options) validate() error {
	var errs []error
	if o.CertManagerIssuer != nil && o.CertMode != CertCertManager {
		errs = append(errs, fmt.Errorf("an issuer (--cert-manager-issuer) is used in cert-manager mode only; add --cert-mode=%s or drop it", CertCertManager))
	}
	if o.Config == nil {
		errs = append(errs, errors.New("a component configuration is required (--config)"))
	}
	if o.RestConfig == nil {
		errs = append(errs, errors.New("a connection to the API server is required (--kubeconfig or in-cluster)"))
	}
	if o.MetricsCertDir != "" && o.Dev {
		errs = append(errs, errors.New("a metrics certificate (--metrics-cert-path) is for the HTTPS metrics server; dev mode serves metrics over plain HTTP"))
	}
	if o.GitOps && o.CertMode == CertSelfSigned {
		errs = append(errs, fmt.Errorf("GitOps mode leaves the webhook configurations to your repository, but the self-signed CA is made in the cluster and scaleplane would have to write it into them; use --cert-mode=%s (cert-manager's CA injector fills caBundle; scaleplane render certificates prints the Issuer and Certificate) or --cert-mode=%s (you provide the key pair and caBundle)", CertCertManager, CertFiles))
	}
	switch o.CertMode {
	case CertSelfSigned, CertCertManager, CertFiles:
	default:
		errs = append(errs, fmt.Errorf("cert mode %q is not one of %q, %q, %q", o.CertMode, CertSelfSigned, CertCertManager, CertFiles))
	}
	return errors.Join(errs...)
}
