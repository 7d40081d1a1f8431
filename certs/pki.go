package certs

import (
	"bytes"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"time"
)

// clockSkew backdates NotBefore so that an API server whose clock is a little
// behind ours still accepts a certificate issued a moment ago.
const clockSkew = time.Minute

// keyPair is a certificate with its private key, in parsed and PEM form.
type keyPair struct {
	cert    *x509.Certificate
	certPEM []byte
	keyPEM  []byte
	key     crypto.Signer
}

// newKey returns an ECDSA P-256 key: fast to generate (renewal and tests do
// it often) and accepted by the API server for webhook serving certificates.
func newKey() (*ecdsa.PrivateKey, []byte, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, fmt.Errorf("generate key: %w", err)
	}
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, nil, fmt.Errorf("marshal key: %w", err)
	}
	return key, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), nil
}

func serialNumber() (*big.Int, error) {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 128))
	if err != nil {
		return nil, fmt.Errorf("generate serial number: %w", err)
	}
	return n, nil
}

// newCA creates a self-signed CA valid from now for validity.
func newCA(commonName string, now time.Time, validity time.Duration) (keyPair, error) {
	key, keyPEM, err := newKey()
	if err != nil {
		return keyPair{}, err
	}
	serial, err := serialNumber()
	if err != nil {
		return keyPair{}, err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: commonName, Organization: []string{"scaleplane"}},
		NotBefore:             now.Add(-clockSkew),
		NotAfter:              now.Add(validity),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
		MaxPathLenZero:        true,
	}
	return sign(tmpl, tmpl, key, key, keyPEM)
}

// newServing issues a serving certificate for the given names under ca, with
// a fresh key. It never outlives ca.
func newServing(ca keyPair, dnsNames []string, ips []net.IP, now time.Time, validity time.Duration) (keyPair, error) {
	key, keyPEM, err := newKey()
	if err != nil {
		return keyPair{}, err
	}
	serial, err := serialNumber()
	if err != nil {
		return keyPair{}, err
	}
	notAfter := now.Add(validity)
	if notAfter.After(ca.cert.NotAfter) {
		notAfter = ca.cert.NotAfter
	}
	cn := "scaleplane-webhook"
	if len(dnsNames) > 0 {
		cn = dnsNames[0]
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: cn},
		DNSNames:     dnsNames,
		IPAddresses:  ips,
		NotBefore:    now.Add(-clockSkew),
		NotAfter:     notAfter,
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	return sign(tmpl, ca.cert, key, ca.key, keyPEM)
}

func sign(tmpl, parent *x509.Certificate, key *ecdsa.PrivateKey, signer crypto.Signer, keyPEM []byte) (keyPair, error) {
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, key.Public(), signer)
	if err != nil {
		return keyPair{}, fmt.Errorf("sign certificate %q: %w", tmpl.Subject.CommonName, err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return keyPair{}, fmt.Errorf("parse signed certificate: %w", err)
	}
	return keyPair{
		cert:    cert,
		certPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		keyPEM:  keyPEM,
		key:     key,
	}, nil
}

// parseKeyPair parses a PEM certificate (the first one is the leaf) and its
// key and checks that they belong together.
func parseKeyPair(certPEM, keyPEM []byte) (keyPair, error) {
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return keyPair{}, fmt.Errorf("parse key pair: %w", err)
	}
	leaf, err := x509.ParseCertificate(pair.Certificate[0])
	if err != nil {
		return keyPair{}, fmt.Errorf("parse certificate: %w", err)
	}
	signer, ok := pair.PrivateKey.(crypto.Signer)
	if !ok {
		return keyPair{}, errors.New("private key cannot sign")
	}
	return keyPair{cert: leaf, certPEM: certPEM, keyPEM: keyPEM, key: signer}, nil
}

// parseBundle parses every CERTIFICATE block of a PEM bundle.
func parseBundle(data []byte) ([]*x509.Certificate, error) {
	var out []*x509.Certificate
	for {
		var block *pem.Block
		block, data = pem.Decode(data)
		if block == nil {
			break
		}
		if block.Type != "CERTIFICATE" {
			continue
		}
		cert, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			return nil, fmt.Errorf("parse ca bundle: %w", err)
		}
		out = append(out, cert)
	}
	if len(out) == 0 {
		return nil, errors.New("ca bundle holds no certificate")
	}
	return out, nil
}

// encodeBundle is the inverse of parseBundle.
func encodeBundle(certs []*x509.Certificate) []byte {
	var buf bytes.Buffer
	for _, c := range certs {
		_ = pem.Encode(&buf, &pem.Block{Type: "CERTIFICATE", Bytes: c.Raw})
	}
	return buf.Bytes()
}

// sameIPs and sameStrings compare SAN lists as sets in order, which is how
// they are written.
func sameStrings(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func sameIPs(a, b []net.IP) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !a[i].Equal(b[i]) {
			return false
		}
	}
	return true
}
