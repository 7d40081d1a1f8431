package webhooks

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/validation/field"
	kjson "sigs.k8s.io/json"

	"github.com/scaleplane/scaleplane/profile"
	"github.com/scaleplane/scaleplane/scaling"
)

// object is an admission request's object, decoded only as far as a view
// needs it. Profile paths lie under .spec (checked when the profile is
// loaded) and the config annotation under .metadata.annotations, and
// admission reads no status: so only the spec fields a view's paths start
// with, and name, namespace, generation and (for a config in an
// annotation) annotations of metadata, are decoded into u. Everything else (managedFields, status, the rest of the
// spec) is skipped over and never built into maps. Objects written with
// kubectl apply carry large managedFields and workloads large pod
// templates; not decoding them is most of what makes a review cheap.
type object struct {
	// u is what the view reads and writes: a partial copy of the object in
	// which every field present is at the path it has in the object, and
	// present exactly when it is present (and not null) in the object.
	u *unstructured.Unstructured
}

// read is the view's Read of the object: the one decoder of the scale
// config, as in the controllers.
func (o *object) read(view *profile.Compiled) (scaling.Workload, field.ErrorList) {
	return view.Read(o.u)
}

// decoder decodes the objects of one view. It is built once per handler:
// the spec fields it decodes become the fields of a struct type made for
// them, so one pass of the JSON decoder over the request's bytes fills
// spec and metadata and skips everything else without allocating. The
// fields it keeps are decoded as the API machinery decodes an object
// (sigs.k8s.io/json into unstructured form), so the view reads the values
// the API server stores, by the same decoder as everywhere else.
//
// This decoder is admission's one fast path, and whole is its switch
// (NewReferenceMutator, NewReferenceValidator): on an UPDATE of a 90 KB
// object written by 21 field managers, decoding the whole object and
// diffing it cost the mutating review about four times the CPU and the
// update 7 ms at the client (BenchmarkLargeObject, BenchmarkUpdateLatency in
// e2e/admission; docs/design.md). checkDecoder and checkReference
// (FuzzMutate, FuzzValidate) hold it equal to the whole decode.
type decoder struct {
	keys []string
	typ  reflect.Type
	// whole: decode the whole object into unstructured form, the reference
	// decode (wholeDecoder).
	whole bool
}

// wholeDecoder decodes every field of the object, as the API machinery
// does: the reference the view's decoder is held equal to.
func wholeDecoder() *decoder { return &decoder{whole: true} }

// metaCore are the metadata fields every view reads.
type metaCore struct {
	Name       *string `json:"name"`
	Namespace  *string `json:"namespace"`
	Generation *int64  `json:"generation"`
}

// metaFields adds the annotations, for a view whose config is in one.
// Other views leave them undecoded: objects written with kubectl apply
// carry their whole spec again in an annotation.
type metaFields struct {
	metaCore
	Annotations map[string]interface{} `json:"annotations"`
}

// metadata is what the decoded metadata turns into for the view.
type metadata interface{ object() map[string]interface{} }

func newDecoder(l scaling.Layout) *decoder {
	d := &decoder{keys: specKeys(l)}
	meta := reflect.TypeFor[*metaCore]()
	if l.ConfigInAnnotation {
		meta = reflect.TypeFor[*metaFields]()
	}
	specFields := make([]reflect.StructField, len(d.keys))
	for i, k := range d.keys {
		specFields[i] = reflect.StructField{
			Name: fmt.Sprintf("F%d", i),
			Type: reflect.TypeFor[interface{}](),
			Tag:  reflect.StructTag(fmt.Sprintf(`json:%q`, k)),
		}
	}
	d.typ = reflect.StructOf([]reflect.StructField{
		{Name: "Spec", Type: reflect.PointerTo(reflect.StructOf(specFields)), Tag: `json:"spec"`},
		{Name: "Metadata", Type: meta, Tag: `json:"metadata"`},
	})
	return d
}

// specKeys are the spec fields a view's paths start with, in a fixed order.
func specKeys(l scaling.Layout) []string {
	var keys []string
	for _, p := range []*field.Path{l.ReplicasPath, l.ConfigPath, l.GroupsPath} {
		if p == nil {
			continue
		}
		// "spec.racks" and "spec.topology.zones" start with racks and
		// topology; annotation paths are not under spec.
		segs := strings.SplitN(p.String(), ".", 3)
		if len(segs) < 2 || segs[0] != "spec" {
			continue
		}
		k := strings.SplitN(segs[1], "[", 2)[0]
		if !contains(keys, k) {
			keys = append(keys, k)
		}
	}
	return keys
}

func contains(l []string, s string) bool {
	for _, e := range l {
		if e == s {
			return true
		}
	}
	return false
}

// decode decodes raw, an admission request's object. Integers become int64
// and field names match case-sensitively, as in the API machinery, so a
// view reads the values the API server stores; decoding the raw bytes
// ourselves (rather than through a scheme) is what lets any profiled kind
// through.
func (d *decoder) decode(raw []byte) (*object, error) {
	// JSON's whitespace only, as the decoder below accepts it.
	data := bytes.Trim(raw, " \t\r\n")
	if len(data) == 0 {
		return nil, errors.New("the request holds no object")
	}
	if data[0] != '{' {
		return nil, fmt.Errorf("the object is not a JSON object but %.20q", data)
	}
	if d.whole {
		var m map[string]interface{}
		if err := kjson.UnmarshalCaseSensitivePreserveInts(data, &m); err != nil {
			return nil, fmt.Errorf("the object is not valid JSON: %w", err)
		}
		return &object{u: &unstructured.Unstructured{Object: m}}, nil
	}
	o := &object{u: &unstructured.Unstructured{Object: make(map[string]interface{}, 2)}}
	top := reflect.New(d.typ)
	if kjson.UnmarshalCaseSensitivePreserveInts(data, top.Interface()) != nil {
		// A spec that is not an object, or metadata the API server would
		// never send (a generation that is not an integer).
		return d.decodeLoosely(data)
	}
	if spec := top.Elem().Field(0); !spec.IsNil() {
		m := make(map[string]interface{}, len(d.keys))
		for i, k := range d.keys {
			if v := spec.Elem().Field(i).Interface(); v != nil {
				m[k] = v
			}
		}
		o.u.Object["spec"] = m
	}
	if md := top.Elem().Field(1); !md.IsNil() {
		o.u.Object["metadata"] = md.Interface().(metadata).object()
	}
	return o, nil
}

// decodeLoosely decodes spec and metadata whole, so that the view reports
// what is wrong with them at its path; only malformed objects get here.
func (d *decoder) decodeLoosely(data []byte) (*object, error) {
	var top struct {
		Spec     rawJSON `json:"spec"`
		Metadata rawJSON `json:"metadata"`
	}
	if err := kjson.UnmarshalCaseSensitivePreserveInts(data, &top); err != nil {
		return nil, fmt.Errorf("the object is not valid JSON: %w", err)
	}
	o := &object{u: &unstructured.Unstructured{Object: make(map[string]interface{}, 2)}}
	for _, part := range []struct {
		name string
		data rawJSON
	}{{"spec", top.Spec}, {"metadata", top.Metadata}} {
		if part.data == nil {
			continue
		}
		var v interface{}
		if err := kjson.UnmarshalCaseSensitivePreserveInts(part.data, &v); err != nil {
			return nil, fmt.Errorf("decode %s: %w", part.name, err)
		}
		if v != nil {
			o.u.Object[part.name] = v
		}
	}
	return o, nil
}

// object returns the metadata fields as unstructured values.
func (f *metaFields) object() map[string]interface{} {
	m := f.metaCore.object()
	if f.Annotations != nil {
		m["annotations"] = f.Annotations
	}
	return m
}

func (f *metaCore) object() map[string]interface{} {
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
	return m
}

// rawJSON is json.RawMessage without the copy: it refers into the request's
// bytes, which outlive the review and are never changed.
type rawJSON []byte

func (r *rawJSON) UnmarshalJSON(data []byte) error {
	if string(data) == "null" {
		*r = nil
		return nil
	}
	*r = data
	return nil
}

var _ json.Unmarshaler = (*rawJSON)(nil)
