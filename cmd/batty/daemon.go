package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/hashicorp/go-hclog"
	"github.com/spf13/cobra"

	"github.com/battyhq/batty/cmd/batty/internal/iostreams"
	"github.com/battyhq/batty/console"
	"github.com/battyhq/batty/eventlog"
	"github.com/battyhq/batty/hosts"
	"github.com/battyhq/batty/orchestrator"
	"github.com/battyhq/batty/project"
	"github.com/battyhq/batty/protocol"
	"github.com/battyhq/batty/team"
)

// openDaemonLog opens .batty/daemon.log for appending, creating the
// directory (0700) and the file (0600) when needed, never through a
// symbolic link.
func openDaemonLog(l project.Layout) (*os.File, error) {
	return l.OpenDaemonLog()
}

func newDaemonCmd(ios *iostreams.IOStreams) *cobra.Command {
	var teamFile string
	var readyFD int
	var withCockpit bool
	var accepted string
	cmd := &cobra.Command{
		Use:    "daemon -f team.yaml",
		Short:  "Run the daemon (started by batty start)",
		Hidden: true,
		Args:   cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var ready *os.File
			if readyFD > 0 {
				ready = os.NewFile(uintptr(readyFD), "ready")
			}
			p, cfg, err := loadTeamProject(teamFile)
			if err == nil {
				err = checkAccepted(cfg, accepted)
			}
			if err != nil {
				if ready != nil {
					fmt.Fprintf(ready, "error: %s\n", strings.ReplaceAll(err.Error(), "\n", "; "))
				}
				return err
			}
			return runDaemon(cmd.Context(), ios, p, cfg, ready, false, withCockpit)
		},
	}
	cmd.Flags().BoolVar(&withCockpit, "cockpit", false, "keep the cockpit's pane titles up to date (the session exists already)")
	cmd.Flags().StringVarP(&teamFile, "file", "f", "", "team file")
	cmd.Flags().IntVar(&readyFD, "ready-fd", 0, "write ok (or error: ...) to this fd once ready")
	cmd.Flags().StringVar(&accepted, "accepted", "", "refuse a team whose trusted settings do not have this fingerprint (batty restart)")
	return cmd
}

// runDaemon runs the daemon in this process until a signal or `batty stop`.
// With withCockpit it keeps the cockpit's titles up to date and kills its
// tmux server when the daemon stops. In the foreground the team's feed goes
// to ios.Out and the log and notes to ios.ErrOut.
func runDaemon(ctx context.Context, ios *iostreams.IOStreams, p project.Project, cfg *team.Config, ready *os.File, foreground, withCockpit bool) error {
	if ctx == nil {
		ctx = context.Background()
	}
	logf, err := openDaemonLog(p.Layout)
	if err != nil {
		return err
	}
	defer logf.Close()
	var term io.Writer
	if foreground {
		term = ios.ErrOut
	}
	level := hclog.LevelFromString(os.Getenv("BATTY_LOG_LEVEL"))
	levelChosen := level != hclog.NoLevel
	if !levelChosen {
		level = hclog.Info
	}
	log := daemonLogger(logf, term, level, levelChosen)
	fail := func(err error) error {
		if ready != nil {
			fmt.Fprintf(ready, "error: %s\n", strings.ReplaceAll(err.Error(), "\n", "; "))
			ready.Close()
		}
		return err
	}
	opts := orchestrator.Options{Logger: log, ShimLog: logf, Subreaper: true}
	if len(cfg.Hosts) > 0 {
		// This binary is what runs the agents' shims on the hosts.
		if opts.HostBatty, err = hosts.Self(versionString(), protocol.Version); err != nil {
			log.Error("No batty to install on the hosts: their agents are parked", "error", err)
		}
	}
	var dc *daemonCockpit
	var cockpitEvents func(eventlog.Event)
	if withCockpit {
		// The cockpit is a view: without it the team runs all the same.
		if dc, err = newDaemonCockpit(p, cfg, log); err != nil {
			log.Warn("No cockpit titles", "error", err)
		} else {
			cockpitEvents = dc.onEvent
		}
	}
	var feed *feedPrinter
	if foreground {
		// A reader of stdout that goes away (batty start --foreground |
		// head) must not kill the daemon: with SIGPIPE handled, a write to
		// it fails instead. Handled, not ignored: children get the default.
		pipe := make(chan os.Signal, 1)
		signal.Notify(pipe, syscall.SIGPIPE)
		defer signal.Stop(pipe)
		// The team's feed, as `batty feed` shows it, on stdout.
		feed = startFeedPrinter(ios.Out, ios.ColorEnabled())
		defer feed.close()
		opts.OnEvent = eventlog.Chain(cockpitEvents, feed.observe)
	} else {
		opts.OnEvent = cockpitEvents
	}
	// The console is a view too: a port taken leaves the team without it.
	// It listens before the daemon is made (the daemon tells the human its
	// address), and is made once the daemon is, seeing the team through it.
	webLn, err := startConsole(cfg)
	if err != nil {
		log.Error("No console", "error", err)
	}
	if webLn != nil {
		info := webLn.info
		opts.Console = &info
	}
	d, err := orchestrator.New(cfg, p.Layout, opts)
	if err != nil {
		if dc != nil {
			dc.close()
		}
		if webLn != nil {
			webLn.Close()
		}
		return fail(err)
	}
	if dc != nil {
		d.AddAlertSink(dc.alerts)
	}
	var web *console.Server
	if webLn != nil {
		if web, err = newConsole(cfg, webLn, d, log.Named("console")); err != nil {
			log.Error("No console", "error", err)
			webLn.Close()
		} else {
			log.Info("Console listening", "address", webLn.Addr().String())
			defer serveConsole(web, webLn)()
		}
	}
	// A background daemon stops on SIGINT as on SIGTERM (turns in flight
	// may finish until timeouts.shutdown); in the foreground, Ctrl-C
	// interrupts them at once, and a second one kills the team.
	stopSignals := []os.Signal{syscall.SIGTERM, syscall.SIGINT}
	if foreground {
		stopSignals = stopSignals[:1]
		sigs := make(chan os.Signal, 2)
		signal.Notify(sigs, syscall.SIGINT)
		defer signal.Stop(sigs)
		runDone := make(chan struct{})
		handled := make(chan struct{})
		go func() {
			defer close(handled)
			foregroundInterrupts(sigs, runDone, ios.ErrOut,
				func() error { return stopNow(p.Layout, d.Ready(), runDone) },
				func() { forceStop(ios.ErrOut, p, withCockpit) })
		}()
		// Runs before the feed's close (deferred after it): the feed prints the team's
		// last events before the command returns.
		defer func() { close(runDone); <-handled }()
	}
	ctx, stop := signal.NotifyContext(ctx, stopSignals...)
	defer stop()
	if dc != nil {
		dc.d = d
		cctx, cancel := context.WithCancel(ctx)
		done := make(chan struct{})
		go func() { defer close(done); dc.run(cctx) }()
		defer func() {
			cancel()
			<-done
			if err := dc.close(); err != nil {
				log.Warn("Closing the cockpit failed", "error", err)
			}
		}()
	}
	signal.Ignore(syscall.SIGHUP)
	go func() {
		select {
		case <-d.Ready():
			if ready != nil {
				fmt.Fprintln(ready, "ok")
				ready.Close()
			}
			if foreground {
				fmt.Fprintf(ios.ErrOut, "batty: team %q running in the foreground (pid %d); Ctrl-C stops it\n", cfg.Name, os.Getpid())
				if web != nil {
					fmt.Fprintf(ios.ErrOut, "batty: console at %s (`batty web` logs you in)\n", webLn.info.URL)
				}
				warnParked(ios.ErrOut, p.Layout)
			}
		case <-ctx.Done():
		}
	}()
	if err := d.Run(ctx); err != nil {
		log.Error("Daemon failed", "error", err)
		return fail(err)
	}
	return nil
}
