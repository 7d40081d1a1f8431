package certs

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestInjectionNewer(t *testing.T) {
	in := injection{uid: "u1", revision: 5}
	tests := []struct {
		name    string
		current string
		want    bool
	}{
		{name: "never injected", current: "", want: true},
		{name: "older revision of the same Secret", current: "u1/4", want: true},
		{name: "same revision (caBundle may have been reset)", current: "u1/5", want: true},
		{name: "newer revision written by another replica", current: "u1/6", want: false},
		{name: "another Secret (re-created)", current: "u0/9", want: true},
		{name: "unparsable annotation", current: "u1/x", want: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, in.newer(tt.current)); diff != "" {
				t.Errorf("newer(%q) (-want +got):\n%s", tt.current, diff)
			}
		})
	}
}
