package shim

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/battyhq/batty/inbox"
	"github.com/battyhq/batty/protocol"
)

// TestRelayInboxes: a shim with RelayInboxes hands the parent the message
// its agent wrote into the inboxes under BATTY_DIR, leaves another
// sender's alone, and removes the file once it is acknowledged.
func TestRelayInboxes(t *testing.T) {
	state := filepath.Join(t.TempDir(), ".batty")
	h := startShim(t, func(c *Config) {
		c.RelayInboxes = true
		c.Env = append(c.Env, EnvDir+"="+state)
	})
	store, err := inbox.Open(filepath.Join(state, "inboxes"))
	if err != nil {
		t.Fatal(err)
	}
	box, err := store.Box("lead")
	if err != nil {
		t.Fatal(err)
	}
	other, err := box.Deliver(inbox.Message{From: "someone-else", To: "lead", Body: "not mine"})
	if err != nil {
		t.Fatal(err)
	}
	mine, err := box.Deliver(inbox.Message{From: "tester", To: "lead", Body: "from the host"})
	if err != nil {
		t.Fatal(err)
	}
	out, ok := h.next().(protocol.Outgoing)
	if !ok || out.Box != "lead" || out.Name != mine.ID+".json" {
		t.Fatalf("relayed %+v", out)
	}
	if m, err := inbox.Decode([]byte(out.Data)); err != nil || m.ID != mine.ID || m.Body != "from the host" {
		t.Fatalf("relayed data: %+v, %v", m, err)
	}
	h.command(protocol.OutgoingAck{Box: "lead", Name: out.Name})
	path := filepath.Join(state, "inboxes", "lead", "new", mine.ID+".json")
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
	if _, err := os.Stat(filepath.Join(state, "inboxes", "lead", "new", other.ID+".json")); err != nil {
		t.Fatalf("another sender's message: %v", err)
	}
	select {
	case m := <-h.events:
		t.Fatalf("unexpected event %s %+v", m.Kind(), m)
	case <-time.After(2 * relayWaitDir):
	}
	// With the inboxes watched, a new message is relayed on its file
	// event, long before the rescan.
	again, err := box.Deliver(inbox.Message{From: "tester", To: "lead", Body: "again"})
	if err != nil {
		t.Fatal(err)
	}
	select {
	case m := <-h.events:
		if out, ok := m.(protocol.Outgoing); !ok || out.Name != again.ID+".json" {
			t.Fatalf("relayed %s %+v", m.Kind(), m)
		}
	case <-time.After(relayRescan / 2):
		t.Fatalf("the second message was not relayed within %s", relayRescan/2)
	}
}
