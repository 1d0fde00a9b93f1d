package inbox

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestValidUnicode(t *testing.T) {
	tests := []struct {
		name, data, want string // want "" = valid
	}{
		{"ascii", `{"body":"hi"}`, ""},
		{"utf-8", `{"body":"grüße ✓ 🙂"}`, ""},
		{"escaped pair", `{"body":"\ud83d\ude42"}`, ""},
		{"escaped pair, upper case", `{"body":"\uD83D\uDE42"}`, ""},
		{"escaped backslash then u", `{"body":"\\ud800"}`, ""},
		{"escaped quote", `{"body":"\"\ud800\udc00"}`, ""},
		{"replacement char escape", `{"body":"\ufffd"}`, ""},
		{"bmp escape", `{"body":"\u00e9"}`, ""},
		{"invalid byte", "{\"body\":\"a\xffb\"}", "invalid UTF-8 at byte 10"},
		{"truncated sequence", "{\"body\":\"\xe2\x9c\"}", "invalid UTF-8 at byte 9"},
		{"overlong", "{\"body\":\"\xc0\xaf\"}", "invalid UTF-8"},
		{"encoded surrogate", "{\"body\":\"\xed\xa0\x80\"}", "invalid UTF-8"},
		{"lone high surrogate", `{"body":"\ud800"}`, "unpaired UTF-16 surrogate escape at byte 9"},
		{"lone low surrogate", `{"body":"\udc00x"}`, "unpaired"},
		{"high then non-low", `{"body":"\ud800\u0041"}`, "unpaired"},
		{"two highs", `{"body":"\ud800\ud800"}`, "unpaired"},
		{"high at the end", `\ud800`, "unpaired"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := validUnicode([]byte(tt.data))
			if tt.want == "" {
				if err != nil {
					t.Fatalf("error %v, want none", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %v, want one with %q", err, tt.want)
			}
		})
	}
}

// TestInvalidUnicodeFileGoesToBad: a message file dropped into new/ whose
// body is not valid UTF-8 is not delivered with U+FFFD in its place: it is
// moved to bad/ and the error says why.
func TestInvalidUnicodeFileGoesToBad(t *testing.T) {
	s, b := newBox(t, "eng")
	s.Grace = -1
	for name, body := range map[string]string{"raw": "caf\xe9", "escape": `caf\udce9`} {
		data := `{"id":"` + name + `","from":"human","to":"eng","body":"` + body + `","created_at":"2026-11-21T12:51:00Z"}`
		if err := os.WriteFile(filepath.Join(b.Dir, "new", name+".json"), []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	msgs, errs := b.Pending()
	if len(msgs) != 0 || len(errs) != 2 {
		t.Fatalf("Pending = %+v, %v", msgs, errs)
	}
	for _, err := range errs {
		var bad *BadFileError
		if !errors.As(err, &bad) || bad.MovedTo == "" || !regexp.MustCompile(`invalid UTF-8|unpaired UTF-16`).MatchString(err.Error()) {
			t.Errorf("error %v: want a bad file moved to bad/, naming the reason", err)
		}
	}
	if n := len(dirNames(t, filepath.Join(b.Dir, "bad"))); n != 2 {
		t.Fatalf("bad/ holds %d files", n)
	}
}

// FuzzValidUnicode checks validUnicode against encoding/json: whatever it
// accepts decodes (if it is a JSON string at all) without a replacement
// character the input did not spell out.
func FuzzValidUnicode(f *testing.F) {
	for _, s := range []string{`"hi"`, `"\ud83d\ude42"`, `"\ud800"`, "\"\xff\"", `"\\ud800"`, `"\ufffd"`, `"\uD800\uDC00"`} {
		f.Add([]byte(s))
	}
	spelled := regexp.MustCompile(`(?i)\\ufffd`)
	f.Fuzz(func(t *testing.T, data []byte) {
		if validUnicode(data) != nil {
			return
		}
		var s string
		if json.Unmarshal(data, &s) != nil {
			return
		}
		want := strings.Count(string(data), string(utf8.RuneError)) + len(spelled.FindAll(data, -1))
		if got := strings.Count(s, string(utf8.RuneError)); got > want {
			t.Fatalf("%q accepted but decodes to %q with %d replacement characters", data, s, got)
		}
	})
}
