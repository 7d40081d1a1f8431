package config

import (
	"reflect"
	"strconv"
	"strings"
	"unicode/utf8"

	"k8s.io/apimachinery/pkg/api/resource"
	kjson "sigs.k8s.io/json"

	"github.com/scaleplane/scaleplane/scaling"
)

// This file decodes a spec-path scale config straight from the JSON text of
// an admission request. Building the unstructured maps first (every object a
// map, every key and string a copy, every number boxed) cost an admission
// review more than half of its allocations, for a config that is then
// decoded once more into a scaling.Config.
//
// The result must be exactly what Read makes of the same text decoded into
// unstructured form, so the decoder only takes what it can decode the same
// way without doubt: integer literals in integer and quantity fields, and
// no type errors; strings with escapes are unquoted by the same decoder as
// on that path. Anything else makes it
// give up, and the caller decodes the text the usual way, which also
// reports every error at its path. FuzzDecodeSpecConfigJSON holds it to the
// unstructured decoder.

// DecodeSpecConfigJSON decodes data, the JSON text of a scale config found
// at a spec path (the value of .spec.scaleConfig, say), into the Config that
// [View.Read] returns for it. ok is false when data holds anything the
// decoder leaves to the unstructured path: an error, a number other than an integer literal where an integer or a quantity is
// expected, or a value of the wrong type. The caller then decodes data into
// unstructured form and reads it with Read.
//
// data should be valid JSON (the request's decoder has checked it); the
// Config's plain strings share one copy of data.
func DecodeSpecConfigJSON(data []byte) (cfg *scaling.Config, ok bool) {
	d := jsonDecoder{s: string(data)}
	d.space()
	if d.peek() != '{' {
		return nil, false
	}
	cfg = &scaling.Config{}
	if !d.object(reflect.ValueOf(cfg).Elem()) {
		return nil, false
	}
	d.space()
	if d.i != len(d.s) {
		return nil, false
	}
	return cfg, true
}

// jsonDecoder reads JSON text at s[i:]. Every method returns false, leaving
// i anywhere, as soon as the text holds something it does not decode.
type jsonDecoder struct {
	s    string
	i    int
	ints int32Pool
}

func (d *jsonDecoder) peek() byte {
	if d.i < len(d.s) {
		return d.s[d.i]
	}
	return 0
}

func (d *jsonDecoder) space() {
	for d.i < len(d.s) {
		switch d.s[d.i] {
		case ' ', '\t', '\n', '\r':
			d.i++
		default:
			return
		}
	}
}

// consume skips space and then c, reporting whether c was there.
func (d *jsonDecoder) consume(c byte) bool {
	d.space()
	if d.peek() != c {
		return false
	}
	d.i++
	return true
}

// literal consumes the word w (null, true, false).
func (d *jsonDecoder) literal(w string) bool {
	if !strings.HasPrefix(d.s[d.i:], w) {
		return false
	}
	d.i += len(w)
	return true
}

// str reads a string as the unstructured decoder returns it. A plain one
// (the common case) is a substring of the text; one with escapes, invalid
// UTF-8 or control characters is unquoted by that decoder itself, so that
// both agree to the byte.
func (d *jsonDecoder) str() (string, bool) {
	if !d.consume('"') {
		return "", false
	}
	start := d.i
	plain := true
	for d.i < len(d.s) {
		c := d.s[d.i]
		switch {
		case c == '"':
			s := d.s[start:d.i]
			d.i++
			if plain && utf8.ValidString(s) {
				return s, true
			}
			var out string
			if kjson.UnmarshalCaseSensitivePreserveInts([]byte(d.s[start-1:d.i]), &out) != nil {
				return "", false
			}
			return out, true
		case c == '\\':
			plain = false
			d.i++ // the escaped character, which may be a quote
		case c < 0x20:
			plain = false
		}
		d.i++
	}
	return "", false
}

// number reads a number literal's text; integer is true when it has no
// fraction or exponent, which is when the unstructured decoder makes it an
// int64.
func (d *jsonDecoder) number() (text string, integer bool) {
	start := d.i
	integer = true
	for d.i < len(d.s) {
		c := d.s[d.i]
		switch {
		case c >= '0' && c <= '9', c == '-', c == '+':
		case c == '.', c == 'e', c == 'E':
			integer = false
		default:
			return d.s[start:d.i], integer
		}
		d.i++
	}
	return d.s[start:d.i], integer
}

// integer reads an integer literal that fits in bits.
func (d *jsonDecoder) integer(bits int) (int64, bool) {
	text, integer := d.number()
	if !integer {
		return 0, false
	}
	n, err := strconv.ParseInt(text, 10, bits)
	return n, err == nil
}

// skip passes over one value of any kind.
func (d *jsonDecoder) skip() bool {
	d.space()
	switch c := d.peek(); {
	case c == '"':
		// An escaped quote would end a plain scan too early; the value
		// is not used, so the scan only has to find its end.
		d.i++
		for d.i < len(d.s) {
			switch d.s[d.i] {
			case '\\':
				d.i += 2
				continue
			case '"':
				d.i++
				return true
			}
			d.i++
		}
		return false
	case c == '{':
		d.i++
		if d.consume('}') {
			return true
		}
		for {
			if !d.skip() || !d.consume(':') || !d.skip() {
				return false
			}
			if d.consume('}') {
				return true
			}
			if !d.consume(',') {
				return false
			}
		}
	case c == '[':
		d.i++
		if d.consume(']') {
			return true
		}
		for {
			if !d.skip() {
				return false
			}
			if d.consume(']') {
				return true
			}
			if !d.consume(',') {
				return false
			}
		}
	case c == 'n':
		return d.literal("null")
	case c == 't':
		return d.literal("true")
	case c == 'f':
		return d.literal("false")
	case c == '-' || (c >= '0' && c <= '9'):
		// The unstructured decoder refuses the whole object over a number
		// beyond float64, even in a field nobody reads.
		text, integer := d.number()
		if integer {
			if _, err := strconv.ParseInt(text, 10, 64); err == nil {
				return true
			}
		}
		_, err := strconv.ParseFloat(text, 64)
		return err == nil
	}
	return false
}

// value decodes one value into dst, an addressable zero value, with the
// rules of decoder.value.
func (d *jsonDecoder) value(dst reflect.Value) bool {
	d.space()
	if d.peek() == 'n' {
		return d.literal("null") // null leaves the field unset
	}
	t := dst.Type()
	if t == quantityType {
		return d.quantity(dst)
	}
	switch t.Kind() {
	case reflect.Pointer:
		if t.Elem() == int32Type {
			n, ok := d.integer(32)
			if ok {
				dst.Set(reflect.ValueOf(d.ints.new(int32(n))))
			}
			return ok
		}
		elem := reflect.New(t.Elem())
		if !d.value(elem.Elem()) {
			return false
		}
		dst.Set(elem)
		return true
	case reflect.Struct:
		if structInfoOf(t).unmarshaler || d.peek() != '{' {
			return false
		}
		return d.object(dst)
	case reflect.Slice:
		return d.slice(dst)
	case reflect.Map:
		if t != stringMapType {
			return false
		}
		return d.stringMap(dst)
	case reflect.String:
		s, ok := d.str()
		if ok {
			dst.SetString(s)
		}
		return ok
	case reflect.Bool:
		switch {
		case d.literal("true"):
			dst.SetBool(true)
		case d.literal("false"):
		default:
			return false
		}
		return true
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		n, ok := d.integer(t.Bits())
		if ok {
			dst.SetInt(n)
		}
		return ok
	case reflect.Float32, reflect.Float64:
		return d.float(dst)
	}
	// Unsigned integers, interfaces: none in the Config; left to the
	// unstructured path.
	return false
}

// float reads a number as the unstructured decoder and asFloat64 would: an
// integer literal becomes an int64 first (so -0 is 0), anything else is
// parsed as a float64.
func (d *jsonDecoder) float(dst reflect.Value) bool {
	text, integer := d.number()
	if integer {
		if n, err := strconv.ParseInt(text, 10, 64); err == nil {
			dst.SetFloat(float64(n))
			return true
		}
		// Beyond int64 the unstructured decoder keeps a float64.
	}
	f, err := strconv.ParseFloat(text, 64)
	if err != nil {
		return false
	}
	dst.SetFloat(f)
	return true
}

// quantity takes strings, as decoder.quantity does, and integer literals;
// other numbers are formatted through float64 there, which is left to it.
func (d *jsonDecoder) quantity(dst reflect.Value) bool {
	q := dst.Addr().Interface().(*resource.Quantity)
	if d.peek() != '"' {
		n, ok := d.integer(64)
		if ok {
			*q = *resource.NewQuantity(n, resource.DecimalSI)
		}
		return ok
	}
	s, ok := d.str()
	if !ok {
		return false
	}
	s = strings.TrimSpace(s)
	if !exponentOK(s) {
		return false
	}
	parsed, err := resource.ParseQuantity(s)
	if err != nil {
		return false
	}
	*q = parsed
	return true
}

// object decodes a JSON object into the struct dst. A key given twice
// counts once, with its last value, as in the unstructured map.
func (d *jsonDecoder) object(dst reflect.Value) bool {
	if !d.consume('{') {
		return false
	}
	if d.consume('}') {
		return true
	}
	fields := structInfoOf(dst.Type()).fields
	for {
		key, ok := d.str()
		if !ok || !d.consume(':') {
			return false
		}
		var f *jsonField
		for i := range fields {
			if fields[i].name == key {
				if f != nil {
					// Two fields of one name (embedded structs): the
					// unstructured path decodes the value into both.
					return false
				}
				f = &fields[i]
			}
		}
		if f == nil {
			if !d.skip() {
				return false
			}
		} else {
			fv := dst.FieldByIndex(f.index)
			fv.SetZero()
			if !d.value(fv) {
				return false
			}
		}
		if d.consume('}') {
			return true
		}
		if !d.consume(',') {
			return false
		}
	}
}

// slice decodes a JSON list into the slice dst; [] is an empty list, not
// nil, as in decoder.value.
func (d *jsonDecoder) slice(dst reflect.Value) bool {
	if d.peek() != '[' {
		return false
	}
	// Count first, so the slice is allocated once at its length.
	n, ok := d.count()
	if !ok {
		return false
	}
	d.i++ // [
	if n == 0 {
		dst.Set(reflect.MakeSlice(dst.Type(), 0, 0))
		return d.consume(']')
	}
	dst.Grow(n)
	dst.SetLen(n)
	for i := range n {
		if i > 0 && !d.consume(',') {
			return false
		}
		if !d.value(dst.Index(i)) {
			return false
		}
	}
	return d.consume(']')
}

// count returns the number of items of the list at i, leaving i there.
func (d *jsonDecoder) count() (int, bool) {
	start := d.i
	defer func() { d.i = start }()
	d.i++
	if d.consume(']') {
		return 0, true
	}
	for n := 1; ; n++ {
		if !d.skip() {
			return 0, false
		}
		if d.consume(']') {
			return n, true
		}
		if !d.consume(',') {
			return 0, false
		}
	}
}

// stringMap decodes a map[string]string (labels, trigger metadata); null
// values become "", as in decoder.stringMap.
func (d *jsonDecoder) stringMap(dst reflect.Value) bool {
	if !d.consume('{') {
		return false
	}
	out := make(map[string]string)
	*dst.Addr().Interface().(*map[string]string) = out
	if d.consume('}') {
		return true
	}
	for {
		key, ok := d.str()
		if !ok || !d.consume(':') {
			return false
		}
		d.space()
		if d.peek() == 'n' {
			if !d.literal("null") {
				return false
			}
			out[key] = ""
		} else {
			val, ok := d.str()
			if !ok {
				return false
			}
			out[key] = val
		}
		if d.consume('}') {
			return true
		}
		if !d.consume(',') {
			return false
		}
	}
}
