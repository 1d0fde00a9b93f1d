package fanout

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestCheckSchema(t *testing.T) {
	cases := []struct {
		name, schema, err string // err: "" = accepted, else a part of the error
	}{
		{"strict", `{"type":"object","properties":{"city":{"type":"string"}},"required":["city"],"additionalProperties":false}`, ""},
		{"optional as null", `{"type":"object","properties":{"a":{"type":["string","null"]}},"required":["a"],"additionalProperties":false}`, ""},
		{"empty object", `{"type":"object","properties":{},"required":[],"additionalProperties":false}`, ""},
		{"nested strict", `{"type":"object","properties":{"tags":{"type":"array","items":{"type":"object","properties":{"k":{"type":"string"}},"required":["k"],"additionalProperties":false}}},"required":["tags"],"additionalProperties":false}`, ""},
		{"defs strict", `{"type":"object","properties":{"p":{"$ref":"#/$defs/P"}},"required":["p"],"additionalProperties":false,"$defs":{"P":{"type":"object","properties":{},"additionalProperties":false}}}`, ""},
		{"root not an object", `{"type":"array","items":{"type":"string"}}`, "the root must be an object schema"},
		{"root anyOf", `{"anyOf":[{"type":"object"}]}`, "the root must be an object schema"},
		{"no additionalProperties", `{"type":"object","properties":{"a":{"type":"string"}},"required":["a"]}`, `at the root: an object schema needs "additionalProperties": false`},
		{"additionalProperties true", `{"type":"object","properties":{},"additionalProperties":true}`, `"additionalProperties": false`},
		{"additionalProperties a schema", `{"type":"object","properties":{},"additionalProperties":{"type":"string"}}`, `"additionalProperties": false`},
		{"not required", `{"type":"object","properties":{"b":{"type":"string"},"a":{"type":"string"}},"required":["b"],"additionalProperties":false}`, `missing "a"`},
		{"nested in items", `{"type":"object","properties":{"tags":{"type":"array","items":{"type":"object","properties":{"k":{"type":"string"}}}}},"required":["tags"],"additionalProperties":false}`, "at /properties/tags/items:"},
		{"nested in anyOf", `{"type":"object","properties":{"v":{"anyOf":[{"type":"string"},{"properties":{"x":{"type":"string"}},"required":["x"]}]}},"required":["v"],"additionalProperties":false}`, "at /properties/v/anyOf/1:"},
		{"nested in $defs", `{"type":"object","properties":{},"additionalProperties":false,"$defs":{"P":{"type":"object"}}}`, "at /$defs/P:"},
		{"type list with object", `{"type":"object","properties":{"o":{"type":["object","null"],"properties":{}}},"required":["o"],"additionalProperties":false}`, "at /properties/o:"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var m map[string]any
			if err := json.Unmarshal([]byte(c.schema), &m); err != nil {
				t.Fatal(err)
			}
			err := CheckSchema(m)
			switch {
			case c.err == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case c.err != "" && err == nil:
				t.Fatalf("accepted, want an error with %q", c.err)
			case c.err != "" && !strings.Contains(err.Error(), c.err):
				t.Fatalf("error %q, want it to contain %q", err, c.err)
			}
		})
	}
}

func TestCheckSchemaDepth(t *testing.T) {
	s := `{"type":"string"}`
	for range 200 {
		s = `{"type":"array","items":` + s + `}`
	}
	s = `{"type":"object","properties":{"a":` + s + `},"required":["a"],"additionalProperties":false}`
	var m map[string]any
	if err := json.Unmarshal([]byte(s), &m); err != nil {
		t.Fatal(err)
	}
	if err := CheckSchema(m); err == nil || !strings.Contains(err.Error(), "levels deep") {
		t.Fatalf("CheckSchema of a 200-level schema: %v", err)
	}
}

// FuzzCheckSchema: a schema file is outside input; checking it never
// panics.
func FuzzCheckSchema(f *testing.F) {
	f.Add(`{"type":"object","properties":{"city":{"type":"string"}},"required":["city"],"additionalProperties":false}`)
	f.Add(`{"type":["object",1,null],"properties":[],"required":{"a":1},"anyOf":{"x":1},"items":[1],"$defs":[]}`)
	f.Add(`{"properties":{"a":{"properties":{"b":{}}}},"required":[1,null,"a"]}`)
	f.Fuzz(func(t *testing.T, s string) {
		var m map[string]any
		if json.Unmarshal([]byte(s), &m) != nil {
			return
		}
		CheckSchema(m)
	})
}
