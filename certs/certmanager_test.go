package certs

import (
	"net"
	"testing"

	"github.com/google/go-cmp/cmp"

	cmapi "github.com/cert-manager/cert-manager/pkg/apis/certmanager/v1"
)

func TestMissingIPAddresses(t *testing.T) {
	loopback := []net.IP{net.ParseIP("127.0.0.1")}
	tests := []struct {
		name string
		spec []string
		ips  []net.IP
		want []string
	}{
		{name: "none wanted", spec: nil, ips: nil, want: nil},
		{name: "shipped certificate, by URL", spec: nil, ips: loopback, want: []string{"127.0.0.1"}},
		{name: "listed", spec: []string{"127.0.0.1"}, ips: loopback, want: nil},
		{name: "listed in another form", spec: []string{"::ffff:127.0.0.1"}, ips: loopback, want: nil},
		{name: "one of two", spec: []string{"::1"}, ips: []net.IP{net.ParseIP("127.0.0.1"), net.ParseIP("::1")}, want: []string{"127.0.0.1"}},
		{name: "unparsable entry", spec: []string{"localhost"}, ips: loopback, want: []string{"127.0.0.1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			crt := &cmapi.Certificate{Spec: cmapi.CertificateSpec{IPAddresses: tt.spec}}
			if diff := cmp.Diff(tt.want, MissingIPAddresses(crt, tt.ips)); diff != "" {
				t.Errorf("MissingIPAddresses (-want +got):\n%s", diff)
			}
		})
	}
}
