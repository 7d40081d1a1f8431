package profiles

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/scaleplane/scaleplane/profile"
	"github.com/scaleplane/scaleplane/profile/profiletest"
)

// An active profile whose CRD prunes scale config fields says so in its
// condition's message, naming each field; one whose CRD keeps them all
// adds nothing.
func TestActiveMessageNamesConfigFieldsTheCRDPrunes(t *testing.T) {
	c, err := profile.Compile(profiletest.PinnedFunction())
	if err != nil {
		t.Fatal(err)
	}
	v, err := c.WithCRD(profiletest.PinnedFunctionCRD())
	if err != nil {
		t.Fatal(err)
	}
	s := State{View: v, Condition: metav1.Condition{Status: metav1.ConditionTrue, Reason: "Active", Message: "scaleplane runs functions"}}
	if !s.Active() {
		t.Fatalf("state %+v is not active", s)
	}
	got := withPruningNote(s).Condition.Message
	if !strings.HasPrefix(got, "scaleplane runs functions; ") || !strings.Contains(got, ".spec.scaleConfig.{behavior,dependsOn,fallback,") {
		t.Errorf("message %q does not name the pruned config fields", got)
	}

	plain := State{View: c, Condition: s.Condition}
	if got := withPruningNote(plain).Condition.Message; got != "scaleplane runs functions" {
		t.Errorf("a kind without schema limits got message %q", got)
	}
}
