package main

import (
	"bytes"
	"context"
	"fmt"
	"path/filepath"
	"testing"
)

// TestConvertGolden converts ScaledObjects modelled on KEDA's
// documentation examples and compares the output, the list of what was not
// converted and the exit code with testdata/convert/*.golden
// (UPDATE_GOLDEN=1 rewrites them).
func TestConvertGolden(t *testing.T) {
	dir := filepath.Join("testdata", "convert")
	in := func(name string) string { return filepath.Join(dir, name+".yaml") }
	const sampleConfig = "../../config/samples/deploy/scaleplane-config.yaml"
	for _, tc := range []struct {
		name     string
		args     []string
		wantCode int
	}{
		{"prometheus", []string{"-f", in("prometheus")}, convertComplete},
		{"prometheus-activation", []string{"-f", in("prometheus-activation")}, convertIncomplete},
		{"prometheus-embedded", []string{"--source", "promql", "-f", in("prometheus")}, convertComplete},
		{"prometheus-other-server", []string{"--config", filepath.Join(dir, "remote-config.yaml"), "-f", in("prometheus")}, convertIncomplete},
		{"prometheus-no-server", []string{"--config", sampleConfig, "-f", in("prometheus")}, convertIncomplete},
		{"cron", []string{"-f", in("cron")}, convertIncomplete},
		{"cpu", []string{"-f", in("cpu")}, convertComplete},
		{"memory", []string{"-f", in("memory")}, convertComplete},
		{"external", []string{"-f", in("external")}, convertIncomplete},
		{"external-profile", []string{"--config", sampleConfig, "-f", in("external")}, convertIncomplete},
		{"paused", []string{"-f", in("paused")}, convertComplete},
		{"idle", []string{"-f", in("idle")}, convertIncomplete},
		{"behavior", []string{"-f", in("behavior")}, convertComplete},
		{"fallback", []string{"-f", in("fallback")}, convertIncomplete},
		{"modifiers", []string{"-f", in("modifiers")}, convertIncomplete},
		{"multiple", []string{"-f", in("multiple")}, convertIncomplete},
		{"several-files", []string{"-f", in("prometheus"), "-f", in("cpu")}, convertComplete},
		{"bad-kind", []string{"-f", in("bad-kind")}, convertBadInput},
		{"bad-field", []string{"-f", in("bad-field")}, convertBadInput},
		{"no-input", nil, convertBadInput},
		{"missing-file", []string{"-f", in("does-not-exist")}, convertBadInput},
		{"bad-source", []string{"--source", "influx", "-f", in("prometheus")}, convertBadInput},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := convertCmd(context.Background(), tc.args, &stdout, &stderr)
			if code != tc.wantCode {
				t.Errorf("exit code %d, want %d\nstderr:\n%s", code, tc.wantCode, stderr.String())
			}
			got := fmt.Sprintf("exit code: %d\n--- stdout\n%s--- stderr\n%s", code, stdout.String(), stderr.String())
			checkGolden(t, filepath.Join(dir, tc.name+".golden"), got, "convert "+tc.name)
		})
	}
}
