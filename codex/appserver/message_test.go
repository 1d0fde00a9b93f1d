package appserver

import (
	"encoding/json"
	"errors"
	"testing"
)

func TestDecodeMessage(t *testing.T) {
	tests := []struct {
		name   string
		in     string
		kind   Kind
		id     string
		method string
		bad    bool
	}{
		{"response", `{"id":1,"result":{}}`, KindResponse, `1`, "", false},
		{"response null result", `{"id":1,"result":null}`, KindResponse, `1`, "", false},
		{"error response", `{"error":{"code":-32600,"message":"no"},"id":2}`, KindErrorResponse, `2`, "", false},
		{"notification", `{"method":"turn/started","params":{"threadId":"t"}}`, KindNotification, "", "turn/started", false},
		{"notification null id", `{"id":null,"method":"warning"}`, KindNotification, "", "warning", false},
		{"server request", `{"id":"a","method":"item/tool/requestUserInput","params":{}}`, KindRequest, `"a"`, "item/tool/requestUserInput", false},
		{"with jsonrpc", `{"jsonrpc":"2.0","id":3,"result":1}`, KindResponse, `3`, "", false},
		{"not object", `[1]`, 0, "", "", true},
		{"empty", ``, 0, "", "", true},
		{"garbage", `{"id":`, 0, "", "", true},
		{"no method no id", `{"result":1}`, 0, "", "", true},
		{"id without result", `{"id":1}`, 0, "", "", true},
		{"object id", `{"id":{},"result":1}`, 0, "", "", true},
		{"bool id", `{"id":true,"method":"x"}`, 0, "", "", true},
		{"empty method", `{"method":""}`, 0, "", "", true},
		{"error not object", `{"id":1,"error":"boom"}`, 0, "", "", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, err := DecodeMessage([]byte(tt.in))
			if tt.bad {
				if !errors.Is(err, ErrNotMessage) {
					t.Fatalf("err %v, want ErrNotMessage", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if m.Kind != tt.kind || string(m.ID) != tt.id || m.Method != tt.method {
				t.Fatalf("got %v id %s method %q", m.Kind, m.ID, m.Method)
			}
			if m.Kind == KindErrorResponse && (m.Error == nil || m.Error.Code != -32600) {
				t.Fatalf("error %+v", m.Error)
			}
		})
	}
}

func TestErrorCode(t *testing.T) {
	tests := []struct {
		in     string
		code   string
		status int
	}{
		{`"usageLimitExceeded"`, "usageLimitExceeded", 0},
		{`{"responseStreamDisconnected":{"httpStatusCode":502}}`, "responseStreamDisconnected", 502},
		{`{"httpConnectionFailed":{"httpStatusCode":null}}`, "httpConnectionFailed", 0},
		{`{"activeTurnNotSteerable":{"turnKind":"review"}}`, "activeTurnNotSteerable", 0},
		{`null`, "", 0},
		{``, "", 0},
		{`"bioPolicy"`, "bioPolicy", 0},
		{`"aKindOfTomorrow"`, "aKindOfTomorrow", 0},
		{`{"a":1,"b":2}`, `{"a":1,"b":2}`, 0},
		{`{ "a" : [1, 2] , "b":{} }`, `{"a":[1,2],"b":{}}`, 0},
		{`7`, "7", 0},
		{`["x"]`, `["x"]`, 0},
	}
	for _, tt := range tests {
		code, status := errorCode(json.RawMessage(tt.in))
		if code != tt.code || status != tt.status {
			t.Errorf("errorCode(%s) = %q, %d; want %q, %d", tt.in, code, status, tt.code, tt.status)
		}
	}
}

// A request's W3C trace context is kept when it is a valid traceparent;
// anything else in "trace" is dropped, never an error.
func TestDecodeMessageTrace(t *testing.T) {
	const tp = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
	for in, want := range map[string]string{
		`{"id":1,"method":"turn/start","trace":{"traceparent":"` + tp + `"}}`:                    tp,
		`{"id":1,"method":"turn/start","trace":{"traceparent":"` + tp + `","tracestate":"a=b"}}`: tp,
		`{"id":1,"method":"turn/start"}`:                                                         "",
		`{"id":1,"method":"turn/start","trace":null}`:                                            "",
		`{"id":1,"method":"turn/start","trace":5}`:                                               "",
		`{"id":1,"method":"turn/start","trace":{"traceparent":"00-zz"}}`:                         "",
		`{"id":1,"method":"turn/start","trace":{"traceparent":"` + tp + `\n"}}`:                  "",
		`{"method":"turn/started","trace":{"traceparent":"` + tp + `"}}`:                         "",
	} {
		m, err := DecodeMessage([]byte(in))
		if err != nil || m.TraceParent != want {
			t.Errorf("%s: traceparent %q (%v), want %q", in, m.TraceParent, err, want)
		}
	}
}

func FuzzDecodeMessage(f *testing.F) {
	for _, s := range []string{
		`{"id":1,"result":{"thread":{"id":"t"}}}`,
		`{"error":{"code":-32600,"message":"no","data":{"x":1}},"id":2}`,
		`{"method":"turn/completed","params":{"threadId":"t","turn":{"id":"u","status":"failed","error":{"message":"m","codexErrorInfo":{"responseStreamDisconnected":{"httpStatusCode":502}}}}}}`,
		`{"id":"s","method":"x"}`,
		`{"id":"s","method":"turn/start","trace":{"traceparent":"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"}}`,
		`{"id":1e400,"result":1}`,
		`{"method":"account/rateLimits/updated","params":{"rateLimits":{"primary":{"usedPercent":"x"}}}}`,
		`not json`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := DecodeMessage(b)
		if err != nil {
			if !errors.Is(err, ErrNotMessage) {
				t.Fatalf("error %v does not wrap ErrNotMessage", err)
			}
			return
		}
		if m.TraceParent != "" && (m.Kind != KindRequest || !traceParentRE.MatchString(m.TraceParent)) {
			t.Fatalf("traceparent %q on a %v", m.TraceParent, m.Kind)
		}
		switch m.Kind {
		case KindResponse, KindErrorResponse:
			if m.ID == nil {
				t.Fatal("response without id")
			}
			if m.Kind == KindErrorResponse && m.Error == nil {
				t.Fatal("error response without error")
			}
		case KindRequest:
			if m.ID == nil || m.Method == "" {
				t.Fatal("request without id or method")
			}
		case KindNotification:
			if m.Method == "" {
				t.Fatal("notification without method")
			}
		default:
			t.Fatalf("kind %v", m.Kind)
		}
		// What the turn loop does with params must not panic either.
		var p turnParams
		if json.Unmarshal(m.Params, &p) == nil {
			_ = p.turnIDOf()
			if p.Error != nil {
				_ = p.Error.decode().Error()
			}
			if p.Turn != nil && p.Turn.Error != nil {
				_ = p.Turn.Error.decode()
			}
		}
	})
}
