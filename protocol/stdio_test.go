package protocol

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"testing"
	"time"
)

// echoStdio is the echo peer of mode "stdio": echoFrames on StdioConn,
// writing to os.Stdout and os.Stderr once it holds the channel (which
// must not reach the stream).
func echoStdio() int {
	conn, err := StdioConn(Options{})
	if err != nil {
		fmt.Fprintln(os.Stderr, "echo:", err)
		return 2
	}
	defer conn.Close()
	fmt.Println("stray output that must not reach the channel")
	if err := conn.OfferHello(Hello{Agent: "stdio"}, DefaultHandshakeTimeout); err != nil {
		fmt.Fprintln(os.Stderr, "echo:", err)
		return 2
	}
	for {
		m, err := conn.Recv()
		if err == io.EOF {
			return 0
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "echo:", err)
			return 1
		}
		if p, ok := m.(Ping); ok {
			fmt.Println("more stray output")
			if err := conn.Send(Pong{Nonce: p.Nonce}); err != nil {
				fmt.Fprintln(os.Stderr, "echo:", err)
				return 1
			}
		}
	}
}

// TestStdioConn runs a peer on StdioConn with its stdin and stdout a
// socket (what a local ssh has) and a pair of pipes (what sshd gives a
// command): the handshake, pings, stray output of the peer kept out of
// the stream, and the peer's exit at the end of its stdin.
func TestStdioConn(t *testing.T) {
	for _, kind := range []string{"socket", "pipes"} {
		t.Run(kind, func(t *testing.T) {
			cmd := exec.Command(os.Args[0], "-test.run=^$", "-test.bench=^$")
			cmd.Env = append(os.Environ(), echoEnv+"=stdio", "GORACE="+os.Getenv("GORACE")+" atexit_sleep_ms=0")
			cmd.Stderr = os.Stderr
			var conn *Conn
			var theirs []*os.File
			switch kind {
			case "socket":
				local, remote, err := Socketpair(Options{})
				if err != nil {
					t.Fatal(err)
				}
				conn, theirs = local, []*os.File{remote}
				cmd.Stdin, cmd.Stdout = remote, remote
			case "pipes":
				inR, inW, err := os.Pipe()
				if err != nil {
					t.Fatal(err)
				}
				outR, outW, err := os.Pipe()
				if err != nil {
					t.Fatal(err)
				}
				conn, theirs = NewConn(&pipeConn{r: outR, w: inW}, Options{}), []*os.File{inR, outW}
				cmd.Stdin, cmd.Stdout = inR, outW
			}
			err := cmd.Start()
			for _, f := range theirs {
				f.Close()
			}
			if err != nil {
				conn.Close()
				t.Fatal(err)
			}
			var werr error
			exited := make(chan struct{})
			go func() {
				werr = cmd.Wait()
				close(exited)
			}()
			defer func() {
				conn.Close()
				select {
				case <-exited:
				case <-time.After(10 * time.Second):
					cmd.Process.Kill()
					<-exited
				}
			}()

			h, err := conn.AcceptHello(5 * time.Second)
			if err != nil || h.Agent != "stdio" {
				t.Fatalf("handshake: %+v, %v", h, err)
			}
			for i := uint64(1); i <= 3; i++ {
				if err := conn.Send(Ping{Nonce: i}); err != nil {
					t.Fatal(err)
				}
				m, err := conn.Recv()
				if p, ok := m.(Pong); err != nil || !ok || p.Nonce != i {
					t.Fatalf("ping %d: %#v, %v", i, m, err)
				}
			}
			// The end of its stdin ends the peer, cleanly.
			conn.Close()
			select {
			case <-exited:
				if werr != nil {
					t.Fatalf("peer: %v", werr)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("peer did not exit at the end of its stdin")
			}
		})
	}
}
