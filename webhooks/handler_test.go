package webhooks

import (
	"fmt"
	"runtime"
	"testing"

	"github.com/google/go-cmp/cmp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// badRacks is n problems as an object with n invalid rack names has them.
func badRacks(n int) field.ErrorList {
	var errs field.ErrorList
	for i := range n {
		errs = append(errs, field.Invalid(field.NewPath("spec", "racks").Index(i).Child("name"), fmt.Sprintf("R %d!", i),
			"a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.'; group names are label values of the pods' selector, so rename the group"))
	}
	return errs
}

// TestInvalidLikeNewInvalid: the refusal says exactly what
// apierrors.NewInvalid says, causes and message, for one problem, several,
// and repeated ones.
func TestInvalidLikeNewInvalid(t *testing.T) {
	gk := schema.GroupKind{Group: "samples.scaleplane.io", Kind: "RackedCluster"}
	one := field.ErrorList{field.Invalid(field.NewPath("spec", "replicas"), -1, "must be greater than or equal to 0")}
	dup := append(append(field.ErrorList{}, one...), one...)
	mixed := append(append(field.ErrorList{field.Duplicate(field.NewPath("spec", "racks").Index(1).Child("name"), "a")}, one...),
		field.Required(field.NewPath("spec", "scaleConfig", "triggers").Index(0).Child("query"), "a PromQL trigger needs a query"))
	for name, errs := range map[string]field.ErrorList{
		"one":                    one,
		"the same one twice":     dup,
		"three kinds":            mixed,
		"300 invalid rack names": badRacks(300),
	} {
		t.Run(name, func(t *testing.T) {
			want := apierrors.NewInvalid(gk, "db", errs).Status()
			got := invalid(gk, "db", errs, nil).Result
			if diff := cmp.Diff(&want, got); diff != "" {
				t.Errorf("status (-want +got):\n%s", diff)
			}
		})
	}
}

// TestInvalidCostIsLinear: a refusal of 5,000 problems costs
// memory in proportion to its message, not to its square (apimachinery's
// aggregate message copied gigabytes, taking 5 s of CPU in the webhook).
func TestInvalidCostIsLinear(t *testing.T) {
	gk := schema.GroupKind{Group: "samples.scaleplane.io", Kind: "RackedCluster"}
	errs := badRacks(5000)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	st := invalid(gk, "db", errs, nil).Result
	runtime.ReadMemStats(&after)
	allocated := after.TotalAlloc - before.TotalAlloc
	// The message, the causes' messages and one formatting of each error:
	// a few times the message, however the builder grows (about 16 times;
	// more under -race, whose instrumentation allocates too). Quadratic
	// copying costs thousands of times the message.
	if bound := 32 * uint64(len(st.Message)); allocated > bound {
		t.Errorf("a refusal of %d problems (message %d bytes) allocated %d bytes, over %d", len(errs), len(st.Message), allocated, bound)
	}
	if len(st.Details.Causes) != len(errs) {
		t.Errorf("%d causes, want %d", len(st.Details.Causes), len(errs))
	}
}

// BenchmarkInvalidManyCauses is the refusal of an object with 5,000
// invalid rack names.
func BenchmarkInvalidManyCauses(b *testing.B) {
	gk := schema.GroupKind{Group: "samples.scaleplane.io", Kind: "RackedCluster"}
	errs := badRacks(5000)
	b.ReportAllocs()
	for b.Loop() {
		invalid(gk, "db", errs, nil)
	}
}
