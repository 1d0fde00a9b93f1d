package codex

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
)

// DefaultBinary is the codex executable looked up on PATH when none is
// configured.
const DefaultBinary = "codex"

// ErrBinaryNotFound is wrapped by ResolveBinary when no usable codex
// executable was found.
var ErrBinaryNotFound = errors.New("codex binary not found")

// Environment variables the npm launcher sets for the native binary.
const (
	// EnvManagedPackageRoot holds the real path of the @openai/codex
	// package.
	EnvManagedPackageRoot = "CODEX_MANAGED_PACKAGE_ROOT"
	// EnvManagedByNPM is set to 1 for an npm install (the default).
	EnvManagedByNPM = "CODEX_MANAGED_BY_NPM"
	// EnvManagedByPNPM is set to 1 for a pnpm install.
	EnvManagedByPNPM = "CODEX_MANAGED_BY_PNPM"
	// EnvManagedByBun is set to 1 for a bun global install.
	EnvManagedByBun = "CODEX_MANAGED_BY_BUN"
	// EnvManagedByVitePlus is set to 1 by the launcher for a Vite+ install;
	// ResolveBinary does not detect those and reports npm.
	EnvManagedByVitePlus = "CODEX_MANAGED_BY_VITE_PLUS"
)

const reinstallHint = "reinstall it with its optional dependencies: npm install -g @openai/codex (without --omit=optional or --no-optional)"

// Binary is the codex executable to run.
type Binary struct {
	// Path is the absolute path of the executable (symlink-free when it
	// is the native binary behind a launcher).
	Path string
	// Env is the extra environment ("KEY=value") the bypassed npm launcher
	// would have set for the native binary; empty when there was no
	// launcher. Apply it with Environ.
	Env []string
	// Launcher is the absolute, symlink-free path of the npm launcher
	// (.../@openai/codex/bin/codex.js) that was bypassed, or empty.
	Launcher string
}

// Environ returns base (e.g. os.Environ()) with b.Env applied: when b
// bypassed a launcher, any CODEX_MANAGED_BY_* and CODEX_MANAGED_PACKAGE_ROOT
// entries of base are dropped, as the launcher does, and b.Env is appended.
// Without a launcher base is returned unchanged.
func (b Binary) Environ(base []string) []string {
	if len(b.Env) == 0 {
		return base
	}
	out := make([]string, 0, len(base)+len(b.Env))
	for _, kv := range base {
		k, _, _ := strings.Cut(kv, "=")
		if k == EnvManagedPackageRoot || strings.HasPrefix(k, "CODEX_MANAGED_BY_") {
			continue
		}
		out = append(out, kv)
	}
	return append(out, b.Env...)
}

// ResolveBinary turns the configured codex binary into the executable to
// run. bin is a command name looked up on PATH when it contains no path
// separator ("" means DefaultBinary), else a file path (relative paths are
// made absolute).
//
// When bin is the npm launcher .../@openai/codex/bin/codex.js, a symlink to
// it, or a package manager's shell shim that execs it, ResolveBinary returns the native binary
// the launcher would start instead, because the Node launcher adds about
// 65 ms and 44 MB per spawn and a SIGKILL to it leaves the real codex
// running as an orphan. The native binary is searched where the launcher
// looks: the platform package (@openai/codex-linux-x64 and so on) in the
// node_modules directories above the package, then <package>/vendor. Env
// then carries CODEX_MANAGED_BY_NPM=1 (PNPM or BUN for those installs) and
// CODEX_MANAGED_PACKAGE_ROOT=<real path of the package>.
//
// Errors wrap ErrBinaryNotFound and name the file and a fix: bin not found,
// not a regular executable file, or a launcher without its native binary.
//
// The default name (DefaultBinary) not on PATH falls back to the pinned CLI
// that scripts/demo.sh and scripts/test.sh install (PinnedLauncher), so a
// team set up after the demo finds it.
func ResolveBinary(bin string) (Binary, error) {
	return resolveBinary(bin, runtime.GOOS, runtime.GOARCH)
}

func resolveBinary(bin, goos, goarch string) (Binary, error) {
	if bin == "" {
		bin = DefaultBinary
	}
	var path string
	if strings.ContainsRune(bin, '/') || strings.ContainsRune(bin, filepath.Separator) {
		abs, err := filepath.Abs(bin)
		if err != nil {
			return Binary{}, fmt.Errorf("%w: %s: %w", ErrBinaryNotFound, bin, err)
		}
		path = abs
	} else {
		found, err := exec.LookPath(bin)
		if err != nil && bin == DefaultBinary {
			// The pinned CLI that scripts/demo.sh and scripts/test.sh
			// install, when none is on PATH.
			if pinned := PinnedLauncher(); pinned != "" && checkExecutable(pinned, goos) == nil {
				found, err = pinned, nil
			}
		}
		if err != nil {
			return Binary{}, fmt.Errorf("%w: %q is not on PATH (%w); install it with `npm install -g @openai/codex@%s` or configure the full path of the codex executable", ErrBinaryNotFound, bin, err, Version)
		}
		abs, err := filepath.Abs(found)
		if err != nil {
			return Binary{}, fmt.Errorf("%w: %s: %w", ErrBinaryNotFound, found, err)
		}
		path = abs
	}
	realPath, err := filepath.EvalSymlinks(path)
	if err != nil {
		return Binary{}, fmt.Errorf("%w: %s: %w; check the configured codex path", ErrBinaryNotFound, path, err)
	}
	if root, ok := launcherPackageRoot(realPath); ok {
		return resolveLauncher(path, realPath, root, goos, goarch)
	}
	if target, ok := shimTarget(realPath); ok {
		if root, ok := launcherPackageRoot(target); ok {
			return resolveLauncher(path, target, root, goos, goarch)
		}
	}
	if err := checkExecutable(path, goos); err != nil {
		return Binary{}, err
	}
	return Binary{Path: path}, nil
}

// launcherPackageRoot reports whether realPath (a symlink-free path) is the npm
// launcher bin/codex.js of the @openai/codex package, and returns the
// package root.
func launcherPackageRoot(realPath string) (string, bool) {
	if filepath.Base(realPath) != "codex.js" {
		return "", false
	}
	binDir := filepath.Dir(realPath)
	if filepath.Base(binDir) != "bin" {
		return "", false
	}
	root := filepath.Dir(binDir)
	if filepath.Base(root) == "codex" && filepath.Base(filepath.Dir(root)) == "@openai" {
		return root, true
	}
	data, err := os.ReadFile(filepath.Join(root, "package.json"))
	if err == nil && strings.Contains(string(data), `"@openai/codex"`) {
		return root, true
	}
	return "", false
}

// shimScriptRE finds the launcher in the shell shim that pnpm (and npm on
// some setups) writes into node_modules/.bin instead of a symlink:
// exec node "$basedir/../@openai/codex/bin/codex.js" "$@".
var shimScriptRE = regexp.MustCompile(`\$basedir/([^"'\s]*@openai/codex/bin/codex\.js)`)

// shimTarget reports whether path is a small shell script that execs the
// @openai/codex launcher, and returns the launcher's symlink-free path.
func shimTarget(path string) (string, bool) {
	f, err := os.Open(path)
	if err != nil {
		return "", false
	}
	defer f.Close()
	head := make([]byte, 4096)
	n, _ := io.ReadFull(f, head)
	head = head[:n]
	if !bytes.HasPrefix(head, []byte("#!")) {
		return "", false
	}
	m := shimScriptRE.FindSubmatch(head)
	if m == nil {
		return "", false
	}
	target, err := filepath.EvalSymlinks(filepath.Join(filepath.Dir(path), filepath.FromSlash(string(m[1]))))
	if err != nil {
		return "", false
	}
	return target, true
}

// platformTarget maps GOOS/GOARCH to the launcher's target triple and
// platform package.
func platformTarget(goos, goarch string) (triple, pkg, exe string, ok bool) {
	exe = "codex"
	switch goos + "/" + goarch {
	case "linux/amd64", "android/amd64":
		return "x86_64-unknown-linux-musl", "@openai/codex-linux-x64", exe, true
	case "linux/arm64", "android/arm64":
		return "aarch64-unknown-linux-musl", "@openai/codex-linux-arm64", exe, true
	case "darwin/amd64":
		return "x86_64-apple-darwin", "@openai/codex-darwin-x64", exe, true
	case "darwin/arm64":
		return "aarch64-apple-darwin", "@openai/codex-darwin-arm64", exe, true
	case "windows/amd64":
		return "x86_64-pc-windows-msvc", "@openai/codex-win32-x64", "codex.exe", true
	case "windows/arm64":
		return "aarch64-pc-windows-msvc", "@openai/codex-win32-arm64", "codex.exe", true
	}
	return "", "", "", false
}

// nativeCandidates lists, in the launcher's order, where the native binary
// of the package at root may be: the platform package as Node would resolve
// it from the launcher (node_modules of root and of every ancestor that is
// not itself a node_modules directory), then root/vendor.
func nativeCandidates(root, triple, pkg, exe string) []string {
	tail := filepath.Join("vendor", triple, "bin", exe)
	pkgDir := filepath.FromSlash(pkg)
	var out []string
	for dir := filepath.Join(root, "bin"); ; {
		if filepath.Base(dir) != "node_modules" {
			out = append(out, filepath.Join(dir, "node_modules", pkgDir, tail))
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			break
		}
		dir = parent
	}
	return append(out, filepath.Join(root, tail))
}

func resolveLauncher(path, launcher, root, goos, goarch string) (Binary, error) {
	realRoot, err := filepath.EvalSymlinks(root)
	if err != nil {
		realRoot = root
	}
	triple, pkg, exe, ok := platformTarget(goos, goarch)
	if !ok {
		return Binary{}, fmt.Errorf("%w: %s is the npm launcher of @openai/codex, which has no native binary for %s/%s", ErrBinaryNotFound, path, goos, goarch)
	}
	candidates := nativeCandidates(realRoot, triple, pkg, exe)
	for _, c := range candidates {
		fi, err := os.Stat(c)
		if err != nil || !fi.Mode().IsRegular() {
			continue
		}
		if err := checkExecutable(c, goos); err != nil {
			return Binary{}, err
		}
		if r, err := filepath.EvalSymlinks(c); err == nil {
			c = r
		}
		return Binary{
			Path:     c,
			Env:      []string{managerEnv(realRoot, path) + "=1", EnvManagedPackageRoot + "=" + realRoot},
			Launcher: launcher,
		}, nil
	}
	return Binary{}, fmt.Errorf("%w: %s is the npm launcher of @openai/codex but its native binary (%s) is missing; looked in %s; %s",
		ErrBinaryNotFound, path, pkg, strings.Join(candidates, ", "), reinstallHint)
}

// managerEnv names the CODEX_MANAGED_BY_* variable the launcher would set:
// pnpm when a node_modules/.modules.yaml above the package or the launcher
// link owns the package, bun for a bun global install, npm otherwise.
func managerEnv(root, launcherLink string) string {
	slashed := filepath.ToSlash(root)
	if strings.Contains(slashed, "/.bun/install/global") {
		return EnvManagedByBun
	}
	for _, start := range []string{root, filepath.Dir(launcherLink)} {
		for dir := start; ; {
			nm := filepath.Join(dir, "node_modules")
			if _, err := os.Stat(filepath.Join(nm, ".modules.yaml")); err == nil {
				if owned, err := filepath.EvalSymlinks(filepath.Join(nm, "@openai", "codex")); err == nil && owned == root {
					return EnvManagedByPNPM
				}
			}
			parent := filepath.Dir(dir)
			if parent == dir {
				break
			}
			dir = parent
		}
	}
	return EnvManagedByNPM
}

// checkExecutable verifies that path is a regular file the current user may
// execute (on Unix, any execute bit).
func checkExecutable(path, goos string) error {
	fi, err := os.Stat(path)
	if err != nil {
		return fmt.Errorf("%w: %s: %w; check the configured codex path", ErrBinaryNotFound, path, err)
	}
	if !fi.Mode().IsRegular() {
		return fmt.Errorf("%w: %s is not a regular file (%s); configure the path of the codex executable", ErrBinaryNotFound, path, fi.Mode().Type())
	}
	if goos != "windows" && fi.Mode().Perm()&0o111 == 0 {
		return fmt.Errorf("%w: %s is not executable (mode %s); run chmod +x on it", ErrBinaryNotFound, path, fi.Mode().Perm())
	}
	return nil
}
