// Package hoststest gives tests a host to reach: a real OpenSSH server on
// 127.0.0.1, for a user of its own created for the test, with a throwaway
// host key, an authorized key, a known_hosts file and an ssh config file
// that names it; and a batty binary built from this module to install
// there.
package hoststest

import (
	"bufio"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/battyhq/batty/reap"
	"github.com/battyhq/batty/team"
)

// SSHDPath is where Debian's openssh-server installs sshd.
const SSHDPath = "/usr/sbin/sshd"

// startTimeout bounds sshd's start and each command of the setup.
const startTimeout = 30 * time.Second

// builds holds what Batty built in this test process.
var builds struct {
	once sync.Once
	dir  string
	path string
	err  error
}

// Batty builds ./cmd/batty of this module once per test process (go
// build) and returns the binary's path; a failed build fails t. Call
// RemoveBuilds from TestMain once the tests have run.
func Batty(t testing.TB) string {
	t.Helper()
	builds.once.Do(func() {
		out, err := exec.Command("go", "env", "GOMOD").Output()
		if err != nil || strings.TrimSpace(string(out)) == "" {
			builds.err = fmt.Errorf("finding the module root: %v", err)
			return
		}
		root := filepath.Dir(strings.TrimSpace(string(out)))
		if builds.dir, err = os.MkdirTemp("", "batty-build"); err != nil {
			builds.err = err
			return
		}
		// Readable by the test user too: a shim started as that user may
		// run this very file.
		if err := os.Chmod(builds.dir, 0o755); err != nil {
			builds.err = err
			return
		}
		builds.path = filepath.Join(builds.dir, "batty")
		cmd := exec.Command("go", "build", "-o", builds.path, "./cmd/batty")
		cmd.Dir = root
		if out, err := cmd.CombinedOutput(); err != nil {
			builds.err = fmt.Errorf("go build ./cmd/batty: %v\n%s", err, out)
		}
	})
	if builds.err != nil {
		t.Fatal(builds.err)
	}
	return builds.path
}

// BattyVersion is the line the binary Batty built prints for `batty
// version` ("batty v0.0.0-… (protocol 4)", or "batty dev (protocol 4)" when
// the build has no version stamped): what hosts.Binary.Version must say of
// it. It is read from the binary, never assumed, so the tests do not depend
// on how the user's Go stamps builds (VCS stamping on or off). A failure
// fails t.
func BattyVersion(t testing.TB) string {
	t.Helper()
	path := Batty(t)
	out, err := exec.Command(path, "version").Output()
	if err != nil {
		t.Fatalf("%s version: %v", path, err)
	}
	return strings.TrimSpace(string(out))
}

// RemoveBuilds removes what Batty built. Call it from TestMain after
// m.Run.
func RemoveBuilds() {
	if builds.dir != "" {
		os.RemoveAll(builds.dir)
	}
}

// SSHD is a running sshd for one test and the user it lets in.
type SSHD struct {
	// User is the name of the user created for the test; Home its home
	// directory, made for the test (not under /home).
	User, Home string
	// UID and GID are the user's ids.
	UID, GID int
	// Host is the host as a team file would name it: ssh destination
	// HostAlias, which ConfigFile resolves.
	Host team.Host
	// ConfigFile is the ssh config file (give it to ssh with -F): it
	// names the server, the user, the key and the known_hosts file, and
	// checks the host key strictly.
	ConfigFile string
	// Port is sshd's port on 127.0.0.1.
	Port int
	// Log holds sshd's log (stderr), for a failing test to show.
	Log *strings.Builder
}

// HostAlias is the ssh destination of the test host in ConfigFile.
const HostAlias = "batty-test-host"

// StartSSHD starts an sshd on 127.0.0.1 on a free port that lets in a
// user created for the test (useradd, with a home of its own) by key
// only. It skips t, naming what is missing, unless this is root (sshd
// switches to the user), sshd (Debian's openssh-server), ssh, ssh-keygen
// and useradd are installed and the user can be created. Everything is
// undone when t ends: the user's processes are killed (by pid), sshd is
// stopped, the user deleted and the files removed.
func StartSSHD(t testing.TB) *SSHD {
	t.Helper()
	if os.Getuid() != 0 {
		t.Skip("the sshd harness needs root: sshd must switch to a user created for the test (run the tests as root, as scripts/test.sh does in CI)")
	}
	for _, p := range []string{SSHDPath, "ssh", "ssh-keygen", "useradd", "userdel", "pgrep"} {
		if _, err := exec.LookPath(p); err != nil {
			t.Skipf("the sshd harness needs %s: install openssh-server, openssh-client and passwd (scripts/test.sh does): %v", p, err)
		}
	}
	dir, err := os.MkdirTemp("", "batty-sshd")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })

	s := &SSHD{Log: &strings.Builder{}}
	s.User, s.Home, s.UID, s.GID = createUser(t)

	run(t, "ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "batty-test-host", "-f", filepath.Join(dir, "host_key"))
	run(t, "ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "batty-test-client", "-f", filepath.Join(dir, "id_ed25519"))
	clientKey := readFile(t, filepath.Join(dir, "id_ed25519.pub"))
	hostKey := readFile(t, filepath.Join(dir, "host_key.pub"))
	// The user's own ~/.ssh/authorized_keys, as sshd wants it (StrictModes).
	sshDir := filepath.Join(s.Home, ".ssh")
	if err := os.Mkdir(sshDir, 0o700); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(sshDir, "authorized_keys"), clientKey, 0o600)
	for _, p := range []string{sshDir, filepath.Join(sshDir, "authorized_keys")} {
		if err := os.Chown(p, s.UID, s.GID); err != nil {
			t.Fatal(err)
		}
	}

	// sshd needs its privilege separation directory, which its service
	// creates at boot.
	if err := os.MkdirAll("/run/sshd", 0o755); err != nil {
		t.Skipf("the sshd harness needs /run/sshd: %v", err)
	}
	s.Port = freePort(t)
	sshdConfig := filepath.Join(dir, "sshd_config")
	writeFile(t, sshdConfig, strings.Join([]string{
		"ListenAddress 127.0.0.1:" + strconv.Itoa(s.Port),
		"HostKey " + filepath.Join(dir, "host_key"),
		"PidFile none",
		"AuthorizedKeysFile .ssh/authorized_keys",
		"PubkeyAuthentication yes",
		"PasswordAuthentication no",
		"KbdInteractiveAuthentication no",
		"UsePAM no",
		"PermitRootLogin no",
		"AllowUsers " + s.User,
		"X11Forwarding no",
		"PrintMotd no",
		"LogLevel INFO",
	}, "\n")+"\n", 0o600)
	knownHosts := filepath.Join(dir, "known_hosts")
	writeFile(t, knownHosts, fmt.Sprintf("[127.0.0.1]:%d %s", s.Port, hostKey), 0o600)
	s.ConfigFile = filepath.Join(dir, "ssh_config")
	writeFile(t, s.ConfigFile, strings.Join([]string{
		"Host " + HostAlias,
		"  HostName 127.0.0.1",
		"  Port " + strconv.Itoa(s.Port),
		"  User " + s.User,
		"  IdentityFile " + filepath.Join(dir, "id_ed25519"),
		"  IdentitiesOnly yes",
		"  IdentityAgent none",
		"  UserKnownHostsFile " + knownHosts,
		"  GlobalKnownHostsFile /dev/null",
		"  StrictHostKeyChecking yes",
		"  LogLevel ERROR",
	}, "\n")+"\n", 0o600)
	s.Host = team.Host{Name: "sshtest", SSH: HostAlias}

	s.start(t, sshdConfig)
	return s
}

// start runs sshd in the foreground and waits until it listens.
func (s *SSHD) start(t testing.TB, config string) {
	t.Helper()
	cmd := exec.Command(SSHDPath, "-D", "-e", "-f", config)
	// Killed with the test binary too: a test that times out (its panic
	// runs no cleanup) leaves no sshd listening.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start sshd: %v", err)
	}
	listening := make(chan struct{})
	logged := make(chan struct{})
	var mu sync.Mutex
	go func() {
		defer close(logged)
		sc := bufio.NewScanner(stderr)
		once := sync.Once{}
		for sc.Scan() {
			mu.Lock()
			s.Log.WriteString(sc.Text() + "\n")
			mu.Unlock()
			if strings.Contains(sc.Text(), "Server listening on") {
				once.Do(func() { close(listening) })
			}
		}
	}()
	exited := make(chan error, 1)
	go func() {
		<-logged
		exited <- cmd.Wait()
	}()
	t.Cleanup(func() {
		s.killUserProcesses(t)
		// sshd and the sessions it forked (in its process group).
		syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(startTimeout):
			syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-exited
		}
		if t.Failed() {
			mu.Lock()
			t.Logf("sshd log:\n%s", s.Log.String())
			mu.Unlock()
		}
	})
	select {
	case <-listening:
	case err := <-exited:
		t.Fatalf("sshd exited at start: %v\n%s", err, s.Log.String())
	case <-time.After(startTimeout):
		t.Fatalf("sshd did not listen within %s", startTimeout)
	}
}

// UserProcesses returns the processes of the test user as "pid comm"
// lines, sshd's own session processes left out unless withSSHD.
func (s *SSHD) UserProcesses(t testing.TB, withSSHD bool) []string {
	t.Helper()
	out, err := exec.Command("pgrep", "-l", "-u", strconv.Itoa(s.UID)).Output()
	var ee *exec.ExitError
	if err != nil && !(errors.As(err, &ee) && ee.ExitCode() == 1) {
		t.Fatalf("pgrep -u %s: %v", s.User, err)
	}
	var procs []string
	for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if l == "" {
			continue
		}
		pid, comm, _ := strings.Cut(l, " ")
		if (!withSSHD && comm == "sshd") || zombie(pid) {
			continue
		}
		procs = append(procs, l)
	}
	return procs
}

// WaitNoUserProcesses waits, until timeout, for the test user to have no
// process left (sshd's session processes too unless !withSSHD) and
// returns those still running then (nil when none). It waits on the exit
// of each process it lists (pidfd), then lists again.
func (s *SSHD) WaitNoUserProcesses(t testing.TB, withSSHD bool, timeout time.Duration) []string {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		procs := s.UserProcesses(t, withSSHD)
		if len(procs) == 0 || time.Now().After(deadline) {
			return procs
		}
		for _, l := range procs {
			pid, _, _ := strings.Cut(l, " ")
			n, err := strconv.Atoi(pid)
			if err != nil {
				continue
			}
			fd, err := reap.OpenPidfd(n)
			if err != nil {
				continue // gone already
			}
			fd.WaitExit(deadline)
			fd.Close()
		}
	}
}

// zombie reports whether process pid has exited and waits for its
// parent to reap it.
func zombie(pid string) bool {
	b, err := os.ReadFile(filepath.Join("/proc", pid, "stat"))
	if err != nil {
		return true // gone
	}
	i := strings.LastIndexByte(string(b), ')')
	return i < 0 || i+2 >= len(b) || b[i+2] == 'Z'
}

// killUserProcesses kills, by pid, whatever the test user still runs.
func (s *SSHD) killUserProcesses(t testing.TB) {
	for _, l := range s.UserProcesses(t, true) {
		pid, _, _ := strings.Cut(l, " ")
		if n, err := strconv.Atoi(pid); err == nil && n > 1 {
			syscall.Kill(n, syscall.SIGKILL)
		}
	}
}

// createUser creates a user of its own for the test, with a home
// directory made for it; it skips t when useradd fails. The user and its
// home are removed when t ends.
func createUser(t testing.TB) (name, home string, uid, gid int) {
	t.Helper()
	var b [4]byte
	if _, err := rand.Read(b[:]); err != nil {
		t.Fatal(err)
	}
	name = "bt" + hex.EncodeToString(b[:])
	home, err := os.MkdirTemp("", "batty-home")
	if err != nil {
		t.Fatal(err)
	}
	// -p '*': no password, but not a locked account, which sshd refuses
	// without PAM.
	out, err := exec.Command("useradd", "-M", "-d", home, "-s", "/bin/sh", "-p", "*", name).CombinedOutput()
	if err != nil {
		os.RemoveAll(home)
		t.Skipf("the sshd harness could not create a test user with useradd: %v: %s", err, strings.TrimSpace(string(out)))
	}
	u, err := user.Lookup(name)
	if err == nil {
		uid, err = strconv.Atoi(u.Uid)
	}
	if err == nil {
		gid, err = strconv.Atoi(u.Gid)
	}
	if err == nil {
		err = os.Chown(home, uid, gid)
	}
	t.Cleanup(func() {
		// -f: a process of the user's killed by the sshd's cleanup may
		// still be a zombie that its new parent has not reaped yet, and
		// plain userdel refuses a user "currently used by" it.
		if out, err := exec.Command("userdel", "-f", name).CombinedOutput(); err != nil {
			t.Errorf("userdel %s: %v: %s", name, err, out)
		}
		os.RemoveAll(home)
	})
	if err != nil {
		t.Fatalf("test user %s: %v", name, err)
	}
	return name, home, uid, gid
}

// freePort returns a TCP port on 127.0.0.1 that was free a moment ago.
func freePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

func run(t testing.TB, name string, args ...string) {
	t.Helper()
	if out, err := exec.Command(name, args...).CombinedOutput(); err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
}

func readFile(t testing.TB, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func writeFile(t testing.TB, path, data string, perm os.FileMode) {
	t.Helper()
	if err := os.WriteFile(path, []byte(data), perm); err != nil {
		t.Fatal(err)
	}
}

// UserPIDs returns the pids of the test user's live processes, sshd's
// session processes included.
func (s *SSHD) UserPIDs(t testing.TB) []int {
	t.Helper()
	var pids []int
	for _, l := range s.UserProcesses(t, true) {
		pid, _, _ := strings.Cut(l, " ")
		if n, err := strconv.Atoi(pid); err == nil {
			pids = append(pids, n)
		}
	}
	return pids
}
