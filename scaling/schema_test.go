package scaling_test

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	autoscalingv2 "k8s.io/api/autoscaling/v2"

	"github.com/scaleplane/scaleplane/scaling"
)

// schemaLayout is a third-party shape: spec.replicas defaults to
// 1, the scale config's bounds have a minimum of 1, members at most 10.
func schemaLayout(l scaling.Layout) scaling.Layout {
	one := float64(1)
	ten := float64(10)
	l.Schema = scaling.Schema{
		Replicas:    scaling.Limits{Known: true, Type: "integer", Minimum: ctF64(0), Default: ctI64(1)},
		MinReplicas: scaling.Limits{Known: true, Type: "integer", Minimum: &one},
		MaxReplicas: scaling.Limits{Known: true, Type: "integer", Minimum: &one},
		Members:     scaling.Limits{Known: true, Type: "integer", Minimum: ctF64(0), Maximum: &ten},
	}
	return l
}

func TestLimitsRefuses(t *testing.T) {
	cases := []struct {
		name string
		lim  scaling.Limits
		v    int32
		want string
	}{
		{"no limits", scaling.Limits{}, -5, ""},
		{"minimum", scaling.Limits{Minimum: ctF64(1)}, 0, "at least 1 (minimum)"},
		{"minimum met", scaling.Limits{Minimum: ctF64(1)}, 1, ""},
		{"exclusive minimum", scaling.Limits{Minimum: ctF64(1), ExclusiveMinimum: true}, 1, "greater than 1 (exclusiveMinimum)"},
		{"maximum", scaling.Limits{Maximum: ctF64(10)}, 11, "at most 10 (maximum)"},
		{"exclusive maximum", scaling.Limits{Maximum: ctF64(10), ExclusiveMaximum: true}, 10, "less than 10 (exclusiveMaximum)"},
		{"wrong type", scaling.Limits{Type: "string"}, 1, "types the field string"},
	}
	for _, tt := range cases {
		t.Run(tt.name, func(t *testing.T) {
			got := tt.lim.Refuses(tt.v)
			if (tt.want == "") != (got == "") || !strings.Contains(got, tt.want) {
				t.Errorf("Refuses(%d) = %q, want it to contain %q", tt.v, got, tt.want)
			}
		})
	}
}

// M7: defaulting never writes a value the schema refuses; what it leaves
// out is said in a warning. Once, replicas 0 on a kind whose
// config bounds have a minimum of 1 was pinned to {0, 0}, which the API
// server refused with errors on fields the user never wrote.
func TestM7DefaultNeverWritesWhatTheSchemaRefuses(t *testing.T) {
	cases := []struct {
		name     string
		layout   scaling.Layout
		old      *scaling.Workload
		cur      scaling.Workload
		want     scaling.Workload
		warnings []string // substrings, one per warning
		// userInvalid: the request itself has values the schema refuses.
		userInvalid bool
	}{
		{
			name:     "M7 replicas 0 is not pinned below the schema minimum",
			layout:   schemaLayout(ctLayout()),
			cur:      scaling.Workload{Replicas: ctI32(0)},
			want:     scaling.Workload{Replicas: ctI32(0)},
			warnings: []string{"spec.scaleConfig not pinned to 0 (M1): spec.scaleConfig.minReplicas: the CRD's schema requires a value of at least 1 (minimum)"},
		},
		{
			name:   "M7 replicas 3 is pinned as before",
			layout: schemaLayout(ctLayout()),
			cur:    scaling.Workload{Replicas: ctI32(3)},
			want:   scaling.Workload{Replicas: ctI32(3), Config: ctRange(3, 3)},
		},
		{
			name:     "M7 a pin does not follow replicas to 0 (M3)",
			layout:   schemaLayout(ctLayout()),
			old:      &scaling.Workload{Replicas: ctI32(3), Config: ctRange(3, 3)},
			cur:      scaling.Workload{Replicas: ctI32(0), Config: ctRange(3, 3)},
			want:     scaling.Workload{Replicas: ctI32(0), Config: ctRange(3, 3)},
			warnings: []string{"spec.scaleConfig stays pinned at 3, not 0 (M3): spec.scaleConfig.minReplicas: the CRD's schema requires a value of at least 1 (minimum)"},
		},
		{
			name:     "M7 a pin moves as a whole or not at all, whichever bound the schema refuses (M3)",
			layout:   maxOnlyLayout(),
			old:      &scaling.Workload{Replicas: ctI32(3), Config: ctRange(3, 3)},
			cur:      scaling.Workload{Replicas: ctI32(12), Config: ctRange(3, 3)},
			want:     scaling.Workload{Replicas: ctI32(12), Config: ctRange(3, 3)},
			warnings: []string{"spec.scaleConfig stays pinned at 3, not 12 (M3): spec.scaleConfig.maxReplicas: the CRD's schema requires a value of at most 10 (maximum)"},
		},
		{
			name:     "M7 members above the schema maximum are left as they are (M5)",
			layout:   schemaLayout(ctLayout()),
			cur:      scaling.Workload{Replicas: ctI32(12), Config: ctRange(12, 12), Groups: ctRacks(3, -1)},
			want:     scaling.Workload{Replicas: ctI32(12), Config: ctRange(12, 12), Groups: ctRacks(3, -1)},
			warnings: []string{"spec.racks[0].members not set to 12: the CRD's schema requires a value of at most 10 (maximum)", "spec.racks[1].members not set to 12"},
		},
		{
			name:        "M7 maxReplicas 0 defaults no minReplicas below the schema minimum (M2)",
			layout:      schemaLayout(ctLayout()),
			cur:         scaling.Workload{Replicas: ctI32(0), Config: &scaling.Config{MaxReplicas: ctI32(0)}},
			want:        scaling.Workload{Replicas: ctI32(0), Config: &scaling.Config{MaxReplicas: ctI32(0)}},
			warnings:    []string{"spec.scaleConfig.minReplicas not set to 0"},
			userInvalid: true,
		},
		{
			name:        "M7 values the user wrote are the API server's to judge",
			layout:      schemaLayout(ctLayout()),
			cur:         scaling.Workload{Replicas: ctI32(0), Config: ctRange(0, 0)},
			want:        scaling.Workload{Replicas: ctI32(0), Config: ctRange(0, 0)},
			userInvalid: true,
		},
		{
			name:   "M7 an annotation has no schema",
			layout: schemaLayout(ctAnnotationLayout()),
			cur:    scaling.Workload{Replicas: ctI32(0), Config: &scaling.Config{MaxReplicas: ctI32(0)}},
			want:   scaling.Workload{Replicas: ctI32(0), Config: ctRange(0, 0)},
		},
		{
			name: "M7 without a schema replicas 0 pins at 0 (as before)",
			cur:  scaling.Workload{Replicas: ctI32(0)},
			want: scaling.Workload{Replicas: ctI32(0), Config: ctRange(0, 0)},
		},
	}
	for _, tt := range cases {
		t.Run(tt.name, func(t *testing.T) {
			got, warns := scaling.DefaultWithWarnings(tt.old, tt.cur, tt.layout)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("DefaultWithWarnings (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.want, scaling.Default(tt.old, tt.cur, tt.layout)); diff != "" {
				t.Errorf("Default (-want +got):\n%s", diff)
			}
			if len(warns) != len(tt.warnings) {
				t.Fatalf("warnings = %q, want %d containing %q", warns, len(tt.warnings), tt.warnings)
			}
			for i, w := range tt.warnings {
				if !strings.Contains(warns[i], w) {
					t.Errorf("warning %d = %q, want it to contain %q", i, warns[i], w)
				}
			}
			if errs := scaling.SchemaRefusals(got, tt.layout); len(errs) > 0 && !tt.userInvalid {
				t.Errorf("Default wrote values the schema refuses: %v", errs)
			}
			// M6 still holds: defaulting the result again changes nothing.
			if diff := cmp.Diff(got, scaling.Default(tt.old, got, tt.layout)); diff != "" {
				t.Errorf("Default is not idempotent (-first +second):\n%s", diff)
			}
		})
	}
}

// S2: a /scale write whose follow-up write (C1's re-pin, the member
// counts) the schema would refuse is refused at admission, naming the
// limit. Once, kubectl scale --replicas=0 on a pinned object was
// accepted, and the controller then retried a refused write forever.
func TestS2ScaleFollowUpRefusedBySchema(t *testing.T) {
	cases := []struct {
		name   string
		layout scaling.Layout
		w      scaling.Workload
		r      int32
		want   string // substring of the detail; "" means allowed
	}{
		{
			name:   "S2 scaling a pinned config to 0 below the schema minimum",
			layout: schemaLayout(ctLayout()),
			w:      scaling.Workload{Replicas: ctI32(3), Config: ctRange(3, 3), Groups: ctRacks(3, 3)},
			r:      0,
			want:   "scaling to 0 needs spec.scaleConfig.minReplicas := 0, but the CRD's schema requires a value of at least 1 (minimum); spec.scaleConfig.maxReplicas := 0, but the CRD's schema requires a value of at least 1 (minimum); scale to a count from 1 to 10",
		},
		{
			name:   "S2 scaling a pinned config to 2 is allowed",
			layout: schemaLayout(ctLayout()),
			w:      scaling.Workload{Replicas: ctI32(3), Config: ctRange(3, 3), Groups: ctRacks(3, 3)},
			r:      2,
		},
		{
			name:   "S2 members above the schema maximum",
			layout: schemaLayout(ctLayout()),
			w:      scaling.Workload{Replicas: ctI32(3), Config: ctRange(1, 20), Groups: ctRacks(3, 3)},
			r:      11,
			want:   "spec.racks[0].members := 11, but the CRD's schema requires a value of at most 10 (maximum)",
		},
		{
			name:   "S2 a range is not re-pinned, so 0 needs no pin",
			layout: schemaLayout(ctKymaLayout()),
			w:      scaling.Workload{Replicas: ctI32(3), Config: ctRange(1, 5)},
			r:      0,
		},
		{
			name:   "S2 without a config nothing follows",
			layout: schemaLayout(ctKymaLayout()),
			w:      scaling.Workload{Replicas: ctI32(3)},
			r:      0,
		},
		{
			name: "S2 without a schema everything is allowed",
			w:    scaling.Workload{Replicas: ctI32(3), Config: ctRange(3, 3)},
			r:    0,
		},
	}
	for _, tt := range cases {
		t.Run(tt.name, func(t *testing.T) {
			e := scaling.ScaleFollowUp(tt.w, tt.r, tt.layout)
			switch {
			case tt.want == "" && e != nil:
				t.Errorf("ScaleFollowUp = %v, want allowed", e)
			case tt.want != "" && e == nil:
				t.Errorf("ScaleFollowUp allowed %d, want refused with %q", tt.r, tt.want)
			case tt.want != "" && (e.Field != "spec.replicas" || !strings.Contains(e.Detail, tt.want)):
				t.Errorf("ScaleFollowUp = %s: %s, want spec.replicas: ...%s...", e.Field, e.Detail, tt.want)
			}
		})
	}
}

// With a defaulted spec.replicas, the built-in HPA on a child
// (C4 with R absent) could never be reached. R equal to the schema default
// under a range counts as unset.
func TestDefaultedReplicasKeepsBuiltInChildHPAReachable(t *testing.T) {
	metrics := []autoscalingv2.MetricSpec{ctCPU(60)}
	ranged := &scaling.Config{MinReplicas: ctI32(1), MaxReplicas: ctI32(5), Metrics: metrics}
	cases := []struct {
		name    string
		layout  scaling.Layout
		w       scaling.Workload
		wantHPA bool
		warns   int
	}{
		{"child target, R is the schema default, range: built-in HPA", schemaLayout(ctKymaLayout()), scaling.Workload{Replicas: ctI32(1), Config: ranged}, true, 0},
		{"child target, R differs from the default: external mode (W2)", schemaLayout(ctKymaLayout()), scaling.Workload{Replicas: ctI32(2), Config: ranged}, false, 1},
		{"child target, R is the default but pinned: no HPA", schemaLayout(ctKymaLayout()), scaling.Workload{Replicas: ctI32(1), Config: ctRange(1, 1)}, false, 0},
		{"child target without a schema default: external mode as before", ctKymaLayout(), scaling.Workload{Replicas: ctI32(1), Config: ranged}, false, 1},
		{"self target: built-in HPA whatever R", schemaLayout(ctLayout()), scaling.Workload{Replicas: ctI32(1), Config: ranged}, true, 0},
	}
	for _, tt := range cases {
		t.Run(tt.name, func(t *testing.T) {
			d := scaling.DecideHPA(tt.w, tt.layout, nil, nil)
			if d.Want != tt.wantHPA {
				t.Errorf("DecideHPA.Want = %v (%s), want %v", d.Want, d.Reason, tt.wantHPA)
			}
			_, warns := scaling.Validate(tt.w, tt.layout, nil)
			if len(warns) != tt.warns {
				t.Errorf("Validate warnings = %q, want %d", warns, tt.warns)
			}
		})
	}
}

// BenchmarkDefaultWithSchema is BenchmarkDefault with a third-party kind's limits in
// the layout (M7 checks every written value).
func BenchmarkDefaultWithSchema(b *testing.B) {
	old := ctFull()
	cur := ctFull()
	*cur.Replicas = 5
	l := schemaLayout(ctLayout())
	b.ReportAllocs()
	for b.Loop() {
		_, _ = scaling.DefaultWithWarnings(&old, cur, l)
	}
}

func BenchmarkScaleFollowUp(b *testing.B) {
	w := scaling.Workload{Replicas: ctI32(3), Config: ctRange(3, 3), Groups: ctRacks(3, 3, 3)}
	l := schemaLayout(ctLayout())
	b.ReportAllocs()
	for b.Loop() {
		_ = scaling.ScaleFollowUp(w, 0, l)
	}
}

// M7 in the warnings: a pin that disagrees with replicas but cannot follow
// it says so, instead of W1's "it will become".
func TestM7PinThatCannotFollowWarns(t *testing.T) {
	w := scaling.Workload{Replicas: ctI32(0), Config: ctRange(3, 3)}
	_, warns := scaling.Validate(w, schemaLayout(ctLayout()), nil)
	want := []string{"spec.scaleConfig is pinned at 3 while spec.replicas is 0, and the pin cannot follow: spec.scaleConfig.minReplicas: the CRD's schema requires a value of at least 1 (minimum); set spec.replicas to a count the schema accepts, or give the config a range"}
	if diff := cmp.Diff(want, warns); diff != "" {
		t.Errorf("warnings (-want +got):\n%s", diff)
	}
	_, warns = scaling.Validate(w, ctLayout(), nil)
	if len(warns) != 1 || !strings.Contains(warns[0], "so it will become 0") {
		t.Errorf("without a schema: %q, want W1's", warns)
	}
}

// maxOnlyLayout limits only the config's maxReplicas (at most 10).
func maxOnlyLayout() scaling.Layout {
	l := ctLayout()
	l.Schema.MaxReplicas = scaling.Limits{Known: true, Type: "integer", Maximum: ctF64(10)}
	return l
}
