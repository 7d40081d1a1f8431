package scaling

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"unicode/utf8"

	"k8s.io/apimachinery/pkg/util/validation/field"
	kjson "sigs.k8s.io/json"
)

// DecodeConfigJSON decodes a scale config held as JSON (in an annotation)
// strictly, as the API server decodes a typed object with strict field
// validation (V9): field names are case-sensitive, and unknown or duplicate
// fields are errors rather than silently dropped. Every problem is reported
// at path, the annotation, with the offending field's JSON path or value as
// the bad value. "null" decodes to a nil config.
func DecodeConfigJSON(data []byte, path *field.Path) (*Config, field.ErrorList) {
	trimmed := bytes.TrimSpace(data)
	if len(trimmed) == 0 || trimmed[0] != '{' {
		if bytes.Equal(trimmed, []byte("null")) {
			return nil, nil
		}
		return nil, field.ErrorList{field.Invalid(path, excerpt(trimmed),
			`must be a JSON object such as {"minReplicas":1,"maxReplicas":5}; remove the annotation for no scale config`)}
	}
	var c Config
	strict, err := kjson.UnmarshalStrict(trimmed, &c)
	if err != nil {
		return nil, field.ErrorList{decodeError(trimmed, err, path)}
	}
	var errs field.ErrorList
	for _, se := range strict {
		name := se.Error()
		var fe kjson.FieldError
		if errors.As(se, &fe) {
			name = fe.FieldPath()
		}
		if strings.HasPrefix(se.Error(), "duplicate field") {
			errs = append(errs, field.Invalid(path, name, fmt.Sprintf("duplicate field %q; keep only one", name)))
		} else {
			errs = append(errs, field.Invalid(path, name, fmt.Sprintf(
				"unknown field %q; remove it or correct its spelling (field names are case-sensitive)", name)))
		}
	}
	if len(errs) > 0 {
		return nil, errs
	}
	return &c, nil
}

// decodeError turns a syntax or type error into one that names the place.
func decodeError(data []byte, err error, path *field.Path) *field.Error {
	if ok, off := kjson.SyntaxErrorOffset(err); ok {
		return field.Invalid(path, excerpt(data), fmt.Sprintf("is not valid JSON (%v at byte %d); fix the syntax", err, off))
	}
	// The standard decoder reports type errors as an exported type with the
	// byte offset of the bad value; this package's fork does not. The offset
	// gives the exact JSON path, list indices included.
	var c Config
	var te *json.UnmarshalTypeError
	if errors.As(json.Unmarshal(data, &c), &te) && te.Field != "" {
		name := jsonPathAt(data, te.Offset)
		if name == "" {
			name = te.Field
		}
		return field.Invalid(path, name, fmt.Sprintf("field %q must be %s, not a JSON %s; fix its value",
			name, jsonKind(te.Type), te.Value))
	}
	hint := "fix the value"
	if strings.Contains(err.Error(), "quantities") {
		hint = "write quantities like 500m, 2 or 1Gi"
	}
	return field.Invalid(path, excerpt(data), fmt.Sprintf("does not match the scale config schema: %v; %s", err, hint))
}

// jsonKind names the JSON a Go type decodes from, for messages.
func jsonKind(t reflect.Type) string {
	switch t.Kind() {
	case reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64, reflect.Int,
		reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uint:
		return fmt.Sprintf("an integer (%s)", t)
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	case reflect.Slice, reflect.Array:
		return "a list"
	default:
		return "an object"
	}
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

// jsonPathAt returns the path, written like the strict decoder's field paths
// (metrics[0].resource.name), of the value that ends at or spans byte
// offset of data; "" if data ends before it.
func jsonPathAt(data []byte, offset int64) string {
	type frame struct {
		array bool
		index int
		key   string
	}
	var stack []frame
	expectKey := false
	render := func() string {
		var b strings.Builder
		for _, f := range stack {
			if f.array {
				fmt.Fprintf(&b, "[%d]", f.index)
				continue
			}
			if b.Len() > 0 {
				b.WriteByte('.')
			}
			b.WriteString(f.key)
		}
		return b.String()
	}
	// advance moves past one complete value in the innermost container.
	advance := func() {
		if n := len(stack); n > 0 {
			if stack[n-1].array {
				stack[n-1].index++
			} else {
				expectKey = true
			}
		}
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	for {
		tok, err := dec.Token()
		if err != nil {
			return ""
		}
		if expectKey {
			if d, ok := tok.(json.Delim); ok && d == '}' {
				stack = stack[:len(stack)-1]
				expectKey = false
				if dec.InputOffset() >= offset {
					return ""
				}
				advance()
				continue
			}
			stack[len(stack)-1].key, _ = tok.(string)
			expectKey = false
			continue
		}
		switch d, _ := tok.(json.Delim); d {
		case '{', '[':
			if dec.InputOffset() >= offset {
				return render()
			}
			stack = append(stack, frame{array: d == '['})
			expectKey = d == '{'
		case ']':
			stack = stack[:len(stack)-1]
			advance()
		default:
			if dec.InputOffset() >= offset {
				return render()
			}
			advance()
		}
	}
}
