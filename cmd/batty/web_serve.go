package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/battyhq/batty/console"
	"github.com/battyhq/batty/control"
	"github.com/battyhq/batty/orchestrator"
)

// consoleJudgeWait bounds how long a console connection waits for the
// daemon to be ready to judge its peer.
const consoleJudgeWait = 30 * time.Second

// consoleListener is the console's socket (TLS when served over HTTPS),
// the address it is bound to, the further names it answers to, and what
// `batty web` is told.
type consoleListener struct {
	net.Listener
	bound string
	names []string
	tls   bool
	info  control.ConsoleInfo
}

// listenConsole listens on addr (TCP).
func listenConsole(addr string) (net.Listener, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("console: listen on %s: %w", addr, err)
	}
	return ln, nil
}

// serveConsole serves srv on ln until the returned stop is called; stop
// ends the live streams and waits for the requests being served.
func serveConsole(srv *console.Server, ln net.Listener) (stop func()) {
	hs := &http.Server{Handler: srv, ConnContext: srv.ConnContext, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 2 * time.Minute}
	done := make(chan struct{})
	go func() { defer close(done); hs.Serve(ln) }()
	return func() {
		srv.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if hs.Shutdown(ctx) != nil {
			hs.Close()
		}
		<-done
	}
}

// consoleJudge is the console's judge of who connected: the daemon's, as
// for its control socket, once the daemon can judge (it has set up its
// reaper and started its agents).
func consoleJudge(d *orchestrator.Daemon) control.Judge {
	return func(pid int) (control.Insider, error) {
		select {
		case <-d.Ready():
			return d.Insider(pid)
		case <-time.After(consoleJudgeWait):
			return control.Insider{}, errors.New("the daemon is not ready to tell who connected")
		}
	}
}
