package app

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/scaleplane/scaleplane/profile"
)

// TestPreflight: what a pod gives the binary is checked before
// anything else, each problem with the setting or volume to fix.
func TestPreflight(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		mod  func(*Options)
		want []string
	}{{
		name: "writable cert dir, no metrics certificate",
		mod:  func(o *Options) { o.Config.Webhook.CertDir = filepath.Join(dir, "certs") },
	}, {
		name: "cert dir under a file",
		mod:  func(o *Options) { o.Config.Webhook.CertDir = filepath.Join(file, "certs") },
		want: []string{"webhook.certDir " + filepath.Join(file, "certs"), "not a directory", `mount a writable volume (the Deployment's emptyDir "cert")`},
	}, {
		name: "cert dir not checked when the files are provided",
		mod: func(o *Options) {
			o.Config.Webhook.CertDir = filepath.Join(file, "certs")
			o.CertMode = CertFiles
		},
	}, {
		name: "metrics certificate missing",
		mod: func(o *Options) {
			o.Config.Webhook.CertDir = filepath.Join(dir, "certs")
			o.MetricsCertDir = filepath.Join(dir, "metrics")
		},
		want: []string{"--metrics-cert-path " + filepath.Join(dir, "metrics"), "tls.crt", "mount the metrics certificate's Secret there"},
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			o := Options{Config: profile.SampleConfiguration()}
			tc.mod(&o)
			a := &App{opts: o.withDefaults()}
			err := a.preflight()
			if len(tc.want) == 0 {
				if err != nil {
					t.Fatalf("preflight: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("preflight passed; want an error saying %q", tc.want)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
		})
	}
}
