package main

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"
)

// Hostile inputs to the offline commands (render, config check, profile
// init): what a CI job or a copy-pasted command line can hand them. Each is
// refused with what to change, and nothing is printed to standard output
// that `| kubectl apply -f -` would act on.

// TestRenderRefusesHostileFlags: names that would end in the manifests
// (a namespace with a path in it, a Service or Secret name the API server
// refuses) and a webhook URL on a port no server can listen on.
func TestRenderRefusesHostileFlags(t *testing.T) {
	deploy := filepath.Join("..", "..", "config", "samples", "deploy", "scaleplane-config.yaml")
	cases := []struct {
		name string
		args []string
		says string
	}{
		{"namespace with a path", []string{"certificates", "--namespace", "Bad_NS/../x"}, `--namespace="Bad_NS/../x": a lowercase RFC 1123 label`},
		{"namespace with a newline", []string{"webhooks", "--config", deploy, "--namespace", "ns\n---\nkind: ClusterRoleBinding"}, "--namespace="},
		{"namespace too long", []string{"certificates", "--namespace", strings.Repeat("n", 64)}, "must be no more than 63 characters"},
		{"service with a dot", []string{"webhooks", "--config", deploy, "--webhook-service", "svc.evil"}, "--webhook-service="},
		{"secret with a slash", []string{"certificates", "--webhook-secret", "a/b"}, "--webhook-secret="},
		{"webhook URL on port 99999", []string{"webhooks", "--config", deploy, "--webhook-url", "https://h:99999"}, "port 99999 is not between 1 and 65535"},
		{"webhook URL without host", []string{"certificates", "--webhook-url", "https://:9443"}, "write it as https://HOST:PORT"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			if code := render(tc.args, &stdout, &stderr); code != 2 {
				t.Errorf("exit %d, want 2\n%s", code, stderr.String())
			}
			if stdout.Len() > 0 {
				t.Errorf("printed manifests for a refused command line:\n%s", stdout.String())
			}
			if !strings.Contains(stderr.String(), tc.says) {
				t.Errorf("stderr %q does not say %q", stderr.String(), tc.says)
			}
		})
	}
}
