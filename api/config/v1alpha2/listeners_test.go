package v1alpha2

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestListenersValidated: every address a server of the binary listens on
// is refused at validation, with its field path (or flag), when it cannot
// be bound: a port out of range, no port, port 0 where clients must know
// the port, a host that is no host, or a second server on an address
// another one takes. Before, such a configuration passed and the elected
// leader failed to start its external scaler, again and again.
func TestListenersValidated(t *testing.T) {
	tests := []struct {
		name string
		// host and port of the webhook server, the external scaler's
		// address, and the metrics and probe flags ("" for their defaults
		// in the binary, ":8443" and ":8081").
		webhookHost     string
		webhookPort     int
		external        string
		metrics, probes string
		want            []string
		says            string
	}{
		{name: "defaults"},
		{name: "external scaler on its own port", external: ":9090"},
		{name: "external scaler on another interface, same port as the webhook", webhookHost: "127.0.0.1", external: "127.0.0.2:9443"},
		{name: "IPv6", external: "[::1]:9090"},
		{name: "servers off and random ports for metrics and probes", external: ":9090", metrics: "0", probes: "127.0.0.1:0"},
		{name: "port past 65535", external: "127.0.0.1:99999",
			want: []string{"FieldValueInvalid autoscaler.externalScaler.bindAddress"}, says: "port 99999 is not a number from 1 to 65535"},
		{name: "no port", external: "127.0.0.1",
			want: []string{"FieldValueInvalid autoscaler.externalScaler.bindAddress"}, says: "must be host:port or :port"},
		{name: "negative port", external: ":-1",
			want: []string{"FieldValueInvalid autoscaler.externalScaler.bindAddress"}, says: "port -1 is not a number"},
		{name: "port 0 for the external scaler", external: ":0",
			want: []string{"FieldValueInvalid autoscaler.externalScaler.bindAddress"}, says: "port 0 picks a random port"},
		{name: "a host that is no host", external: "bad host:9090",
			want: []string{"FieldValueInvalid autoscaler.externalScaler.bindAddress"}, says: "host must be an IP address or a host name"},
		{name: "the webhook server's address", external: ":9443",
			want: []string{"FieldValueDuplicate autoscaler.externalScaler.bindAddress"}, says: "the webhook server listens on :9443 (webhook.port)"},
		{name: "the webhook server's port on every interface", webhookHost: "127.0.0.1", external: "0.0.0.0:9443",
			want: []string{"FieldValueDuplicate autoscaler.externalScaler.bindAddress"}},
		{name: "the webhook server's port on the same address", webhookHost: "127.0.0.1", webhookPort: 9090, external: "127.0.0.1:9090",
			want: []string{"FieldValueDuplicate autoscaler.externalScaler.bindAddress"}},
		{name: "a webhook host that is no host", webhookHost: "a/b",
			want: []string{"FieldValueInvalid webhook.host"}},
		{name: "the metrics server's address", external: ":8443",
			want: []string{"FieldValueDuplicate --metrics-bind-address"}, says: "the external scaler listens on :8443 (autoscaler.externalScaler.bindAddress)"},
		{name: "the probe server's address", external: "127.0.0.1:8081",
			want: []string{"FieldValueDuplicate --health-probe-bind-address"}},
		{name: "metrics and probes on one address", metrics: ":8081",
			want: []string{"FieldValueDuplicate --health-probe-bind-address"}},
		{name: "metrics on the webhook's port", metrics: "127.0.0.1:9443",
			want: []string{"FieldValueDuplicate --metrics-bind-address"}},
		{name: "probe flag past 65535", probes: ":99999",
			want: []string{"FieldValueInvalid --health-probe-bind-address"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := &Configuration{TypeMeta: metav1.TypeMeta{APIVersion: APIVersion, Kind: Kind}}
			c.Webhook.Host, c.Webhook.Port = tt.webhookHost, tt.webhookPort
			c.Autoscaler.ExternalScaler.BindAddress = tt.external
			c.Default()
			metrics, probes := tt.metrics, tt.probes
			if metrics == "" {
				metrics = ":8443"
			}
			if probes == "" {
				probes = ":8081"
			}
			errs := append(c.Validate(), c.ValidateListeners(FlagListeners(metrics, probes))...)
			if diff := cmp.Diff(tt.want, errorStrings(errs)); diff != "" {
				t.Errorf("errors (-want +got):\n%s\n%v", diff, errs)
			}
			if tt.says != "" && (len(errs) == 0 || !strings.Contains(errs.ToAggregate().Error(), tt.says)) {
				t.Errorf("errors %v do not say %q", errs, tt.says)
			}
		})
	}
}
