package inbox

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestLongReplyToTheHumanIsKeptWhole: a message to the human of any size is
// delivered whole: its file keeps a preview, its text file the whole body.
func TestLongReplyToTheHumanIsKeptWhole(t *testing.T) {
	_, b := newBox(t, "human")
	for _, n := range []int{MaxInlineBody + 1, 20 << 20} {
		body := strings.Repeat("ä", n/2) + strings.Repeat("z", n%2)
		m, err := b.Deliver(Message{From: "architect", To: "human", Body: body, InReplyTo: "20261121T125100.123456789Z-1f2e3d4c"})
		if err != nil {
			t.Fatalf("%d bytes: %v", n, err)
		}
		if m.BodySize != int64(n) || m.BodyFile != "texts/"+m.ID+".body" || len(m.Body) > PreviewLen || !strings.HasPrefix(body, m.Body) {
			t.Fatalf("%d bytes: stored as body of %d, file %q, size %d", n, len(m.Body), m.BodyFile, m.BodySize)
		}
		fi, err := os.Stat(b.file(dirNew, m.ID))
		if err != nil || fi.Size() > 2*PreviewLen {
			t.Fatalf("message file: %v bytes, %v", fi.Size(), err)
		}
		tf, err := os.Lstat(filepath.Join(b.Dir, m.BodyFile))
		if err != nil || tf.Mode().Perm() != 0o600 || tf.Size() != int64(n) {
			t.Fatalf("text file: %v, %v", tf, err)
		}
		got, state, err := b.Get(m.ID)
		if err != nil || state != StateNew || got.BodySize != int64(n) {
			t.Fatalf("Get = %+v %s %v", got.BodySize, state, err)
		}
		whole, err := b.FullBody(got)
		if err != nil || whole != body {
			t.Fatalf("%d bytes: whole body of %d bytes, %v", n, len(whole), err)
		}
	}
	short := deliver(t, b, Message{From: "architect", To: "human", Body: "short"})
	if short.BodyFile != "" || short.BodySize != 0 {
		t.Fatalf("a short body went to a text file: %+v", short)
	}
	if whole, err := b.FullBody(short); err != nil || whole != "short" {
		t.Fatalf("FullBody(short) = %q, %v", whole, err)
	}
	if des := dirNames(t, b.path(dirTmp)); len(des) != 0 {
		t.Fatalf("tmp/ keeps %v", des)
	}
}

func TestLongBodyToAnAgentIsRefused(t *testing.T) {
	_, b := newBox(t, "eng")
	_, err := b.Deliver(Message{From: "human", To: "eng", Body: strings.Repeat("x", MaxBodyLen+1)})
	if err == nil || !strings.Contains(err.Error(), "body is") {
		t.Fatalf("Deliver = %v", err)
	}
	if _, err := b.Deliver(Message{From: "human", To: "eng", Body: "x", BodyFile: "texts/x.body", BodySize: 9}); err == nil {
		t.Fatal("a caller-set body file was accepted")
	}
	if _, err := os.Lstat(b.path(dirTexts)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("texts/ was created: %v", err)
	}
}

// TestTextFieldsAreChecked: a message file can only name its own text file.
func TestTextFieldsAreChecked(t *testing.T) {
	base := Message{ID: "a1", From: "eng", To: "human", Body: "hi", CreatedAt: validOutcome().FinishedAt}
	for name, mod := range map[string]func(*Message){
		"other file":      func(m *Message) { m.BodyFile, m.BodySize = "texts/b1.body", 10 },
		"outside the box": func(m *Message) { m.BodyFile, m.BodySize = "../../x", 10 },
		"size only":       func(m *Message) { m.BodySize = 10 },
		"size too small":  func(m *Message) { m.BodyFile, m.BodySize = "texts/a1.body", 2 },
		"not to human":    func(m *Message) { m.To, m.BodyFile, m.BodySize = "eng", "texts/a1.body", 10 },
		"reply file": func(m *Message) {
			o := validOutcome()
			o.ReplyFile, o.ReplySize = "texts/zz.reply", 10
			m.Outcome = &o
		},
	} {
		m := base
		mod(&m)
		if err := m.Validate(); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	ok := base
	ok.BodyFile, ok.BodySize = "texts/a1.body", 10
	if err := ok.Validate(); err != nil {
		t.Fatal(err)
	}
}

// TestLongReplyInTheDoneRecord: Complete keeps a long reply whole, and a
// second Complete never replaces the recorded one's text.
func TestLongReplyInTheDoneRecord(t *testing.T) {
	_, b := newBox(t, "eng")
	m := deliver(t, b, msg("x"))
	if _, err := b.Claim(m.ID); err != nil {
		t.Fatal(err)
	}
	o := validOutcome()
	o.Reply = strings.Repeat("r", 3<<20)
	done, err := b.Complete(m.ID, o)
	if err != nil {
		t.Fatal(err)
	}
	if done.Outcome.ReplyFile != "texts/"+m.ID+".reply" || done.Outcome.ReplySize != 3<<20 || len(done.Outcome.Reply) != PreviewLen {
		t.Fatalf("outcome: %q %d %d", done.Outcome.ReplyFile, done.Outcome.ReplySize, len(done.Outcome.Reply))
	}
	again := validOutcome()
	again.Reply = strings.Repeat("s", 2<<20)
	if _, err := b.Complete(m.ID, again); !errors.Is(err, ErrAlreadyDone) {
		t.Fatalf("Complete again = %v", err)
	}
	got, _, err := b.Get(m.ID)
	if err != nil {
		t.Fatal(err)
	}
	if whole, err := b.FullReply(got); err != nil || whole != o.Reply {
		t.Fatalf("whole reply: %d bytes, %v", len(whole), err)
	}
}

func TestTextFileThroughALinkIsRefused(t *testing.T) {
	_, b := newBox(t, "human")
	m := deliver(t, b, Message{From: "eng", To: "human", Body: strings.Repeat("x", MaxInlineBody+5)})
	path := filepath.Join(b.Dir, m.BodyFile)
	secret := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(secret, []byte(strings.Repeat("s", MaxInlineBody+5)), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(secret, path); err != nil {
		t.Fatal(err)
	}
	if _, err := b.FullBody(m); err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Fatalf("FullBody through a link = %v", err)
	}
}
