package externalscaler

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
)

// issued is a certificate and its key, PEM-encoded.
type issued struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	pem  []byte
	kpem []byte
}

// issue makes a certificate for name signed by parent, or self-signed (a
// CA) when parent is nil.
func issue(t *testing.T, name string, parent *issued, usage x509.ExtKeyUsage) *issued {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(time.Now().UnixNano()),
		Subject:      pkix.Name{CommonName: name},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:  []x509.ExtKeyUsage{usage},
		IPAddresses:  []net.IP{net.ParseIP("127.0.0.1")},
	}
	signer, signerKey := tmpl, key
	if parent == nil {
		tmpl.IsCA, tmpl.BasicConstraintsValid = true, true
	} else {
		signer, signerKey = parent.cert, parent.key
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, signer, &key.PublicKey, signerKey)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return &issued{cert: cert, key: key,
		pem:  pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		kpem: pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder})}
}

func (i *issued) pair(t *testing.T) tls.Certificate {
	t.Helper()
	p, err := tls.X509KeyPair(i.pem, i.kpem)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// Who may call: with ca.crt in certDir, a caller without
// a client certificate of that CA (anyone on the cluster network) is
// refused before any call is read; KEDA with tlsClientCert and
// tlsClientKey is answered. Without ca.crt, TLS only encrypts.
func TestExternalScalerHostileClientCertificates(t *testing.T) {
	ca := issue(t, "keda-client-ca", nil, x509.ExtKeyUsageClientAuth)
	server := issue(t, "127.0.0.1", nil, x509.ExtKeyUsageServerAuth)
	keda := issue(t, "keda-operator", ca, x509.ExtKeyUsageClientAuth)
	rogue := issue(t, "keda-operator", issue(t, "other-ca", nil, x509.ExtKeyUsageClientAuth), x509.ExtKeyUsageClientAuth)

	dir := t.TempDir()
	for name, b := range map[string][]byte{CertFile: server.pem, KeyFile: server.kpem, CAFile: ca.pem} {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	roots := x509.NewCertPool()
	roots.AddCert(server.cert)
	md := map[string]string{"query": "vector(1)", "threshold": "1"}
	call := func(t *testing.T, dir string, clientCert *issued) error {
		t.Helper()
		cfg, start, err := ServerTLS(dir)
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		t.Cleanup(cancel)
		go func() { _ = start(ctx) }()
		f := newFixture(t, nil)
		f.objects.declare("shop", "web", "external", md)
		client := &tls.Config{RootCAs: roots, ServerName: "127.0.0.1", MinVersion: tls.VersionTLS12}
		if clientCert != nil {
			client.Certificates = []tls.Certificate{clientCert.pair(t)}
		}
		c := serve(t, f.srv, credentials.NewTLS(cfg), credentials.NewTLS(client))
		_, err = c.GetMetricSpec(deadline(t), ref("web", md))
		return err
	}

	t.Run("KEDA's certificate", func(t *testing.T) {
		if err := call(t, dir, keda); err != nil {
			t.Errorf("a client certificate of ca.crt: %v", err)
		}
	})
	t.Run("no certificate", func(t *testing.T) {
		if err := call(t, dir, nil); code(err) != codes.Unavailable {
			t.Errorf("no client certificate: %v, want Unavailable (the handshake fails)", err)
		}
	})
	t.Run("another CA's certificate", func(t *testing.T) {
		if err := call(t, dir, rogue); code(err) != codes.Unavailable {
			t.Errorf("a client certificate of another CA: %v, want Unavailable (the handshake fails)", err)
		}
	})
	t.Run("without ca.crt", func(t *testing.T) {
		plain := t.TempDir()
		for name, b := range map[string][]byte{CertFile: server.pem, KeyFile: server.kpem} {
			if err := os.WriteFile(filepath.Join(plain, name), b, 0o600); err != nil {
				t.Fatal(err)
			}
		}
		if err := call(t, plain, nil); err != nil {
			t.Errorf("TLS without ca.crt, no client certificate: %v", err)
		}
	})
	t.Run("a ca.crt that is not PEM", func(t *testing.T) {
		bad := t.TempDir()
		for name, b := range map[string][]byte{CertFile: server.pem, KeyFile: server.kpem, CAFile: []byte("not a certificate")} {
			if err := os.WriteFile(filepath.Join(bad, name), b, 0o600); err != nil {
				t.Fatal(err)
			}
		}
		if _, _, err := ServerTLS(bad); err == nil {
			t.Error("a ca.crt without a certificate was accepted")
		}
	})
}
