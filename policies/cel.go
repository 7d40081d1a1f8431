package policies

import (
	"strings"
)

// celReserved are the words the API server's CEL escapes when they name a
// field (apiserver's cel.Escape): written bare they would not parse.
var celReserved = map[string]bool{
	"true": true, "false": true, "null": true, "in": true, "as": true, "break": true, "const": true,
	"continue": true, "else": true, "for": true, "function": true, "if": true, "import": true,
	"let": true, "loop": true, "package": true, "namespace": true, "return": true, "var": true,
	"void": true, "while": true,
}

// celField is a field name as the API server's CEL spells it: "__" becomes
// "__underscores__", "-" "__dash__", and a reserved word "__word__". A
// profile's field names hold only letters, digits, "_" and "-" (package
// profile validates them), so no other escape is needed.
func celField(name string) string {
	if celReserved[name] {
		return "__" + name + "__"
	}
	name = strings.ReplaceAll(name, "__", "__underscores__")
	return strings.ReplaceAll(name, "-", "__dash__")
}

// segments splits a validated profile path (".spec.replicas").
func segments(path string) []string {
	if path == "" {
		return nil
	}
	return strings.Split(strings.TrimPrefix(path, "."), ".")
}

// optional is the CEL optional of the value at segs below root:
// root.?a.?b, empty when any step is missing.
func optional(root string, segs []string) string {
	var b strings.Builder
	b.WriteString(root)
	for _, s := range segs {
		b.WriteString(".?")
		b.WriteString(celField(s))
	}
	return b.String()
}

// pointer is the JSON pointer of segs. Profile field names hold no "/" or
// "~", so nothing needs escaping.
func pointer(segs []string) string {
	return "/" + strings.Join(segs, "/")
}

// dotted is segs as the field path of an error: spec.racks.
func dotted(segs []string) string { return strings.Join(segs, ".") }

// quote is s as a CEL string literal. Profile paths and field names hold
// no quote or backslash, so single quotes are enough.
func quote(s string) string { return "'" + s + "'" }

// celString is s as a CEL string literal, for any s.
func celString(s string) string {
	return "'" + strings.NewReplacer(`\`, `\\`, "'", `\'`, "\n", `\n`).Replace(s) + "'"
}
