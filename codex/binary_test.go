package codex

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"testing"

	"github.com/battyhq/batty/atomicfile/linktest"
)

func writeFile(t *testing.T, path, content string, mode os.FileMode) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), mode); err != nil {
		t.Fatal(err)
	}
}

func realpath(t *testing.T, p string) string {
	t.Helper()
	r, err := filepath.EvalSymlinks(p)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

const launcherJS = "#!/usr/bin/env node\n// Unified entry point for the Codex CLI.\n"

// npmPackage writes an @openai/codex package under nodeModules and returns
// its root.
func npmPackage(t *testing.T, nodeModules string) string {
	t.Helper()
	root := filepath.Join(nodeModules, "@openai", "codex")
	writeFile(t, filepath.Join(root, "package.json"), `{"name": "@openai/codex", "version": "0.169.0", "bin": {"codex": "bin/codex.js"}}`, 0o644)
	writeFile(t, filepath.Join(root, "bin", "codex.js"), launcherJS, 0o755)
	return root
}

func nativeAt(t *testing.T, dir, triple string) string {
	t.Helper()
	p := filepath.Join(dir, "vendor", triple, "bin", "codex")
	writeFile(t, p, "\x7fELF", 0o755)
	return p
}

func skipOnWindows(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("symlink and execute-bit layout tests are Unix-only")
	}
}

func TestResolveBinaryPlain(t *testing.T) {
	skipOnWindows(t)
	dir := t.TempDir()
	exe := filepath.Join(dir, "codex")
	writeFile(t, exe, "#!/bin/sh\n", 0o755)

	b, err := ResolveBinary(exe)
	if err != nil || b.Path != exe || b.Env != nil || b.Launcher != "" {
		t.Fatalf("path: %+v, %v", b, err)
	}
	t.Setenv("PATH", dir)
	for _, name := range []string{"codex", ""} {
		b, err = ResolveBinary(name)
		if err != nil || b.Path != exe || b.Launcher != "" {
			t.Errorf("%q on PATH: %+v, %v", name, b, err)
		}
	}
	// A relative path is made absolute.
	t.Chdir(dir)
	if b, err = ResolveBinary("./codex"); err != nil || b.Path != exe {
		t.Errorf("relative: %+v, %v", b, err)
	}
	if got := b.Environ([]string{"A=1"}); !reflect.DeepEqual(got, []string{"A=1"}) {
		t.Errorf("Environ without launcher = %q", got)
	}
}

func TestResolveBinaryErrors(t *testing.T) {
	skipOnWindows(t)
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "plain"), "data", 0o644)
	t.Setenv("PATH", dir)
	cases := []struct {
		bin  string
		want []string
	}{
		{"codex-nope", []string{`"codex-nope"`, "PATH", "npm install -g @openai/codex"}},
		{filepath.Join(dir, "missing"), []string{filepath.Join(dir, "missing"), "check the configured codex path"}},
		{filepath.Join(dir, "plain"), []string{filepath.Join(dir, "plain"), "not executable", "chmod +x"}},
		{dir, []string{dir, "not a regular file"}},
	}
	for _, c := range cases {
		_, err := ResolveBinary(c.bin)
		if !errors.Is(err, ErrBinaryNotFound) {
			t.Errorf("%s: err %v, want ErrBinaryNotFound", c.bin, err)
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: %q does not mention %q", c.bin, err, w)
			}
		}
	}
}

func TestResolveBinaryNPMLayouts(t *testing.T) {
	skipOnWindows(t)
	triple, pkg, _, ok := platformTarget(runtime.GOOS, runtime.GOARCH)
	if !ok {
		t.Skipf("no codex build for %s/%s", runtime.GOOS, runtime.GOARCH)
	}
	layouts := []struct {
		name string
		// build returns the configured bin and the native binary it should
		// resolve to.
		build func(t *testing.T, dir string) (bin, native string)
	}{
		{"local install, .bin symlink", func(t *testing.T, dir string) (string, string) {
			nm := filepath.Join(dir, "node_modules")
			npmPackage(t, nm)
			native := nativeAt(t, filepath.Join(nm, pkg), triple)
			linktest.Symlink(t, "../@openai/codex/bin/codex.js", filepath.Join(nm, ".bin", "codex"))
			return filepath.Join(nm, ".bin", "codex"), native
		}},
		{"global install via PATH", func(t *testing.T, dir string) (string, string) {
			nm := filepath.Join(dir, "lib", "node_modules")
			npmPackage(t, nm)
			native := nativeAt(t, filepath.Join(nm, pkg), triple)
			linktest.Symlink(t, "../lib/node_modules/@openai/codex/bin/codex.js", filepath.Join(dir, "bin", "codex"))
			t.Setenv("PATH", filepath.Join(dir, "bin"))
			return "codex", native
		}},
		{"launcher itself", func(t *testing.T, dir string) (string, string) {
			nm := filepath.Join(dir, "node_modules")
			root := npmPackage(t, nm)
			return filepath.Join(root, "bin", "codex.js"), nativeAt(t, filepath.Join(nm, pkg), triple)
		}},
		{"nested platform package", func(t *testing.T, dir string) (string, string) {
			root := npmPackage(t, filepath.Join(dir, "node_modules"))
			native := nativeAt(t, filepath.Join(root, "node_modules", pkg), triple)
			return filepath.Join(root, "bin", "codex.js"), native
		}},
		{"vendor directory", func(t *testing.T, dir string) (string, string) {
			root := npmPackage(t, filepath.Join(dir, "node_modules"))
			return filepath.Join(root, "bin", "codex.js"), nativeAt(t, root, triple)
		}},
		{"node_modules of an ancestor", func(t *testing.T, dir string) (string, string) {
			root := npmPackage(t, filepath.Join(dir, "node_modules", "some-tool", "node_modules"))
			native := nativeAt(t, filepath.Join(dir, "node_modules", pkg), triple)
			return filepath.Join(root, "bin", "codex.js"), native
		}},
		{"platform package wins over vendor", func(t *testing.T, dir string) (string, string) {
			nm := filepath.Join(dir, "node_modules")
			root := npmPackage(t, nm)
			nativeAt(t, root, triple)
			return filepath.Join(root, "bin", "codex.js"), nativeAt(t, filepath.Join(nm, pkg), triple)
		}},
	}
	for _, l := range layouts {
		t.Run(l.name, func(t *testing.T) {
			dir := t.TempDir()
			bin, native := l.build(t, dir)
			b, err := ResolveBinary(bin)
			if err != nil {
				t.Fatal(err)
			}
			if b.Path != realpath(t, native) && b.Path != native {
				t.Errorf("Path = %s, want %s", b.Path, native)
			}
			root := realpath(t, filepath.Join(filepath.Dir(b.Launcher), ".."))
			if b.Launcher == "" || filepath.Base(b.Launcher) != "codex.js" {
				t.Errorf("Launcher = %q", b.Launcher)
			}
			want := []string{EnvManagedByNPM + "=1", EnvManagedPackageRoot + "=" + root}
			if !reflect.DeepEqual(b.Env, want) {
				t.Errorf("Env = %q, want %q", b.Env, want)
			}
		})
	}
}

func TestResolveBinaryPNPM(t *testing.T) {
	skipOnWindows(t)
	triple, pkg, _, ok := platformTarget(runtime.GOOS, runtime.GOARCH)
	if !ok {
		t.Skipf("no codex build for %s/%s", runtime.GOOS, runtime.GOARCH)
	}
	dir := t.TempDir()
	nm := filepath.Join(dir, "node_modules")
	store := filepath.Join(nm, ".pnpm", "@openai+codex@0.169.0", "node_modules")
	root := npmPackage(t, store)
	platform := filepath.Join(nm, ".pnpm", "@openai+codex@0.169.0-platform", "node_modules", pkg)
	native := nativeAt(t, platform, triple)
	linktest.Symlink(t, platform, filepath.Join(store, pkg))
	linktest.Symlink(t, root, filepath.Join(nm, "@openai", "codex"))
	writeFile(t, filepath.Join(nm, ".modules.yaml"), "layoutVersion: 5\n", 0o644)
	// pnpm writes a shell shim, not a symlink.
	writeFile(t, filepath.Join(nm, ".bin", "codex"), `#!/bin/sh
basedir=$(dirname "$(echo "$0" | sed -e 's,\\,/,g')")
if [ -x "$basedir/node" ]; then
  exec "$basedir/node"  "$basedir/../@openai/codex/bin/codex.js" "$@"
else
  exec node  "$basedir/../@openai/codex/bin/codex.js" "$@"
fi
`, 0o755)
	b, err := ResolveBinary(filepath.Join(nm, ".bin", "codex"))
	if err != nil {
		t.Fatal(err)
	}
	if b.Path != realpath(t, native) {
		t.Errorf("Path = %s, want %s", b.Path, realpath(t, native))
	}
	want := []string{EnvManagedByPNPM + "=1", EnvManagedPackageRoot + "=" + realpath(t, root)}
	if !reflect.DeepEqual(b.Env, want) {
		t.Errorf("Env = %q, want %q", b.Env, want)
	}
}

func TestResolveBinaryLauncherWithoutNative(t *testing.T) {
	skipOnWindows(t)
	dir := t.TempDir()
	root := npmPackage(t, filepath.Join(dir, "node_modules"))
	// A native binary for another platform does not count.
	nativeAt(t, filepath.Join(dir, "node_modules", "@openai", "codex-other"), "sparc-unknown-none")
	_, err := ResolveBinary(filepath.Join(root, "bin", "codex.js"))
	if !errors.Is(err, ErrBinaryNotFound) {
		t.Fatalf("err %v, want ErrBinaryNotFound", err)
	}
	for _, w := range []string{"codex.js", "reinstall", "optional", "npm install -g @openai/codex"} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("%q does not mention %q", err, w)
		}
	}
}

func TestResolveBinaryOtherPlatforms(t *testing.T) {
	skipOnWindows(t)
	cases := []struct{ goos, goarch, triple, pkg string }{
		{"linux", "amd64", "x86_64-unknown-linux-musl", "@openai/codex-linux-x64"},
		{"linux", "arm64", "aarch64-unknown-linux-musl", "@openai/codex-linux-arm64"},
		{"darwin", "amd64", "x86_64-apple-darwin", "@openai/codex-darwin-x64"},
		{"darwin", "arm64", "aarch64-apple-darwin", "@openai/codex-darwin-arm64"},
	}
	for _, c := range cases {
		dir := t.TempDir()
		nm := filepath.Join(dir, "node_modules")
		root := npmPackage(t, nm)
		native := nativeAt(t, filepath.Join(nm, c.pkg), c.triple)
		b, err := resolveBinary(filepath.Join(root, "bin", "codex.js"), c.goos, c.goarch)
		if err != nil || b.Path != realpath(t, native) {
			t.Errorf("%s/%s: %+v, %v", c.goos, c.goarch, b, err)
		}
	}
	root := npmPackage(t, filepath.Join(t.TempDir(), "node_modules"))
	if _, err := resolveBinary(filepath.Join(root, "bin", "codex.js"), "plan9", "386"); !errors.Is(err, ErrBinaryNotFound) || !strings.Contains(err.Error(), "plan9/386") {
		t.Errorf("unsupported platform: %v", err)
	}
}

func TestBinaryEnviron(t *testing.T) {
	b := Binary{Path: "/x/codex", Env: []string{"CODEX_MANAGED_BY_NPM=1", "CODEX_MANAGED_PACKAGE_ROOT=/x"}, Launcher: "/x/bin/codex.js"}
	base := []string{"PATH=/bin", "CODEX_MANAGED_BY_PNPM=1", "CODEX_MANAGED_PACKAGE_ROOT=/old", "CODEX_HOME=/h"}
	want := []string{"PATH=/bin", "CODEX_HOME=/h", "CODEX_MANAGED_BY_NPM=1", "CODEX_MANAGED_PACKAGE_ROOT=/x"}
	if got := b.Environ(base); !reflect.DeepEqual(got, want) {
		t.Errorf("Environ = %q, want %q", got, want)
	}
	if base[1] != "CODEX_MANAGED_BY_PNPM=1" {
		t.Error("Environ modified its argument")
	}
}

// The npm install batty uses, when present on this machine.
func TestResolveBinaryRealInstall(t *testing.T) {
	const launcher = "/root/.cache/batty-codex/0.169.0/node_modules/.bin/codex"
	if _, err := os.Stat(launcher); err != nil {
		t.Skipf("no codex install at %s", launcher)
	}
	b, err := ResolveBinary(launcher)
	if err != nil {
		t.Fatal(err)
	}
	root := "/root/.cache/batty-codex/0.169.0/node_modules/@openai/codex"
	triple, pkg, _, _ := platformTarget(runtime.GOOS, runtime.GOARCH)
	if want := filepath.Join("/root/.cache/batty-codex/0.169.0/node_modules", pkg, "vendor", triple, "bin", "codex"); b.Path != want {
		t.Errorf("Path = %s, want %s", b.Path, want)
	}
	if b.Launcher != filepath.Join(root, "bin", "codex.js") {
		t.Errorf("Launcher = %s", b.Launcher)
	}
	if want := []string{"CODEX_MANAGED_BY_NPM=1", "CODEX_MANAGED_PACKAGE_ROOT=" + root}; !reflect.DeepEqual(b.Env, want) {
		t.Errorf("Env = %q, want %q", b.Env, want)
	}
}

// The default name not on PATH is found in the pinned install (the one the
// demo and test scripts make); any other name, or no pinned install, is
// not found.
func TestResolveBinaryFallsBackToThePinnedInstall(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	cache := t.TempDir()
	t.Setenv(EnvCache, cache)
	if _, err := ResolveBinary(DefaultBinary); !errors.Is(err, ErrBinaryNotFound) {
		t.Fatalf("no pinned install: %v", err)
	}
	dir := filepath.Join(cache, Version, "node_modules", ".bin")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	pinned := filepath.Join(dir, "codex")
	if err := os.WriteFile(pinned, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	b, err := ResolveBinary(DefaultBinary)
	if err != nil || b.Path != pinned {
		t.Fatalf("ResolveBinary(codex) = %+v, %v; want %s", b, err, pinned)
	}
	if _, err := ResolveBinary("codex-elsewhere"); !errors.Is(err, ErrBinaryNotFound) {
		t.Fatalf("another name found: %v", err)
	}
}
