package app

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
)

// preflight checks, before anything talks to the API server, what the pod
// gives the binary: a writable cert dir, a readable metrics key pair, CA
// certificates when a remote source needs them. Each of these otherwise
// fails late and far from its cause (a readiness that never comes, a
// self-signed metrics certificate used silently, "certificate signed by
// unknown authority" on every query), so each error names the setting or
// the volume to fix.
func (a *App) preflight() error {
	var errs []error
	if !a.opts.NoWebhookServer && a.opts.CertMode != CertFiles {
		if err := checkWritable(a.opts.Config.Webhook.CertDir); err != nil {
			errs = append(errs, fmt.Errorf("webhook.certDir %s: %w; scaleplane writes the serving certificate there: mount a writable volume (the Deployment's emptyDir \"cert\") at it", a.opts.Config.Webhook.CertDir, err))
		}
	}
	if dir := a.opts.MetricsCertDir; dir != "" {
		cert, key := filepath.Join(dir, a.opts.MetricsCertName), filepath.Join(dir, a.opts.MetricsKeyName)
		if _, err := tls.LoadX509KeyPair(cert, key); err != nil {
			errs = append(errs, fmt.Errorf("--metrics-cert-path %s: %w; mount the metrics certificate's Secret there, or drop the flag for a self-signed certificate", dir, err))
		}
	}
	if u, err := url.Parse(a.opts.Config.Autoscaler.PrometheusURL); err == nil && u.Scheme == "https" {
		if err := checkSystemRoots(); err != nil {
			errs = append(errs, fmt.Errorf("autoscaler.prometheusURL %s is HTTPS but %w; use an image with CA certificates (/etc/ssl/certs/ca-certificates.crt) or point SSL_CERT_FILE at a bundle", u.Redacted(), err))
		}
	}
	return errors.Join(errs...)
}

// checkWritable creates dir if needed and a file in it, then removes the
// file.
func checkWritable(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("cannot create it: %w", err)
	}
	f, err := os.CreateTemp(dir, ".scaleplane-write-check-")
	if err != nil {
		return fmt.Errorf("not writable: %w", err)
	}
	name := f.Name()
	f.Close()
	return os.Remove(name)
}

// checkSystemRoots reports whether Go finds CA certificates to verify
// servers with (the files and directories crypto/x509 reads on Linux, or
// SSL_CERT_FILE and SSL_CERT_DIR).
func checkSystemRoots() error {
	pool, err := x509.SystemCertPool()
	if err != nil {
		return fmt.Errorf("no CA certificates could be read: %w", err)
	}
	//nolint:staticcheck // Subjects is deprecated for SystemCertPool only because it may omit platform roots; on Linux it lists what was read.
	if len(pool.Subjects()) == 0 {
		return errors.New("no CA certificates were found")
	}
	return nil
}
