package webhooks

import (
	"fmt"
	"strings"

	admissionv1 "k8s.io/api/admission/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/scaleplane/scaleplane/profile"
	"github.com/scaleplane/scaleplane/scaling"
)

// readOld reads the stored object of an UPDATE. It is nil when there is none
// or when it cannot be read cleanly: rules that compare with the old object
// (M3, the validation ratchet) then treat the request like a CREATE, which
// never loosens a rule.
func readOld(view *profile.Compiled, dec *decoder, req admission.Request) *scaling.Workload {
	if req.Operation != admissionv1.Update || len(req.OldObject.Raw) == 0 {
		return nil
	}
	obj, err := dec.decode(req.OldObject.Raw)
	if err != nil {
		return nil
	}
	w, errs := obj.read(view)
	if len(errs) > 0 {
		return nil
	}
	return &w
}

// invalid is a refusal the API server passes on as a 422 Invalid with one
// cause per field error. kubectl prints each cause with its field path;
// admission.Denied would flatten them into a 403 message.
//
// The status is apierrors.NewInvalid's, with its message built in one
// pass: NewInvalid joins the messages with string concatenation
// (k8s.io/apimachinery's aggregate.Error), which is quadratic in their
// number, and one object can carry thousands of problems. 5,000 invalid
// rack names took 5 s of CPU and gigabytes of copying in the validating
// webhook, past the API server's 10 s timeout on a loaded machine.
func invalid(gk schema.GroupKind, name string, errs field.ErrorList, warnings []string) admission.Response {
	st := apierrors.NewInvalid(gk, name, nil).Status()
	if len(errs) > 0 {
		st.Details.Causes = make([]metav1.StatusCause, 0, len(errs))
		for _, e := range errs {
			st.Details.Causes = append(st.Details.Causes, metav1.StatusCause{
				Type: metav1.CauseType(e.Type), Message: e.ErrorBody(), Field: e.Field,
			})
		}
		st.Message = fmt.Sprintf("%s %q is invalid: %s", gk.String(), name, joinErrors(errs))
	}
	return admission.Response{AdmissionResponse: admissionv1.AdmissionResponse{
		Allowed:  false,
		Result:   &st,
		Warnings: warnings,
	}}
}

// joinErrors is what errs.ToAggregate().Error() says, in linear time: each
// distinct message once, in order, and a list in brackets when there is
// more than one.
func joinErrors(errs field.ErrorList) string {
	seen := make(map[string]bool, len(errs))
	var b strings.Builder
	n := 0
	for _, e := range errs {
		msg := e.Error()
		if seen[msg] {
			continue
		}
		seen[msg] = true
		if n > 0 {
			b.WriteString(", ")
		}
		b.WriteString(msg)
		n++
	}
	if n == 1 {
		return b.String()
	}
	return "[" + b.String() + "]"
}

// kindLabel names a view's kind in metrics, as kubectl names kinds:
// RackedCluster.samples.scaleplane.io.
func kindLabel(view *profile.Compiled) string { return view.GVK().GroupKind().String() }

// createOrUpdate reports whether op is one the main resource's webhooks
// judge. DELETE and CONNECT carry nothing scaleplane checks.
func createOrUpdate(op admissionv1.Operation) bool {
	return op == admissionv1.Create || op == admissionv1.Update
}
