// Package hosts reaches the other machines a team's agents run on (the
// team file's hosts): it runs a command on a host with its stdin and
// stdout connected to a local process, over OpenSSH for a host with an
// ssh destination (the user's ssh config, agent and known hosts apply) or
// through the host's own command (kubectl exec -i, docker exec -i) for the
// others. There is no network layer and no listening daemon of batty's:
// the stream of the remote command is the whole link.
//
// On top of the transport it installs batty on a host (EnsureBatty) and
// runs the host's check of its Codex (Preflight).
package hosts

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/battyhq/batty/project"
	"github.com/battyhq/batty/shellword"
	"github.com/battyhq/batty/team"
	"github.com/battyhq/batty/textclip"
)

// SessionsPerConnection bounds the sessions batty opens at once on one
// shared ssh connection: OpenSSH's sshd refuses more than MaxSessions (10
// by default) on one connection, so the shims of many agents on a host
// are spread over several connections (ssh control masters), each of at
// most this many, and Run's short commands use one of their own.
const SessionsPerConnection = 8

// masterTimeout bounds the opening of a shared connection (connect, host
// key check, authentication).
const masterTimeout = 60 * time.Second

// ControlPersist is how long ssh keeps a host's shared connection open
// after its last session ends.
const ControlPersist = "60s"

// waitDelay is how long a run waits, once ssh or the host's command has
// exited, for whatever it left holding its output.
const waitDelay = 2 * time.Second

// Transport runs commands on hosts. The zero value uses ssh from PATH,
// the user's ~/.ssh/config and DefaultControlDir. The connections it
// shares live in ssh's control masters; it keeps only how many shim
// sessions it handed out per destination (to spread them over
// connections). A Transport is safe for concurrent use once set up, and
// must not be copied after first use.
type Transport struct {
	// SSH is the ssh program ("" is "ssh", looked up on PATH).
	SSH string
	// ConfigFile, when set, is given to ssh with -F instead of the user's
	// ~/.ssh/config. An absolute path: ssh runs in ControlDir.
	ConfigFile string
	// ControlDir holds ssh's control sockets, one per connection (""
	// is DefaultControlDir(); a directory an agent's sandbox may write
	// lets the agent play a host). Its path may be of any length: ssh
	// runs in it and names its control sockets relative to it (a socket
	// address holds at most 104 bytes of path on some systems, 107 on
	// Linux). Cmd creates it 0700 and refuses one that is a symbolic
	// link, not a directory, or not owned by this user.
	ControlDir string
	// Env is the environment of ssh or of a host's command (nil: this
	// process's, where ssh finds SSH_AUTH_SOCK and HOME).
	Env []string
	// Owner names the shared connections of this Transport: their control
	// sockets are ControlDir/%C-<Owner>[-n] ("": this process's pid). Two
	// Transports of one Owner share connections, and the Close of one
	// ends the other's sessions: the daemon's would end when a `batty
	// fanout` over the same host closes its own. Letters, digits, '.',
	// '_' and '-' only, at most 7 bytes (a control socket's name, with
	// ssh's %C and the temporary suffix ssh binds it under, stays far
	// below the 104 bytes a socket address holds).
	Owner string

	mu    sync.Mutex
	conns map[string]*hostConns // by ssh destination
}

// hostConns is what a Transport keeps of one ssh destination: how many
// shim sessions it handed out (the n-th goes on connection
// 1+n/SessionsPerConnection), a lock per connection for opening its
// master, and the bound of Run's sessions on connection 0.
type hostConns struct {
	mu      sync.Mutex
	shims   int
	opening map[int]*sync.Mutex
	runs    chan struct{}
}

// host returns the connections of destination dest.
func (t *Transport) host(dest string) *hostConns {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.conns == nil {
		t.conns = map[string]*hostConns{}
	}
	hc := t.conns[dest]
	if hc == nil {
		hc = &hostConns{opening: map[int]*sync.Mutex{}, runs: make(chan struct{}, SessionsPerConnection)}
		t.conns[dest] = hc
	}
	return hc
}

// nextShimConn returns the connection of the next shim session.
func (hc *hostConns) nextShimConn() int {
	hc.mu.Lock()
	defer hc.mu.Unlock()
	n := 1 + hc.shims/SessionsPerConnection
	hc.shims++
	return n
}

// used returns the connections handed out so far: 0 and the shims'.
func (hc *hostConns) used() []int {
	hc.mu.Lock()
	defer hc.mu.Unlock()
	conns := []int{0}
	for n := 1; n <= (hc.shims+SessionsPerConnection-1)/SessionsPerConnection; n++ {
		conns = append(conns, n)
	}
	return conns
}

// opener is the lock under which connection n's master is opened.
func (hc *hostConns) opener(n int) *sync.Mutex {
	hc.mu.Lock()
	defer hc.mu.Unlock()
	l := hc.opening[n]
	if l == nil {
		l = &sync.Mutex{}
		hc.opening[n] = l
	}
	return l
}

// DefaultControlDir is the control socket directory of this user, as
// ControlDirFor chooses it from $XDG_RUNTIME_DIR, $HOME and $TMPDIR.
func DefaultControlDir() string {
	return ControlDirFor(os.Getenv("XDG_RUNTIME_DIR"), os.Getenv("HOME"), os.Getenv("TMPDIR"))
}

// ControlDirFor chooses the directory of ssh's control sockets given the
// user's runtime directory, home and temporary directory: runtime/batty-ssh
// (runtime is /run/user/<uid> where systemd made it), else
// home/.ssh/batty; never one under /tmp or tmp, which Codex's
// workspace-write sandbox lets an agent write by default. An agent that
// could write the directory could make it before batty does, or swap a
// connection's socket for one of its own, and play a host to the daemon.
// It returns "" when neither runtime nor home is an absolute directory
// outside them. It is a pure function.
func ControlDirFor(runtime, home, tmp string) string {
	fit := func(dir string) bool {
		return filepath.IsAbs(dir) && !project.Inside("/tmp", dir) && (tmp == "" || !project.Inside(tmp, dir))
	}
	switch {
	case fit(runtime):
		return filepath.Join(runtime, "batty-ssh")
	case fit(home):
		return filepath.Join(home, ".ssh", "batty")
	}
	return ""
}

func (t *Transport) controlDir() string {
	if t.ControlDir != "" {
		return t.ControlDir
	}
	return DefaultControlDir()
}

// owner is the name of this Transport's connections (see Owner).
func (t *Transport) owner() string {
	if t.Owner != "" {
		return t.Owner
	}
	return strconv.Itoa(os.Getpid())
}

func (t *Transport) ssh() string {
	if t.SSH != "" {
		return t.SSH
	}
	return "ssh"
}

// sshOptions is ssh with first, then the options of every ssh run on
// shared connection conn (0: "%C-<owner>", n: "%C-<owner>-n") in master mode master
// ("auto" for a session, "yes" to open the master), up to (without) the
// "--" that ends them. ssh takes the first value of an option: nothing
// after may change these. The ControlPath is relative: every ssh runs in
// the control directory (Transport.ControlDir), so the control socket's address is
// short whatever the directory's path (ssh binds the socket itself, and
// closes every descriptor it inherits: a socket named through a
// descriptor of the directory, as package unixsock names batty's own,
// cannot reach it).
func (t *Transport) sshOptions(conn int, master string, first ...string) []string {
	args := append([]string{t.ssh()}, first...)
	if t.ConfigFile != "" {
		args = append(args, "-F", t.ConfigFile)
	}
	path := "%C-" + t.owner()
	if conn > 0 {
		path += "-" + strconv.Itoa(conn)
	}
	return append(args,
		"-o", "BatchMode=yes",
		"-o", "ControlMaster="+master,
		"-o", "ControlPath="+path,
		"-o", "ControlPersist="+ControlPersist)
}

// Argv returns the command line that runs script with sh on h, stdin and
// stdout connected: for an ssh host `ssh -T -o BatchMode=yes -o
// ControlMaster=auto -o ControlPath=%C-PID -o ControlPersist=60s -- DEST
// sh -c SCRIPT` (the remote command is one shell-quoted string: ssh hands
// it to the user's login shell; the ControlPath is relative to the control
// directory, where Cmd runs ssh), for a command host the command followed
// by sh, -c and script as words of their own. Host keys are checked as
// the user's ssh config says. script must hold no secret: it is on argv
// here and on the host. It is a pure function; it errs only for a host
// with neither an ssh destination nor a command.
func (t *Transport) Argv(h team.Host, script string) ([]string, error) {
	return t.argvOn(h, 0, script)
}

// argvOn is Argv on shared connection conn.
func (t *Transport) argvOn(h team.Host, conn int, script string) ([]string, error) {
	switch {
	case h.SSH != "" && len(h.Command) == 0:
		if strings.HasPrefix(h.SSH, "-") {
			return nil, fmt.Errorf("host %s: ssh destination %q starts with \"-\"", h.Name, h.SSH)
		}
		return append(t.sshOptions(conn, "auto", "-T"), "--", h.SSH, "sh -c "+shellword.Quote(script)), nil
	case h.SSH == "" && len(h.Command) > 0 && h.Command[0] != "":
		return append(append([]string(nil), h.Command...), "sh", "-c", script), nil
	}
	return nil, fmt.Errorf("host %q: set exactly one of ssh and command", h.Name)
}

// Cmd returns the command (not started) that runs script with sh on h
// (see Argv), in a process group of its own, with the Transport's
// environment; the caller sets its Stdin, Stdout and Stderr, starts it
// and waits for it. For an ssh host it first makes sure the control
// socket directory is fit (see ControlDir). The remote command ends with
// its stream only if it stops at the end of its stdin or when its output
// breaks: a remote command that ignores both outlives a cut connection
// (sshd signals nothing to a session without a terminal).
func (t *Transport) Cmd(h team.Host, script string) (*exec.Cmd, error) {
	return t.cmdOn(h, 0, script)
}

// cmdOn is Cmd on shared connection conn, whose master it opens first
// when it is not open (see openMaster).
func (t *Transport) cmdOn(h team.Host, conn int, script string) (*exec.Cmd, error) {
	argv, err := t.argvOn(h, conn, script)
	if err != nil {
		return nil, err
	}
	if h.SSH != "" {
		if err := EnsureControlDir(t.controlDir()); err != nil {
			return nil, fmt.Errorf("host %s: %w", h.Name, err)
		}
		if err := t.openMaster(h, conn); err != nil {
			return nil, err
		}
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = t.Env
	if h.SSH != "" {
		cmd.Dir = t.controlDir()
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	return cmd, nil
}

// openMaster makes sure shared connection conn to h is open: a session
// started while no master exists would open its own connection, and many
// at once (the shims of many agents starting together) are refused by
// sshd's MaxStartups. Under the connection's lock it asks the master
// (`ssh -O check`) and, when there is none, opens one in the background
// (`ssh -fN -o ControlMaster=yes`), which blocks until it is connected
// and authenticated. Its error quotes ssh's.
func (t *Transport) openMaster(h team.Host, conn int) error {
	l := t.host(h.SSH).opener(conn)
	l.Lock()
	defer l.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), masterTimeout)
	defer cancel()
	check := append(t.sshOptions(conn, "auto", "-O", "check"), "--", h.SSH)
	c := exec.CommandContext(ctx, check[0], check[1:]...)
	c.Env, c.Dir = t.Env, t.controlDir()
	if c.Run() == nil {
		return nil
	}
	open := append(t.sshOptions(conn, "yes", "-f", "-N"), "--", h.SSH)
	c = exec.CommandContext(ctx, open[0], open[1:]...)
	c.Env, c.Dir = t.Env, t.controlDir()
	// Its own process group: the master it leaves running is no part of
	// a session's group, which is killed when the session is cut.
	c.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	stderr := &textclip.TailWriter{Max: maxRunStderr}
	c.Stderr = stderr
	c.WaitDelay = waitDelay
	if err := c.Run(); err != nil {
		return fmt.Errorf("host %s: opening the ssh connection: %w: %s", h.Name, err, strings.TrimSpace(stderr.String()))
	}
	return nil
}

// Close ends ssh's shared connection to h, if one is open (`ssh -O
// exit`); the sessions still on it end with it. A host reached through a
// command has none: Close does nothing. It blocks until ssh has answered,
// or ctx ends.
func (t *Transport) Close(ctx context.Context, h team.Host) error {
	if h.SSH == "" {
		return nil
	}
	dir := t.controlDir()
	if _, err := os.Lstat(dir); dir == "" || errors.Is(err, fs.ErrNotExist) {
		return nil // no master was ever opened
	}
	var errs []error
	for _, conn := range t.host(h.SSH).used() {
		args := append(t.sshOptions(conn, "auto", "-O", "exit"), "--", h.SSH)
		cmd := exec.CommandContext(ctx, args[0], args[1:]...)
		cmd.Env, cmd.Dir = t.Env, dir
		cmd.WaitDelay = waitDelay
		out, err := cmd.CombinedOutput()
		if err != nil && !strings.Contains(string(out), "No such file") && !strings.Contains(string(out), "Control socket connect") {
			errs = append(errs, fmt.Errorf("host %s: closing the ssh connection: %w: %s", h.Name, err, strings.TrimSpace(string(out))))
		}
	}
	return errors.Join(errs...)
}

// EnsureControlDir makes sure dir can hold ssh's control sockets safely:
// it creates it 0700 when missing (and its parent, 0700), and refuses ""
// (no directory fit, see ControlDirFor) and a path that is a symbolic
// link, not a directory, or not owned by this user. Its length does not
// matter (ssh runs in it: see sshOptions). It tightens the mode of a
// directory of ours to 0700. Idempotent.
func EnsureControlDir(dir string) error {
	if dir == "" {
		return errors.New("no directory for ssh's control sockets outside /tmp and $TMPDIR (where an agent's sandbox may write): set XDG_RUNTIME_DIR or HOME to a directory of yours")
	}
	// Its parent too (~/.ssh), as ssh makes it: 0700.
	if err := os.MkdirAll(filepath.Dir(dir), 0o700); err != nil {
		return fmt.Errorf("create ssh control directory: %w", err)
	}
	if err := os.Mkdir(dir, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("create ssh control directory: %w", err)
	}
	fi, err := os.Lstat(dir)
	if err != nil {
		return fmt.Errorf("ssh control directory: %w", err)
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	switch {
	case fi.Mode()&fs.ModeSymlink != 0:
		return fmt.Errorf("ssh control directory %s is a symbolic link; remove it (batty creates the directory itself)", dir)
	case !fi.IsDir():
		return fmt.Errorf("ssh control directory %s is not a directory; remove it (batty creates the directory itself)", dir)
	case !ok || int(st.Uid) != os.Getuid():
		return fmt.Errorf("ssh control directory %s belongs to another user; remove it (batty creates the directory itself)", dir)
	}
	if fi.Mode().Perm() != 0o700 {
		if err := os.Chmod(dir, 0o700); err != nil {
			return fmt.Errorf("ssh control directory: %w", err)
		}
	}
	return nil
}

// RemotePath spells path for the shell on a host as one word: "~" and a
// leading "~/" become "$HOME" (which the shell expands, where a quoted
// tilde would stay a tilde), the rest is shell-quoted. It is a pure
// function.
func RemotePath(path string) string {
	switch {
	case path == "~":
		return `"$HOME"`
	case strings.HasPrefix(path, "~/"):
		rest := strings.TrimLeft(path[2:], "/")
		if rest == "" {
			return `"$HOME"`
		}
		return `"$HOME"/` + shellword.Quote(rest)
	}
	return shellword.Quote(path)
}

// ShellCommand spells argv as one shell command: each word quoted
// (shellword.Quote), except that the first may be a RemotePath-style "~/"
// path. It is a pure function.
func ShellCommand(argv ...string) string {
	words := make([]string, len(argv))
	for i, w := range argv {
		if i == 0 {
			words[i] = RemotePath(w)
			continue
		}
		words[i] = shellword.Quote(w)
	}
	return strings.Join(words, " ")
}

// Bounds of what Run keeps of a remote command's output.
const (
	maxRunStdout = 1 << 20
	maxRunStderr = 4 << 10
)

// Run runs script on h (see Cmd) with stdin (nil: none) and returns its
// stdout, at most 1 MiB of it. It blocks until the command has exited;
// the end of ctx kills the local ssh (or command) and its process group,
// which cuts the stream. A command that exits with a failure is an error
// that quotes the end of its stderr.
func (t *Transport) Run(ctx context.Context, h team.Host, script string, stdin io.Reader) ([]byte, error) {
	stdout := &textclip.HeadWriter{Max: maxRunStdout}
	err := t.run(ctx, h, script, stdin, stdout, false)
	return []byte(stdout.String()), err
}

// Stream is Run with the command's stdout written to stdout, unbounded,
// and its stdin held open after stdin's end until the command exits: a
// command on h that watches the end of its stdin learns so that the
// connection is gone (or ctx ended). It blocks until the command has
// exited.
func (t *Transport) Stream(ctx context.Context, h team.Host, script string, stdin io.Reader, stdout io.Writer) error {
	return t.run(ctx, h, script, stdin, stdout, true)
}

func (t *Transport) run(ctx context.Context, h team.Host, script string, stdin io.Reader, stdout io.Writer, hold bool) error {
	if h.SSH != "" {
		// At most SessionsPerConnection at once on the shared connection.
		runs := t.host(h.SSH).runs
		select {
		case runs <- struct{}{}:
		case <-ctx.Done():
			return fmt.Errorf("host %s: %w", h.Name, context.Cause(ctx))
		}
		defer func() { <-runs }()
	}
	cmd, err := t.Cmd(h, script)
	if err != nil {
		return err
	}
	stderr := &textclip.TailWriter{Max: maxRunStderr}
	cmd.Stdout, cmd.Stderr = stdout, stderr
	cmd.WaitDelay = waitDelay
	var fed chan struct{}
	var pipe io.WriteCloser
	if hold && stdin != nil {
		if pipe, err = cmd.StdinPipe(); err != nil {
			return fmt.Errorf("host %s: %w", h.Name, err)
		}
	} else {
		cmd.Stdin = stdin
	}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("host %s: start %s: %w", h.Name, cmd.Path, err)
	}
	if pipe != nil {
		// Ended by the copy's end or by Wait closing the pipe.
		fed = make(chan struct{})
		go func() { defer close(fed); io.Copy(pipe, stdin) }()
	}
	// The end of ctx kills the group: ssh, or the host's command and what
	// it started here.
	stop := context.AfterFunc(ctx, func() { syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) })
	err = cmd.Wait()
	if fed != nil {
		<-fed
	}
	if !stop() {
		return fmt.Errorf("host %s: %w", h.Name, context.Cause(ctx))
	}
	if err != nil {
		msg := strings.TrimSpace(stderr.String())
		if msg == "" {
			msg = "no output on stderr"
		}
		return fmt.Errorf("host %s: %w: %s", h.Name, err, msg)
	}
	return nil
}

// ShimCommand returns what shimclient.SpawnOptions.Remote takes: a function
// that gives the command running argv (a shim's command line, its first
// word the batty installed on h, e.g. EnsureBatty's path) on h in dir
// (a path there; "~/" is the home directory), through Cmd. The shim at
// the other end speaks its protocol on the stream and stops at its end.
// Shims share ssh connections SessionsPerConnection at a time: the n-th
// shim started goes on connection 1+n/SessionsPerConnection (a
// connection whose shims all ended closes after ControlPersist).
func (t *Transport) ShimCommand(h team.Host, dir string) func(argv []string) (*exec.Cmd, error) {
	return func(argv []string) (*exec.Cmd, error) {
		if len(argv) == 0 {
			return nil, fmt.Errorf("host %s: no shim command", h.Name)
		}
		conn := 0
		if h.SSH != "" {
			conn = t.host(h.SSH).nextShimConn()
		}
		return t.cmdOn(h, conn, "cd "+RemotePath(dir)+" && exec "+ShellCommand(argv...))
	}
}
