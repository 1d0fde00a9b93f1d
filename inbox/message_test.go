package inbox

import (
	"regexp"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/battyhq/batty/textclip"
)

var t0 = time.Date(2026, 11, 21, 12, 51, 0, 123456789, time.UTC)

func validMessage() Message {
	return Message{
		ID:        "20261121T125100.123456789Z-0a1b2c3d",
		From:      "human",
		To:        "eng",
		Body:      "hello",
		CreatedAt: t0,
	}
}

func validOutcome() Outcome {
	return Outcome{Status: StatusCompleted, Reply: "ok", Agent: "eng-1", FinishedAt: t0.Add(time.Minute)}
}

func TestValidBoxName(t *testing.T) {
	tests := []struct {
		name string
		want bool
	}{
		{"eng", true},
		{"eng-1", true},
		{"human", true},
		{"0", true},
		{"@eng", true},
		{"@eng-2", true},
		{strings.Repeat("a", MaxNameLen), true},
		{"@" + strings.Repeat("a", MaxNameLen), true},
		{strings.Repeat("a", MaxNameLen+1), false},
		{"", false},
		{"@", false},
		{"@@eng", false},
		{".", false},
		{"..", false},
		{"../x", false},
		{"a/b", false},
		{"/abs", false},
		{"Eng", false},
		{"-eng", false},
		{"@-eng", false},
		{"eng_1", false},
		{"eng.1", false},
		{"eng 1", false},
		{"eng\x00", false},
		{"é", false},
	}
	for _, tt := range tests {
		if got := ValidBoxName(tt.name); got != tt.want {
			t.Errorf("ValidBoxName(%q) = %v, want %v", tt.name, got, tt.want)
		}
	}
}

func TestValidID(t *testing.T) {
	tests := []struct {
		id   string
		want bool
	}{
		{"20261121T125100.123456789Z-0a1b2c3d", true},
		{"a", true},
		{"A_b-c.d", true},
		{strings.Repeat("x", MaxIDLen), true},
		{strings.Repeat("x", MaxIDLen+1), false},
		{"", false},
		{".", false},
		{"..", false},
		{".hidden", false},
		{"-x", false},
		{"a/b", false},
		{"a b", false},
		{"a\n", false},
	}
	for _, tt := range tests {
		if got := ValidID(tt.id); got != tt.want {
			t.Errorf("ValidID(%q) = %v, want %v", tt.id, got, tt.want)
		}
	}
}

func TestNewID(t *testing.T) {
	re := regexp.MustCompile(`^\d{8}T\d{6}\.\d{9}Z-[0-9a-f]{8}$`)
	prev := ""
	for range 1000 {
		id, at := NewID()
		if !re.MatchString(id) || !ValidID(id) {
			t.Fatalf("id %q has the wrong form", id)
		}
		if id <= prev {
			t.Fatalf("ids not increasing: %q after %q", id, prev)
		}
		if !strings.HasPrefix(id, at.Format(idLayout)) || at.Location() != time.UTC {
			t.Fatalf("id %q does not encode %v", id, at)
		}
		prev = id
	}
}

func TestEncodeDecodeRoundTrip(t *testing.T) {
	done := validMessage()
	o := validOutcome()
	o.InputTokens, o.OutputTokens, o.ThreadID = 100, 20, "019a3c7e-0000"
	done.Outcome, done.Attempt, done.InReplyTo = &o, 2, "abc"
	local := validMessage()
	local.CreatedAt = t0.In(time.FixedZone("X", 3600))
	for _, m := range []Message{validMessage(), done, local} {
		data, err := Encode(m)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasSuffix(string(data), "}\n") || !strings.Contains(string(data), "\n  \"id\": ") {
			t.Errorf("not indented JSON with a final newline:\n%s", data)
		}
		got, err := Decode(data)
		if err != nil {
			t.Fatal(err)
		}
		if !got.CreatedAt.Equal(m.CreatedAt) || got.CreatedAt.Location() != time.UTC {
			t.Errorf("created_at %v, want %v in UTC", got.CreatedAt, m.CreatedAt)
		}
		normalize(&m)
		if !equalMessages(got, m) {
			t.Errorf("round trip:\n got %+v\nwant %+v", got, m)
		}
	}
}

func equalMessages(a, b Message) bool {
	if (a.Outcome == nil) != (b.Outcome == nil) {
		return false
	}
	if a.Outcome != nil && *a.Outcome != *b.Outcome {
		return false
	}
	a.Outcome, b.Outcome = nil, nil
	return a == b
}

func TestDecodeRejects(t *testing.T) {
	const ok = `{"id":"a1","from":"human","to":"eng","body":"hi","created_at":"2026-11-21T12:51:00Z"`
	const outcome = `"outcome":{"status":"completed","finished_at":"2026-11-21T12:52:00Z"`
	if _, err := Decode([]byte(ok + "}")); err != nil {
		t.Fatalf("base case: %v", err)
	}
	if _, err := Decode([]byte(ok + "," + outcome + "}}")); err != nil {
		t.Fatalf("base case with outcome: %v", err)
	}
	tests := []struct {
		name, data, want string
	}{
		{"empty", ``, "EOF"},
		{"null", `null`, "invalid id"},
		{"array", `[]`, "cannot unmarshal"},
		{"unknown field", ok + `,"x":1}`, `unknown field "x"`},
		{"unknown outcome field", ok + "," + outcome + `,"x":1}}`, `unknown field "x"`},
		{"trailing data", ok + `}{}`, "data after"},
		{"trailing garbage", ok + `} x`, "data after"},
		{"truncated", ok, "EOF"},
		{"missing id", `{"from":"human","to":"eng","body":"hi","created_at":"2026-11-21T12:51:00Z"}`, "invalid id"},
		{"bad id", strings.Replace(ok, `"a1"`, `"../x"`, 1) + `}`, "invalid id"},
		{"hidden id", strings.Replace(ok, `"a1"`, `".x"`, 1) + `}`, "invalid id"},
		{"bad from", strings.Replace(ok, `"human"`, `"Human"`, 1) + `}`, "invalid from"},
		{"role as from", strings.Replace(ok, `"human"`, `"@eng"`, 1) + `}`, "invalid from"},
		{"bad to", strings.Replace(ok, `"eng"`, `"a/b"`, 1) + `}`, "invalid to"},
		{"empty body", strings.Replace(ok, `"hi"`, `""`, 1) + `}`, "empty body"},
		{"huge body", strings.Replace(ok, `"hi"`, `"`+strings.Repeat("x", MaxBodyLen+1)+`"`, 1) + `}`, "body is"},
		{"missing created_at", `{"id":"a1","from":"human","to":"eng","body":"hi"}`, "created_at"},
		{"year overflow in UTC", strings.Replace(ok, `2026-11-21T12:51:00Z`, `0001-01-01T00:00:00+01:00`, 1) + `}`, "created_at"},
		{"bad reply-to", ok + `,"in_reply_to":"a b"}`, "in_reply_to"},
		{"negative attempt", ok + `,"attempt":-1}`, "attempt"},
		{"fractional attempt", ok + `,"attempt":1.5}`, "attempt"},
		{"bad status", ok + `,"outcome":{"status":"ok","finished_at":"2026-11-21T12:52:00Z"}}`, "status"},
		{"missing finished_at", ok + `,"outcome":{"status":"failed"}}`, "finished_at"},
		{"bad agent", ok + "," + outcome + `,"agent":"A"}}`, "agent"},
		{"negative tokens", ok + "," + outcome + `,"input_tokens":-5}}`, "token"},
		{"long failure", ok + "," + outcome + `,"failure":"` + strings.Repeat("f", MaxShortLen+1) + `"}}`, "failure"},
		{"too large", strings.Repeat(" ", MaxFileLen+1), "more than"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, err := Decode([]byte(tt.data))
			if err == nil {
				t.Fatalf("decoded %+v", m)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %q does not mention %q", err, tt.want)
			}
		})
	}
}

func TestEncodeRejectsInvalid(t *testing.T) {
	tests := []struct {
		name   string
		change func(*Message)
	}{
		{"no id", func(m *Message) { m.ID = "" }},
		{"no body", func(m *Message) { m.Body = "" }},
		{"invalid UTF-8", func(m *Message) { m.Body = "\xff" }},
		{"no time", func(m *Message) { m.CreatedAt = time.Time{} }},
		{"year 10000", func(m *Message) { m.CreatedAt = time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC) }},
		{"outcome without status", func(m *Message) { m.Outcome = &Outcome{FinishedAt: t0} }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := validMessage()
			tt.change(&m)
			if _, err := Encode(m); err == nil {
				t.Fatal("encoded")
			}
		})
	}
}

func TestTruncate(t *testing.T) {
	s := strings.Repeat("é", 100) // 2 bytes each
	for max := 20; max < 40; max++ {
		got := textclip.Bytes(s, max, textclip.Truncated)
		if len(got) > max || !strings.HasSuffix(got, "… [truncated]") {
			t.Fatalf("truncate(%d) = %q", max, got)
		}
		if err := (&Outcome{Status: StatusFailed, Error: got, FinishedAt: t0}).Validate(); err != nil {
			t.Fatal(err)
		}
	}
	if textclip.Bytes("short", 10, textclip.Truncated) != "short" {
		t.Fatal("short string changed")
	}
}

// TestTrimKeepsCharactersWhole: an id quoted in an error is cut at a UTF-8
// boundary, so the error stays valid text.
func TestTrimKeepsCharactersWhole(t *testing.T) {
	s := "x" + strings.Repeat("é", 100) // the 64-byte mark falls inside an é
	got := trim(s)
	if !utf8.ValidString(got) || !strings.HasSuffix(got, "…") || len(got) > 64+len("…") {
		t.Fatalf("trim = %q", got)
	}
	if trim("short") != "short" {
		t.Fatal("short string changed")
	}
}
