package v1alpha2

import (
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestV1alpha1FilesConvert: a config.scaleplane.io/v1alpha1
// file, with the profile field names it had before the profile fields were
// renamed (docs/upgrade.md), loads to the same Configuration as the v1alpha2 file that says
// the same, with one deprecation warning naming every renamed field the
// file uses; it is decoded as strictly as a v1alpha2 file.
func TestV1alpha1FilesConvert(t *testing.T) {
	read := func(name string) string {
		data, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		return string(data)
	}
	const (
		oldHeader  = "apiVersion: config.scaleplane.io/v1alpha1\nkind: Configuration\n"
		newHeader  = "apiVersion: config.scaleplane.io/v1alpha2\nkind: Configuration\n"
		deprecated = "apiVersion config.scaleplane.io/v1alpha1 is deprecated and was read as config.scaleplane.io/v1alpha2: set apiVersion: config.scaleplane.io/v1alpha2"
	)
	tests := []struct {
		name     string
		old, new string
		warning  string
	}{{
		name:    "every field",
		old:     read("testdata/complete.v1alpha1.yaml"),
		new:     read("testdata/complete.v1alpha2.yaml"),
		warning: deprecated + " and rename these profile fields: group and version to target.apiVersion (group/version), kind to target.kind, resource to target.resource, replicas to replicasPath, groups to memberGroups, status.replicas to status.replicasPath, status.selector to status.selectorPath, pods.groupLabel to pods.memberGroupLabel",
	}, {
		name: "only what is required",
		old: oldHeader + `profiles:
- {group: samples.scaleplane.io, version: v1alpha1, kind: WorkerGroup, resource: workergroups, scaleConfig: {path: .spec.scalePolicy}}
`,
		new: newHeader + `profiles:
- target: {apiVersion: samples.scaleplane.io/v1alpha1, kind: WorkerGroup, resource: workergroups}
  scaleConfig: {path: .spec.scalePolicy}
`,
		warning: deprecated + " and rename these profile fields: group and version to target.apiVersion (group/version), kind to target.kind, resource to target.resource",
	}, {
		name: "the core group has no group",
		old: oldHeader + `profiles:
- version: v1
  kind: Widget
  resource: widgets
  scaleConfig: {annotation: scaleplane.io/scale-config}
  groups: {path: .spec.shards}
  pods: {labels: {app: "${name}", shard: "${group}"}}
`,
		new: newHeader + `profiles:
- target: {apiVersion: v1, kind: Widget, resource: widgets}
  scaleConfig: {annotation: scaleplane.io/scale-config}
  memberGroups: {path: .spec.shards}
  pods: {labels: {app: "${name}", shard: "${group}"}}
`,
		warning: deprecated + " and rename these profile fields: group and version to target.apiVersion (group/version), kind to target.kind, resource to target.resource, groups to memberGroups",
	}, {
		name: "no profiles",
		old: oldHeader + `servers:
  enableHTTP2: true
  webhook: {maxInFlight: 8}
`,
		new: newHeader + `servers:
  enableHTTP2: true
  webhook: {maxInFlight: 8}
`,
		warning: deprecated,
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			want, warnings, err := Parse([]byte(tt.new))
			if err != nil {
				t.Fatalf("Parse v1alpha2: %v", err)
			}
			if len(warnings) > 0 {
				t.Errorf("Parse v1alpha2 warned: %q", warnings)
			}
			got, warnings, err := Parse([]byte(tt.old))
			if err != nil {
				t.Fatalf("Parse v1alpha1: %v", err)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("v1alpha1 file (-v1alpha2 +v1alpha1):\n%s", diff)
			}
			if diff := cmp.Diff([]string{tt.warning}, warnings); diff != "" {
				t.Errorf("warnings (-want +got):\n%s", diff)
			}
		})
	}

	strict := []struct {
		name, yaml, wantMsg string
	}{
		{"unknown field", oldHeader + "profiles:\n- kind: X\n  replica: .spec.replicas\n", `unknown field "profiles[0].replica"`},
		{"a v1alpha2 field in a v1alpha1 file", oldHeader + "profiles:\n- kind: X\n  replicasPath: .spec.replicas\n", `unknown field "profiles[0].replicasPath"`},
		{"wrong type", oldHeader + "profiles:\n- kind: [X]\n", `field "profiles.kind" must be a string, not a JSON array`},
	}
	for _, tt := range strict {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := Parse([]byte(tt.yaml))
			if err == nil || !strings.Contains(err.Error(), tt.wantMsg) {
				t.Errorf("Parse error = %v, want one containing %q", err, tt.wantMsg)
			}
		})
	}
}
