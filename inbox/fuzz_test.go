package inbox

import (
	"bytes"
	"testing"
)

// FuzzDecode checks that Decode never panics and that whatever it accepts
// encodes, and decodes again to the same message and the same bytes. The
// seed corpus is in testdata/fuzz/FuzzDecode.
func FuzzDecode(f *testing.F) {
	m := validMessage()
	data, err := Encode(m)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(data)
	o := validOutcome()
	m.Outcome, m.Attempt, m.InReplyTo = &o, 3, "x"
	if data, err = Encode(m); err != nil {
		f.Fatal(err)
	}
	f.Add(data)
	// Texts kept in text files: a long reply to the human, a long answer.
	m.Outcome.ReplyFile, m.Outcome.ReplySize = textFile(m.ID, replyExt), 1<<21
	m.To, m.From, m.BodyFile, m.BodySize = "human", "eng", textFile(m.ID, bodyExt), 1<<21
	if data, err = Encode(m); err != nil {
		f.Fatal(err)
	}
	f.Add(data)
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := Decode(data)
		if err != nil {
			return
		}
		enc, err := Encode(m)
		if err != nil {
			t.Fatalf("decoded %+v but Encode fails: %v", m, err)
		}
		m2, err := Decode(enc)
		if err != nil {
			t.Fatalf("Decode(Encode(m)) fails: %v\n%s", err, enc)
		}
		if !equalMessages(m, m2) {
			t.Fatalf("round trip changed the message:\n%+v\n%+v", m, m2)
		}
		enc2, err := Encode(m2)
		if err != nil || !bytes.Equal(enc, enc2) {
			t.Fatalf("encoding not stable: %v\n%s\n%s", err, enc, enc2)
		}
	})
}
