package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/spf13/cobra"

	"github.com/battyhq/batty/control"
	"github.com/battyhq/batty/orchestrator"
	"github.com/battyhq/batty/project"
	"github.com/battyhq/batty/team"
)

// startWait bounds how long `batty start` waits for the daemon to accept
// messages.
const startWait = 60 * time.Second

// loadProject resolves the project and loads its team file, printing every
// validation problem.
func loadProject(teamFile string) (project.Project, *team.Config, error) {
	p, err := project.ResolveProject(teamFile)
	if err != nil {
		return p, nil, err
	}
	cfg, err := team.Load(p.TeamFile)
	if err != nil {
		return p, nil, err
	}
	return p, cfg, nil
}

func newStartCmd() *cobra.Command {
	var teamFile string
	var foreground, noTmux bool
	cmd := &cobra.Command{
		Use:   "start [-f team.yaml] [--foreground] [--no-tmux]",
		Short: "Start the team's daemon (in the background unless --foreground)",
		Long: `start validates the team file, then runs the daemon — in the background, returning
once it accepts messages, or in the foreground with --foreground. One daemon runs
per project; its state, inboxes and logs live in .batty/ next to the team file.
The team file defaults to ./team.yaml, else ./.batty/team.yaml.

Unless --no-tmux, it also opens the cockpit: a detached tmux session on the
project's private tmux server, with the orchestrator's feed and one pane per
agent; ` + "`batty attach`" + ` shows it. start never attaches by itself.`,
		Example: `  batty start
  batty start --team ~/src/demo/team.yaml
  batty start --foreground
  batty start --no-tmux`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			p, cfg, err := loadProject(teamFile)
			if err != nil {
				return err
			}
			if running, pid := project.Running(p.Layout); running {
				return project.AlreadyRunningError(pid, p.Layout.Socket())
			}
			withCockpit := !noTmux
			if withCockpit {
				// Before the daemon: its tmux server must not be a child
				// of the daemon's subreaper.
				if _, err := createCockpit(cmd.Context(), p, cfg); err != nil {
					if !isNoTmux(err) {
						return err
					}
					fmt.Fprintf(cmd.ErrOrStderr(), "batty: no cockpit: %v\nbatty: starting without it; watch an agent with `batty logs -f <agent>`\n", err)
					withCockpit = false
				}
			}
			if foreground {
				if withCockpit {
					announceCockpit(cmd.ErrOrStderr(), p, cfg)
				}
				return runDaemon(cmd.Context(), p, cfg, nil, true, withCockpit)
			}
			if err := startBackground(cmd.OutOrStdout(), p, cfg, withCockpit); err != nil {
				// The cockpit goes with the failed daemon, unless another
				// start won the race for the lock: that team keeps it.
				if running, _ := project.Running(p.Layout); withCockpit && !running {
					if kerr := stopCockpit(p); kerr != nil {
						err = errors.Join(err, kerr)
					}
				}
				return err
			}
			if withCockpit {
				announceCockpit(cmd.OutOrStdout(), p, cfg)
			}
			warnParked(cmd.ErrOrStderr(), p.Layout)
			return nil
		},
	}
	addTeamFlags(cmd, &teamFile, true)
	cmd.Flags().BoolVar(&foreground, "foreground", false, "run the daemon in this process until Ctrl-C")
	cmd.Flags().BoolVar(&noTmux, "no-tmux", false, "run without the tmux cockpit (watch agents with batty logs -f)")
	return cmd
}

// openDaemonLog opens .batty/daemon.log for appending, creating the
// directory (0700) and the file (0600) when needed, never through a
// symbolic link.
func openDaemonLog(l project.Layout) (*os.File, error) {
	return l.OpenDaemonLog()
}

// startBackground runs `batty daemon` detached and waits until it reports
// that it accepts messages (over a pipe, no polling), or fails.
func startBackground(out io.Writer, p project.Project, cfg *team.Config, withCockpit bool) error {
	exe, err := os.Executable()
	if err != nil {
		return fmt.Errorf("find the batty binary: %w", err)
	}
	logf, err := openDaemonLog(p.Layout)
	if err != nil {
		return err
	}
	defer logf.Close()
	pr, pw, err := os.Pipe()
	if err != nil {
		return fmt.Errorf("ready pipe: %w", err)
	}
	defer pr.Close()
	cmd := exec.Command(exe, "daemon", "-f", p.TeamFile, "--ready-fd", "3")
	if withCockpit {
		cmd.Args = append(cmd.Args, "--cockpit")
	}
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.ExtraFiles = []*os.File{pw}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		pw.Close()
		return fmt.Errorf("start daemon: %w", err)
	}
	pw.Close()
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	line := make(chan string, 1)
	go func() {
		s, _ := bufio.NewReader(pr).ReadString('\n')
		line <- strings.TrimSpace(s)
	}()
	select {
	case s := <-line:
		if s == "ok" {
			fmt.Fprintf(out, "batty: team %q running (pid %d, %d agents); logs in %s\n", cfg.Name, cmd.Process.Pid, len(cfg.Agents()), p.Layout.Dir)
			return nil
		}
		if s == "" {
			err := <-exited
			return fmt.Errorf("daemon exited (%v) before it was ready; see %s", err, p.Layout.DaemonLog())
		}
		return errors.New(strings.TrimPrefix(s, "error: "))
	case <-time.After(startWait):
		cmd.Process.Signal(syscall.SIGTERM)
		return fmt.Errorf("daemon not ready after %s; see %s", startWait, p.Layout.DaemonLog())
	}
}

func newDaemonCmd() *cobra.Command {
	var teamFile string
	var readyFD int
	var withCockpit bool
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
			p, cfg, err := loadProject(teamFile)
			if err != nil {
				if ready != nil {
					fmt.Fprintf(ready, "error: %s\n", strings.ReplaceAll(err.Error(), "\n", "; "))
				}
				return err
			}
			return runDaemon(cmd.Context(), p, cfg, ready, false, withCockpit)
		},
	}
	cmd.Flags().BoolVar(&withCockpit, "cockpit", false, "keep the cockpit's pane titles up to date (the session exists already)")
	cmd.Flags().StringVarP(&teamFile, "file", "f", "", "team file")
	cmd.Flags().IntVar(&readyFD, "ready-fd", 0, "write ok (or error: ...) to this fd once ready")
	return cmd
}

// runDaemon runs the daemon in this process until a signal or `batty stop`.
// With withCockpit it keeps the cockpit's titles up to date and kills its
// tmux server when the daemon stops.
func runDaemon(ctx context.Context, p project.Project, cfg *team.Config, ready *os.File, foreground, withCockpit bool) error {
	if ctx == nil {
		ctx = context.Background()
	}
	logf, err := openDaemonLog(p.Layout)
	if err != nil {
		return err
	}
	defer logf.Close()
	var logOut io.Writer = logf
	if foreground {
		logOut = io.MultiWriter(logf, os.Stderr)
	}
	level := hclog.LevelFromString(os.Getenv("BATTY_LOG_LEVEL"))
	if level == hclog.NoLevel {
		level = hclog.Info
	}
	log := hclog.New(&hclog.LoggerOptions{Name: "daemon", Level: level, Output: logOut})
	fail := func(err error) error {
		if ready != nil {
			fmt.Fprintf(ready, "error: %s\n", strings.ReplaceAll(err.Error(), "\n", "; "))
			ready.Close()
		}
		return err
	}
	opts := orchestrator.Options{Logger: log, ShimLog: logf, Subreaper: true}
	var dc *daemonCockpit
	if withCockpit {
		// The cockpit is a view: without it the team runs all the same.
		if dc, err = newDaemonCockpit(p, cfg, log); err != nil {
			log.Warn("No cockpit titles", "error", err)
		} else {
			opts.OnEvent = dc.onEvent
		}
	}
	d, err := orchestrator.New(cfg, p.Layout, opts)
	if err != nil {
		if dc != nil {
			dc.close()
		}
		return fail(err)
	}
	ctx, stop := signal.NotifyContext(ctx, syscall.SIGTERM, syscall.SIGINT)
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
				fmt.Fprintf(os.Stderr, "batty: team %q running in the foreground (pid %d); Ctrl-C stops it\n", cfg.Name, os.Getpid())
				warnParked(os.Stderr, p.Layout)
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

func newStopCmd() *cobra.Command {
	var teamFile string
	var timeout time.Duration
	cmd := &cobra.Command{
		Use:   "stop [--timeout D]",
		Short: "Stop the daemon: turns in flight may finish until the timeout, then are interrupted",
		Long: `stop stops dispatching, lets the turns in flight finish until the timeout
(default: timeouts.shutdown of the team), then interrupts them. Every shim
and Codex process, and the daemon itself, is gone when it returns, and so
is the cockpit (the tmux session and the project's private tmux server).
Interrupted messages are delivered again at the next start.`,
		Example: `  batty stop
  batty stop --timeout 5s`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			p, err := project.ResolveProject(teamFile)
			if err != nil {
				return err
			}
			announceStop(cmd.ErrOrStderr(), p.Layout, timeout)
			pid, err := control.Stop(p.Layout, timeout, 30*time.Second)
			if errors.Is(err, control.ErrNotRunning) && pid == 0 {
				// A cockpit a dead daemon left goes too.
				cerr := stopCockpit(p)
				fmt.Fprintln(cmd.OutOrStdout(), "batty: not running")
				// A team killed with its daemon (kill -9) may have left
				// processes running: they go now.
				n, err := control.SweepLeftovers(p.Layout)
				if n > 0 {
					fmt.Fprintf(cmd.OutOrStdout(), "batty: killed %d process(es) an earlier run left running\n", n)
				}
				if err != nil && !errors.Is(err, project.ErrAlreadyRunning) {
					return errors.Join(fmt.Errorf("kill what an earlier run left running: %w", err), cerr)
				}
				return cerr
			}
			if err != nil {
				return err
			}
			if err := stopCockpit(p); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "batty: stopped (pid %d)\n", pid)
			return nil
		},
	}
	addTeamFlags(cmd, &teamFile, true)
	cmd.Flags().DurationVar(&timeout, "timeout", 0, "how long turns in flight may finish (default: the team's timeouts.shutdown)")
	return cmd
}

// announceStop says, before a stop that may take a while, how many turns
// it lets finish and for how long.
func announceStop(w io.Writer, l project.Layout, timeout time.Duration) {
	resp, err := control.Call(l, control.Request{Op: control.OpStatus}, 5*time.Second)
	if err != nil || resp.Status == nil {
		return
	}
	busy := 0
	for _, a := range resp.Status.Agents {
		if a.InFlight != nil {
			busy++
		}
	}
	if busy == 0 {
		return
	}
	limit := "timeouts.shutdown"
	if timeout > 0 {
		limit = timeout.String()
	}
	fmt.Fprintf(w, "batty: stopping; %d turn(s) in flight may finish (up to %s), then are interrupted\n", busy, limit)
}

func newPauseCmd(pause bool) *cobra.Command {
	var teamFile string
	use, short := "resume [agent]", "Release dispatch team-wide (also ends a quota or auth pause); retry a failed agent"
	long := `resume releases the team-wide dispatch gate: a manual pause, a quota pause
before its reset time, or an auth pause. It says so when nothing was
paused. With the daemon stopped it changes the saved state, which the next
start uses. It also tries failed agents (crash loop) again at once, ending
their cool-down, checks the codex of parked agents again, and puts failed
schedules back to waiting (their next run is due at once if a tick passed).

With an agent name it acts on that agent only: a failed agent is tried
again at once, a parked one checked again; the dispatch gate is left as
it is.`
	example := `  batty resume
  batty resume engineer-1`
	if pause {
		use, short = "pause [reason]", "Hold dispatch team-wide; messages keep queueing"
		long = `pause holds dispatch team-wide: no agent starts a new turn (turns in
flight finish) and messages keep queueing until batty resume. The pause is
saved, so it holds across restarts.`
		example = `  batty pause "reviewing the design"
  batty pause`
	}
	cmd := &cobra.Command{
		Use:     use,
		Short:   short,
		Long:    long,
		Example: example,
		Args:    cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			p, err := project.ResolveProject(teamFile)
			if err != nil {
				return err
			}
			reason := strings.Join(args, " ")
			op := control.OpResume
			if pause {
				op = control.OpPause
			} else if len(args) == 1 {
				return resumeAgent(cmd.OutOrStdout(), p, args[0])
			}
			resp, err := control.Call(p.Layout, control.Request{Op: op, Reason: reason}, 10*time.Second)
			changed, running := resp.Changed, true
			if errors.Is(err, control.ErrNotRunning) {
				running = false
				changed, err = control.OfflinePause(p.Layout, pause, reason)
				if err == nil && !pause {
					resp.Schedules, err = offlineResumeSchedules(p)
				}
			}
			if err != nil {
				return err
			}
			fmt.Fprintln(cmd.OutOrStdout(), pauseOutcome(pause, changed, running))
			announceRetry(cmd.OutOrStdout(), resp.Retried)
			announceRecheck(cmd.OutOrStdout(), resp.Rechecked)
			announceSchedules(cmd.OutOrStdout(), resp.Schedules, running)
			return nil
		},
	}
	addTeamFlags(cmd, &teamFile, true)
	if !pause {
		cmd.ValidArgsFunction = completeNames(&teamFile, namesAgents)
	}
	return cmd
}

// resumeAgent is `batty resume <agent>`: a failed agent is tried again at
// once, a parked one checked again.
func resumeAgent(w io.Writer, p project.Project, name string) error {
	resp, err := control.Call(p.Layout, control.Request{Op: control.OpResume, Agent: name}, 10*time.Second)
	if errors.Is(err, control.ErrNotRunning) {
		cfg, err := team.Load(p.TeamFile)
		if err != nil {
			return err
		}
		if _, ok := cfg.Agent(name); !ok {
			return fmt.Errorf("no agent %q in team %q; `batty status` lists the agents", name, cfg.Name)
		}
		fmt.Fprintf(w, "batty: the daemon is not running; `batty start` starts %s afresh\n", name)
		return nil
	}
	if err != nil {
		return err
	}
	announceRetry(w, resp.Retried)
	announceRecheck(w, resp.Rechecked)
	if len(resp.Retried) == 0 && len(resp.Rechecked) == 0 {
		fmt.Fprintf(w, "batty: %s is neither failed nor parked; nothing to retry (`batty resume` without a name releases a paused team)\n", name)
	}
	return nil
}

// announceRetry says which failed agents `batty resume` has tried again
// (nothing when none was failed).
func announceRetry(w io.Writer, agents []string) {
	if len(agents) > 0 {
		fmt.Fprintf(w, "batty: retrying %s now (failed: crash loop); `batty status` shows the result\n", strings.Join(agents, ", "))
	}
}

// pauseOutcome is what `batty pause` (pause) or `batty resume` says, given
// whether the dispatch gate changed and whether the daemon runs. It is a
// pure function.
func pauseOutcome(pause, changed, running bool) string {
	switch {
	case pause && changed && running:
		return "batty: dispatch paused; messages keep queueing until `batty resume`"
	case pause && changed:
		return "batty: dispatch paused; it stays paused across `batty start` until `batty resume`"
	case pause && running:
		return "batty: dispatch was already paused"
	case pause:
		return "batty: dispatch was already paused (the daemon is not running)"
	case changed && running:
		return "batty: dispatch resumed"
	case changed:
		return "batty: pause lifted; the team dispatches once `batty start` starts it"
	case running:
		return "batty: nothing is paused; dispatch is already running"
	default:
		return "batty: nothing is paused (the daemon is not running: `batty start` starts it)"
	}
}

func newResetCmd() *cobra.Command {
	var teamFile, reason string
	cmd := &cobra.Command{
		Use:   "reset <agent>",
		Short: "Archive the agent's thread so its next message starts a fresh one",
		Long: `reset archives the agent's Codex thread (kept in its state with the reason
and the time); the agent's next message starts a fresh thread. It works with
the daemon running or stopped.`,
		Example: `  batty reset engineer-1
  batty reset manager --reason "context full"`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			p, cfg, err := loadProject(teamFile)
			if err != nil {
				return err
			}
			_, err = control.Call(p.Layout, control.Request{Op: control.OpReset, Agent: args[0], Reason: reason}, 60*time.Second)
			if errors.Is(err, control.ErrNotRunning) {
				err = control.OfflineReset(cfg, p.Layout, args[0], reason)
			}
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "batty: %s will start a fresh thread\n", args[0])
			return nil
		},
	}
	addTeamFlags(cmd, &teamFile, true)
	cmd.Flags().StringVar(&reason, "reason", "", "why (kept with the archived thread)")
	cmd.ValidArgsFunction = completeNames(&teamFile, namesAgents)
	return cmd
}
