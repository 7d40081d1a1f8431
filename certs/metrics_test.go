package certs

import (
	"crypto/x509"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
)

// TestCertificateExpirationGauge: the serving certificate's
// and the CA's not-after times, as the Rotator reads them, are the gauge's
// values.
func TestCertificateExpirationGauge(t *testing.T) {
	now := time.Date(2026, 11, 23, 0, 0, 0, 0, time.UTC)
	ca, err := newCA("test-ca", now, 48*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	serving, err := newServing(ca, []string{"svc.ns.svc"}, nil, now, 24*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	observeExpiration(serving.cert, encodeBundle([]*x509.Certificate{ca.cert}))
	want := fmt.Sprintf(`
# HELP %[1]s Not-after time (Unix seconds) of the webhook's certificates as the Rotator last read them from the Secret: certificate=serving, and certificate=ca for the first CA of ca.crt.
# TYPE %[1]s gauge
%[1]s{certificate="ca"} %[2]d
%[1]s{certificate="serving"} %[3]d
`, MetricCertificateExpiration, now.Add(48*time.Hour).Unix(), now.Add(24*time.Hour).Unix())
	if err := testutil.CollectAndCompare(expiration, strings.NewReader(want)); err != nil {
		t.Error(err)
	}
}
