package webhooks

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	admissionv1 "k8s.io/api/admission/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
	kjson "sigs.k8s.io/json"

	"github.com/scaleplane/scaleplane/config"
	"github.com/scaleplane/scaleplane/scaling"
)

// object is an admission request's object, decoded only as far as a view
// needs it. Profile paths lie under .spec (checked when the profile is
// loaded) and the config annotation under .metadata.annotations, and
// admission reads no status: so only the spec fields a view's paths start
// with, and name, namespace, generation and annotations of metadata, are
// decoded into u. Everything else (managedFields, status, the rest of the
// spec) is skipped over and never built into maps. Objects written with
// kubectl apply carry large managedFields and workloads large pod
// templates; not decoding them is most of what makes a review cheap.
type object struct {
	// u is what the view reads and writes: a partial copy of the object in
	// which every field present is at the path it has in the object.
	u *unstructured.Unstructured
}

// topLevel and metaFields pick the fields decodeObject decodes; the decoder
// skips every other field without allocating.
type topLevel struct {
	Spec     rawJSON `json:"spec"`
	Metadata rawJSON `json:"metadata"`
}

type metaFields struct {
	Name        *string                `json:"name"`
	Namespace   *string                `json:"namespace"`
	Generation  *int64                 `json:"generation"`
	Annotations map[string]interface{} `json:"annotations"`
}

// decodeObject decodes raw, an admission request's object; specKeys are the
// spec fields to decode. Integers become int64 and field names match
// case-sensitively, as in the API machinery, so a view reads the values the
// API server stores; decoding the raw bytes ourselves (rather than through
// a scheme) is what lets any profiled kind through.
func decodeObject(raw []byte, specKeys map[string]bool) (*object, error) {
	data := bytes.TrimSpace(raw)
	if len(data) == 0 {
		return nil, errors.New("the request holds no object")
	}
	if data[0] != '{' {
		return nil, fmt.Errorf("the object is not a JSON object but %.20q", data)
	}
	var top topLevel
	if err := kjson.UnmarshalCaseSensitivePreserveInts(data, &top); err != nil {
		return nil, fmt.Errorf("the object is not valid JSON: %w", err)
	}
	o := &object{u: &unstructured.Unstructured{Object: make(map[string]interface{}, 2)}}
	if spec, err := decodeSpec(top.Spec, specKeys); err != nil {
		return nil, fmt.Errorf("decode spec: %w", err)
	} else if spec != nil {
		o.u.Object["spec"] = spec
	}
	if md, err := decodeMetadata(top.Metadata); err != nil {
		return nil, fmt.Errorf("decode metadata: %w", err)
	} else if md != nil {
		o.u.Object["metadata"] = md
	}
	return o, nil
}

// decodeSpec decodes the fields of spec named in keys; a spec that is not an
// object is decoded whole, so the view reports it at its path.
func decodeSpec(spec rawJSON, keys map[string]bool) (interface{}, error) {
	if spec == nil {
		return nil, nil
	}
	fields, err := split(spec)
	if err != nil || fields == nil {
		return decodeAny(spec)
	}
	m := make(map[string]interface{}, len(keys))
	for k, data := range fields {
		if !keys[k] {
			continue
		}
		v, err := decodeAny(data)
		if err != nil {
			return nil, err
		}
		m[k] = v
	}
	return m, nil
}

// decodeMetadata decodes the metadata fields a view reads. Metadata the
// API server would never send (a generation that is not an integer) is
// decoded whole instead.
func decodeMetadata(md rawJSON) (interface{}, error) {
	if md == nil {
		return nil, nil
	}
	var f metaFields
	if len(md) == 0 || md[0] != '{' || kjson.UnmarshalCaseSensitivePreserveInts(md, &f) != nil {
		return decodeAny(md)
	}
	m := make(map[string]interface{}, 4)
	if f.Name != nil {
		m["name"] = *f.Name
	}
	if f.Namespace != nil {
		m["namespace"] = *f.Namespace
	}
	if f.Generation != nil {
		m["generation"] = *f.Generation
	}
	if f.Annotations != nil {
		m["annotations"] = f.Annotations
	}
	return m, nil
}

func decodeAny(data []byte) (interface{}, error) {
	var v interface{}
	err := utiljson.Unmarshal(data, &v)
	return v, err
}

// specKeys are the spec fields a view's paths start with.
func specKeys(l scaling.Layout) map[string]bool {
	keys := map[string]bool{}
	for _, p := range []*field.Path{l.ReplicasPath, l.ConfigPath, l.GroupsPath} {
		if p == nil {
			continue
		}
		// "spec.racks" and "spec.topology.zones" start with racks and
		// topology; annotation paths are not under spec.
		segs := strings.SplitN(p.String(), ".", 3)
		if len(segs) >= 2 && segs[0] == "spec" {
			keys[strings.SplitN(segs[1], "[", 2)[0]] = true
		}
	}
	return keys
}

// split decodes one JSON object into its fields, left raw; nil for null.
// Keys match exactly, as in the API server.
func split(data []byte) (map[string]rawJSON, error) {
	var m map[string]rawJSON
	if err := json.Unmarshal(data, &m); err != nil {
		return nil, err
	}
	return m, nil
}

// rawJSON is json.RawMessage without the copy: it refers into the request's
// bytes, which outlive the review and are never changed.
type rawJSON []byte

func (r *rawJSON) UnmarshalJSON(data []byte) error { *r = data; return nil }

func (r rawJSON) MarshalJSON() ([]byte, error) { return r, nil }

// readOld reads the stored object of an UPDATE. It is nil when there is none
// or when it cannot be read cleanly: rules that compare with the old object
// (M3, the validation ratchet) then treat the request like a CREATE, which
// never loosens a rule.
func readOld(view *config.View, keys map[string]bool, req admission.Request) *scaling.Workload {
	if req.Operation != admissionv1.Update || len(req.OldObject.Raw) == 0 {
		return nil
	}
	obj, err := decodeObject(req.OldObject.Raw, keys)
	if err != nil {
		return nil
	}
	w, errs := view.Read(obj.u)
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
