package fanout

import (
	"fmt"
	"slices"
	"sort"
	"strings"
)

// CheckSchema reports the first place where schema, a decoded JSON Schema,
// breaks the rules of the strict structured output codex asks the model for
// (`codex exec --output-schema` sends it with "strict": true): the root is
// an object schema, and every object schema sets "additionalProperties":
// false and lists every one of its properties in "required" (an optional
// field is written as a type that allows null). The API refuses any other
// schema on every request, so a job would fail every row with the same
// error; this says so before the first. It follows properties, items,
// prefixItems, anyOf and $defs/definitions. It is a pure function and
// never panics, whatever the input.
func CheckSchema(schema map[string]any) error {
	if !isObjectSchema(schema) {
		return fmt.Errorf(`the root must be an object schema ("type": "object"): each row answers with one JSON object`)
	}
	return checkNode(schema, "", 0)
}

// maxSchemaDepth bounds the walk (a schema is a file a user wrote; the API
// allows far less nesting).
const maxSchemaDepth = 64

func checkNode(n map[string]any, at string, depth int) error {
	if depth > maxSchemaDepth {
		return fmt.Errorf("at %s: nested more than %d levels deep", where(at), maxSchemaDepth)
	}
	if isObjectSchema(n) {
		if ap, ok := n["additionalProperties"].(bool); !ok || ap {
			return fmt.Errorf(`at %s: an object schema needs "additionalProperties": false (codex asks for strict structured output)`, where(at))
		}
		props, _ := n["properties"].(map[string]any)
		req := map[string]bool{}
		if list, ok := n["required"].([]any); ok {
			for _, r := range list {
				if s, ok := r.(string); ok {
					req[s] = true
				}
			}
		}
		var missing []string
		for k := range props {
			if !req[k] {
				missing = append(missing, k)
			}
		}
		if len(missing) > 0 {
			sort.Strings(missing)
			return fmt.Errorf(`at %s: "required" must list every property; missing %s (make a field optional with a type that allows null, e.g. ["string", "null"])`, where(at), strings.Join(quoteAll(missing), ", "))
		}
		for _, k := range sortedKeys(props) {
			if err := checkChild(props[k], at+"/properties/"+k, depth); err != nil {
				return err
			}
		}
	}
	if err := checkChild(n["items"], at+"/items", depth); err != nil {
		return err
	}
	for _, list := range []string{"prefixItems", "anyOf"} {
		if l, ok := n[list].([]any); ok {
			for i, c := range l {
				if err := checkChild(c, fmt.Sprintf("%s/%s/%d", at, list, i), depth); err != nil {
					return err
				}
			}
		}
	}
	for _, defs := range []string{"$defs", "definitions"} {
		if m, ok := n[defs].(map[string]any); ok {
			for _, k := range sortedKeys(m) {
				if err := checkChild(m[k], at+"/"+defs+"/"+k, depth); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// checkChild checks v when it is a schema (a JSON object); anything else
// (absent, true, a list) is not looked into.
func checkChild(v any, at string, depth int) error {
	m, ok := v.(map[string]any)
	if !ok {
		return nil
	}
	return checkNode(m, at, depth+1)
}

// isObjectSchema reports whether n describes a JSON object: its type is
// "object" (or a list holding it), or it has properties.
func isObjectSchema(n map[string]any) bool {
	switch t := n["type"].(type) {
	case string:
		if t == "object" {
			return true
		}
	case []any:
		if slices.Contains(t, any("object")) {
			return true
		}
	}
	_, ok := n["properties"]
	return ok
}

func where(at string) string {
	if at == "" {
		return "the root"
	}
	return at
}

func quoteAll(ss []string) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = fmt.Sprintf("%q", s)
	}
	return out
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
