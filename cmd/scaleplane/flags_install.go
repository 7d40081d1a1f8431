package main

import (
	"flag"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/scaleplane/scaleplane/cmd/scaleplane/app"
)

// bindInstallFlags binds the flags installations set beside main.go's: the
// metrics server's certificate, named as kubebuilder scaffolds them, and
// the address the API server calls the webhooks at when it cannot reach the
// Service (an API server outside the cluster network, as in the image e2e
// test). Kept apart from main.go's flags so that server-tuning flags and
// these change in different files.
func bindInstallFlags(fs *flag.FlagSet, opts *app.Options) {
	fs.StringVar(&opts.MetricsCertDir, "metrics-cert-path", "", "directory holding the metrics server's certificate and key (a mounted Secret, reloaded on change); empty: a self-signed certificate made at start")
	fs.StringVar(&opts.MetricsCertName, "metrics-cert-name", "tls.crt", "certificate file name in --metrics-cert-path")
	fs.StringVar(&opts.MetricsKeyName, "metrics-cert-key", "tls.key", "key file name in --metrics-cert-path")
	bindWebhookURL(fs, opts)
	bindIssuer(fs, opts)
	fs.BoolVar(&opts.GitOps, "gitops", false, "leave the webhook configurations and cert-manager objects to your repository (Argo CD, Flux): write none of them; print them with scaleplane render webhooks|certificates. Needs --cert-mode=cert-manager or files")
}

// bindIssuer binds --cert-manager-issuer, which the manager and scaleplane
// render certificates share: with it, neither makes a self-signed chain.
func bindIssuer(fs *flag.FlagSet, opts *app.Options) {
	fs.Func("cert-manager-issuer", "KIND/NAME of the issuer that signs the webhook's serving certificate in cert-manager mode (Issuer in scaleplane's namespace or ClusterIssuer; KIND.GROUP/NAME for an external issuer); empty: scaleplane makes its own self-signed CA", func(s string) error {
		ref, err := app.ParseIssuerRef(s)
		if err != nil {
			return err
		}
		opts.CertManagerIssuer = ref
		return nil
	})
}

// bindWebhookURL binds --webhook-url, which the manager and scaleplane
// render share: the address is in the entries and the certificate.
func bindWebhookURL(fs *flag.FlagSet, opts *app.Options) {
	fs.Func("webhook-url", "https://HOST:PORT the webhook configurations call instead of the webhook Service, for an API server outside the cluster network; an IP host is added to the self-signed certificate", func(s string) error {
		u, err := url.Parse(s)
		if err != nil || u.Scheme != "https" || u.Hostname() == "" || u.User != nil || (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" {
			return fmt.Errorf("write it as https://HOST:PORT, e.g. https://127.0.0.1:9443")
		}
		if p := u.Port(); p != "" {
			if n, err := strconv.Atoi(p); err != nil || n < 1 || n > 65535 {
				return fmt.Errorf("port %s is not between 1 and 65535; write it as https://HOST:PORT, e.g. https://127.0.0.1:9443", p)
			}
		} else if strings.HasSuffix(u.Host, ":") {
			return fmt.Errorf("the port is empty; write it as https://HOST:PORT, e.g. https://127.0.0.1:9443")
		}
		opts.WebhookURL = "https://" + u.Host
		if ip := net.ParseIP(u.Hostname()); ip != nil {
			opts.WebhookIPs = append(opts.WebhookIPs, ip.String())
		}
		return nil
	})
}

// checkObjectNames refuses, before anything is built or printed, names the
// API server would refuse or that would change what a manifest means: the
// namespace is a DNS-1123 label, the Service a DNS-1035 label, the Secret a
// DNS-1123 subdomain.
func checkObjectNames(opts *app.Options) error {
	var errs []string
	for _, n := range []struct {
		flag, value string
		check       func(string) []string
	}{
		{"--namespace", opts.Namespace, validation.IsDNS1123Label},
		{"--webhook-service", opts.ServiceName, validation.IsDNS1035Label},
		{"--webhook-secret", opts.SecretName, validation.IsDNS1123Subdomain},
	} {
		if msgs := n.check(n.value); len(msgs) > 0 {
			errs = append(errs, fmt.Sprintf("%s=%q: %s", n.flag, n.value, strings.Join(msgs, "; ")))
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("%s", strings.Join(errs, "\n"))
	}
	return nil
}
