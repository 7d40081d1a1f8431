package failover

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestHistoryCheck shows that checkHistory, which the failover
// test relies on for "nothing lost, no double scale", catches each way a
// failover could get C1 wrong.
func TestHistoryCheck(t *testing.T) {
	v := func(rv string, replicas int64, racks ...int64) version {
		return version{ResourceVersion: rv, Replicas: replicas, Racks: racks}
	}
	tests := []struct {
		name   string
		vs     []version
		scaled []int64
		want   []string
	}{{
		name: "every scale applied and fanned out once; two scales coalesced into one fan-out",
		vs: []version{
			v("1", 2, 2, 2), v("2", 3, 2, 2), v("3", 3, 3, 3),
			v("4", 4, 3, 3), v("5", 5, 3, 3), v("6", 5, 5, 5),
		},
		scaled: []int64{3, 4, 5},
	}, {
		name:   "half-applied fan-out",
		vs:     []version{v("1", 2, 2, 2), v("2", 3, 2, 2), v("3", 3, 3, 2), v("4", 3, 3, 3)},
		scaled: []int64{3},
		want: []string{
			"version 3 has racks [3 2]: a half-applied fan-out",
			"version 4 set the racks [3 2] -> [3 3] after they had been 3: a scale fanned out again or after a newer one",
			"2 rack writes for 1 scales",
		},
	}, {
		name: "an older scale fanned out after a newer one (two leaders)",
		vs: []version{
			v("1", 2, 2, 2), v("2", 3, 2, 2), v("3", 4, 2, 2), v("4", 4, 4, 4), v("5", 4, 3, 3), v("6", 4, 4, 4),
		},
		scaled: []int64{3, 4},
		want: []string{
			"version 5 set the racks to [3 3] while spec.replicas is 4",
			"version 5 set the racks [4 4] -> [3 3] after they had been 4: a scale fanned out again or after a newer one",
			"version 6 set the racks [3 3] -> [4 4] after they had been 4: a scale fanned out again or after a newer one",
			"3 rack writes for 2 scales",
		},
	}, {
		name:   "a scale lost",
		vs:     []version{v("1", 2, 2, 2), v("2", 4, 2, 2), v("3", 4, 4, 4)},
		scaled: []int64{3, 4},
		want:   []string{"spec.replicas went through [4] after 2, want the scaled values [3 4]"},
	}, {
		name:   "racks never reached the last scale",
		vs:     []version{v("1", 2, 2, 2), v("2", 3, 2, 2)},
		scaled: []int64{3},
		want:   []string{"last version 2 has spec.replicas 3 and racks [2 2], want 3 everywhere"},
	}, {
		name:   "racks and replicas in one write",
		vs:     []version{v("1", 2, 2, 2), v("2", 3, 3, 3)},
		scaled: []int64{3},
		want:   []string{"version 2 changed spec.replicas 2 -> 3 and the racks [2 2] -> [3 3] in one write: not a fan-out"},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, checkHistory(tt.vs, tt.scaled)); diff != "" {
				t.Errorf("problems (-want +got):\n%s", diff)
			}
		})
	}
}
