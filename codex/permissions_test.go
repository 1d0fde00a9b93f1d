package codex

import (
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestPermissionsFilesystem(t *testing.T) {
	for _, tc := range []struct {
		name string
		p    Permissions
		want map[string]string
	}{
		{"write inside a denial stays", Permissions{Write: []string{"/s/outboxes/a"}, Deny: []string{"/s"}},
			map[string]string{"/s/outboxes/a": AccessWrite, "/s": AccessNone}},
		{"a denial inside a denial is left out", Permissions{Deny: []string{"/s", "/s/appserver", "/run/user/1/gnupg", "/run/user/1"}},
			map[string]string{"/s": AccessNone, "/run/user/1": AccessNone}},
		{"a denial inside a write inside a denial stays", Permissions{Write: []string{"/s/w"}, Deny: []string{"/s", "/s/w/x"}},
			map[string]string{"/s": AccessNone, "/s/w": AccessWrite, "/s/w/x": AccessNone}},
		{"write beats a denial of the same path", Permissions{Write: []string{"/p"}, Deny: []string{"/p"}},
			map[string]string{"/p": AccessWrite}},
		{"read-only temporary directories", Permissions{ReadOnlySlashTmp: true, ReadOnlyTmpdir: true},
			map[string]string{SlashTmp: AccessRead, Tmpdir: AccessRead}},
		{"over :read-only the temporary directories need no rule", Permissions{Extends: ExtendsReadOnly, Write: []string{"/s/o"}, Deny: []string{"/s"}, ReadOnlySlashTmp: true, ReadOnlyTmpdir: true},
			map[string]string{"/s/o": AccessWrite, "/s": AccessNone}},
	} {
		if got := tc.p.Filesystem(); !maps.Equal(got, tc.want) {
			t.Errorf("%s: got %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestPermissionsOnTheCommandLine(t *testing.T) {
	p := &Permissions{Write: []string{"/w"}, Deny: []string{"/s"}, Network: true, HideEnv: []string{"SSH_AUTH_SOCK"}}
	args := ExecArgs(ExecOptions{Sandbox: SandboxWorkspaceWrite, AddDirs: []string{"/out"}, Config: []string{"k=1"}, Permissions: p}, "")
	line := strings.Join(args, " ")
	for _, want := range []string{`default_permissions="batty"`,
		`permissions.batty={extends=":workspace",filesystem={"/s"="none","/w"="write"},network={enabled=true}}`,
		`shell_environment_policy.exclude=["SSH_AUTH_SOCK"]`} {
		if !slices.Contains(args, want) {
			t.Errorf("no -c %s in %s", want, line)
		}
	}
	// Codex takes -s and --add-dir over a profile.
	if slices.Contains(args, "-s") || slices.Contains(args, "--add-dir") {
		t.Errorf("a sandbox mode or added directory beside the profile: %s", line)
	}
	if i, j := slices.Index(args, `default_permissions="batty"`), slices.Index(args, "k=1"); i > j {
		t.Errorf("the profile comes after the role's config: %s", line)
	}
	back, err := DecodePermissions(EncodePermissions(p))
	if err != nil || !maps.Equal(back.Filesystem(), p.Filesystem()) || !back.Network || !slices.Equal(back.HideEnv, p.HideEnv) {
		t.Errorf("round trip: %+v, %v", back, err)
	}
	if err := (Permissions{Deny: []string{"relative"}}).Validate(); err == nil {
		t.Error("a relative path passed")
	}
	// A profile on its way to a host keeps "~/" for the host; no other
	// relative path.
	there := &Permissions{Write: []string{"~/src/p"}, Deny: []string{"~"}}
	if back, err := DecodePermissions(EncodePermissions(there)); err != nil || back.Write[0] != "~/src/p" {
		t.Errorf("a profile for a host: %+v, %v", back, err)
	}
	if there.Validate() == nil {
		t.Error("Validate took a path under ~/")
	}
	for _, bad := range []string{"rel", "~bob", "~/a/./b", "./x"} {
		if (Permissions{Write: []string{bad}}).ValidateThere() == nil {
			t.Errorf("ValidateThere took %q", bad)
		}
	}
}

func TestPermissionsBase(t *testing.T) {
	for _, tc := range []struct {
		extends, base, line string
		wantErr             bool
	}{
		{"", ExtendsWorkspace, `permissions.batty={extends=":workspace",filesystem={"/o"="write"},network={enabled=false}}`, false},
		{ExtendsWorkspace, ExtendsWorkspace, `permissions.batty={extends=":workspace",filesystem={"/o"="write"},network={enabled=false}}`, false},
		{ExtendsReadOnly, ExtendsReadOnly, `permissions.batty={extends=":read-only",filesystem={"/o"="write"},network={enabled=false}}`, false},
		{":danger-no-sandbox", "", "", true},
	} {
		p := Permissions{Extends: tc.extends, Write: []string{"/o"}}
		if err := p.Validate(); (err != nil) != tc.wantErr {
			t.Errorf("extends %q: Validate() = %v", tc.extends, err)
			continue
		}
		if tc.wantErr {
			if _, err := DecodePermissions(EncodePermissions(&p)); err == nil {
				t.Errorf("extends %q: decoded", tc.extends)
			}
			continue
		}
		if got := p.Base(); got != tc.base {
			t.Errorf("extends %q: base %q, want %q", tc.extends, got, tc.base)
		}
		if kv := p.ConfigOverrides(); !slices.Contains(kv, tc.line) {
			t.Errorf("extends %q: overrides %q lack %s", tc.extends, kv, tc.line)
		}
		if got := p.ThreadConfig()["permissions."+ProfileName].(map[string]any)["extends"]; got != tc.base {
			t.Errorf("extends %q: thread config extends %v", tc.extends, got)
		}
		back, err := DecodePermissions(EncodePermissions(&p))
		if err != nil || back.Base() != tc.base {
			t.Errorf("extends %q: round trip %+v, %v", tc.extends, back, err)
		}
	}
}

// A denied path that does not exist is left out of the profile (Codex
// would make a placeholder there); one that exists stays, and the profile
// given is not changed.
func TestPermissionsWithoutMissing(t *testing.T) {
	dir := t.TempDir()
	there := filepath.Join(dir, "there")
	if err := os.Mkdir(there, 0o700); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(dir, "tmux-1000")
	link := filepath.Join(dir, "link")
	if err := os.Symlink(missing, link); err != nil { // dangling: the link itself is there
		t.Fatal(err)
	}
	p := Permissions{Write: []string{dir}, Deny: []string{there, missing, link}}
	got := p.WithoutMissing()
	if want := []string{there, link}; !slices.Equal(got.Deny, want) {
		t.Fatalf("WithoutMissing().Deny = %q, want %q", got.Deny, want)
	}
	if len(p.Deny) != 3 || !slices.Equal(got.Write, p.Write) {
		t.Fatalf("the profile given changed (%q) or lost its other rules (%q)", p.Deny, got.Write)
	}
}
