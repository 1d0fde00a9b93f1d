package main

import (
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/spf13/cobra"

	"github.com/battyhq/batty/console"
	"github.com/battyhq/batty/control"
	"github.com/battyhq/batty/orchestrator"
	"github.com/battyhq/batty/project"
	"github.com/battyhq/batty/team"
)

// newWebCmd returns `batty web`: the console's address with a login token.
func newWebCmd(f *Factory) *cobra.Command {
	var teamFile string
	var noOpen bool
	cmd := &cobra.Command{
		Use:   "web [--no-open]",
		Short: "Open the team's web console in a browser",
		Long: `web prints the address of the team's web console with a login token and
opens it in a browser when there is one (xdg-open, with a display). The
console is served by the daemon (team.yaml's console key: on by default, on
127.0.0.1 and a free port); the token is asked of the daemon, which tells
it only to the human, never to a process inside an agent.

The address logs one browser in: the token is exchanged for a session
cookie and dropped from the address bar. Keep it to yourself; it is good
until the team stops.

See docs/guide/console.md for the whole story.`,
		Example: `  batty web
  batty web --no-open    # print the address only, e.g. to open on a phone through an ssh tunnel`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			p, err := f.Project(teamFile)
			if err != nil {
				return err
			}
			resp, err := control.Call(p.Layout, control.Request{Op: control.OpConsole}, 10*time.Second)
			if err != nil {
				return fmt.Errorf("the console: %w", err)
			}
			login := loginURL(*resp.Console)
			out := cmd.OutOrStdout()
			fmt.Fprintf(out, "batty: console: %s\n", login)
			if !noOpen {
				openBrowser(out, cmd.ErrOrStderr(), login)
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&noOpen, "no-open", false, "print the address, open no browser")
	addTeamFlags(cmd, &teamFile, true)
	return cmd
}

// sayConsole tells out where the console of the running team is, without
// its token; nothing when the team has none.
func sayConsole(out io.Writer, l project.Layout) {
	resp, err := control.Call(l, control.Request{Op: control.OpConsole}, 10*time.Second)
	if err != nil || resp.Console == nil {
		return
	}
	fmt.Fprintf(out, "batty: console at %s (`batty web` logs you in)\n", resp.Console.URL)
}

// loginURL is the address that logs a browser in to the console of info.
func loginURL(info control.ConsoleInfo) string {
	return info.URL + "login?token=" + info.Token
}

// openBrowser opens url with xdg-open when there is a display and
// xdg-open; it says what it did on out, and why not on errOut.
func openBrowser(out, errOut io.Writer, url string) {
	if os.Getenv("DISPLAY") == "" && os.Getenv("WAYLAND_DISPLAY") == "" {
		fmt.Fprintln(errOut, "batty: no display: open the address in a browser yourself")
		return
	}
	bin, err := exec.LookPath("xdg-open")
	if err != nil {
		fmt.Fprintln(errOut, "batty: no xdg-open: open the address in a browser yourself")
		return
	}
	c := exec.Command(bin, url)
	if err := c.Start(); err != nil {
		fmt.Fprintf(errOut, "batty: xdg-open: %v: open the address in a browser yourself\n", err)
		return
	}
	go c.Wait()
	fmt.Fprintln(out, "batty: opened in your browser")
}

// startConsole listens for the console of cfg (unless console: off) and
// returns the listener, with what the daemon tells the human (its address
// and login token) and the names it answers to; nil, nil when the team has
// none. Failing to listen is an error the caller logs: the team runs all
// the same. The console itself is made once the daemon is (newConsole).
func startConsole(cfg *team.Config) (*consoleListener, error) {
	if cfg.Console.Off {
		return nil, nil
	}
	addr := cfg.Console.Listen
	if addr == "" {
		addr = team.DefaultConsoleListen
	}
	var tlsCfg *tls.Config
	var names []string
	if cfg.Console.TLS() {
		var err error
		if tlsCfg, names, err = console.TLSConfig(cfg.Console.TLSCert, cfg.Console.TLSKey); err != nil {
			return nil, err
		}
	}
	ln, err := listenConsole(addr)
	if err != nil {
		return nil, err
	}
	token, err := console.NewToken()
	if err != nil {
		ln.Close()
		return nil, err
	}
	bound := ln.Addr().String()
	if host, _, _ := net.SplitHostPort(bound); net.ParseIP(host).IsUnspecified() {
		names = append(names, console.LocalNames()...)
	}
	if tlsCfg != nil {
		ln = tls.NewListener(ln, tlsCfg)
	}
	return &consoleListener{Listener: ln, bound: bound, names: names, tls: tlsCfg != nil,
		info: control.ConsoleInfo{URL: console.PublicURL(bound, tlsCfg != nil, names), Token: token}}, nil
}

// newConsole makes the console of cfg on ln for the team of d: it sees the
// team through d's ConsoleTeam, judges each browser's connection by d's
// Insider, and follows d's events and alerts from the first (call it
// before d.Run).
func newConsole(cfg *team.Config, ln *consoleListener, d *orchestrator.Daemon, log hclog.Logger) (*console.Server, error) {
	srv, err := console.New(console.Config{Addr: ln.bound, Names: ln.names, TLS: ln.tls, Token: ln.info.Token, Log: log, Prices: prices(cfg),
		Team: d.ConsoleTeam(), Judge: consoleJudge(d), Metrics: d.MetricsHandler()})
	if err != nil {
		return nil, err
	}
	d.AddObserver(srv.Observe)
	d.AddAlertSink(srv.AlertSink())
	return srv, nil
}

// warnConsole says on w what is unsafe in the console and the metrics
// endpoint of cfg (read from path): served in the clear on a wide
// address.
func warnConsole(w io.Writer, path string, cfg *team.Config) {
	for _, msg := range []string{cfg.Console.Warning(), cfg.Telemetry.Warning()} {
		if msg != "" {
			fmt.Fprintf(w, "batty: warning: %s: %s\n", path, msg)
		}
	}
}
