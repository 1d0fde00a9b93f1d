package appserver

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// schemaKinds reads the codexErrorInfo kinds of a Codex CLI's app-server
// schema (testdata/codex-error-info-<version>.json, the CodexErrorInfo
// definition `codex app-server generate-json-schema` writes), each with a
// value of its shape: a string, or an object of one key.
func schemaKinds(t *testing.T, version string) map[string]string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "codex-error-info-"+version+".json"))
	if err != nil {
		t.Fatal(err)
	}
	var def struct {
		AnyOf []struct {
			Enum       []string                   `json:"enum"`
			Required   []string                   `json:"required"`
			Properties map[string]json.RawMessage `json:"properties"`
		} `json:"anyOf"`
	}
	if err := json.Unmarshal(b, &def); err != nil {
		t.Fatal(err)
	}
	kinds := map[string]string{}
	for _, v := range def.AnyOf {
		for _, e := range v.Enum {
			kinds[e] = `"` + e + `"`
		}
		if len(v.Required) == 1 {
			k := v.Required[0]
			inner := `{"httpStatusCode":503}`
			if !strings.Contains(string(v.Properties[k]), "httpStatusCode") {
				inner = `{"turnKind":"review"}`
			}
			kinds[k] = `{"` + k + `":` + inner + `}`
		}
	}
	if len(kinds) < 20 {
		t.Fatalf("only %d kinds read from the %s schema", len(kinds), version)
	}
	return kinds
}

// turnCompleted is a failed turn's turn/completed params with info as
// its codexErrorInfo.
func turnCompleted(info string) string {
	return `{"threadId":"T","turn":{"id":"U","items":[],"status":"failed","error":{"message":"refused","codexErrorInfo":` + info + `,"additionalDetails":null}}}`
}

// Every codexErrorInfo of the tested Codex CLIs' schemas — 0.171.0 added
// "bioPolicy" — ends the turn with its kind kept and shown, and is one of
// KnownCodes.
func TestSchemaErrorKindsDecode(t *testing.T) {
	for _, version := range []string{"0.169.0", "0.171.0"} {
		for kind, info := range schemaKinds(t, version) {
			p := decodeTurnParams(json.RawMessage(turnCompleted(info)))
			if p.ThreadID != "T" || p.Turn == nil || p.Turn.ID != "U" || p.Turn.Status != StatusFailed {
				t.Fatalf("%s %s: params %+v", version, info, p)
			}
			e := p.Turn.Error.decode()
			if e.Code != kind || !strings.Contains(e.Error(), "["+kind+"]") {
				t.Errorf("%s %s: code %q, error %q", version, info, e.Code, e.Error())
			}
			if !slices.Contains(KnownCodes, kind) {
				t.Errorf("%s: kind %q is not in KnownCodes", version, kind)
			}
		}
	}
	if _, ok := schemaKinds(t, "0.171.0")["bioPolicy"]; !ok {
		t.Error("the 0.171.0 schema has no bioPolicy")
	}
}

// A notification whose fields have shapes batty does not expect keeps
// what it can read: the turn still ends, with its other items, and an
// error kind of an unknown shape is kept as its text.
func TestTurnParamsLenient(t *testing.T) {
	raw := `{"threadId":"T","tokenUsage":"lots","willRetry":"maybe","turn":{"id":"U","status":"failed","newField":{"x":[1]},` +
		`"items":[{"type":"agentMessage","text":{"rich":true}},{"type":"agentMessage","text":"kept"}],` +
		`"error":{"message":"no","codexErrorInfo":{"twoKinds":1,"atOnce":2},"additionalDetails":7}}}`
	p := decodeTurnParams(json.RawMessage(raw))
	if p.ThreadID != "T" || p.Turn == nil || p.Turn.ID != "U" || p.Turn.Status != StatusFailed {
		t.Fatalf("params %+v", p)
	}
	if len(p.Turn.Items) != 1 || p.Turn.Items[0].Text != "kept" {
		t.Errorf("items %+v", p.Turn.Items)
	}
	e := p.Turn.Error.decode()
	if e.Message != "no" || e.Code != `{"atOnce":2,"twoKinds":1}` && e.Code != `{"twoKinds":1,"atOnce":2}` {
		t.Errorf("error %+v", e)
	}
	if p.TokenUsage != nil || p.WillRetry {
		t.Errorf("odd fields decoded: %+v", p)
	}
	for _, s := range []string{``, `null`, `[]`, `"x"`, `{"turn":5}`} {
		if p := decodeTurnParams(json.RawMessage(s)); p.Turn != nil || p.ThreadID != "" {
			t.Errorf("decodeTurnParams(%q) = %+v", s, p)
		}
	}
}

// A turn that fails with a kind batty does not know (0.171.0's bioPolicy)
// ends RunTurn with the kind in its error, never a decode error nor a
// turn left waiting.
func TestRunTurnUnknownErrorKind(t *testing.T) {
	res := turnEndedBy(t, `{"method":"turn/completed","params":{"threadId":"T1","tokenUsage":[],"turn":{"id":"U2","items":[{"type":"agentMessage","text":null,"display":{"mode":"hide","version":1}}],"status":"failed","error":{"message":"This request was refused.","codexErrorInfo":"bioPolicy","additionalDetails":null}}}}`)
	var te *TurnError
	if res.Status != StatusFailed || !errors.As(res.Err(), &te) || te.Code != "bioPolicy" || !strings.Contains(te.Error(), "bioPolicy") {
		t.Fatalf("result %+v err %v", res, res.Err())
	}
}

// FuzzTurnCompleted: whatever codexErrorInfo holds, a turn/completed
// whose envelope is well formed ends its turn, and a string kind is kept
// as it came.
func FuzzTurnCompleted(f *testing.F) {
	for _, s := range []string{`"bioPolicy"`, `{"responseStreamDisconnected":{"httpStatusCode":502}}`, `{"a":1,"b":2}`, `7`, `null`, `[1,{"x":"y"}]`, `"\u202e"`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, info string) {
		raw := turnCompleted(info)
		if !json.Valid([]byte(raw)) {
			return
		}
		p := decodeTurnParams(json.RawMessage(raw))
		if p.ThreadID != "T" || p.Turn == nil || p.Turn.ID != "U" || p.Turn.Status != StatusFailed || p.Turn.Error == nil {
			t.Fatalf("info %q: params %+v", info, p)
		}
		e := p.Turn.Error.decode()
		var s string
		if json.Unmarshal([]byte(info), &s) == nil && e.Code != s {
			t.Fatalf("info %q: code %q", info, e.Code)
		}
		if len(e.Code) > maxOddCode && json.Unmarshal([]byte(info), &s) != nil {
			t.Fatalf("info %q: code of %d bytes", info, len(e.Code))
		}
	})
}
