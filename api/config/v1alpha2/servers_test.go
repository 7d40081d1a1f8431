package v1alpha2

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestServerLimits: the server limits are read from the
// component configuration, every one left out takes its default, and
// limits that cannot work together are refused with the setting to change.
func TestServerLimits(t *testing.T) {
	const header = "apiVersion: config.scaleplane.io/v1alpha2\nkind: Configuration\n"
	t.Run("partial", func(t *testing.T) {
		got, _, err := Parse([]byte(header + `servers:
  enableHTTP2: true
  webhook: {maxInFlight: 8, readHeaderTimeoutSeconds: 2}
  probes: {maxRequestBodyBytes: 1024}
`))
		if err != nil {
			t.Fatalf("Parse: %v", err)
		}
		want := DefaultServers()
		want.EnableHTTP2 = true
		want.Webhook.MaxInFlight = 8
		want.Webhook.ReadHeaderTimeoutSeconds = 2
		want.Probes.MaxRequestBodyBytes = 1024
		if diff := cmp.Diff(want, got.Servers); diff != "" {
			t.Errorf("servers (-want +got):\n%s", diff)
		}
	})
	t.Run("defaults are valid", func(t *testing.T) {
		s := DefaultServers()
		if errs := validateServers(&s, 30, nil); len(errs) > 0 {
			t.Errorf("the defaults are refused: %v", errs)
		}
	})
	tests := []struct {
		name string
		yaml string
		want []string
	}{{
		name: "negative",
		yaml: `servers:
  metrics: {readHeaderTimeoutSeconds: -1, maxInFlight: -2, maxRequestBodyBytes: -3}
`,
		want: []string{
			"FieldValueInvalid servers.metrics.readHeaderTimeoutSeconds",
			"FieldValueInvalid servers.metrics.maxInFlight",
			"FieldValueInvalid servers.metrics.maxRequestBodyBytes",
		},
	}, {
		name: "inconsistent",
		yaml: `webhook: {timeoutSeconds: 20}
servers:
  webhook: {handlerTimeoutSeconds: 15, writeTimeoutSeconds: 16}
  metrics: {readHeaderTimeoutSeconds: 20, readTimeoutSeconds: 10, handlerTimeoutSeconds: 40, writeTimeoutSeconds: 40}
  probes: {maxRequestBodyBytes: 2048, maxBufferedBytes: 1024}
`,
		want: []string{
			"FieldValueInvalid servers.webhook.handlerTimeoutSeconds",
			"FieldValueInvalid servers.metrics.readTimeoutSeconds",
			"FieldValueInvalid servers.metrics.writeTimeoutSeconds",
			"FieldValueInvalid servers.probes.maxBufferedBytes",
		},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := Parse([]byte(header + tt.yaml))
			if err == nil {
				t.Fatal("Parse succeeded, want an error")
			}
			if diff := cmp.Diff(tt.want, errorStrings(fieldErrors(t, err))); diff != "" {
				t.Errorf("errors (-want +got):\n%s\n%v", diff, err)
			}
		})
	}
}
