package main

import (
	"context"
	"errors"
	"fmt"
	"github.com/battyhq/batty/alerts"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/spf13/cobra"

	"github.com/battyhq/batty/cmd/batty/internal/iostreams"
	"github.com/battyhq/batty/cockpit"
	"github.com/battyhq/batty/control"
	"github.com/battyhq/batty/eventlog"
	"github.com/battyhq/batty/orchestrator"
	"github.com/battyhq/batty/project"
	"github.com/battyhq/batty/team"
)

// cockpitWait bounds each tmux call the CLI makes for the cockpit.
const cockpitWait = 30 * time.Second

// projectDir returns the directory that holds the project's .batty.
func projectDir(p project.Project) string { return p.Layout.Root() }

// cockpitServer returns the project's private tmux server; exec runs each
// tmux invocation (nil: as a plain child).
func cockpitServer(p project.Project, bin string, exec func(*exec.Cmd) error) cockpit.Server {
	return cockpit.Server{Run: cockpit.ExecRunner{Bin: bin, Socket: cockpit.SocketName(projectDir(p)), Exec: exec}}
}

// createCockpit creates the team's tmux session on the project's private
// server, replacing whatever a crashed run left there: the orchestrator
// pane runs `batty feed`, each agent's pane `batty logs -f <agent>`. It
// never attaches. A missing tmux is an error that says how to install it.
func createCockpit(ctx context.Context, p project.Project, cfg *team.Config) (cockpit.Server, error) {
	bin, err := cockpit.LookTmux()
	if err != nil {
		return cockpit.Server{}, err
	}
	exe, err := os.Executable()
	if err != nil {
		return cockpit.Server{}, fmt.Errorf("find the batty binary for the cockpit: %w", err)
	}
	srv := cockpitServer(p, bin, nil)
	// The panes get this environment, less the variables of an enclosing
	// tmux session.
	r := srv.Run.(cockpit.ExecRunner)
	r.Env = withoutEnv(withoutEnv(os.Environ(), "TMUX"), "TMUX_PANE")
	srv.Run = r
	ctx, cancel := context.WithTimeout(ctx, cockpitWait)
	defer cancel()
	// The team is not running (start checked): a server still there is a
	// leftover, with an old environment. Create copes with the server
	// exiting just as it starts a new one.
	if err := srv.Kill(ctx); err != nil {
		return srv, err
	}
	spec := cockpit.Spec{
		Session: cockpit.SessionName(cfg.Name),
		Dir:     projectDir(p),
		Feed:    []string{exe, "feed", "--team", p.TeamFile},
		Agents:  teamAgentNames(cfg),
		AgentCmd: func(agent string) []string {
			return []string{exe, "logs", "-f", "--team", p.TeamFile, agent}
		},
		Relayout: []string{exe, "attach", "--team", p.TeamFile, "--relayout"},
	}
	if _, err := srv.Create(ctx, spec); err != nil {
		return srv, fmt.Errorf("%w\n(run `batty start --no-tmux` to start without the cockpit)", err)
	}
	return srv, nil
}

// stopCockpit kills the project's private tmux server, if tmux exists and
// the server runs. Idempotent.
func stopCockpit(p project.Project) error {
	bin, err := cockpit.LookTmux()
	if err != nil {
		return nil // no tmux, no cockpit
	}
	ctx, cancel := context.WithTimeout(context.Background(), cockpitWait)
	defer cancel()
	return cockpitServer(p, bin, nil).Kill(ctx)
}

// daemonCockpit is the cockpit side of a running daemon: it keeps the pane
// titles in step with the team and shows alerts. Its goroutine is owned by
// runDaemon.
type daemonCockpit struct {
	team   *cockpit.Team
	alerts *alerts.Queue // the cockpit's alert sink, started once the daemon is ready
	srv    cockpit.Server
	d      *orchestrator.Daemon // set once New returned
}

// newDaemonCockpit prepares the cockpit of a daemon; Event goes into
// orchestrator.Options.OnEvent before the daemon exists.
func newDaemonCockpit(p project.Project, cfg *team.Config, log hclog.Logger) (*daemonCockpit, error) {
	bin, err := cockpit.LookTmux()
	if err != nil {
		return nil, err
	}
	dc := &daemonCockpit{}
	// The daemon is a child subreaper: tmux must run as a child it knows.
	dc.srv = cockpitServer(p, bin, func(cmd *exec.Cmd) error { return dc.d.RunChild(cmd) })
	dc.team = cockpit.NewTeam(dc.srv, cockpit.SessionName(cfg.Name), func() control.Status { return dc.d.Status() },
		cockpit.UpdaterOptions{Logger: log.Named("cockpit")})
	dc.alerts = cockpit.NewAlertSink(dc.team.Updater(), 0)
	return dc, nil
}

// onEvent is the daemon's event observer; it never blocks. Events before
// the daemon is running only mark the titles stale.
func (dc *daemonCockpit) onEvent(e eventlog.Event) { dc.team.Event(e) }

// run updates the titles and shows the alerts (the daemon fans them out
// to dc.alerts and closes it) from the moment the daemon is ready until
// ctx ends.
func (dc *daemonCockpit) run(ctx context.Context) {
	select {
	case <-dc.d.Ready():
	case <-ctx.Done():
		return
	}
	dc.alerts.Start()
	dc.team.Updater().Run(ctx)
}

// close kills the private tmux server once the daemon has stopped.
func (dc *daemonCockpit) close() error {
	ctx, cancel := context.WithTimeout(context.Background(), cockpitWait)
	defer cancel()
	return dc.srv.Kill(ctx)
}

func newAttachCmd(f *Factory) *cobra.Command {
	var teamFile string
	var relayout bool
	cmd := &cobra.Command{
		Use:   "attach [--team FILE]",
		Short: "Open the team's tmux cockpit (detach with Ctrl-b d, or Ctrl-a d inside tmux; the team keeps running)",
		Long: `attach opens the cockpit of the running team: a tmux session on the project's
private tmux server (never your own tmux server), with the orchestrator's feed
of deliveries, turn outcomes and alerts, and one pane per agent following its
transcript. Pane titles show each agent's state. Detaching (Ctrl-b d) leaves
the team running; batty stop ends it. It works from any directory of the
project (it looks for team.yaml, else .batty/team.yaml, here and in the
parent directories). From inside your own tmux it opens the cockpit there
with its own prefix key, Ctrl-a (Ctrl-b if yours is Ctrl-a): Ctrl-a d
detaches from the cockpit and brings you back, your prefix keeps driving your
tmux. The panes are laid out for your terminal's size (fewer per window on a
small one) and again whenever it is resized.`,
		Example: `  batty attach
  batty attach --team ~/proj/team.yaml`,
		Args: func(cmd *cobra.Command, args []string) error {
			if relayout {
				return cobra.ExactArgs(2)(cmd, args)
			}
			return cobra.NoArgs(cmd, args)
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			p, cfg, err := f.Team(teamFile)
			if err != nil {
				return err
			}
			if relayout {
				w, werr := strconv.Atoi(args[0])
				h, herr := strconv.Atoi(args[1])
				if werr != nil || herr != nil || w <= 0 || h <= 0 {
					return usageError(cmd, "--relayout wants a width and a height in cells, got %q", args)
				}
				return relayoutCockpit(cmd.Context(), p, cfg, cockpit.Size{Width: w, Height: h})
			}
			return attachCockpit(cmd.Context(), f.IOStreams, p, cfg)
		},
	}
	addTeamFlags(cmd, &teamFile, true)
	// Run by the cockpit's tmux hooks with the client's width and height.
	cmd.Flags().BoolVar(&relayout, "relayout", false, "lay the cockpit out for a client of WIDTH HEIGHT (run by tmux)")
	_ = cmd.Flags().MarkHidden("relayout")
	return withUsageExit(cmd)
}

// relayoutCockpit lays the team's session out for a client of size term,
// as the cockpit's hooks ask.
func relayoutCockpit(ctx context.Context, p project.Project, cfg *team.Config, term cockpit.Size) error {
	bin, err := cockpit.LookTmux()
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, cockpitWait)
	defer cancel()
	return cockpitServer(p, bin, nil).Relayout(ctx, cockpit.SessionName(cfg.Name), term)
}

// attachCockpit replaces this process with a tmux client attached to the
// team's session (it returns only on failure). The terminal is needed:
// without one it says so. Inside another tmux session ($TMUX set) the
// cockpit opens nested with a prefix key of its own, and a line on out
// says how to get back.
func attachCockpit(ctx context.Context, ios *iostreams.IOStreams, p project.Project, cfg *team.Config) error {
	bin, err := cockpit.LookTmux()
	if err != nil {
		return err
	}
	srv := cockpitServer(p, bin, nil)
	session := cockpit.SessionName(cfg.Name)
	ok, err := srv.Has(ctx, session)
	if err != nil {
		return err
	}
	if !ok {
		return noCockpitError(p, cfg)
	}
	if !ios.IsStdinTTY() {
		return fmt.Errorf("batty attach needs a terminal (stdin is not one); the session is %q on `tmux -L %s`",
			session, cockpit.SocketName(projectDir(p)))
	}
	socket := cockpit.SocketName(projectDir(p))
	nested := ""
	if os.Getenv("TMUX") != "" {
		yours := outerPrefix(ctx, bin)
		prefix := cockpit.NestedPrefix(yours)
		nested = fmt.Sprintf("%s-nested-%d", session, os.Getpid())
		for _, args := range cockpit.NestedSetup(session, prefix, nested) {
			c := exec.CommandContext(ctx, bin, append([]string{"-L", socket}, args...)...)
			c.Env = withoutEnv(os.Environ(), "TMUX")
			if out, err := c.CombinedOutput(); err != nil {
				return fmt.Errorf("prepare the nested cockpit (tmux %s): %w: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
			}
		}
		fmt.Fprintf(ios.ErrOut, "batty: cockpit prefix %s (yours: %s): detach with %s d to come back here\n", prefix, yours, prefix)
	}
	argv := append([]string{"tmux", "-L", socket}, cockpit.AttachArgs(session, nested)...)
	if nested == "" {
		if err := syscall.Exec(bin, argv, withoutEnv(os.Environ(), "TMUX")); err != nil {
			return fmt.Errorf("run %s: %w", bin, err)
		}
		return nil
	}
	// Nested: tmux runs as a child, so that its session goes once the
	// client detaches.
	c := exec.Command(bin, argv[1:]...)
	c.Stdin, c.Stdout, c.Stderr = ios.In, ios.Out, ios.ErrOut
	c.Env = withoutEnv(os.Environ(), "TMUX")
	err = c.Run()
	kill := exec.Command(bin, "-L", socket, "kill-session", "-t", "="+nested)
	kill.Env = c.Env
	kill.Run() // gone already when the server stopped
	if err != nil && !teamSessionEnded(ctx, srv, session) {
		return fmt.Errorf("tmux attach: %w", err)
	}
	return nil
}

// teamSessionEnded reports whether the team's session is gone from its
// server (the team stopped while the cockpit was open: tmux's client then
// exits with status 1 after "[server exited]", as a plain `tmux attach`
// does, which is no failure of attach's).
func teamSessionEnded(ctx context.Context, srv cockpit.Server, session string) bool {
	ctx, cancel := context.WithTimeout(ctx, cockpitWait)
	defer cancel()
	ok, err := srv.Has(ctx, session)
	return err == nil && !ok
}

// outerPrefix returns the prefix key of the tmux this process runs in
// ($TMUX), tmux's default when it cannot tell.
func outerPrefix(ctx context.Context, bin string) string {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, bin, "show-options", "-gv", "prefix").Output()
	if p := strings.TrimSpace(string(out)); err == nil && p != "" {
		return p
	}
	return cockpit.DefaultPrefix
}

// noCockpitError explains why there is no session to attach to.
func noCockpitError(p project.Project, cfg *team.Config) error {
	if running, pid := project.Running(p.Layout); running {
		return fmt.Errorf("team %q runs (pid %d) without a cockpit: it was started with --no-tmux, or its tmux server was killed; `batty stop` then `batty start` opens one (watch an agent meanwhile with `batty logs -f <agent>`)", cfg.Name, pid)
	}
	return fmt.Errorf("team %q is not running: `batty start` starts it with its cockpit", cfg.Name)
}

// withoutEnv returns env without the variable name.
func withoutEnv(env []string, name string) []string {
	var out []string
	for _, kv := range env {
		if !strings.HasPrefix(kv, name+"=") {
			out = append(out, kv)
		}
	}
	return out
}

// announceCockpit tells where the cockpit is.
func announceCockpit(w io.Writer, p project.Project, cfg *team.Config) {
	fmt.Fprintf(w, "batty: cockpit ready: `batty attach` (tmux session %q on the private server `tmux -L %s`)\n",
		cockpit.SessionName(cfg.Name), cockpit.SocketName(projectDir(p)))
}

// isNoTmux reports whether err is a missing tmux.
func isNoTmux(err error) bool { return errors.Is(err, cockpit.ErrNoTmux) }
