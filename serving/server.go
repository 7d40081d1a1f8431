package serving

import (
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	certutil "k8s.io/client-go/util/cert"
)

// Limits bounds one server. Every field but HTTP2 is required; package
// config holds scaleplane's defaults and says why each is what it is.
type Limits struct {
	// ReadHeaderTimeout bounds the TLS handshake and the request headers.
	ReadHeaderTimeout time.Duration
	// ReadTimeout bounds reading a whole request, body included, from its
	// first byte.
	ReadTimeout time.Duration
	// HandlerTimeout bounds a request from the end of its headers to the
	// end of its handling; the handler's context ends then.
	HandlerTimeout time.Duration
	// WriteTimeout bounds a request from the end of its headers to the end
	// of its response. More than HandlerTimeout, so that a handler stopped
	// by its deadline can still answer.
	WriteTimeout time.Duration
	// IdleTimeout closes a kept-alive connection that sends nothing.
	IdleTimeout time.Duration
	// MaxInFlight is how many requests are handled at once.
	MaxInFlight int
	// MaxBodyBytes is the largest body of one request.
	MaxBodyBytes int64
	// MaxBufferedBytes bounds the bodies held in memory at once.
	MaxBufferedBytes int64
	// HTTP2 offers HTTP/2 through ALPN on a TLS listener.
	HTTP2 bool
}

// MaxHeaderBytes bounds one request's headers (Go's default is 1 MiB).
// Bearer tokens, the largest header these servers see, are a few KiB.
const MaxHeaderBytes = 64 << 10

// Validate reports limits a server cannot work with.
func (l Limits) Validate() error {
	var errs []error
	for _, d := range []struct {
		name string
		v    time.Duration
	}{{"read header timeout", l.ReadHeaderTimeout}, {"read timeout", l.ReadTimeout}, {"handler timeout", l.HandlerTimeout},
		{"write timeout", l.WriteTimeout}, {"idle timeout", l.IdleTimeout}} {
		if d.v <= 0 {
			errs = append(errs, fmt.Errorf("%s must be positive, not %v", d.name, d.v))
		}
	}
	if l.WriteTimeout <= l.HandlerTimeout {
		errs = append(errs, fmt.Errorf("write timeout %v must be more than the handler timeout %v", l.WriteTimeout, l.HandlerTimeout))
	}
	if l.MaxInFlight < 1 {
		errs = append(errs, fmt.Errorf("max in flight must be at least 1, not %d", l.MaxInFlight))
	}
	if l.MaxBodyBytes < 0 {
		errs = append(errs, fmt.Errorf("max body bytes must not be negative, not %d", l.MaxBodyBytes))
	}
	if l.MaxBufferedBytes < l.MaxBodyBytes {
		errs = append(errs, fmt.Errorf("max buffered bytes %d must be at least max body bytes %d", l.MaxBufferedBytes, l.MaxBodyBytes))
	}
	return errors.Join(errs...)
}

// NewServer returns an http.Server that serves h within l: every timeout
// set, h wrapped by Limit, and HTTP/2 turned off unless l.HTTP2 (a TLS
// listener must also offer it; see NextProtos). name labels the server's
// metrics: webhook, metrics, probes.
func NewServer(name string, h http.Handler, l Limits) (*http.Server, error) {
	if err := l.Validate(); err != nil {
		return nil, fmt.Errorf("%s server: %w", name, err)
	}
	srv := &http.Server{
		Handler:           Limit(name, h, l),
		ReadHeaderTimeout: l.ReadHeaderTimeout,
		ReadTimeout:       l.ReadTimeout,
		WriteTimeout:      l.WriteTimeout,
		IdleTimeout:       l.IdleTimeout,
		MaxHeaderBytes:    MaxHeaderBytes,
	}
	if !l.HTTP2 {
		// Even a TLS configuration that offers h2 then gets HTTP/1.1.
		var p http.Protocols
		p.SetHTTP1(true)
		srv.Protocols = &p
	}
	return srv, nil
}

// NextProtos makes a TLS configuration offer HTTP/2 through ALPN only when
// http2 is true, as kubebuilder's --enable-http2 does: a client that asks
// for h2 alone is then refused during the handshake. controller-runtime's
// servers offer h2 unless told otherwise.
func NextProtos(http2 bool) func(*tls.Config) {
	return func(c *tls.Config) {
		if http2 {
			c.NextProtos = []string{"h2", "http/1.1"}
			return
		}
		c.NextProtos = []string{"http/1.1"}
	}
}

// Listen listens on addr over TCP, with TLS when cfg is not nil.
func Listen(addr string, cfg *tls.Config) (net.Listener, error) {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	if cfg != nil {
		return tls.NewListener(l, cfg), nil
	}
	return l, nil
}

// SelfSignedTLS is a TLS configuration with a certificate for localhost
// and 127.0.0.1 made now, as controller-runtime's metrics server makes
// when it is given none: the connection is encrypted, and clients
// authenticate with bearer tokens rather than verify the server.
func SelfSignedTLS() (*tls.Config, error) {
	cert, key, err := certutil.GenerateSelfSignedCertKeyWithFixtures("localhost", []net.IP{{127, 0, 0, 1}}, nil, "")
	if err != nil {
		return nil, fmt.Errorf("self-signed certificate: %w", err)
	}
	pair, err := tls.X509KeyPair(cert, key)
	if err != nil {
		return nil, fmt.Errorf("self-signed key pair: %w", err)
	}
	return &tls.Config{Certificates: []tls.Certificate{pair}, MinVersion: tls.VersionTLS12}, nil
}
