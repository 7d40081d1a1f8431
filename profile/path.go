package profile

import (
	"fmt"
	"math"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

// pathSyntax is appended to every path error so the user sees the expected
// form next to what they wrote.
const pathSyntax = `a leading dot, then field names (a letter or "_" followed by letters, digits, "_" or "-") separated by dots`

// parsePath splits a profile path such as ".spec.replicas" into its
// segments. Paths are deliberately simpler than JSONPath (no indexes, no
// filters): every profile path names one field reachable through objects
// only, which is all the /scale subresource accepts too.
func parsePath(s, example string) ([]string, error) {
	if s == "" {
		return nil, fmt.Errorf("must not be empty; write a path like %q", example)
	}
	if s[0] != '.' {
		return nil, fmt.Errorf("must start with a dot, like %q: %s", example, pathSyntax)
	}
	segs := strings.Split(s[1:], ".")
	for _, seg := range segs {
		if !validSegment(seg) {
			return nil, fmt.Errorf("field name %q is not valid; write a path like %q: %s", seg, example, pathSyntax)
		}
	}
	return segs, nil
}

// validSegment reports whether seg is one field name of a profile path.
func validSegment(seg string) bool {
	if seg == "" {
		return false
	}
	for i, r := range seg {
		switch {
		case r == '_' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z':
		case i > 0 && (r == '-' || r >= '0' && r <= '9'):
		default:
			return false
		}
	}
	return true
}

// fieldPath turns segments into the field.Path used in error reports.
func fieldPath(segs []string) *field.Path {
	if len(segs) == 0 {
		return nil
	}
	return field.NewPath(segs[0], segs[1:]...)
}

// lookup walks obj along segs. found is false when a field on the way is
// absent or null. When a field on the way is not an object, bad is the
// number of segments that lead to it, so the caller can report the exact
// path of the offending value.
func lookup(obj map[string]interface{}, segs []string) (v interface{}, found bool, bad int) {
	var cur interface{} = obj
	for i, seg := range segs {
		m, ok := cur.(map[string]interface{})
		if !ok {
			return cur, false, i
		}
		cur, ok = m[seg]
		if !ok || cur == nil {
			return nil, false, 0
		}
	}
	return cur, true, 0
}

// badParent reports the value at segs[:n] as not being an object.
func badParent(segs []string, n int, v interface{}) *field.Error {
	return field.Invalid(fieldPath(segs[:n]), v, fmt.Sprintf("must be an object, not %s", typeName(v)))
}

// setNested sets value at segs in obj, creating absent objects on the way.
func setNested(obj map[string]interface{}, segs []string, value interface{}) error {
	m := obj
	for i, seg := range segs[:len(segs)-1] {
		next, ok := m[seg]
		if !ok || next == nil {
			child := map[string]interface{}{}
			m[seg] = child
			m = child
			continue
		}
		child, ok := next.(map[string]interface{})
		if !ok {
			return fmt.Errorf("set %s: %s is %s, not an object", fieldPath(segs), fieldPath(segs[:i+1]), typeName(next))
		}
		m = child
	}
	m[segs[len(segs)-1]] = value
	return nil
}

// typeName says what kind of JSON value v is, for error messages.
func typeName(v interface{}) string {
	switch v.(type) {
	case nil:
		return "null"
	case string:
		return "a string"
	case bool:
		return "a boolean"
	case map[string]interface{}:
		return "an object"
	case []interface{}:
		return "a list"
	case int, int8, int16, int32, int64, uint, uint8, uint16, uint32, uint64:
		return "an integer"
	case float32, float64:
		return "a number"
	default:
		return fmt.Sprintf("a %T", v)
	}
}

// asInt64 reads an integer as unstructured objects hold it: int64 from the
// API machinery's JSON decoder, float64 from encoding/json, int from objects
// built in Go. A float64 counts only when it has no fractional part, like
// the API server's own integer fields.
func asInt64(v interface{}) (int64, bool) {
	switch n := v.(type) {
	case int64:
		return n, true
	case int:
		return int64(n), true
	case int32:
		return int64(n), true
	case float64:
		// 2^63 itself is not representable as int64, hence the strict bound.
		if n != math.Trunc(n) || n < math.MinInt64 || n >= math.MaxInt64 {
			return 0, false
		}
		return int64(n), true
	case int8:
		return int64(n), true
	case int16:
		return int64(n), true
	case uint8:
		return int64(n), true
	case uint16:
		return int64(n), true
	case uint32:
		return int64(n), true
	case uint:
		if uint64(n) > math.MaxInt64 {
			return 0, false
		}
		return int64(n), true
	case uint64:
		if n > math.MaxInt64 {
			return 0, false
		}
		return int64(n), true
	case float32:
		return asInt64(float64(n))
	}
	return 0, false
}

// readInt32 converts v to an int32, or says at p what was expected.
func readInt32(v interface{}, p func() *field.Path) (int32, *field.Error) {
	n, ok := asInt64(v)
	if !ok {
		return 0, field.Invalid(p(), v, fmt.Sprintf("must be an integer, not %s", typeName(v)))
	}
	if n < math.MinInt32 || n > math.MaxInt32 {
		return 0, field.Invalid(p(), v, "must be an integer between -2147483648 and 2147483647")
	}
	return int32(n), nil
}

// readInt64 converts v to an int64, or says at p what was expected.
func readInt64(v interface{}, p func() *field.Path) (int64, *field.Error) {
	n, ok := asInt64(v)
	if !ok {
		return 0, field.Invalid(p(), v, fmt.Sprintf("must be an integer, not %s", typeName(v)))
	}
	return n, nil
}
