package cockpit

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// Pane options that tell the cockpit's panes apart (tmux user options).
const (
	optPane  = "@batty_pane" // "feed" or "agent"
	optAgent = "@batty_agent"
)

// Session size before any client attaches (DetachedSize): large enough for
// every split of the layout; tmux resizes the windows to the client that
// attaches, and the Relayout hook lays them out again for its size.
var detachedWidth, detachedHeight = strconv.Itoa(DetachedSize.Width), strconv.Itoa(DetachedSize.Height)

// Spec describes the session to create.
type Spec struct {
	// Session is the tmux session name (see SessionName).
	Session string
	// Dir is the panes' working directory.
	Dir string
	// Env holds "KEY=VALUE" pairs set in the session's environment.
	Env []string
	// Feed is the argv of the orchestrator pane (run without a shell).
	Feed []string
	// Agents are the agents, in team order.
	Agents []string
	// AgentCmd returns the argv of an agent's pane.
	AgentCmd func(agent string) []string
	// Relayout, when set, is the argv of a command that the server runs
	// (through the shell, in the background) whenever a client attaches
	// or is resized, with the client's width and height appended; it is
	// expected to call Server.Relayout for that size.
	Relayout []string
}

// Session is a created cockpit: its name and pane ids.
type Session struct {
	Name string
	// Feed is the pane id of the orchestrator pane ("%3").
	Feed string
	// Panes maps each agent to its pane id.
	Panes map[string]string
}

// Server is the project's private tmux server, reached through a Runner.
type Server struct {
	Run Runner
}

// optRelayout is the server option holding the shell command of
// Spec.Relayout, which the resize hooks run.
const optRelayout = "@batty_relayout"

// StatusHint is the right side of the cockpit's status line: how to leave
// it and how to move between the agents. "#{prefix}" shows the session's
// prefix key.
const StatusHint = " #{prefix} d: detach · #{prefix} o: next pane · #{prefix} w: windows "

// CtrlCNote is what a Ctrl-C typed in a pane of the cockpit shows.
const CtrlCNote = "batty: Ctrl-C does not stop the team: #{prefix} d detaches, batty stop stops it"

// ctrlCKey makes a Ctrl-C typed in one of the cockpit's panes say how to
// leave instead of ending the pane's viewer; in any other pane (a shell
// the user opened in the session) it is an ordinary Ctrl-C.
var ctrlCKey = []string{"bind-key", "-n", "C-c", "if-shell", "-F", "#{" + optPane + "}",
	`display-message -d 4000 "` + CtrlCNote + `"`, "send-keys C-c"}

// respawnHook respawns a pane whose command ended without an error: a
// SIGINT that reaches a viewer anyway (send-keys, kill) brings it back
// instead of leaving a dead pane. A command that failed (a non-zero exit
// status) stays dead with its message on screen. An unknown status counts
// as a clean end. (tmux 3.3 sometimes gets no exit status for a pane's
// process and then runs no pane-died hook: the pane stays dead; ctrlCKey
// keeps the keyboard's Ctrl-C from getting there.)
const respawnHook = "if-shell -F '#{||:#{==:#{pane_dead_status},0},#{==:#{pane_dead_status},}}' 'respawn-pane -t #{hook_pane}'"

// serverOptions make the private server a cockpit: it stays up while the
// team runs even with no session (exit-empty off), panes keep their last
// output when their command exits and come back after a Ctrl-C, pane
// borders show the titles, and the status line says how to get around.
var serverOptions = [][]string{
	{"set-hook", "-g", "pane-died", respawnHook},
	ctrlCKey,
	{"set-option", "-g", "status-right", StatusHint},
	{"set-option", "-g", "status-right-length", "80"},
	{"set-option", "-g", "renumber-windows", "on"},
	{"set-option", "-g", "exit-empty", "off"},
	{"set-option", "-g", "mouse", "on"},
	{"set-option", "-g", "history-limit", "20000"},
	{"set-option", "-g", "-w", "remain-on-exit", "on"},
	{"set-option", "-g", "-w", "allow-rename", "off"},
	{"set-option", "-g", "-w", "pane-border-status", "top"},
	{"set-option", "-g", "-w", "pane-border-format", " #{pane_title} "},
}

// createAttempts bounds the retries of a session created just as the
// previous server on the socket exits ("server exited unexpectedly").
const createAttempts = 5

// Create creates the session in spec, replacing a stale session of the
// same name, and returns its panes. It makes two tmux invocations (one
// more for a stale session): one creates every window and pane, one names
// and titles them and applies the layouts. It retries, a few times with a
// short backoff, when the server on the socket exited under it.
func (s Server) Create(ctx context.Context, spec Spec) (*Session, error) {
	if len(spec.Feed) == 0 || spec.AgentCmd == nil {
		return nil, errors.New("cockpit: spec needs a feed command and agent commands")
	}
	if ok, err := s.Has(ctx, spec.Session); err != nil {
		return nil, err
	} else if ok {
		if err := s.KillSession(ctx, spec.Session); err != nil {
			return nil, err
		}
	}
	plan := Plan(spec.Agents)
	var (
		ids []string
		err error
	)
	for attempt := 1; ; attempt++ {
		ids, err = s.createPanes(ctx, spec, plan)
		if err == nil || !serverGone(err) || attempt == createAttempts {
			break
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(time.Duration(attempt) * 20 * time.Millisecond):
		}
	}
	if err != nil {
		return nil, fmt.Errorf("create tmux session %q: %w", spec.Session, err)
	}
	sess := &Session{Name: spec.Session, Panes: map[string]string{}}
	var cmds [][]string
	i := 0
	for _, w := range plan {
		first := ids[i]
		if w.Feed {
			sess.Feed = ids[i]
			cmds = append(cmds,
				[]string{"set-option", "-p", "-t", ids[i], optPane, "feed"},
				[]string{"select-pane", "-t", ids[i], "-T", tmuxArg("orchestrator")})
			i++
		}
		for _, a := range w.Agents {
			sess.Panes[a] = ids[i]
			cmds = append(cmds,
				[]string{"set-option", "-p", "-t", ids[i], optPane, "agent"},
				[]string{"set-option", "-p", "-t", ids[i], optAgent, a},
				[]string{"select-pane", "-t", ids[i], "-T", tmuxArg(a)})
			i++
		}
		cmds = append(cmds, layoutCmds(first, w)...)
		cmds = append(cmds, []string{"select-pane", "-t", first})
	}
	cmds = append(cmds, []string{"select-window", "-t", ids[0]})
	if len(spec.Relayout) > 0 {
		run := "run-shell -b '#{" + optRelayout + "} #{client_width} #{client_height}'"
		cmds = append(cmds,
			[]string{"set-option", "-g", optRelayout, tmuxArg(shellJoin(spec.Relayout))},
			[]string{"set-hook", "-g", "client-attached", run},
			[]string{"set-hook", "-g", "client-resized", run})
	}
	if _, err := s.Run.Run(ctx, join(cmds)...); err != nil {
		return nil, fmt.Errorf("lay out tmux session %q: %w", spec.Session, err)
	}
	return sess, nil
}

// createPanes creates the session, its windows and panes in one invocation
// and returns the pane ids in plan order (feed first, then the agents).
func (s Server) createPanes(ctx context.Context, spec Spec, plan []Window) ([]string, error) {
	var cmds [][]string
	want := 0
	for wi, w := range plan {
		for pi := 0; pi < len(w.Agents)+btoi(w.Feed); pi++ {
			argv := spec.Feed
			if !w.Feed || pi > 0 {
				argv = spec.AgentCmd(w.Agents[pi-btoi(w.Feed)])
			}
			// Targets name the newest window and its active pane (the
			// pane created last), never an index: the user's tmux.conf
			// may change base-index and pane-base-index.
			newest := "=" + spec.Session + ":{end}"
			var c []string
			switch {
			case wi == 0 && pi == 0:
				c = []string{"new-session", "-d", "-s", spec.Session, "-n", w.Name, "-x", detachedWidth, "-y", detachedHeight}
				for _, kv := range spec.Env {
					c = append(c, "-e", tmuxArg(kv))
				}
			case pi == 0:
				c = []string{"new-window", "-d", "-t", "=" + spec.Session + ":", "-n", w.Name}
			default:
				// Re-tile before each split so that the next one has room;
				// the new pane follows the last one and becomes active.
				cmds = append(cmds, []string{"select-layout", "-t", newest, "tiled"})
				c = []string{"split-window", "-t", newest}
			}
			if spec.Dir != "" {
				c = append(c, "-c", tmuxArg(spec.Dir))
			}
			c = append(c, "-P", "-F", "#{pane_id}")
			for _, a := range argv {
				c = append(c, tmuxArg(a))
			}
			cmds = append(cmds, c)
			want++
		}
		if wi == 0 {
			cmds = append(cmds, serverOptions...)
		}
	}
	out, err := s.Run.Run(ctx, join(cmds)...)
	if err != nil {
		return nil, err
	}
	ids := strings.Fields(out)
	if len(ids) != want {
		return nil, fmt.Errorf("tmux printed %d pane ids for %d panes: %q", len(ids), want, out)
	}
	return ids, nil
}

// Has reports whether the session exists; no server means no session.
func (s Server) Has(ctx context.Context, session string) (bool, error) {
	_, err := s.Run.Run(ctx, "has-session", "-t", "="+session)
	if err == nil {
		return true, nil
	}
	var te *Error
	if errors.As(err, &te) {
		// has-session fails with a message and status 1 when there is no
		// such session or no server.
		return false, nil
	}
	return false, err
}

// KillSession kills the session; a missing session or server is not an
// error.
func (s Server) KillSession(ctx context.Context, session string) error {
	_, err := s.Run.Run(ctx, "kill-session", "-t", "="+session)
	if err != nil && !NoServer(err) {
		return fmt.Errorf("kill tmux session %q: %w", session, err)
	}
	return nil
}

// Kill kills the private server and every session on it, and removes the
// socket file tmux leaves behind; no server is not an error. Idempotent.
func (s Server) Kill(ctx context.Context) error {
	socket, _ := s.Run.Run(ctx, "display-message", "-p", "#{socket_path}")
	_, err := s.Run.Run(ctx, "kill-server")
	if err != nil && !NoServer(err) {
		return fmt.Errorf("kill tmux server: %w", err)
	}
	if socket = strings.TrimSpace(socket); socket != "" {
		if fi, err := os.Lstat(socket); err == nil && fi.Mode().Type() == os.ModeSocket {
			if err := os.Remove(socket); err != nil && !errors.Is(err, os.ErrNotExist) {
				return fmt.Errorf("remove the tmux socket %s: %w", socket, err)
			}
		}
	}
	return nil
}

// Find returns the panes of an existing session, told apart by the pane
// options Create sets.
func (s Server) Find(ctx context.Context, session string) (*Session, error) {
	out, err := s.Run.Run(ctx, "list-panes", "-s", "-t", "="+session, "-F", "#{pane_id}\t#{"+optPane+"}\t#{"+optAgent+"}")
	if err != nil {
		return nil, fmt.Errorf("find the panes of tmux session %q: %w", session, err)
	}
	sess := &Session{Name: session, Panes: map[string]string{}}
	for line := range strings.SplitSeq(strings.TrimSpace(out), "\n") {
		f := strings.Split(line, "\t")
		if len(f) != 3 {
			continue
		}
		switch f[1] {
		case "feed":
			sess.Feed = f[0]
		case "agent":
			sess.Panes[f[2]] = f[0]
		}
	}
	return sess, nil
}

// join turns commands into one tmux argument list, separated by ";".
func join(cmds [][]string) []string {
	var args []string
	for i, c := range cmds {
		if i > 0 {
			args = append(args, ";")
		}
		args = append(args, c...)
	}
	return args
}

// tmuxArg protects an argument from tmux's command-line parsing, where a
// final ";" ends the command: it is escaped as "\;", which tmux reads as a
// literal ";".
func tmuxArg(s string) string {
	if strings.HasSuffix(s, ";") {
		return s[:len(s)-1] + `\;`
	}
	return s
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}
