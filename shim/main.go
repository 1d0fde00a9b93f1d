// Package shim is the server side of a worker, the `batty shim` process: it
// runs one agent, owns one Codex conversation (thread) and runs a turn of
// Codex once per message, driven over the protocol by its parent (the
// daemon, `batty chat` or `batty fanout`, through package shim/shimclient).
//
// A shim is started with its control socket on fd 3 and its settings as
// flags (package shim/shimconfig). It speaks first (Hello), runs one codex
// process at a time in its own process group, queues further messages up to a bounded
// depth, watches every turn with a hard and a no-output timeout, and ends
// every accepted message with exactly one TurnFinished. As a child subreaper
// it kills whatever a turn left behind when the turn ends, so nothing a turn
// starts outlives it.
package shim

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/battyhq/batty/agentenv"
	"github.com/battyhq/batty/atomicfile"
	"github.com/battyhq/batty/codex"
	"github.com/battyhq/batty/hosts"
	"github.com/battyhq/batty/outbox"
	"github.com/battyhq/batty/protocol"
	"github.com/battyhq/batty/ptylog"
	"github.com/battyhq/batty/reap"
	"github.com/battyhq/batty/shim/shimconfig"
)

// NewLogger returns the hclog logger batty processes use: level from
// BATTY_LOG_LEVEL (default info), written to stderr.
func NewLogger(name string) hclog.Logger {
	level := hclog.LevelFromString(os.Getenv("BATTY_LOG_LEVEL"))
	if level == hclog.NoLevel {
		level = hclog.Info
	}
	return hclog.New(&hclog.LoggerOptions{Name: name, Level: level, Output: os.Stderr})
}

// Main is the `batty shim` entry point: it parses args, takes the control
// socket from fd 3 (or, with shimconfig.StdioFlag among args, stdin and stdout), does
// the handshake and serves until stopped. It returns the process exit
// code: 0 after a clean stop, 1 on a runtime failure, 2 when it could not
// start.
func Main(args []string) int {
	log := NewLogger("shim")
	args, stdio := takeStdio(args)
	parse := shimconfig.ParseArgs
	if stdio {
		// Its paths and its permission profile are made this host's
		// after the handshake (OnHost), then checked.
		parse = shimconfig.ParseArgsThere
	}
	cfg, err := parse(args)
	if err != nil {
		log.Error("Invalid shim settings", "error", err)
		return 2
	}
	log = log.With("agent", cfg.Agent)
	var conn *protocol.Conn
	if stdio {
		if conn, err = stdioChannel(); err != nil {
			log.Error("No control channel on stdin and stdout", "error", err)
			return 2
		}
	} else {
		f := os.NewFile(shimconfig.ControlFD, "batty-control")
		if f == nil {
			log.Error("No control socket on fd 3: batty shim is started by batty (chat or the daemon), not by hand")
			return 2
		}
		if conn, err = protocol.FileConn(f, protocol.Options{}); err != nil {
			log.Error("No control socket on fd 3: batty shim is started by batty (chat or the daemon), not by hand", "error", err)
			return 2
		}
	}
	w, err := conn.OfferHelloWelcome(protocol.Hello{Agent: cfg.Agent, ThreadID: cfg.ThreadID}, protocol.DefaultHandshakeTimeout)
	if err != nil {
		conn.Close()
		log.Error("Handshake failed: fd 3 does not speak the batty protocol", "error", err)
		return 2
	}
	// What must not be on the command line came with the Welcome.
	cfg.Env, cfg.Instructions = w.Env, w.Instructions
	if stdio {
		// Its paths came as the daemon on another machine wrote them, its
		// permission profile to be completed here. Without a home
		// directory "~/" stays, and the check below refuses it.
		home, _ := os.UserHomeDir()
		if cfg, err = OnHost(cfg, home, os.Environ(), os.Getuid()); err != nil {
			conn.Close()
			log.Error("Invalid shim settings in the welcome", "error", err)
			return 2
		}
		// tmux's socket directories here exist before they are denied,
		// and what is still missing is left out (Codex would make a
		// placeholder there).
		for _, dir := range hosts.TmuxSocketDirs(os.Getenv("TMUX_TMPDIR"), os.Getuid()) {
			if err := hosts.EnsureSocketDir(dir); err != nil {
				log.Warn("tmux's socket directory could not be made", "dir", dir, "error", err)
			}
		}
		if p := cfg.Exec.Permissions; p != nil {
			// The state directory's denied children exist before the
			// agent's first command: one made later (a clone, another
			// agent's outbox) would not be denied.
			if dir := stateDirOf(cfg.Env); dir != "" {
				if err := hosts.MakeDeniedState(dir, p.Deny); err != nil {
					conn.Close()
					log.Error("The permission profile cannot be completed on this host", "error", err)
					return 2
				}
			}
			present := p.WithoutMissing()
			cfg.Exec.Permissions = &present
		}
	}
	if err := cfg.Validate(); err != nil {
		conn.Close()
		log.Error("Invalid shim settings in the welcome", "error", err)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	defer stop()
	if err := Run(ctx, conn, cfg, log); err != nil {
		log.Error("Shim failed", "error", err)
		return 1
	}
	return 0
}

// Run serves one agent on an established (post-handshake) channel until it
// is shut down, killed, ctx ends or the channel closes. It owns conn and
// closes it. Before it returns, every codex process and every process a turn
// left behind is gone.
func Run(ctx context.Context, conn *protocol.Conn, cfg shimconfig.Config, log hclog.Logger) error {
	defer conn.Close()
	cfg = cfg.WithDefaults()
	if err := cfg.Validate(); err != nil {
		return err
	}
	if err := reap.BecomeSubreaper(); err != nil {
		return err
	}
	s := &server{
		cfg: cfg, conn: conn, log: log, reaper: reap.New(),
		turnDone: make(chan turnResult), progress: make(chan threadSeen), storeDone: make(chan storeResult),
		state: protocol.StateStarting, known: map[string]bool{}, threadID: cfg.ThreadID, forkFrom: cfg.ForkFrom,
	}
	if cfg.ThreadID != "" {
		// The baseline of the resumed thread: codex's totals include every
		// earlier run, which earlier shims already accounted for.
		s.threadUse = cfg.ThreadUsage
	}
	var err error
	s.bin, err = codex.ResolveBinary(cfg.CodexBin)
	if err != nil {
		// Not fatal: a turn looks for the binary again and, while it is
		// still unusable, fails as a spawn failure naming this error, so
		// the orchestrator sees why instead of a crash loop.
		log.Error("Codex binary not usable", "bin", cfg.CodexBin, "error", err)
		s.binErr = err
	} else if s.bin.Launcher != "" {
		log.Debug("Running the native codex binary instead of the npm launcher", "native", s.bin.Path, "launcher", s.bin.Launcher)
	}
	// Resolved once: a binary replaced later keeps its path, which then
	// names the replacement.
	s.batty = battyBinary()
	if s.execOpts, err = execOptions(cfg, s.batty); err != nil {
		return err
	}
	s.env = codexEnv(cfg, s.bin, s.batty)
	// The runtime starts nothing before the first turn; it is closed once
	// the loop has ended, before the leftover sweep below.
	if s.rt, err = newRuntime(cfg.Runtime, s); err != nil {
		return err
	}
	if s.tlog, err = openTranscript(cfg, conn, log); err != nil {
		return err
	}
	defer s.tlog.Close()
	// The pane shows the binary's name; its whole path (often long enough
	// to wrap) goes to the daemon's log.
	s.tlog.Notice(fmt.Sprintf("shim started for %s (pid %d, codex %s)", cfg.Agent, os.Getpid(), filepath.Base(s.bin.Path)))
	log.Info("Shim started", "agent", cfg.Agent, "codex", s.bin.Path)

	rctx, cancel := context.WithCancel(context.Background())
	reaperDone := make(chan struct{})
	go func() {
		defer close(reaperDone)
		s.reaper.Run(rctx)
	}()
	relayCtx, stopRelay := context.WithCancel(context.Background())
	relayDone := make(chan struct{})
	if dir := stateDirOf(cfg.Env); cfg.RelayInboxes && dir != "" {
		if err := outbox.Make(dir, cfg.Agent); err != nil {
			log.Error("The agent's outbox cannot be made: its batty send will fail", "error", err)
		}
		s.relay = newRelay(dir, cfg.Agent, conn, log)
		go func() { defer close(relayDone); s.relay.run(relayCtx) }()
	} else {
		close(relayDone)
	}
	err = s.serve(ctx)
	stopRelay()
	<-relayDone
	if cerr := s.rt.close(); cerr != nil {
		log.Error("Closing the runtime failed", "runtime", cfg.Runtime, "error", cerr)
	}
	if n, kerr := s.reaper.KillLeftovers(5 * time.Second); kerr != nil {
		log.Error("Processes survived the shim's cleanup", "error", kerr)
	} else if n > 0 {
		log.Info("Killed leftover processes at exit", "count", n)
	}
	cancel()
	<-reaperDone
	return err
}

// maxTranscriptEvent bounds the lines of one TranscriptLines event, in
// bytes (a single longer line travels alone).
const maxTranscriptEvent = 512 << 10

func openTranscript(cfg shimconfig.Config, conn *protocol.Conn, log hclog.Logger) (*ptylog.Writer, error) {
	if cfg.TranscriptStream {
		return ptylog.Stream(func(lines []string) error { return sendTranscript(conn, lines) }, ptylog.Options{
			Color:   true,
			OnError: func(err error) { log.Warn("Transcript lines not sent", "error", err) },
		}), nil
	}
	if cfg.Transcript == "" {
		return nil, nil
	}
	w, err := ptylog.Open(cfg.Transcript, ptylog.Options{
		Color:   true,
		Root:    cfg.TranscriptRoot,
		OnError: func(err error) { log.Warn("Transcript write failed", "path", cfg.Transcript, "error", err) },
	})
	if errors.Is(err, atomicfile.ErrSymlink) {
		// Refused, not fatal: the agent runs without a transcript rather
		// than writing it wherever a planted link points.
		log.Warn("Transcript refused; running without one", "path", cfg.Transcript, "error", err)
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("open transcript: %w", err)
	}
	return w, nil
}

// execOptions adds the role's standing instructions to the codex settings
// as developer instructions, so they reach the model on every turn of every
// thread; for an agent of a team (BATTY_DIR in cfg.Env) batty's own section
// follows them (see CrewInstructions), naming batty, the batty binary to
// run.
func execOptions(cfg shimconfig.Config, batty string) (codex.ExecOptions, error) {
	o := cfg.Exec
	o.Config = append([]string(nil), o.Config...)
	o.DeveloperInstructions = withCrew(cfg.Instructions, cfg.Agent, batty, stateDirOf(cfg.Env), agentenv.Lookup(cfg.Env, agentenv.Project), Worktree{Branch: cfg.Branch, Base: cfg.Base})
	if err := o.Validate(); err != nil {
		return o, fmt.Errorf("codex settings: %w", err)
	}
	return o, nil
}

// codexEnv is codex's environment: the shim's own, what the npm launcher
// would have set, the configured extras, the shim's project mark
// (reap.MarkEnv), the agent's name, and batty, the batty binary: its path
// in BATTY_BIN (which survives a login shell's profile) and its directory
// first on PATH so that plain `batty` works where PATH is kept.
func codexEnv(cfg shimconfig.Config, bin codex.Binary, batty string) []string {
	env := bin.Environ(os.Environ())
	if batty != "" {
		env = append(env, "PATH="+filepath.Dir(batty)+string(os.PathListSeparator)+os.Getenv("PATH"), EnvBatty+"="+batty)
	}
	env = append(env, cfg.Env...)
	if mark, ok := os.LookupEnv(reap.MarkEnv); ok {
		// The project's mark (set by the daemon) wins over the settings.
		env = append(env, reap.MarkEnv+"="+mark)
	}
	return append(env, agentenv.Agent+"="+cfg.Agent)
}

// sendTranscript sends lines as TranscriptLines events of at most
// maxTranscriptEvent bytes each (a longer line alone), in order.
func sendTranscript(conn *protocol.Conn, lines []string) error {
	for len(lines) > 0 {
		n, size := 0, 0
		for n < len(lines) && (n == 0 || size+len(lines[n]) <= maxTranscriptEvent) {
			size += len(lines[n])
			n++
		}
		if err := conn.Send(protocol.TranscriptLines{Lines: lines[:n]}); err != nil {
			return err
		}
		lines = lines[n:]
	}
	return nil
}
