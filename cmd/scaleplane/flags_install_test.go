package main

import (
	"flag"
	"io"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/scaleplane/scaleplane/cmd/scaleplane/app"
)

func TestInstallFlags(t *testing.T) {
	tests := []struct {
		name    string
		args    []string
		want    app.Options
		wantErr string
	}{{
		name: "defaults",
		want: app.Options{MetricsCertName: "tls.crt", MetricsKeyName: "tls.key"},
	}, {
		name: "metrics certificate as kubebuilder names it",
		args: []string{"--metrics-cert-path=/tmp/k8s-metrics-server/metrics-certs", "--metrics-cert-name=cert.pem", "--metrics-cert-key=key.pem"},
		want: app.Options{MetricsCertDir: "/tmp/k8s-metrics-server/metrics-certs", MetricsCertName: "cert.pem", MetricsKeyName: "key.pem"},
	}, {
		name: "webhook URL on an address",
		args: []string{"--webhook-url=https://127.0.0.1:9443"},
		want: app.Options{MetricsCertName: "tls.crt", MetricsKeyName: "tls.key", WebhookURL: "https://127.0.0.1:9443", WebhookIPs: []string{"127.0.0.1"}},
	}, {
		name: "webhook URL on a name",
		args: []string{"--webhook-url=https://scaleplane.example:443/"},
		want: app.Options{MetricsCertName: "tls.crt", MetricsKeyName: "tls.key", WebhookURL: "https://scaleplane.example:443"},
	}, {
		name:    "webhook URL over plain HTTP",
		args:    []string{"--webhook-url=http://127.0.0.1:9443"},
		wantErr: "write it as https://HOST:PORT",
	}, {
		name:    "webhook URL with a path",
		args:    []string{"--webhook-url=https://127.0.0.1:9443/mutate"},
		wantErr: "write it as https://HOST:PORT",
	}, {
		name:    "webhook URL on a port past 65535",
		args:    []string{"--webhook-url=https://h:99999"},
		wantErr: "port 99999 is not between 1 and 65535",
	}, {
		name:    "webhook URL on port 0",
		args:    []string{"--webhook-url=https://h:0"},
		wantErr: "port 0 is not between 1 and 65535",
	}, {
		name:    "webhook URL with an empty port",
		args:    []string{"--webhook-url=https://h:"},
		wantErr: "the port is empty",
	}, {
		name:    "webhook URL with credentials",
		args:    []string{"--webhook-url=https://user:pw@h:9443"},
		wantErr: "write it as https://HOST:PORT",
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			fs := flag.NewFlagSet("test", flag.ContinueOnError)
			fs.SetOutput(io.Discard)
			var got app.Options
			bindInstallFlags(fs, &got)
			err := fs.Parse(tc.args)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want one saying %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("options (-want +got):\n%s", diff)
			}
		})
	}
}
