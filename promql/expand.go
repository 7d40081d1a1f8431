package promql

import (
	"fmt"
	"sort"
	"strings"
)

// Expand substitutes ${name} placeholders in query with vars[name].
//
// A value is escaped for where the placeholder stands, so a namespace or
// name can never change the shape of the query: inside "..." or '...' quote
// characters and backslashes are escaped; inside `...` a value holding a
// backtick is refused; outside quotes only [A-Za-z0-9_:] is allowed (enough
// to build a metric name). Placeholders in # comments are left alone. An
// unknown placeholder is an error naming the known ones.
func Expand(query string, vars map[string]string) (string, error) {
	if !strings.Contains(query, "${") {
		return query, nil
	}
	var (
		b     strings.Builder
		quote byte // 0 outside a string, else the opening quote
	)
	// One allocation for the usual names and namespaces: the autoscaler
	// expands every trigger query on every tick.
	b.Grow(len(query) + 64)
	for i := 0; i < len(query); i++ {
		c := query[i]
		switch {
		case quote == 0 && c == '#':
			end := strings.IndexByte(query[i:], '\n')
			if end < 0 {
				end = len(query) - i
			}
			b.WriteString(query[i : i+end])
			i += end - 1
			continue
		case quote == 0 && (c == '"' || c == '\'' || c == '`'):
			quote = c
		case quote != 0 && quote != '`' && c == '\\' && i+1 < len(query):
			b.WriteByte(c)
			b.WriteByte(query[i+1])
			i++
			continue
		case quote != 0 && c == quote:
			quote = 0
		case c == '$' && i+1 < len(query) && query[i+1] == '{':
			end := strings.IndexByte(query[i:], '}')
			if end < 0 {
				return "", &QueryError{Query: query, Start: i, End: len(query), Err: fmt.Errorf("placeholder at offset %d has no closing }", i)}
			}
			name := query[i+2 : i+end]
			v, ok := vars[name]
			if !ok {
				return "", &QueryError{Query: query, Start: i, End: i + end + 1, Err: fmt.Errorf("unknown placeholder ${%s}; known placeholders: %s", name, knownVars(vars))}
			}
			esc, err := escape(v, quote)
			if err != nil {
				return "", &QueryError{Query: query, Start: i, End: i + end + 1, Err: fmt.Errorf("placeholder ${%s}: %w", name, err)}
			}
			b.WriteString(esc)
			i += end
			continue
		}
		b.WriteByte(c)
	}
	return b.String(), nil
}

func knownVars(vars map[string]string) string {
	if len(vars) == 0 {
		return "none"
	}
	names := make([]string, 0, len(vars))
	for n := range vars {
		names = append(names, "${"+n+"}")
	}
	sort.Strings(names)
	return strings.Join(names, ", ")
}

func escape(v string, quote byte) (string, error) {
	switch quote {
	case 0:
		for _, r := range v {
			if !(r == '_' || r == ':' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9') {
				return "", fmt.Errorf("value %q is used outside quotes, where only letters, digits, _ and : are safe; put the placeholder inside a quoted string such as {label=\"${...}\"}", v)
			}
		}
		return v, nil
	case '`':
		if strings.ContainsRune(v, '`') {
			return "", fmt.Errorf("value %q contains a backtick and cannot go in a `raw` string; use a \"quoted\" string", v)
		}
		return v, nil
	}
	if !strings.ContainsFunc(v, func(r rune) bool { return r == '\\' || r == rune(quote) || r < 0x20 || r == 0x7f }) {
		return v, nil
	}
	var b strings.Builder
	for _, r := range v {
		switch {
		case r == '\\' || r == rune(quote):
			b.WriteByte('\\')
			b.WriteRune(r)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\t':
			b.WriteString(`\t`)
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(&b, `\x%02x`, r)
		default:
			b.WriteRune(r)
		}
	}
	return b.String(), nil
}
