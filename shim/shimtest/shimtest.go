// Package shimtest holds stand-ins for `batty shim` that break the protocol
// on purpose, for tests of the processes that drive shims (the orchestrator
// and `batty chat`). A test binary runs one in place of the real shim when
// its TestMain sees the role it chose.
package shimtest

import (
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/battyhq/batty/protocol"
	"github.com/battyhq/batty/shim/shimconfig"
)

// NilRetryAt is a frame body no version of the protocol can decode:
// ["quota_blocked", {"message_id": "m-123", "retry_at": nil}]. The msgpack
// library panics decoding nil into a time.Time field, so it once took down
// the process reading it.
var NilRetryAt = []byte("\x92\xadquota_blocked\x82\xaamessage_id\xa5m-123\xa8retry_at\xc0")

// BadFrameMain is a shim that sends one undecodable frame. Started like
// `batty shim` (control socket on fd 3, shim flags in args), it does the
// handshake as the agent the flags name, answers the first send with
// accepted, then writes body as one frame and reads until its parent closes
// the channel. It returns the exit code: 0 once the parent closed the
// channel, 2 when it could not get that far. It blocks until then.
func BadFrameMain(args []string, body []byte) int {
	if err := badFrame(args, body); err != nil {
		fmt.Fprintln(os.Stderr, "bad-frame shim:", err)
		return 2
	}
	return 0
}

func badFrame(args []string, body []byte) error {
	cfg, err := shimconfig.ParseArgs(args)
	if err != nil {
		return err
	}
	conn, err := protocol.FileConn(os.NewFile(shimconfig.ControlFD, "batty-control"), protocol.Options{})
	if err != nil {
		return err
	}
	defer conn.Close()
	if err := conn.OfferHello(protocol.Hello{Agent: cfg.Agent, ThreadID: cfg.ThreadID}, protocol.DefaultHandshakeTimeout); err != nil {
		return err
	}
	sent := false
	for {
		m, err := conn.Recv()
		if err != nil {
			if sent || errors.Is(err, io.EOF) {
				return nil // the parent closed the channel
			}
			return fmt.Errorf("receive: %w", err)
		}
		send, ok := m.(protocol.SendMessage)
		if !ok || sent {
			continue
		}
		if err := conn.Send(protocol.Accepted{ID: send.ID}); err != nil {
			return fmt.Errorf("accept %s: %w", send.ID, err)
		}
		if err := conn.WriteFrame(body); err != nil {
			return fmt.Errorf("write the bad frame: %w", err)
		}
		sent = true
	}
}
