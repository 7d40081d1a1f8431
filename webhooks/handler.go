package webhooks

import (
	"errors"
	"fmt"

	admissionv1 "k8s.io/api/admission/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/scaleplane/scaleplane/config"
	"github.com/scaleplane/scaleplane/scaling"
)

// decodeObject decodes an admission request's raw object. Integers become
// int64, as the API machinery decodes them, so a view reads the same values
// the API server stores; decoding the raw bytes ourselves (rather than
// through a scheme) is what lets any profiled kind through.
func decodeObject(raw []byte) (*unstructured.Unstructured, error) {
	if len(raw) == 0 {
		return nil, errors.New("the request holds no object")
	}
	var m map[string]interface{}
	if err := utiljson.Unmarshal(raw, &m); err != nil {
		return nil, fmt.Errorf("the object is not a JSON object: %w", err)
	}
	if m == nil {
		return nil, errors.New("the object is null")
	}
	return &unstructured.Unstructured{Object: m}, nil
}

// readOld reads the stored object of an UPDATE. It is nil when there is none
// or when it cannot be read cleanly: rules that compare with the old object
// (M3, the validation ratchet) then treat the request like a CREATE, which
// never loosens a rule.
func readOld(view *config.View, req admission.Request) *scaling.Workload {
	if req.Operation != admissionv1.Update || len(req.OldObject.Raw) == 0 {
		return nil
	}
	obj, err := decodeObject(req.OldObject.Raw)
	if err != nil {
		return nil
	}
	w, errs := view.Read(obj)
	if len(errs) > 0 {
		return nil
	}
	return &w
}

// invalid is a refusal the API server passes on as a 422 Invalid with one
// cause per field error. kubectl prints each cause with its field path;
// admission.Denied would flatten them into a 403 message.
func invalid(gk schema.GroupKind, name string, errs field.ErrorList, warnings []string) admission.Response {
	st := apierrors.NewInvalid(gk, name, errs).Status()
	return admission.Response{AdmissionResponse: admissionv1.AdmissionResponse{
		Allowed:  false,
		Result:   &st,
		Warnings: warnings,
	}}
}

// kindLabel names a view's kind in metrics, as kubectl names kinds:
// RackedCluster.samples.scaleplane.io.
func kindLabel(view *config.View) string { return view.GVK().GroupKind().String() }

// createOrUpdate reports whether op is one the main resource's webhooks
// judge. DELETE and CONNECT carry nothing scaleplane checks.
func createOrUpdate(op admissionv1.Operation) bool {
	return op == admissionv1.Create || op == admissionv1.Update
}
