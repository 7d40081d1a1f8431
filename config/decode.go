package config

import (
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"reflect"
	"slices"
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/scaleplane/scaleplane/scaling"
)

// This file converts the scale config found at a spec path from its
// unstructured form straight into a scaling.Config. A JSON round trip would
// do the same job at several times the cost on every admission request; the
// API machinery's converter is close in cost but reports type errors without
// a path. Decoding follows encoding/json's rules (json tags, null leaves a
// field unset, integral floats fill integer fields) except that field names
// match case-sensitively, as in the API server.

// decodeConfig decodes the scale config m found at root. Unknown fields are
// ignored: at a spec path the CRD's structural schema has already pruned
// what it does not know, and a schema that preserves unknown fields is the
// CRD author's choice, not an error of the user's.
func decodeConfig(m map[string]interface{}, root *field.Path) (*scaling.Config, field.ErrorList) {
	cfg := &scaling.Config{}
	d := decoder{root: root}
	d.object(m, reflect.ValueOf(cfg).Elem(), nil)
	if len(d.errs) > 0 {
		return nil, d.errs
	}
	return cfg, nil
}

type decoder struct {
	root *field.Path
	errs field.ErrorList
}

// step is one element of the path to the value being decoded. Steps live
// on the stack and turn into a field.Path only when an error is reported, so
// a config without errors costs no path allocations.
type step struct {
	parent *step
	name   string
	index  int // used when name is empty
}

func (d *decoder) path(s *step) *field.Path {
	if s == nil {
		return d.root
	}
	p := d.path(s.parent)
	if s.name == "" {
		return p.Index(s.index)
	}
	return p.Child(s.name)
}

func (d *decoder) invalid(s *step, v interface{}, detail string) {
	d.errs = append(d.errs, field.Invalid(d.path(s), v, detail))
}

func (d *decoder) wrongType(s *step, v interface{}, want string) {
	d.invalid(s, v, fmt.Sprintf("must be %s, not %s", want, typeName(v)))
}

var (
	unmarshalerType = reflect.TypeFor[json.Unmarshaler]()
	quantityType    = reflect.TypeFor[resource.Quantity]()
)

// value decodes v into dst, an addressable zero value.
func (d *decoder) value(v interface{}, dst reflect.Value, s *step) {
	if v == nil {
		return // null leaves the field unset, as in encoding/json
	}
	t := dst.Type()
	if t == quantityType {
		d.quantity(v, dst, s)
		return
	}
	if t.Kind() != reflect.Pointer && reflect.PointerTo(t).Implements(unmarshalerType) {
		d.unmarshaler(v, dst, s)
		return
	}
	switch t.Kind() {
	case reflect.Pointer:
		elem := reflect.New(t.Elem())
		before := len(d.errs)
		d.value(v, elem.Elem(), s)
		if len(d.errs) == before {
			dst.Set(elem)
		}
	case reflect.Struct:
		m, ok := v.(map[string]interface{})
		if !ok {
			d.wrongType(s, v, "an object")
			return
		}
		d.object(m, dst, s)
	case reflect.Slice:
		l, ok := v.([]interface{})
		if !ok {
			d.wrongType(s, v, "a list")
			return
		}
		out := reflect.MakeSlice(t, len(l), len(l))
		for i, item := range l {
			d.value(item, out.Index(i), &step{parent: s, index: i})
		}
		dst.Set(out)
	case reflect.Map:
		m, ok := v.(map[string]interface{})
		if !ok || t.Key().Kind() != reflect.String {
			d.wrongType(s, v, "an object")
			return
		}
		out := reflect.MakeMapWithSize(t, len(m))
		// Sorted so that errors come out in the same order every time.
		for _, k := range slices.Sorted(maps.Keys(m)) {
			elem := reflect.New(t.Elem()).Elem()
			d.value(m[k], elem, &step{parent: s, name: k})
			out.SetMapIndex(reflect.ValueOf(k).Convert(t.Key()), elem)
		}
		dst.Set(out)
	case reflect.String:
		str, ok := v.(string)
		if !ok {
			d.wrongType(s, v, "a string")
			return
		}
		dst.SetString(str)
	case reflect.Bool:
		b, ok := v.(bool)
		if !ok {
			d.wrongType(s, v, "a boolean")
			return
		}
		dst.SetBool(b)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		n, ok := asInt64(v)
		if !ok {
			d.wrongType(s, v, "an integer")
			return
		}
		if dst.OverflowInt(n) {
			bits := t.Bits()
			d.invalid(s, v, fmt.Sprintf("must be an integer between %d and %d", -(int64(1)<<(bits-1)), int64(1)<<(bits-1)-1))
			return
		}
		dst.SetInt(n)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		n, ok := asInt64(v)
		if !ok || n < 0 || dst.OverflowUint(uint64(n)) {
			d.wrongType(s, v, "a non-negative integer")
			return
		}
		dst.SetUint(uint64(n))
	case reflect.Float32, reflect.Float64:
		f, ok := asFloat64(v)
		if !ok {
			d.wrongType(s, v, "a number")
			return
		}
		dst.SetFloat(f)
	case reflect.Interface:
		dst.Set(reflect.ValueOf(v))
	default:
		d.invalid(s, v, fmt.Sprintf("cannot be decoded into %s", t))
	}
}

// quantity parses a resource.Quantity without the JSON detour, which
// matters because every metric target holds one.
func (d *decoder) quantity(v interface{}, dst reflect.Value, s *step) {
	var str string
	switch n := v.(type) {
	case string:
		str = strings.TrimSpace(n)
	case float64:
		if n == math.Trunc(n) && math.Abs(n) < 1<<53 {
			str = fmt.Sprint(int64(n))
		} else {
			str = fmt.Sprint(n)
		}
	default:
		i, ok := asInt64(v)
		if !ok {
			d.wrongType(s, v, `a quantity such as "100m" or 5`)
			return
		}
		dst.Set(reflect.ValueOf(*resource.NewQuantity(i, resource.DecimalSI)))
		return
	}
	q, err := resource.ParseQuantity(str)
	if err != nil {
		d.invalid(s, v, `must be a quantity such as "100m", "1Gi" or 5`)
		return
	}
	dst.Set(reflect.ValueOf(q))
}

// unmarshaler decodes types with their own JSON form (none in the current
// Config besides Quantity, but API types grow).
func (d *decoder) unmarshaler(v interface{}, dst reflect.Value, s *step) {
	data, err := json.Marshal(v)
	if err == nil {
		err = dst.Addr().Interface().(json.Unmarshaler).UnmarshalJSON(data)
	}
	if err != nil {
		d.invalid(s, v, err.Error())
	}
}

// object decodes m into the struct dst, walking the struct's fields in
// declaration order so that results and errors are deterministic.
func (d *decoder) object(m map[string]interface{}, dst reflect.Value, s *step) {
	for _, f := range structFields(dst.Type()) {
		v, ok := m[f.name]
		if !ok {
			continue
		}
		d.value(v, dst.FieldByIndex(f.index), &step{parent: s, name: f.name})
	}
}

type jsonField struct {
	name  string
	index []int
}

var fieldCache sync.Map // reflect.Type -> []jsonField

// structFields lists the JSON fields of struct type t, with inlined
// embedded structs flattened as encoding/json does.
func structFields(t reflect.Type) []jsonField {
	if f, ok := fieldCache.Load(t); ok {
		return f.([]jsonField)
	}
	var fields []jsonField
	for i := range t.NumField() {
		sf := t.Field(i)
		tag := sf.Tag.Get("json")
		name, _, _ := strings.Cut(tag, ",")
		if name == "-" && tag == "-" {
			continue
		}
		if sf.Anonymous && name == "" && sf.Type.Kind() == reflect.Struct {
			for _, inner := range structFields(sf.Type) {
				fields = append(fields, jsonField{name: inner.name, index: append([]int{i}, inner.index...)})
			}
			continue
		}
		if !sf.IsExported() {
			continue
		}
		if name == "" {
			name = sf.Name
		}
		fields = append(fields, jsonField{name: name, index: []int{i}})
	}
	fieldCache.Store(t, fields)
	return fields
}

func asFloat64(v interface{}) (float64, bool) {
	switch n := v.(type) {
	case float64:
		return n, true
	case float32:
		return float64(n), true
	}
	i, ok := asInt64(v)
	return float64(i), ok
}
