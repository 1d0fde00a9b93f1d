package shim

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/battyhq/batty/agentenv"
	"github.com/battyhq/batty/outbox"
	"github.com/battyhq/batty/protocol"
	"github.com/battyhq/batty/shim/shimconfig"
)

// TestRelayOutbox: a shim with RelayInboxes makes its agent's outbox under
// BATTY_DIR, hands the parent each request the agent writes there, and
// removes the file once it is acknowledged; a file that is no request (a
// link) is handed over empty, for the parent to refuse.
func TestRelayOutbox(t *testing.T) {
	state := t.TempDir()
	h := startShim(t, func(c *shimconfig.Config) {
		c.RelayInboxes = true
		c.Env = append(c.Env, agentenv.Dir+"="+state)
	})
	dir := outbox.Path(state, "tester")
	// The shim made the outbox before the agent could need it.
	id := waitWrite(t, dir, outbox.Request{To: "lead", Body: "from the agent"})
	out, ok := h.next().(protocol.Outgoing)
	if !ok || out.Name != id+".json" {
		t.Fatalf("relayed %+v", out)
	}
	if r, err := outbox.Decode([]byte(out.Data)); err != nil || r.To != "lead" || r.Body != "from the agent" {
		t.Fatalf("relayed data: %+v, %v", r, err)
	}
	h.command(protocol.OutgoingAck{Name: out.Name})
	path := filepath.Join(dir, outbox.SubNew, id+".json")
	deadline := time.Now().Add(eventWait)
	for {
		if _, err := os.Stat(path); os.IsNotExist(err) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the acknowledged file is still there")
		}
		time.Sleep(20 * time.Millisecond)
	}
	// With the outbox watched, a new request is relayed on its file
	// event, long before the rescan.
	again, err := outbox.Write(state, "tester", outbox.Request{Land: "tester"})
	if err != nil {
		t.Fatal(err)
	}
	select {
	case m := <-h.events:
		if out, ok := m.(protocol.Outgoing); !ok || out.Name != again+".json" {
			t.Fatalf("relayed %s %+v", m.Kind(), m)
		}
	case <-time.After(relayRescan / 2):
		t.Fatalf("the second request was not relayed within %s", relayRescan/2)
	}
	// A file whose name is no request's (an escape sequence in it) is
	// removed unread, never relayed.
	junk := filepath.Join(dir, outbox.SubNew, "\x1b]0;title\x07.json")
	if err := os.WriteFile(junk, []byte(`{"to":"lead","body":"junk"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	// A link planted in the outbox is not followed.
	secret := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(secret, []byte(`{"to":"lead","body":"secret"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(secret, filepath.Join(dir, outbox.SubNew, "20300101T000000.000000000Z-00000000.json")); err != nil {
		t.Fatal(err)
	}
	select {
	case m := <-h.events:
		if out, ok := m.(protocol.Outgoing); !ok || out.Data != "" {
			t.Fatalf("relayed %s %+v", m.Kind(), m)
		}
	case <-time.After(relayRescan / 2):
		t.Fatal("the planted link was not handed over for refusal")
	}
	if _, err := os.Lstat(junk); !os.IsNotExist(err) {
		t.Fatalf("the file with no request's name is still there: %v", err)
	}
}

// waitWrite writes r into the outbox dir once the shim has made it (its
// new/ directory).
func waitWrite(t *testing.T, dir string, r outbox.Request) string {
	t.Helper()
	deadline := time.Now().Add(eventWait)
	for {
		if _, err := os.Stat(filepath.Join(dir, outbox.SubNew)); err == nil {
			break
		} else if time.Now().After(deadline) {
			t.Fatalf("the shim made no outbox: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	id, err := outbox.Write(filepath.Dir(filepath.Dir(dir)), filepath.Base(dir), r)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// A recall's answer from the parent is written into the agent's outbox,
// where its command takes it; a link the agent planted under the answer's
// name is refused (an error event), its target untouched.
func TestRelayWritesARecallsAnswer(t *testing.T) {
	state := t.TempDir()
	h := startShim(t, func(c *shimconfig.Config) {
		c.RelayInboxes = true
		c.Env = append(c.Env, agentenv.Dir+"="+state)
	})
	id := waitWrite(t, outbox.Path(state, "tester"), outbox.Request{Recall: &outbox.Recall{Search: "zanzibar"}})
	if out, ok := h.next().(protocol.Outgoing); !ok || out.Name != id+".json" {
		t.Fatalf("relayed %+v", out)
	}
	h.command(protocol.RecallAnswer{ID: id, Output: "lead said zanzibar\n", Notes: []string{"1 hit"}})
	deadline := time.Now().Add(eventWait)
	for {
		ans, err := outbox.TakeAnswer(state, "tester", id)
		if err == nil {
			if ans.Output != "lead said zanzibar\n" || len(ans.Notes) != 1 {
				t.Fatalf("answer %+v", ans)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no answer: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}

	other := "20300101T000000.000000000Z-0123abcd"
	target := filepath.Join(t.TempDir(), "target")
	if err := os.WriteFile(target, []byte("mine"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, filepath.Join(outbox.Path(state, "tester"), outbox.SubAnswers, other+".json")); err != nil {
		t.Fatal(err)
	}
	h.command(protocol.RecallAnswer{ID: other, Output: "planted"})
	for {
		m := h.next()
		if e, ok := m.(protocol.Error); ok {
			if e.Command != protocol.KindRecallAnswer {
				t.Fatalf("error %+v", e)
			}
			break
		}
	}
	if b, _ := os.ReadFile(target); string(b) != "mine" {
		t.Fatalf("the link's target was written: %q", b)
	}
}
