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
	// The standard decoder reports type errors as an exported type that
	// names the field (without list indices); this package's fork does not.
	var c Config
	var te *json.UnmarshalTypeError
	if errors.As(json.Unmarshal(data, &c), &te) && te.Field != "" {
		return field.Invalid(path, te.Field, fmt.Sprintf("field %q must be %s, not a JSON %s; fix its value",
			te.Field, jsonKind(te.Type), te.Value))
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
