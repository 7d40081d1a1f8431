package certs

import (
	"crypto/x509"
	"encoding/pem"

	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// MetricCertificateExpiration is the gauge of the certificates' not-after
// times; config/prometheus alerts when the serving one is within 7 days.
const MetricCertificateExpiration = "scaleplane_certificate_expiration_timestamp_seconds"

// expiration is registered on controller-runtime's registry, which the
// manager's metrics server exposes. Its series appear once the Rotator has
// read a key pair: an absent series says "not known yet", never "expired
// in 1970".
var expiration = prometheus.NewGaugeVec(prometheus.GaugeOpts{
	Name: MetricCertificateExpiration,
	Help: "Not-after time (Unix seconds) of the webhook's certificates as the Rotator last read them from the Secret: certificate=serving, and certificate=ca for the first CA of ca.crt.",
}, []string{"certificate"})

func init() {
	metrics.Registry.MustRegister(expiration)
}

// observeExpiration publishes the serving certificate's and the CA's
// not-after times.
func observeExpiration(serving *x509.Certificate, caPEM []byte) {
	expiration.WithLabelValues("serving").Set(float64(serving.NotAfter.Unix()))
	if block, _ := pem.Decode(caPEM); block != nil {
		if ca, err := x509.ParseCertificate(block.Bytes); err == nil {
			expiration.WithLabelValues("ca").Set(float64(ca.NotAfter.Unix()))
		}
	}
}
