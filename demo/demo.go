// Package demo runs `batty demo`: a small team (an architect and two
// engineers) working entirely offline. It writes a scratch project, a git
// repository, into a temporary directory (the engineers work in worktrees
// of their own and the architect lands their branches on main through the
// merge queue), starts the scripted stand-in model
// (scriptedmodel) and points the real Codex CLI at it through a generated
// CODEX_HOME, drives the team through batty's own commands (start, send,
// attach, stop — the batty executable it is given), prints what happens,
// and cleans up everything it started.
package demo

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/battyhq/batty/project"
	"github.com/battyhq/batty/safetext"
	"github.com/battyhq/batty/scriptedmodel"
	"github.com/battyhq/batty/workspaces"
)

// DefaultTimeout bounds a whole demo run.
const DefaultTimeout = 3 * time.Minute

// stopTimeout is how long `batty stop` lets turns in flight finish when the
// demo cleans up.
const stopTimeout = 2 * time.Second

// DefaultPace is how long each step of the stand-in model takes by
// default, so that a person can follow the team.
const DefaultPace = 700 * time.Millisecond

// settleWait bounds the wait, once the answer arrived and both branches
// landed, for the turns still running to end.
const settleWait = 30 * time.Second

// cockpitLinger is how long the cockpit stays open after the team is done
// (the answer in, both branches landed), unless the user detaches first.
const cockpitLinger = 15 * time.Second

// ErrInterrupted is returned by Run when its context ended (Ctrl-C) before
// the team finished; everything was cleaned up nonetheless.
var ErrInterrupted = errors.New("demo interrupted")

// Options configures Run.
type Options struct {
	// Batty is the batty executable whose commands drive the team (the
	// running binary: os.Executable()).
	Batty string
	// CodexBin is the Codex CLI to use; "" means FindCodex("").
	CodexBin string
	// Cockpit opens the tmux cockpit: `batty start` without --no-tmux, then
	// `batty attach` on Stdin/Stdout/Stderr. Without it the team runs
	// headless (`batty start --no-tmux`) and the feed is the only output.
	Cockpit bool
	// Keep leaves the scratch project in place (it is removed otherwise).
	Keep bool
	// Timeout bounds the run; 0 means DefaultTimeout.
	Timeout time.Duration
	// Pace is how long each step of the stand-in model takes (0: none).
	Pace time.Duration
	// Out receives the feed; Stdin, Stdout and Stderr are the terminal the
	// cockpit attaches to.
	Out                   io.Writer
	Stdin, Stdout, Stderr *os.File
}

// Result says where the demo's files are.
type Result struct {
	// Dir is the scratch project (removed at the end unless Options.Keep).
	Dir string
	// Answer is the architect's answer to the human.
	Answer string
}

// Run plays the demo: it blocks until the architect's answer reached the
// human's inbox and both engineers' branches landed on main, the team
// failed (a turn or a landing), the timeout passed or ctx ended (then it
// returns ErrInterrupted). In every case it stops the team (daemon, shims,
// Codex processes, tmux session), closes the stand-in model's server and
// removes the scratch project unless opts.Keep — all before it returns,
// whatever ctx says. The caller should keep catching SIGINT meanwhile.
func Run(ctx context.Context, opts Options) (res Result, err error) {
	if opts.Timeout <= 0 {
		opts.Timeout = DefaultTimeout
	}
	if opts.Out == nil {
		opts.Out = io.Discard
	}
	codexBin, err := FindCodex(opts.CodexBin)
	if err != nil {
		return res, err
	}
	if _, err := FindGit(); err != nil {
		return res, err
	}
	p := newPrinter(opts.Out)

	dir, err := os.MkdirTemp("", "batty-demo-")
	if err != nil {
		return res, fmt.Errorf("create the demo's scratch directory: %w", err)
	}
	res.Dir = dir
	teamFile := filepath.Join(dir, "team.yaml")
	l, err := project.LayoutFor(teamFile)
	if err != nil {
		return res, errors.Join(err, os.RemoveAll(dir))
	}
	keep := opts.Keep
	defer func() {
		if keep {
			p.plainf("The demo project is kept in %s, and its state directory (daemon.log, the transcripts) in %s; remove them when done.\n", dir, l.Dir)
			return
		}
		for what, path := range map[string]string{"project": dir, "state directory": l.Dir} {
			if rerr := os.RemoveAll(path); rerr != nil {
				err = errors.Join(err, fmt.Errorf("remove the demo's %s %s: %w", what, path, rerr))
			}
		}
	}()
	script := scriptedmodel.DemoScript()
	fol, err := newFollower(l, p, landingBranches(script))
	if err != nil {
		return res, err
	}
	srv, err := scriptedmodel.Start(script, scriptedmodel.Options{Observe: func(st scriptedmodel.Step) {
		if st.Failed {
			fol.fail(stepLine(st))
			return
		}
		p.linef("%s", stepLine(st))
	}, Pace: opts.Pace})
	if err != nil {
		return res, err
	}
	defer func() { err = errors.Join(err, srv.Close()) }()

	sandbox, err := writeProject(ctx, dir, codexBin, srv.URL, script)
	if err != nil {
		return res, err
	}
	p.plainf("%s", banner(ctx, dir, codexBin, srv.URL, sandbox))

	// From the first start on, the team is stopped whatever happens: stop
	// is harmless when nothing runs, and the tmux session goes with it
	// (which ends an attached cockpit).
	r := &runner{exe: opts.Batty, dir: dir, teamFile: teamFile}
	defer func() {
		if r.stopped {
			return
		}
		p.plainf("Stopping the team (batty stop)…\n")
		if serr := r.stop(p); serr != nil {
			keep = true // never remove a directory a daemon may still use
			err = errors.Join(err, serr)
		}
		r.waitAttach()
	}()
	startArgs := []string{"start", "-f", teamFile}
	if !opts.Cockpit {
		startArgs = append(startArgs, "--no-tmux")
	}
	if ctx.Err() != nil {
		return res, ErrInterrupted
	}
	out, err := r.run(startArgs...)
	if err != nil && opts.Cockpit {
		first, _, _ := strings.Cut(err.Error(), "\n")
		p.plainf("The cockpit did not open (%s); running without it.\n", first)
		opts.Cockpit = false
		out, err = r.run("start", "-f", teamFile, "--no-tmux")
	}
	if err != nil {
		return res, err
	}
	p.plainf("%s\n", strings.TrimSpace(out))
	if ctx.Err() != nil {
		return res, ErrInterrupted
	}

	fctx, stopFollow := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	followErr := make(chan error, 1)
	wg.Add(1)
	go func() { defer wg.Done(); followErr <- fol.run(fctx) }()
	defer func() { stopFollow(); wg.Wait() }()

	p.restart()
	p.linef("human runs: batty send architect %q", safetext.Line(scriptedmodel.Goal, 100))
	if _, err := r.run("send", "-f", teamFile, "architect", scriptedmodel.Goal); err != nil {
		return res, err
	}

	var attached <-chan struct{}
	if opts.Cockpit {
		// In the cockpit the keys go to tmux, not to the demo: Ctrl-C is
		// bound to interrupting the demo, as in a plain terminal.
		if err := cockpitKeys(ctx, dir); err != nil {
			p.linef("%v (Ctrl-C in the cockpit will not stop the demo: detach first)", err)
		}
		attached = r.attach(p, opts)
	}

	timeout := time.NewTimer(opts.Timeout)
	defer timeout.Stop()
	// The team is done when the architect's answer is in and both
	// engineers' branches landed, in whichever order (a nil channel is
	// waited for no longer).
	answered, landed := fol.answered, fol.landedAll
	for answered != nil || landed != nil {
		select {
		case res.Answer = <-answered:
			answered = nil
		case <-landed:
			landed = nil
		case why := <-fol.failed:
			keep = true // to look at
			return res, fmt.Errorf("the demo team did not finish: %s; see %s", why, l.DaemonLog())
		case err := <-followErr:
			return res, err
		case <-timeout.C:
			keep = true // to look at
			return res, fmt.Errorf("the demo team did not finish within %s (%s); see %s and the transcripts in %s",
				opts.Timeout, fol.progress(), l.DaemonLog(), l.LogsDir())
		case <-ctx.Done():
			p.plainf("\nInterrupted: stopping the team and cleaning up…\n")
			return res, ErrInterrupted
		}
	}
	// The answer is in and the work landed: let the turns still running
	// end, so that every transcript is complete, then stop the team before
	// the summary.
	fol.awaitSettled(ctx, settleWait)
	if attached != nil {
		lingerCockpit(ctx, attached)
	}
	p.plainf("%s", "\nStopping the team (batty stop)…\n")
	if err := r.stop(p); err != nil {
		return res, err
	}
	r.waitAttach()
	p.plainf("\n%s", summary(ctx, dir, script))
	return res, nil
}

// landingBranches returns the branches the demo waits to see landed: each
// engineer's, when the script lands them.
func landingBranches(script scriptedmodel.Script) []string {
	if !script.Land {
		return nil
	}
	var out []string
	for _, t := range script.Tasks {
		out = append(out, workspaces.Branch(t.Engineer))
	}
	return out
}

// lingerCockpit leaves the attached cockpit open for a while after the
// team is done, so it can be seen, until the user detaches or ctx ends.
func lingerCockpit(ctx context.Context, attached <-chan struct{}) {
	t := time.NewTimer(cockpitLinger)
	defer t.Stop()
	select {
	case <-attached:
	case <-t.C:
	case <-ctx.Done():
	}
}

// banner says what the demo is: above all, that the model is a stand-in.
func banner(ctx context.Context, dir, codexBin, url, sandbox string) string {
	var b strings.Builder
	b.WriteString("batty demo: an architect and two engineers deliver a small change to a git\nrepository, on this machine.\n\n")
	b.WriteString("  The model is a SCRIPTED STAND-IN, not OpenAI's: a local server (" + url + ")\n")
	b.WriteString("  plays a fixed script. No OpenAI account is used and nothing leaves this machine.\n")
	b.WriteString("  batty, the Codex CLI, git and the commands the script asks for are real.\n\n")
	fmt.Fprintf(&b, "  Codex CLI: %s (%s)\n", codexBin, codexVersion(ctx, codexBin, filepath.Join(dir, "codex-home")))
	fmt.Fprintf(&b, "  Sandbox:   %s\n", sandbox)
	fmt.Fprintf(&b, "  Project:   %s (removed at the end unless --keep):\n", dir)
	fmt.Fprintf(&b, "             a git repository whose %s branch holds team.yaml, prompts/ and work/.\n", baseBranch)
	b.WriteString("  The work:  each engineer works in a git worktree of its own (worktrees/engineer-N in batty's state directory,\n")
	b.WriteString("             on branch batty/engineer-N), and batty commits each of its turns there.\n")
	fmt.Fprintf(&b, "             The architect then lands both branches on %s with batty merge: batty's\n", baseBranch)
	fmt.Fprintf(&b, "             merge queue merges each into %s and lands it only if the team's check passes:\n", baseBranch)
	fmt.Fprintf(&b, "               verify: %s\n\n", verifyCommand)
	return b.String()
}

// summary shows what the team delivered: the history of main and the files
// the engineers wrote, with their contents, as they are in the project's
// checkout of main (advanced by the landings).
func summary(ctx context.Context, dir string, script scriptedmodel.Script) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Done: both engineers' branches landed on %s and the architect's answer (above)\nreached your inbox.\n\n", baseBranch)
	fmt.Fprintf(&b, "The history of %s (git log --oneline --graph -n 10 %s):\n", baseBranch, baseBranch)
	gctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	if log, err := gitLog(gctx, dir); err != nil {
		fmt.Fprintf(&b, "  %v\n", err)
	} else {
		for l := range strings.Lines(log) {
			fmt.Fprintf(&b, "  %s\n", strings.TrimRight(l, "\n"))
		}
	}
	fmt.Fprintf(&b, "\nThe engineers' files on %s, in %s:\n", baseBranch, filepath.Join(dir, "work"))
	var files []string
	for _, t := range script.Tasks {
		files = append(files, t.File)
	}
	sort.Strings(files)
	for _, name := range files {
		data, err := os.ReadFile(filepath.Join(dir, "work", name))
		if err != nil {
			fmt.Fprintf(&b, "  %s: %v\n", name, err)
			continue
		}
		fmt.Fprintf(&b, "  %s:\n", name)
		for _, l := range strings.Split(strings.TrimRight(string(data), "\n"), "\n") {
			fmt.Fprintf(&b, "    %s\n", l)
		}
	}
	b.WriteString("\nTo run a real team, see README.md (codex login, batty init, batty start).\n")
	return b.String()
}

// writeProject writes the scratch project into dir and makes it a git
// repository: team.yaml (the architect and two engineers, Codex at
// codexBin with CODEX_HOME codex-home/; the engineers work in git worktrees
// of their own, their work landing on main once verifyCommand passes), the
// role prompts, codex-home/config.toml pointing at url, and work/ (kept by
// work/.gitkeep), the engineers' working directory. Everything but
// codex-home/ and .batty/ (.gitignore) is the repository's first commit,
// on main. It returns a description of the sandbox the commands run in:
// Codex's sandbox where it runs on this machine (the engineers'
// workspace-write, the architect's read-only), else none.
func writeProject(ctx context.Context, dir, codexBin, url string, script scriptedmodel.Script) (string, error) {
	home := filepath.Join(dir, "codex-home")
	if err := scriptedmodel.WriteCodexHome(home, url); err != nil {
		return "", err
	}
	for _, d := range []string{"prompts", "work"} {
		if err := os.Mkdir(filepath.Join(dir, d), 0o700); err != nil {
			return "", fmt.Errorf("create %s: %w", filepath.Join(dir, d), err)
		}
	}
	files := map[string]string{
		"prompts/architect.md": script.ArchitectPrompt + "\n",
		"prompts/engineer.md":  script.EngineerPrompt + "\n",
		"work/.gitkeep":        "",
	}
	sandbox, note := "workspace-write", "Codex's sandbox (each engineer writes only its worktree, the read-only architect only its outbox; verify only the merge's worktree)"
	wsSandbox := ""
	// The architect only sends and lands: it plans read-only.
	architectCodex := "    codex:\n      sandbox: read-only # it sends and lands with batty; it writes no file\n"
	if !sandboxWorks(ctx, codexBin, home) {
		sandbox, note = "danger-full-access", "none: Codex's sandbox cannot run on this machine, so the scripted commands and verify run unsandboxed"
		wsSandbox = "  sandbox: off # Codex's sandbox cannot run on this machine\n"
		architectCodex = ""
	}
	q := func(s string) string { b, _ := json.Marshal(s); return string(b) }
	files["team.yaml"] = fmt.Sprintf(`# The team of batty demo. The model behind it is a scripted stand-in
# (a local server); see codex-home/config.toml.
name: batty-demo
codex:
  bin: %s
  codex_home: codex-home
  sandbox: %s
  approval_policy: never
timeouts:
  turn: 2m
  idle: 1m
  shutdown: 5s
# The engineers work in git worktrees of their own (in batty's state directory) and
# their branches land on main through batty's merge queue, each only once
# verify passes on it merged with main (inside Codex's sandbox, where
# it can write only the merge's worktree).
workspace:
  base: %s
  verify: '%s'
%sroles:
  - name: architect
    prompt: prompts/architect.md
    talks_to: [engineer]
%s  - name: engineer
    instances: %d
    prompt: prompts/engineer.md
    talks_to: [architect]
    cwd: work
    workspace: worktree
`, q(codexBin), sandbox, baseBranch, strings.ReplaceAll(verifyCommand, "'", "''"), wsSandbox, architectCodex, len(script.Tasks))
	for name, text := range files {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
			return "", fmt.Errorf("write %s: %w", p, err)
		}
	}
	if err := initRepo(ctx, dir); err != nil {
		return "", err
	}
	return note, nil
}

// runner runs batty commands for the demo's project.
type runner struct {
	exe, dir, teamFile string
	attachCmd          *exec.Cmd     // the cockpit's `batty attach`, if started
	attachDone         chan struct{} // closed when it returned
	stopped            bool          // a stop succeeded
	stopping           atomic.Bool   // the demo is stopping the team (and so ends the cockpit)
}

// command prepares `batty args…` in the project directory, in a process
// group of its own so that a Ctrl-C at the terminal reaches only the demo,
// which then cleans up in order.
func (r *runner) command(ctx context.Context, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, r.exe, args...)
	cmd.Dir = r.dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.WaitDelay = 5 * time.Second
	return cmd
}

// run runs one batty command to its end (each bounds its own waits; the
// demo never cuts one short, so a start is never left half done) and
// returns its output.
func (r *runner) run(args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := r.command(ctx, args...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return out.String(), fmt.Errorf("batty %s: %w\n%s", args[0], err, strings.TrimSpace(out.String()))
	}
	return out.String(), nil
}

// stop stops the team (daemon, shims, Codex, tmux session) and prints what
// batty stop said; it is a no-op when nothing runs.
func (r *runner) stop(p *printer) error {
	r.stopping.Store(true)
	out, err := r.run("stop", "-f", r.teamFile, "--timeout", stopTimeout.String())
	if err != nil {
		return fmt.Errorf("%w\nthe demo team may still run: stop it with `batty stop -f %s`", err, r.teamFile)
	}
	r.stopped = true
	p.plainf("%s\n", strings.TrimSpace(out))
	return nil
}

// attach runs `batty attach` on the terminal, holding the feed back while
// it runs; the returned channel is closed when it returned (the user
// detached, or the session ended).
func (r *runner) attach(p *printer, opts Options) <-chan struct{} {
	done := make(chan struct{})
	cmd := exec.Command(r.exe, "attach", "-f", r.teamFile)
	cmd.Dir = r.dir
	// The same path as `batty attach` typed at the terminal: its stdin and
	// stderr are the terminal itself, never a pipe, in tmux's own pane as
	// in a plain terminal. tmux draws on the terminal it reads (stdin); on
	// its stdout it prints only its exit line ("[server exited]"), which
	// the demo's own lines replace, so stdout is the null device (a file,
	// not a pipe: nothing stands between the client and a descriptor).
	null, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		p.linef("cannot open the cockpit (%v); following the team here", err)
		close(done)
		return done
	}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = opts.Stdin, null, opts.Stderr
	p.hold()
	err = cmd.Start()
	null.Close() // the child has its own copy
	if err != nil {
		p.release()
		p.linef("cannot open the cockpit (%v); following the team here", err)
		close(done)
		return done
	}
	r.attachCmd, r.attachDone = cmd, done
	go func() {
		defer close(done)
		err := cmd.Wait()
		p.release()
		switch {
		case r.stopping.Load():
			// The demo ended the session itself.
		case err != nil:
			p.linef("the cockpit closed (%v); following the team here", err)
		default:
			p.linef("you left the cockpit; following the team here")
		}
	}()
	return done
}

// waitAttach waits for the cockpit's `batty attach` to return once the
// team (and so its session) is stopped, killing it after a grace.
func (r *runner) waitAttach() {
	if r.attachCmd == nil {
		return
	}
	t := time.NewTimer(5 * time.Second)
	defer t.Stop()
	select {
	case <-r.attachDone:
	case <-t.C:
		_ = r.attachCmd.Process.Kill()
		<-r.attachDone
	}
}
