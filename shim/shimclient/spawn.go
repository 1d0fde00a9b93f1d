package shimclient

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"time"

	"github.com/battyhq/batty/protocol"
	"github.com/battyhq/batty/reap"
	"github.com/battyhq/batty/shim/shimconfig"
)

// SpawnOptions say how to start a shim process.
type SpawnOptions struct {
	// Path is the executable (the batty binary); Args come before the shim
	// flags (["shim"] for batty).
	Path string
	Args []string
	// Env is the shim's environment (nil: this process's).
	Env []string
	// Dir is the shim's working directory ("" = this process's).
	Dir string
	// Stderr receives the shim's log (nil: discarded).
	Stderr io.Writer
	// Config is rendered as the shim's flags, except Env and Instructions,
	// which the shim gets in the handshake's Welcome.
	Config shimconfig.Config
	// HandshakeTimeout bounds the Hello/Welcome exchange (default
	// protocol.DefaultHandshakeTimeout).
	HandshakeTimeout time.Duration
	// Reaper, when the parent is a subreaper, starts the shim as a managed
	// child (and releases it once reaped), so the parent's orphan scans
	// leave it alone. nil: plain exec.Cmd.Start.
	Reaper *reap.Reaper
	// Remote, when set, runs the shim at the other end of a stream (a
	// host's transport: hosts.Transport.ShimCommand). It is given the
	// shim's command line — Path, Args, the flags of Config and
	// shimconfig.StdioFlag — and returns the local command (not started) that runs it there
	// with its stdin and stdout connected; that stream is then the
	// channel. Path, Config's paths and the flags name things on the
	// host. Env and Dir are not used (the command carries its own);
	// Stderr gets the local command's stderr, the remote shim's log
	// included. The Process is then the local command: Kill cuts the
	// stream, which stops the shim over there.
	Remote func(argv []string) (*exec.Cmd, error)
	// Cgroup, when set, is the cgroup v2 the shim is born in
	// (CLONE_INTO_CGROUP), with everything it will start. nil: the
	// parent's cgroup.
	Cgroup *reap.Cgroup
}

// Process is a running shim seen from its parent. Conn is the control
// channel after the handshake; Hello is what the shim said in it. The
// parent owns both: it reads Conn until io.EOF (which follows the shim's
// last event), closes it, and waits for the process (Wait, Stop or Kill).
type Process struct {
	Conn  *protocol.Conn
	Hello protocol.Hello

	cmd     *exec.Cmd
	done    chan struct{}
	waitErr error
	once    sync.Once
}

// Spawn checks o.Config (as its host sees it with Remote), starts a shim in its own process group with the
// control socket on fd 3 and waits for its handshake, in which it hands the
// shim Config.Env and Config.Instructions. On failure nothing is left
// running.
func Spawn(o SpawnOptions) (*Process, error) {
	return spawn(context.Background(), o)
}

// spawn is Spawn whose handshake also ends, with ctx's error, when ctx
// ends first.
func spawn(ctx context.Context, o SpawnOptions) (*Process, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("shim %q: %w", o.Config.Agent, err)
	}
	check := o.Config.WithDefaults().Validate
	if o.Remote != nil {
		// Its paths are the host's, the home there "~/" (shimconfig.Config.ValidateThere).
		check = o.Config.WithDefaults().ValidateThere
	}
	if err := check(); err != nil {
		return nil, fmt.Errorf("shim %q: %w", o.Config.Agent, err)
	}
	conn, remote, err := protocol.Socketpair(protocol.Options{})
	if err != nil {
		return nil, err
	}
	args := append(append([]string(nil), o.Args...), o.Config.Args()...)
	var cmd *exec.Cmd
	if o.Remote != nil {
		if cmd, err = o.Remote(append(append([]string{o.Path}, args...), shimconfig.StdioFlag)); err != nil {
			remote.Close()
			conn.Close()
			return nil, fmt.Errorf("shim %q: %w", o.Config.Agent, err)
		}
		cmd.Stdin, cmd.Stdout = remote, remote // the channel is the stream
	} else {
		cmd = exec.Command(o.Path, args...)
		cmd.Env = o.Env
		cmd.Dir = o.Dir
		cmd.Stdin = nil
		cmd.Stdout = o.Stderr
		cmd.ExtraFiles = []*os.File{remote} // fd 3
	}
	cmd.Stderr = o.Stderr
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Setpgid = true
	if o.Cgroup != nil {
		cmd.SysProcAttr.UseCgroupFD, cmd.SysProcAttr.CgroupFD = true, o.Cgroup.FD()
	}
	start := cmd.Start
	if o.Reaper != nil {
		start = func() error { return o.Reaper.Start(cmd) }
	}
	if err := start(); err != nil {
		remote.Close()
		conn.Close()
		return nil, fmt.Errorf("start shim %s: %w", o.Path, err)
	}
	remote.Close()
	p := &Process{Conn: conn, cmd: cmd, done: make(chan struct{})}
	go func() {
		// The shim's end of the socket closes when it exits, so a reader of
		// Conn still gets every event the shim sent, then io.EOF.
		p.waitErr = cmd.Wait()
		if o.Reaper != nil {
			o.Reaper.Release(cmd.Process.Pid)
		}
		close(p.done)
	}()
	timeout := o.HandshakeTimeout
	if timeout <= 0 {
		timeout = protocol.DefaultHandshakeTimeout
	}
	// Env and Instructions go in the Welcome, never on the command line.
	// The end of ctx closes the channel, which ends the handshake at once.
	interrupted := context.AfterFunc(ctx, func() { conn.Close() })
	p.Hello, err = conn.AcceptHelloWith(protocol.Welcome{Env: o.Config.Env, Instructions: o.Config.Instructions}, timeout)
	if !interrupted() {
		// ctx ended first: the channel is closed, whatever the handshake said.
		err = fmt.Errorf("handshake interrupted: %w", context.Cause(ctx))
	}
	if err != nil {
		p.Kill()
		return nil, fmt.Errorf("shim %q: %w", o.Config.Agent, err)
	}
	return p, nil
}

// Pid is the shim's process id.
func (p *Process) Pid() int { return p.cmd.Process.Pid }

// Done is closed once the shim has exited and been reaped.
func (p *Process) Done() <-chan struct{} { return p.done }

// Wait blocks until the shim exits and returns its exit error (nil for
// status 0). It may be called any number of times.
func (p *Process) Wait() error {
	<-p.done
	return p.waitErr
}

// ExitCode is the shim's exit status after Done, -1 when a signal killed it.
func (p *Process) ExitCode() int {
	<-p.done
	return reap.ExitCode(p.cmd.ProcessState)
}

// Stop asks the shim to shut down, letting the turn in flight run for up to
// timeout, and waits for it to exit; past timeout plus a margin it is
// killed. Events keep flowing on Conn until then; the caller keeps reading
// them. Idempotent.
func (p *Process) Stop(timeout time.Duration) error {
	select {
	case <-p.done:
		return p.Wait()
	default:
	}
	if err := p.Conn.Send(protocol.Shutdown{Timeout: timeout, Reason: "requested"}); err != nil && !errors.Is(err, protocol.ErrClosed) {
		p.Kill()
		return p.Wait()
	}
	select {
	case <-p.done:
	case <-time.After(timeout + 10*time.Second):
		p.Kill()
	}
	return p.Wait()
}

// Kill ends the shim at once with SIGKILL and waits for it. The shim's
// codex dies with it (parent-death signal); use Stop or a Kill command for
// a cleanup of the model's detached commands. Idempotent.
func (p *Process) Kill() {
	p.signalKill()
	<-p.done
}

// signalKill sends the shim SIGKILL once, unless it was reaped already
// (its pid may be another process's by then); it does not wait.
func (p *Process) signalKill() {
	p.once.Do(func() {
		select {
		case <-p.done:
		default:
			syscall.Kill(p.cmd.Process.Pid, syscall.SIGKILL)
		}
	})
}
