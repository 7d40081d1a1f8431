package externalscaler

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"sigs.k8s.io/controller-runtime/pkg/certwatcher"
)

// Files of a certificate directory (ServerTLS).
const (
	CertFile = "tls.crt"
	KeyFile  = "tls.key"
	// CAFile, when present, holds the CAs whose client certificates are
	// accepted: every caller must present one (KEDA's tlsClientCert and
	// tlsClientKey in a TriggerAuthentication).
	CAFile = "ca.crt"
)

// ServerTLS is the TLS configuration of the certificates in dir: the
// server's certificate (CertFile, KeyFile), reloaded when they change
// while start runs, and, when dir has CAFile, client certificates
// required and verified against it (read once: restart to change it).
// Without CAFile, TLS encrypts but anyone reaching the port may call.
func ServerTLS(dir string) (cfg *tls.Config, start func(context.Context) error, err error) {
	w, err := certwatcher.New(filepath.Join(dir, CertFile), filepath.Join(dir, KeyFile))
	if err != nil {
		return nil, nil, fmt.Errorf("external scaler certificate: %w", err)
	}
	cfg = &tls.Config{GetCertificate: w.GetCertificate, MinVersion: tls.VersionTLS12}
	ca, err := os.ReadFile(filepath.Join(dir, CAFile))
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return nil, nil, fmt.Errorf("external scaler client CA: %w", err)
	default:
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(ca) {
			return nil, nil, fmt.Errorf("external scaler client CA %s: no PEM certificate in it", filepath.Join(dir, CAFile))
		}
		cfg.ClientCAs = pool
		cfg.ClientAuth = tls.RequireAndVerifyClientCert
	}
	return cfg, w.Start, nil
}
