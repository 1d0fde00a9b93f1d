package hosts

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/battyhq/batty/hosts/hoststest"
)

func TestMain(m *testing.M) {
	code := m.Run()
	hoststest.RemoveBuilds()
	os.Exit(code)
}

// devBinary is the batty the tests build, described by what it prints.
func devBinary(t *testing.T) Binary {
	t.Helper()
	return Binary{Path: hoststest.Batty(t), Version: hoststest.BattyVersion(t), Key: "dev-test",
		GOOS: runtime.GOOS, GOARCH: runtime.GOARCH}
}

func TestGoPlatform(t *testing.T) {
	tests := []struct {
		os, machine, goos, goarch string
		ok                        bool
	}{
		{"Linux", "x86_64", "linux", "amd64", true},
		{"Linux", "aarch64", "linux", "arm64", true},
		{"Darwin", "arm64", "darwin", "arm64", true},
		{"Darwin", "x86_64", "darwin", "amd64", true},
		{"Linux", "armv7l", "linux", "arm", true},
		{"FreeBSD", "amd64", "freebsd", "amd64", true},
		{"Linux", "mips", "linux", "", false},
		{"CYGWIN_NT-10.0", "x86_64", "", "", false},
	}
	for _, tt := range tests {
		goos, goarch, ok := goPlatform(tt.os, tt.machine)
		if goos != tt.goos || goarch != tt.goarch || ok != tt.ok {
			t.Errorf("goPlatform(%q, %q) = %q, %q, %v; want %q, %q, %v", tt.os, tt.machine, goos, goarch, ok, tt.goos, tt.goarch, tt.ok)
		}
	}
}

func TestDecideInstall(t *testing.T) {
	b := Binary{Version: "batty v1.2.0 (protocol 4)", Key: "v1.2.0", GOOS: "linux", GOARCH: "amd64"}
	tests := []struct {
		name  string
		probe Probe
		want  installAction
		err   string
	}{
		{"in place", Probe{OS: "Linux", Arch: "x86_64", Version: b.Version}, installNothing, ""},
		{"in place on another system", Probe{OS: "Linux", Arch: "aarch64", Version: b.Version}, installNothing, ""},
		{"missing", Probe{OS: "Linux", Arch: "x86_64"}, installUpload, ""},
		{"another version there", Probe{OS: "Linux", Arch: "x86_64", Version: "batty v1.1.0 (protocol 4)"}, installUpload, ""},
		{"other arch", Probe{OS: "Linux", Arch: "aarch64"}, 0,
			"host b1 runs linux/arm64, this batty is built for linux/amd64: build batty for linux/arm64 (GOOS=linux GOARCH=arm64 go build ./cmd/batty) and copy it to b1:~/.cache/batty/v1.2.0/batty"},
		{"other os", Probe{OS: "Darwin", Arch: "arm64"}, 0,
			"host b1 runs darwin/arm64, this batty is built for linux/amd64: build batty for darwin/arm64 (GOOS=darwin GOARCH=arm64 go build ./cmd/batty) and copy it to b1:~/.cache/batty/v1.2.0/batty"},
		{"unknown system", Probe{OS: "Plan9", Arch: "x86_64"}, 0,
			"host b1 runs Plan9 x86_64, which this batty (linux/amd64) cannot run on: build batty for that system and copy it to b1:~/.cache/batty/v1.2.0/batty"},
	}
	for _, tt := range tests {
		got, err := decideInstall("b1", tt.probe, b)
		switch {
		case tt.err != "" && (err == nil || err.Error() != tt.err):
			t.Errorf("%s: error %v\nwant %s", tt.name, err, tt.err)
		case tt.err == "" && (err != nil || got != tt.want):
			t.Errorf("%s: %v, %v; want %v", tt.name, got, err, tt.want)
		}
	}
}

func TestParseProbe(t *testing.T) {
	p, err := parseProbe([]byte("Welcome to b1!\nbatty-probe os Linux\r\nbatty-probe arch x86_64\nbatty-probe version batty v1 (protocol 4)\n"))
	if err != nil || p != (Probe{OS: "Linux", Arch: "x86_64", Version: "batty v1 (protocol 4)"}) {
		t.Fatalf("parseProbe = %+v, %v", p, err)
	}
	if _, err := parseProbe([]byte("sh: uname: not found\n")); err == nil {
		t.Fatal("an answer without a system parsed")
	}
}

func TestSelfKey(t *testing.T) {
	b, err := Self("v1.2.3", 4)
	if err != nil {
		t.Fatal(err)
	}
	if b.Key != "v1.2.3" || b.Version != "batty v1.2.3 (protocol 4)" || b.GOOS != runtime.GOOS || b.RemoteBatty() != "~/.cache/batty/v1.2.3/batty" {
		t.Fatalf("Self(v1.2.3) = %+v", b)
	}
	for _, v := range []string{"dev", "v1.2.3+dirty", "../x", "v1/../../x"} {
		b, err := Self(v, 4)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(b.Key, "dev-") || len(b.Key) != 20 || strings.ContainsAny(b.Key, "/.") {
			t.Errorf("Self(%q).Key = %q, want dev-<hash>", v, b.Key)
		}
	}
}

// TestEnsureBattyCommandHost installs batty through a command host that
// runs here with a scratch HOME: missing, then in place (no upload), then
// replaced when another binary stands there.
func TestEnsureBattyCommandHost(t *testing.T) {
	home := t.TempDir()
	b := devBinary(t)
	tr := &Transport{}
	h := localHost(home)
	path, err := EnsureBatty(context.Background(), tr, h, b)
	if err != nil {
		t.Fatal(err)
	}
	installed := filepath.Join(home, ".cache", "batty", "dev-test", "batty")
	if path != "~/.cache/batty/dev-test/batty" {
		t.Fatalf("path = %q", path)
	}
	fi, err := os.Stat(installed)
	if err != nil || fi.Mode().Perm() != 0o755 {
		t.Fatalf("installed binary: %v, %v", fi, err)
	}
	if entries, _ := os.ReadDir(filepath.Dir(installed)); len(entries) != 1 {
		t.Fatalf("install left files behind: %v", entries)
	}
	if fi, _ := os.Stat(filepath.Join(home, ".cache")); fi.Mode().Perm() != 0o700 {
		t.Fatalf("created ~/.cache with mode %v, want 0700", fi.Mode().Perm())
	}

	// In place: nothing is uploaded (a binary that could not be read would
	// fail the upload).
	again := b
	again.Path = filepath.Join(t.TempDir(), "absent")
	if _, err := EnsureBatty(context.Background(), tr, h, again); err != nil {
		t.Fatalf("second EnsureBatty uploaded: %v", err)
	}
	if fi2, _ := os.Stat(installed); !os.SameFile(fi, fi2) {
		t.Fatal("second EnsureBatty replaced the binary")
	}

	// Something else there: replaced.
	if err := os.WriteFile(installed, []byte("#!/bin/sh\necho batty old\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := EnsureBatty(context.Background(), tr, h, b); err != nil {
		t.Fatal(err)
	}
	if fi2, _ := os.Stat(installed); fi2.Size() != fi.Size() {
		t.Fatalf("stale binary not replaced: %d bytes", fi2.Size())
	}
}

// TestEnsureBattyRefusesBroken checks that an upload whose binary does
// not print the expected version leaves the old file in place.
func TestEnsureBattyRefusesBroken(t *testing.T) {
	home := t.TempDir()
	b := devBinary(t)
	b.Version = "batty other (protocol 4)"
	_, err := EnsureBatty(context.Background(), &Transport{}, localHost(home), b)
	if err == nil || !strings.Contains(err.Error(), "does not run here") {
		t.Fatalf("EnsureBatty = %v, want a refused upload", err)
	}
	if _, err := os.Stat(filepath.Join(home, ".cache", "batty", "dev-test", "batty")); !os.IsNotExist(err) {
		t.Fatalf("a refused binary was moved into place: %v", err)
	}
	if entries, _ := os.ReadDir(filepath.Join(home, ".cache", "batty", "dev-test")); len(entries) != 0 {
		t.Fatalf("refused upload left files behind: %v", entries)
	}
}

func TestEnsureBattyOtherSystem(t *testing.T) {
	b := devBinary(t)
	b.GOARCH = "mips64"
	_, err := EnsureBatty(context.Background(), &Transport{}, localHost(t.TempDir()), b)
	want := fmt.Sprintf("build batty for %s/%s (GOOS=%s GOARCH=%s go build ./cmd/batty) and copy it to here:~/.cache/batty/dev-test/batty", runtime.GOOS, runtime.GOARCH, runtime.GOOS, runtime.GOARCH)
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("EnsureBatty = %v\nwant it to say %s", err, want)
	}
}
