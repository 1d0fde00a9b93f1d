package shimclient

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/battyhq/batty/codex/codextest"
	"github.com/battyhq/batty/protocol"
	"github.com/battyhq/batty/shim"
)

// TestMain lets this test binary also be a shim (the real one, package
// shim), a fake shim that misbehaves (fakeShimMain) and a fake codex,
// selected by BATTY_TEST_ROLE (the helper-process pattern of os/exec's
// tests).
func TestMain(m *testing.M) {
	switch os.Getenv("BATTY_TEST_ROLE") {
	case "shim":
		os.Exit(shim.Main(os.Args[1:]))
	case "fakecodex":
		os.Exit(codextest.FakeMain(os.Args[1:]))
	case "fakeshim":
		os.Exit(fakeShimMain())
	}
	os.Exit(m.Run())
}

// eventWait bounds every wait for an event; generous for a loaded CI box.
const eventWait = 30 * time.Second

// describe names the kinds of ms, in order.
func describe(ms []protocol.Message) string {
	var k []string
	for _, m := range ms {
		k = append(k, string(m.Kind()))
	}
	return strings.Join(k, ",")
}
