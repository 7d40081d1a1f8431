package profile

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"

	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation/field"
	kjson "sigs.k8s.io/json"

	"github.com/scaleplane/scaleplane/scaling"
)

// This file is the one decoder of the scale config, wherever it is read:
// validation, defaulting and the controllers all go through Compiled.Read, and
// an annotation's text through DecodeConfigJSON. The bytes of a config are
// decoded once by sigs.k8s.io/json into unstructured form, as the API
// server decodes a custom resource (case-sensitive, integers kept as int64,
// the last of duplicate keys wins); the walker below turns that form into a
// scaling.Config. It follows encoding/json's rules (json tags, null leaves
// a field unset, integral floats fill integer fields, as the API server's
// schema validation accepts them) and reports every type error at its path,
// all of them at once, which a typed json.Unmarshal cannot (it stops at the
// first, without the path). FuzzDecodeDifferential holds it to
// sigs.k8s.io/json's strict decoding of the same bytes.

// decodeConfig decodes the scale config m found at root. strict makes
// unknown fields errors, as V9 wants for a config in an annotation; at a
// spec path they are ignored, because the CRD's structural schema has
// already pruned what it does not know, and a schema that preserves unknown
// fields is the CRD author's choice, not an error of the user's. ints, when
// not nil, supplies the *int32 fields.
func decodeConfig(m map[string]interface{}, root *field.Path, strict bool, ints *int32Pool) (*scaling.Config, field.ErrorList) {
	if ints == nil {
		ints = &int32Pool{}
	}
	cfg := &scaling.Config{}
	d := decoder{root: root, strict: strict, ints: ints, stack: make([]pathElem, 0, 16)}
	d.object(m, reflect.ValueOf(cfg).Elem())
	if len(d.errs) > 0 {
		return nil, d.errs
	}
	return cfg, nil
}

// decodePartialConfig is decodeConfig that also returns, when some fields
// have errors, the config with every other field decoded and the fields in
// error left unset (a list item in error is left at its zero value, so that
// the other items keep their positions).
func decodePartialConfig(m map[string]interface{}, root *field.Path, strict bool, ints *int32Pool) (*scaling.Config, field.ErrorList) {
	if ints == nil {
		ints = &int32Pool{}
	}
	cfg := &scaling.Config{}
	d := decoder{root: root, strict: strict, ints: ints, stack: make([]pathElem, 0, 16)}
	d.object(m, reflect.ValueOf(cfg).Elem())
	return cfg, d.errs
}

type decoder struct {
	root   *field.Path
	strict bool
	errs   field.ErrorList
	ints   *int32Pool
	// stack is the path to the value being decoded. It turns into a
	// field.Path only when an error is reported, so a config without errors
	// costs no path allocations.
	stack []pathElem
}

type pathElem struct {
	name  string
	index int  // used when name is empty
	key   bool // name is a map key: reported as [name], as the API server does
}

func (d *decoder) push(e pathElem) { d.stack = append(d.stack, e) }
func (d *decoder) pop()            { d.stack = d.stack[:len(d.stack)-1] }

func (d *decoder) path() *field.Path {
	p := d.root
	for _, e := range d.stack {
		switch {
		case e.key:
			p = p.Key(e.name)
		case e.name == "":
			p = p.Index(e.index)
		default:
			p = p.Child(e.name)
		}
	}
	return p
}

func (d *decoder) invalid(v interface{}, detail string) {
	d.errs = append(d.errs, field.Invalid(d.path(), v, detail))
}

func (d *decoder) wrongType(v interface{}, want string) {
	d.invalid(v, fmt.Sprintf("must be %s, not %s", want, typeName(v)))
}

// int32Pool hands out *int32 from shared chunks: a workload has a dozen
// optional counts, and one allocation for all of them keeps admission lean.
// A chunk is never grown in place, so earlier pointers stay valid.
type int32Pool struct{ buf []int32 }

func (p *int32Pool) new(v int32) *int32 {
	if len(p.buf) == cap(p.buf) {
		p.buf = make([]int32, 0, 16)
	}
	p.buf = append(p.buf, v)
	return &p.buf[len(p.buf)-1]
}

var (
	unmarshalerType = reflect.TypeFor[json.Unmarshaler]()
	quantityType    = reflect.TypeFor[resource.Quantity]()
	int32Type       = reflect.TypeFor[int32]()
	stringMapType   = reflect.TypeFor[map[string]string]()
)

// value decodes v into dst, an addressable zero value.
func (d *decoder) value(v interface{}, dst reflect.Value) {
	if v == nil {
		return // null leaves the field unset, as in encoding/json
	}
	t := dst.Type()
	if t == quantityType {
		d.quantity(v, dst)
		return
	}
	switch t.Kind() {
	case reflect.Pointer:
		if t.Elem() == int32Type {
			if n, ok := d.int(v, 32); ok {
				dst.Set(reflect.ValueOf(d.ints.new(int32(n))))
			}
			return
		}
		elem := reflect.New(t.Elem())
		before := len(d.errs)
		d.value(v, elem.Elem())
		if len(d.errs) == before {
			dst.Set(elem)
		}
	case reflect.Struct:
		info := structInfoOf(t)
		if info.unmarshaler {
			d.unmarshaler(v, dst)
			return
		}
		m, ok := v.(map[string]interface{})
		if !ok {
			d.wrongType(v, "an object")
			return
		}
		d.object(m, dst)
	case reflect.Slice:
		l, ok := v.([]interface{})
		if !ok {
			d.wrongType(v, "a list")
			return
		}
		if len(l) == 0 {
			// Empty, not nil, as encoding/json decodes [].
			dst.Set(reflect.MakeSlice(t, 0, 0))
			return
		}
		// Grown in place: MakeSlice would allocate a header as well.
		dst.Grow(len(l))
		dst.SetLen(len(l))
		for i, item := range l {
			d.push(pathElem{index: i})
			d.value(item, dst.Index(i))
			d.pop()
		}
	case reflect.Map:
		m, ok := v.(map[string]interface{})
		if !ok || t.Key().Kind() != reflect.String {
			d.wrongType(v, "an object")
			return
		}
		if t == stringMapType {
			d.stringMap(m, dst)
			return
		}
		out := reflect.MakeMapWithSize(t, len(m))
		before := len(d.errs)
		for k, item := range m {
			elem := reflect.New(t.Elem()).Elem()
			d.push(pathElem{name: k, key: true})
			d.value(item, elem)
			d.pop()
			out.SetMapIndex(reflect.ValueOf(k).Convert(t.Key()), elem)
		}
		d.sortErrs(before)
		dst.Set(out)
	case reflect.String:
		str, ok := v.(string)
		if !ok {
			d.wrongType(v, "a string")
			return
		}
		dst.SetString(str)
	case reflect.Bool:
		b, ok := v.(bool)
		if !ok {
			d.wrongType(v, "a boolean")
			return
		}
		dst.SetBool(b)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		if n, ok := d.int(v, t.Bits()); ok {
			dst.SetInt(n)
		}
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		n, ok := asInt64(v)
		if !ok || n < 0 || dst.OverflowUint(uint64(n)) {
			d.wrongType(v, "a non-negative integer")
			return
		}
		dst.SetUint(uint64(n))
	case reflect.Float32, reflect.Float64:
		if str, ok := v.(string); ok {
			// A quantity: what api/v1alpha1's Trigger writes for a
			// threshold ("0.5", "500m"), because API conventions keep
			// floats out of a CRD's schema, as an HPA's targets do.
			d.floatQuantity(str, dst)
			return
		}
		f, ok := asFloat64(v)
		if !ok {
			d.wrongType(v, `a number or a quantity such as "0.5" or "500m"`)
			return
		}
		dst.SetFloat(f)
	case reflect.Interface:
		dst.Set(reflect.ValueOf(v))
	default:
		d.invalid(v, fmt.Sprintf("cannot be decoded into %s", t))
	}
}

// int reads an integer of the given size, reporting what was expected.
func (d *decoder) int(v interface{}, bits int) (int64, bool) {
	n, ok := asInt64(v)
	if !ok {
		d.wrongType(v, "an integer")
		return 0, false
	}
	if bits < 64 {
		lo, hi := -(int64(1) << (bits - 1)), int64(1)<<(bits-1)-1
		if n < lo || n > hi {
			d.invalid(v, fmt.Sprintf("must be an integer between %d and %d", lo, hi))
			return 0, false
		}
	}
	return n, true
}

// quantity parses a resource.Quantity without the JSON detour, which
// matters because every metric target holds one.
func (d *decoder) quantity(v interface{}, dst reflect.Value) {
	var str string
	switch n := v.(type) {
	case string:
		// Quantity.UnmarshalJSON trims the same way: this is the
		// quantity's syntax, not JSON's whitespace.
		str = strings.TrimSpace(n)
	case float64:
		if n == math.Trunc(n) && math.Abs(n) < 1<<53 {
			*dst.Addr().Interface().(*resource.Quantity) = *resource.NewQuantity(int64(n), resource.DecimalSI)
			return
		}
		// The text encoding/json writes, so the quantity's format is what a
		// JSON round trip of the object would give.
		b, err := json.Marshal(n)
		if err != nil {
			d.wrongType(v, `a finite number`)
			return
		}
		str = string(b)
	default:
		i, ok := asInt64(v)
		if !ok {
			d.wrongType(v, `a quantity such as "100m" or 5`)
			return
		}
		*dst.Addr().Interface().(*resource.Quantity) = *resource.NewQuantity(i, resource.DecimalSI)
		return
	}
	if !exponentOK(str) {
		d.invalid(v, fmt.Sprintf("must be a quantity such as \"100m\", \"1Gi\" or 5, with a decimal exponent between e-%d and e%d", maxQuantityExponent, maxQuantityExponent))
		return
	}
	q, err := resource.ParseQuantity(str)
	if err != nil {
		d.invalid(v, `must be a quantity such as "100m", "1Gi" or 5`)
		return
	}
	// Through a pointer: reflect.ValueOf(q) would box the quantity.
	*dst.Addr().Interface().(*resource.Quantity) = q
}

// floatQuantity reads a number field given as a quantity string, by the
// quantity's value.
func (d *decoder) floatQuantity(str string, dst reflect.Value) {
	const want = `must be a number or a quantity such as "0.5" or "500m"`
	s := strings.TrimSpace(str)
	if !exponentOK(s) {
		d.invalid(str, fmt.Sprintf("%s, with a decimal exponent between e-%d and e%d", want, maxQuantityExponent, maxQuantityExponent))
		return
	}
	q, err := resource.ParseQuantity(s)
	if err != nil {
		d.invalid(str, want)
		return
	}
	dst.SetFloat(q.AsApproximateFloat64())
}

// maxQuantityExponent bounds decimal exponents in quantities: for a value
// below one nano, resource.ParseQuantity first builds 10^-exponent as a
// big.Int (kubernetes/kubernetes#141306), so "1e-999999999" would hold an
// admission request, and a CPU, for minutes. No real target needs more.
const maxQuantityExponent = 1000

// exponentOK reports whether s has no decimal exponent or a bounded one.
// Anything else that is not a quantity is left for ParseQuantity to reject.
func exponentOK(s string) bool {
	i := strings.IndexAny(s, "eE")
	if i < 0 {
		return true
	}
	// "E" alone is the exa suffix and "Ei" the exbi suffix, not exponents.
	n, err := strconv.ParseInt(s[i+1:], 10, 64)
	if err != nil {
		return !errors.Is(err, strconv.ErrRange)
	}
	return n >= -maxQuantityExponent && n <= maxQuantityExponent
}

// unmarshaler decodes types with their own JSON form (none in the current
// Config besides Quantity, but API types grow).
func (d *decoder) unmarshaler(v interface{}, dst reflect.Value) {
	data, err := json.Marshal(v)
	if err == nil {
		err = dst.Addr().Interface().(json.Unmarshaler).UnmarshalJSON(data)
	}
	if err != nil {
		d.invalid(v, err.Error())
	}
}

// object decodes m into the struct dst, walking the struct's fields in
// declaration order so that results and errors are deterministic. In
// strict mode every key that names no field is reported, sorted.
func (d *decoder) object(m map[string]interface{}, dst reflect.Value) {
	info := structInfoOf(dst.Type())
	for _, f := range info.fields {
		v, ok := m[f.name]
		if !ok {
			continue
		}
		d.push(pathElem{name: f.name})
		d.value(v, dst.FieldByIndex(f.index))
		d.pop()
	}
	if !d.strict {
		return
	}
	var unknown []string
	for k := range m {
		if _, ok := info.names[k]; !ok {
			unknown = append(unknown, k)
		}
	}
	slices.Sort(unknown)
	for _, k := range unknown {
		d.push(pathElem{name: k})
		d.errs = append(d.errs, field.Invalid(d.path(), k,
			fmt.Sprintf("unknown field %q; remove it or correct its spelling (field names are case-sensitive)", k)))
		d.pop()
	}
}

// stringMap decodes the one map type of the Config (labels, trigger
// metadata) without reflection.
func (d *decoder) stringMap(m map[string]interface{}, dst reflect.Value) {
	out := make(map[string]string, len(m))
	before := len(d.errs)
	for k, item := range m {
		switch s := item.(type) {
		case string:
			out[k] = s
		case nil:
			out[k] = ""
		default:
			d.push(pathElem{name: k, key: true})
			d.wrongType(item, "a string")
			d.pop()
		}
	}
	d.sortErrs(before)
	*dst.Addr().Interface().(*map[string]string) = out
}

// sortErrs orders the errors reported since before by path: they come from
// a map, whose iteration order must not leak into results.
func (d *decoder) sortErrs(before int) {
	if len(d.errs)-before > 1 {
		slices.SortStableFunc(d.errs[before:], func(a, b *field.Error) int { return strings.Compare(a.Field, b.Field) })
	}
}

type jsonField struct {
	name  string
	index []int
}

// structInfo is what the decoder needs to know about a struct type,
// computed once per type: reflection's Implements is too slow to ask on
// every value.
type structInfo struct {
	fields []jsonField
	// names holds the fields' names, for strict mode's unknown fields.
	names map[string]struct{}
	// unmarshaler: the type has its own JSON form (metav1.Time, IntOrString
	// and the like; Quantity has a fast path of its own).
	unmarshaler bool
}

var structCache sync.Map // reflect.Type -> *structInfo

func structInfoOf(t reflect.Type) *structInfo {
	if info, ok := structCache.Load(t); ok {
		return info.(*structInfo)
	}
	info := &structInfo{
		fields:      structFields(t),
		unmarshaler: reflect.PointerTo(t).Implements(unmarshalerType),
	}
	info.names = make(map[string]struct{}, len(info.fields))
	for _, f := range info.fields {
		info.names[f.name] = struct{}{}
	}
	structCache.Store(t, info)
	return info
}

// structFields lists the JSON fields of struct type t, with inlined
// embedded structs flattened as encoding/json does.
func structFields(t reflect.Type) []jsonField {
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

// DecodeConfigJSON decodes a scale config held as JSON text, as in an
// annotation, by the one decoder every config goes through, strictly (V9):
// field names are case-sensitive, unknown fields are errors, and of a key
// given twice the last wins, as in any object the API server decodes. Every
// problem is reported at its path under path (the annotation), all of them
// together. JSON's whitespace (space, tab, line feed, carriage return) is
// the only space allowed around the config; text that is empty or only
// that whitespace, and null, mean no config: (nil, nil).
func DecodeConfigJSON(data []byte, path *field.Path) (*scaling.Config, field.ErrorList) {
	return decodeConfigJSON(data, path, nil)
}

func decodeConfigJSON(data []byte, path *field.Path, ints *int32Pool) (*scaling.Config, field.ErrorList) {
	return decodeConfigJSONPartly(data, path, ints, false)
}

// decodeConfigJSONPartly is decodeConfigJSON; with partial, a config whose
// JSON parses but whose fields have errors is returned as
// decodePartialConfig returns it.
func decodeConfigJSONPartly(data []byte, path *field.Path, ints *int32Pool, partial bool) (*scaling.Config, field.ErrorList) {
	m, err := parseConfigJSON(data, path)
	if err != nil {
		return nil, field.ErrorList{err}
	}
	if m == nil {
		return nil, nil
	}
	if partial {
		return decodePartialConfig(m, path, true, ints)
	}
	return decodeConfig(m, path, true, ints)
}

// parseConfigJSON decodes the JSON text of a config into the unstructured
// form that reading (decodeConfig) and writing (Compiled.WriteSpec) both work
// on, so that a config that could be read can always be written back. It
// is nil for no config.
func parseConfigJSON(data []byte, path *field.Path) (map[string]interface{}, *field.Error) {
	if onlyJSONSpace(data) {
		return nil, nil
	}
	var v interface{}
	if err := kjson.UnmarshalCaseSensitivePreserveInts(data, &v); err != nil {
		return nil, jsonError(data, err, path)
	}
	switch t := v.(type) {
	case nil:
		return nil, nil
	case map[string]interface{}:
		return t, nil
	}
	return nil, field.Invalid(path, excerpt(data),
		`must be a JSON object such as {"minReplicas":1,"maxReplicas":5}; remove the annotation for no scale config`)
}

// onlyJSONSpace reports whether data holds nothing but JSON whitespace.
func onlyJSONSpace(data []byte) bool {
	for _, c := range data {
		if c != ' ' && c != '\t' && c != '\n' && c != '\r' {
			return false
		}
	}
	return true
}

// jsonError turns a decoding error into one that says where and what to
// change.
func jsonError(data []byte, err error, path *field.Path) *field.Error {
	ok, off := kjson.SyntaxErrorOffset(err)
	if !ok {
		// A number beyond float64, nesting beyond the decoder's limit.
		return field.Invalid(path, excerpt(data), fmt.Sprintf("cannot be decoded: %v; fix the value", err))
	}
	// The offset is just past the character the scanner refused.
	if at := int(off) - 1; at >= 0 && at < len(data) {
		if r, _ := utf8.DecodeRune(data[at:]); r != utf8.RuneError && unicode.IsSpace(r) {
			return field.Invalid(path, excerpt(data), fmt.Sprintf(
				"is not valid JSON: it holds %U at byte %d, a space JSON does not allow; only spaces, tabs, line feeds and carriage returns may surround or separate JSON values, so remove it",
				r, at))
		}
	}
	return field.Invalid(path, excerpt(data), fmt.Sprintf("is not valid JSON (%v, at byte %d); fix the syntax", err, off))
}

// excerpt keeps bad values short in API responses.
func excerpt(b []byte) string {
	limit := 64
	if len(b) <= limit {
		return string(b)
	}
	// Cut on a rune boundary so the response stays valid UTF-8.
	for limit > 0 && !utf8.RuneStart(b[limit]) {
		limit--
	}
	return string(b[:limit]) + "..."
}
