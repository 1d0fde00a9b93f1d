package hosts

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"regexp"
	"runtime"
	"strings"

	"github.com/battyhq/batty/shellword"
	"github.com/battyhq/batty/team"
)

// CacheDir is where batty is installed on a host, relative to the home
// directory there: the binary of version V is CacheDir/V/batty.
const CacheDir = ".cache/batty"

// probeMark starts the lines of the probe's answer, told apart from what a
// login shell may print around them.
const probeMark = "batty-probe "

// Binary is the batty to install on hosts: this one, as Self finds it.
type Binary struct {
	// Path is the local executable, uploaded as it is.
	Path string
	// Version is the line `batty version` prints, without its newline
	// ("batty v1.2.3 (protocol 4)"): the installed binary must print the
	// same.
	Version string
	// Key names the binary's directory on a host (CacheDir/Key/batty): the
	// version, or for a build without a release version ("dev", a dirty
	// tree) "dev-" and the binary's content hash, so two builds never
	// share it.
	Key string
	// GOOS and GOARCH are what the binary runs on.
	GOOS, GOARCH string
}

// keyRE matches a version that can name a directory as it is.
var keyRE = regexp.MustCompile(`^v?[0-9][A-Za-z0-9._+-]{0,100}$`)

// Self describes this running batty for EnsureBatty: its program,
// runtime.GOOS and GOARCH, version (what `batty version` prints after
// "batty ", e.g. "v1.2.3" or "dev") and protocol, the protocol version it
// prints. It reads the executable to hash it when version is not a
// release version.
//
// The program is read through RunningProgram (/proc/self/exe), the file
// this process was started from, never by its path again: batty built
// inside a project may be replaced there by an agent after the daemon
// started, and what is hashed and uploaded to a host must be what runs.
func Self(version string, protocol int) (Binary, error) {
	exe, err := RunningProgram()
	if err != nil {
		return Binary{}, fmt.Errorf("finding this batty's executable: %w", err)
	}
	b := Binary{Path: exe, Version: fmt.Sprintf("batty %s (protocol %d)", version, protocol), Key: version, GOOS: runtime.GOOS, GOARCH: runtime.GOARCH}
	if !keyRE.MatchString(version) || strings.Contains(version, "dirty") {
		sum, err := fileHash(exe)
		if err != nil {
			return Binary{}, err
		}
		b.Key = "dev-" + sum[:16]
	}
	return b, nil
}

// RunningProgram is the path by which this process reaches the very file
// it was started from: /proc/self/exe, which the kernel resolves to the
// running program's inode even when the path it was started by now names
// another file (replaced by a rename; a running program cannot be written
// in place). Where /proc is not mounted it is os.Executable(), the path.
func RunningProgram() (string, error) {
	const self = "/proc/self/exe"
	if _, err := os.Stat(self); err == nil {
		return self, nil
	}
	return os.Executable()
}

// fileHash is the hex SHA-256 of the file at path.
func fileHash(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", fmt.Errorf("reading this batty's executable: %w", err)
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", fmt.Errorf("reading this batty's executable %s: %w", path, err)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// RemoteBatty is the path of b on a host, from the home directory there:
// "~/.cache/batty/<key>/batty" (spell it for the shell with RemotePath).
func (b Binary) RemoteBatty() string { return "~/" + CacheDir + "/" + b.Key + "/batty" }

// Probe is what the probe of a host found.
type Probe struct {
	// OS and Arch are `uname -s` and `uname -m` on the host.
	OS, Arch string
	// Version is the first line the installed binary's `version` printed,
	// "" when there is no executable binary at RemoteBatty.
	Version string
}

// probeScript prints, each on a line of its own after probeMark, the
// host's kernel name, machine, and the version the binary at path prints
// when it is there.
func probeScript(path string) string {
	return "printf '" + probeMark + "os %s\\n' \"$(uname -s)\"; printf '" + probeMark + "arch %s\\n' \"$(uname -m)\"; " +
		"b=" + RemotePath(path) + "; if [ -x \"$b\" ]; then printf '" + probeMark + "version %s\\n' \"$(\"$b\" version 2>/dev/null | head -n 1)\"; fi"
}

// parseProbe reads the probe's answer out of out, ignoring lines without
// probeMark (a login shell's greeting). It is a pure function; it errs
// when out lacks the os or arch line.
func parseProbe(out []byte) (Probe, error) {
	var p Probe
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		rest, ok := strings.CutPrefix(strings.TrimRight(sc.Text(), "\r"), probeMark)
		if !ok {
			continue
		}
		key, val, _ := strings.Cut(rest, " ")
		switch key {
		case "os":
			p.OS = strings.TrimSpace(val)
		case "arch":
			p.Arch = strings.TrimSpace(val)
		case "version":
			p.Version = strings.TrimSpace(val)
		}
	}
	if p.OS == "" || p.Arch == "" {
		return p, fmt.Errorf("the probe's answer names no system (uname -s -m): %q", clip(out))
	}
	return p, nil
}

// clip bounds a remote output quoted in an error.
func clip(b []byte) string {
	if len(b) > 300 {
		return string(b[:300]) + "…"
	}
	return string(b)
}

// goPlatform maps `uname -s` and `uname -m` to Go's GOOS and GOARCH;
// ok is false for a system Go has no name for here. Pure.
func goPlatform(osName, machine string) (goos, goarch string, ok bool) {
	switch strings.ToLower(osName) {
	case "linux":
		goos = "linux"
	case "darwin":
		goos = "darwin"
	case "freebsd":
		goos = "freebsd"
	case "openbsd":
		goos = "openbsd"
	case "netbsd":
		goos = "netbsd"
	default:
		return "", "", false
	}
	switch machine {
	case "x86_64", "amd64":
		goarch = "amd64"
	case "aarch64", "arm64", "aarch64_be":
		goarch = "arm64"
	case "i386", "i486", "i586", "i686", "i86pc":
		goarch = "386"
	case "armv6l", "armv7l", "armv7", "arm":
		goarch = "arm"
	case "riscv64":
		goarch = "riscv64"
	case "ppc64le":
		goarch = "ppc64le"
	case "s390x":
		goarch = "s390x"
	default:
		return goos, "", false
	}
	return goos, goarch, true
}

// installAction is what EnsureBatty does after the probe.
type installAction int

const (
	installNothing installAction = iota // the right batty is there
	installUpload                       // upload this binary
)

// decideInstall decides, from what the probe of host found, whether b is
// in place, is to be uploaded, or cannot be (the error says what to do
// instead). It is a pure function.
func decideInstall(host string, p Probe, b Binary) (installAction, error) {
	if p.Version == b.Version {
		return installNothing, nil
	}
	goos, goarch, ok := goPlatform(p.OS, p.Arch)
	where := host + ":" + b.RemoteBatty()
	switch {
	case !ok:
		return 0, fmt.Errorf("host %s runs %s %s, which this batty (%s/%s) cannot run on: build batty for that system and copy it to %s", host, p.OS, p.Arch, b.GOOS, b.GOARCH, where)
	case goos != b.GOOS || goarch != b.GOARCH:
		return 0, fmt.Errorf("host %s runs %s/%s, this batty is built for %s/%s: build batty for %s/%s (GOOS=%s GOARCH=%s go build ./cmd/batty) and copy it to %s", host, goos, goarch, b.GOOS, b.GOARCH, goos, goarch, goos, goarch, where)
	}
	return installUpload, nil
}

// uploadScript writes its stdin, size bytes of a batty binary, into
// place at path (writeScript), checking before the move that it runs
// there and prints version.
func uploadScript(path string, size int64, version string) string {
	return writeScript(strings.TrimSuffix(path, "/batty"), "batty", size,
		`chmod 0755 "$t"`,
		`v=$("$t" version 2>&1 | head -n 1) || true`,
		`if [ "$v" != `+shellword.Quote(version)+` ]; then echo "batty: the uploaded binary does not run here: $v" >&2; exit 1; fi`)
}

// EnsureBatty makes sure b (see Self) is installed on h at
// b.RemoteBatty() and returns that path. It probes the host (`uname -s
// -m`, and the installed binary's `version`) over t: when the binary there
// prints b.Version it does nothing more; otherwise, when the host's system
// is b's, it uploads b.Path over the same transport, atomically (see
// uploadScript), and probes again to verify. When the system differs the
// error says what to build and where to copy it. It blocks for the probes
// and the upload; ctx cuts them short. Idempotent.
func EnsureBatty(ctx context.Context, t *Transport, h team.Host, b Binary) (string, error) {
	path := b.RemoteBatty()
	p, err := probe(ctx, t, h, path)
	if err != nil {
		return "", err
	}
	act, err := decideInstall(h.Name, p, b)
	if err != nil || act == installNothing {
		return path, err
	}
	f, err := os.Open(b.Path)
	if err != nil {
		return "", fmt.Errorf("installing batty on %s: %w", h.Name, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return "", fmt.Errorf("installing batty on %s: %w", h.Name, err)
	}
	if _, err := t.Run(ctx, h, uploadScript(path, fi.Size(), b.Version), f); err != nil {
		return "", fmt.Errorf("installing batty at %s:%s: %w", h.Name, path, err)
	}
	if p, err = probe(ctx, t, h, path); err != nil {
		return "", err
	}
	if p.Version != b.Version {
		return "", fmt.Errorf("installed batty at %s:%s, but it prints %q, not %q", h.Name, path, p.Version, b.Version)
	}
	return path, nil
}

// probe runs probeScript on h and parses its answer.
func probe(ctx context.Context, t *Transport, h team.Host, path string) (Probe, error) {
	out, err := t.Run(ctx, h, probeScript(path), nil)
	if err != nil {
		return Probe{}, fmt.Errorf("probing host %s: %w", h.Name, err)
	}
	p, err := parseProbe(out)
	if err != nil {
		return Probe{}, fmt.Errorf("probing host %s: %w", h.Name, err)
	}
	return p, nil
}
