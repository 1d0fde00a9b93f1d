package codex

import (
	"maps"
	"reflect"
	"slices"
	"strings"
	"testing"
)

func TestReadSandboxSettings(t *testing.T) {
	const ww = SandboxWorkspaceWrite
	for _, tc := range []struct {
		name    string
		mode    string
		config  map[string]string
		args    []string
		want    SandboxSettings // Config nil: want an empty map
		wantErr string          // a substring of the error
	}{
		{name: "nothing set", mode: ww, want: SandboxSettings{Mode: ww}},
		{name: "config's dotted keys taken out, the others left",
			mode:   ww,
			config: map[string]string{"sandbox_workspace_write.network_access": "true", "sandbox_workspace_write.exclude_slash_tmp": "true", "sandbox_workspace_write.exclude_tmpdir_env_var": "false", "model_verbosity": `"low"`},
			want:   SandboxSettings{Mode: ww, Network: true, ExcludeSlashTmp: true, Config: map[string]string{"model_verbosity": `"low"`}}},
		{name: "every -c form and --add-dir taken out, the rest kept in order",
			mode: ww,
			args: []string{"--json", "-c", "sandbox_workspace_write.network_access=true", "--config=sandbox_workspace_write.exclude_slash_tmp=true",
				"-csandbox_workspace_write.exclude_tmpdir_env_var=true", "-c=sandbox_workspace_write.writable_roots=[\"/w\"]", "--add-dir", "/a", "--add-dir=b",
				"-c", "model_verbosity=\"low\"", "-m", "x"},
			want: SandboxSettings{Mode: ww, Network: true, ExcludeSlashTmp: true, ExcludeTmpdirEnvVar: true, WritableRoots: []string{"/w"},
				AddDirs: []string{"/a", "b"}, Args: []string{"--json", "-c", "model_verbosity=\"low\"", "-m", "x"}}},
		{name: "roots of config and args add up, config's first",
			mode:   ww,
			config: map[string]string{"sandbox_workspace_write.writable_roots": `["/c1", "/c2",]`},
			args:   []string{"-c", `sandbox_workspace_write.writable_roots=["/a,b", "x\"y"]`},
			want:   SandboxSettings{Mode: ww, WritableRoots: []string{"/c1", "/c2", "/a,b", `x"y`}}},
		{name: "a later setting wins", mode: ww,
			config: map[string]string{"sandbox_workspace_write.network_access": "true"},
			args:   []string{"-c", "sandbox_workspace_write.network_access=false"},
			want:   SandboxSettings{Mode: ww}},
		// Where the readers this one replaces disagreed: TOML's meaning.
		{name: "single-quoted (literal) strings are paths", mode: ww,
			args: []string{"-c", `sandbox_workspace_write.writable_roots=['/x', 'C:\y']`},
			want: SandboxSettings{Mode: ww, WritableRoots: []string{"/x", `C:\y`}}},
		{name: "a comment after the value", mode: ww,
			config: map[string]string{"sandbox_workspace_write.exclude_slash_tmp": "true # no /tmp"},
			args:   []string{"-c", `sandbox_workspace_write.writable_roots=["/x"] # cache`},
			want:   SandboxSettings{Mode: ww, ExcludeSlashTmp: true, WritableRoots: []string{"/x"}}},
		{name: "an inline table in args is taken out whole", mode: ww,
			args: []string{"-c", `sandbox_workspace_write={exclude_slash_tmp = true, writable_roots = ["/data", 'rel'], network_access=true}`, "--json"},
			want: SandboxSettings{Mode: ww, Network: true, ExcludeSlashTmp: true, WritableRoots: []string{"/data", "rel"}, Args: []string{"--json"}}},
		{name: "one string is one root", mode: ww,
			config: map[string]string{"sandbox_workspace_write.writable_roots": `"/one"`},
			want:   SandboxSettings{Mode: ww, WritableRoots: []string{"/one"}}},
		{name: "a value that is not TOML is a literal string, as Codex reads a -c", mode: ww,
			args: []string{"-c", "sandbox_workspace_write.writable_roots=/plain"},
			want: SandboxSettings{Mode: ww, WritableRoots: []string{"/plain"}}},
		{name: "a sandbox mode in args wins, the last one", mode: SandboxReadOnly,
			args: []string{"-s", "danger-full-access", "--sandbox=workspace-write", "--add-dir", "/y"},
			want: SandboxSettings{Mode: ww, ModeSetBy: `codex.args "-s"`, AddDirs: []string{"/y"}, Args: []string{"-s", "danger-full-access", "--sandbox=workspace-write"}}},
		{name: "--yolo", mode: ww, args: []string{"--yolo"},
			want: SandboxSettings{Mode: SandboxDangerFullAccess, ModeSetBy: `codex.args "--yolo"`, Args: []string{"--yolo"}}},
		{name: "--full-auto", mode: SandboxReadOnly, args: []string{"--full-auto"},
			want: SandboxSettings{Mode: ww, ModeSetBy: `codex.args "--full-auto"`, Args: []string{"--full-auto"}}},
		{name: "sandbox_mode is outranked by the mode given but named", mode: ww,
			config: map[string]string{"sandbox_mode": `"read-only"`},
			want:   SandboxSettings{Mode: ww, ModeSetBy: "codex.config sandbox_mode", Config: map[string]string{"sandbox_mode": `"read-only"`}}},
		{name: "sandbox_mode counts with no mode given",
			args: []string{"-c", "sandbox_mode='read-only'"},
			want: SandboxSettings{Mode: SandboxReadOnly, ModeSetBy: `codex.args "sandbox_mode='read-only'"`, Args: []string{"-c", "sandbox_mode='read-only'"}}},
		{name: "a -c without its value is left", mode: ww, args: []string{"--add-dir=/z", "-c"},
			want: SandboxSettings{Mode: ww, AddDirs: []string{"/z"}, Args: []string{"-c"}}},
		{name: "a boolean that is not one", mode: ww,
			config:  map[string]string{"sandbox_workspace_write.network_access": `"true"`},
			want:    SandboxSettings{Mode: ww},
			wantErr: `codex.config sandbox_workspace_write.network_access: sandbox_workspace_write.network_access = "true": want true or false`},
		{name: "a bare word where a boolean goes", mode: ww,
			args:    []string{"-c", "sandbox_workspace_write.exclude_slash_tmp=yes"},
			want:    SandboxSettings{Mode: ww},
			wantErr: `exclude_slash_tmp = "yes": want true or false`},
		{name: "roots that are not strings, the other settings still read", mode: ww,
			args:    []string{"-c", "sandbox_workspace_write.writable_roots=[1, 2]", "-c", "sandbox_workspace_write.network_access=true"},
			want:    SandboxSettings{Mode: ww, Network: true},
			wantErr: `writable_roots: 1 is not a string`},
		{name: "roots that are a table", mode: ww,
			config:  map[string]string{"sandbox_workspace_write.writable_roots": "{a = 1}"},
			want:    SandboxSettings{Mode: ww},
			wantErr: "want an array of paths"},
		{name: "a key Codex does not have", mode: ww,
			config:  map[string]string{"sandbox_workspace_write.network": "true"},
			want:    SandboxSettings{Mode: ww},
			wantErr: "sandbox_workspace_write.network is not a setting"},
		{name: "a string where the table goes (what codex.config makes of one)", mode: ww,
			config:  map[string]string{"sandbox_workspace_write": `"{network_access = true}"`},
			want:    SandboxSettings{Mode: ww},
			wantErr: "want a table"},
		{name: "a key of the inline table Codex does not have", mode: ww,
			args:    []string{"-c", "sandbox_workspace_write={exclude_slash_tmp=true, nope=1}"},
			want:    SandboxSettings{Mode: ww, ExcludeSlashTmp: true},
			wantErr: "sandbox_workspace_write.nope is not a setting"},
		{name: "a sandbox mode that is not a string", mode: ww,
			config:  map[string]string{"sandbox_mode": "3"},
			want:    SandboxSettings{Mode: ww, ModeSetBy: "codex.config sandbox_mode", Config: map[string]string{"sandbox_mode": "3"}},
			wantErr: "sandbox mode 3: want a string"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			config := maps.Clone(tc.config)
			args := slices.Clone(tc.args)
			got, err := ReadSandboxSettings(tc.mode, config, args)
			switch {
			case tc.wantErr == "" && err != nil:
				t.Errorf("error %v", err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Errorf("error %v, want one saying %q", err, tc.wantErr)
			}
			want := tc.want
			if want.Config == nil {
				want.Config = map[string]string{}
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("got  %+v\nwant %+v", got, want)
			}
			if !maps.Equal(config, tc.config) || !slices.Equal(args, tc.args) {
				t.Error("config or args changed")
			}
		})
	}
}

// FuzzSandboxSettings reads a team file's codex.config value and
// codex.args: it never panics, takes out nothing but the sandbox
// settings, and reads the same settings again from what it left.
func FuzzSandboxSettings(f *testing.F) {
	for _, s := range []struct{ value, arg string }{
		{"true", "sandbox_workspace_write.network_access=true"},
		{`["/a", '/b',] # c`, `sandbox_workspace_write={writable_roots=["/x"], exclude_slash_tmp=true}`},
		{`"{network_access = true}"`, "sandbox_mode='read-only'"},
		{"[1, [2]]", "sandbox_workspace_write.writable_roots=\"\\u00e9\""},
		{"{", "x=\n[_x_]"},
	} {
		f.Add(s.value, s.arg)
	}
	f.Fuzz(func(t *testing.T, value, arg string) {
		config := map[string]string{"sandbox_workspace_write.writable_roots": value, "sandbox_workspace_write": value, "model": value}
		args := []string{"-c", arg, "--config=" + arg, "--add-dir", value, "-s" + value}
		s, err := ReadSandboxSettings(SandboxWorkspaceWrite, config, args)
		if _, ok := s.Config["model"]; !ok {
			t.Fatal("model taken out")
		}
		for k := range s.Config {
			if strings.HasPrefix(k, keySWW) {
				t.Fatalf("config key %s left", k)
			}
		}
		if !slices.Contains(s.AddDirs, value) {
			t.Fatalf("--add-dir %q not read", value)
		}
		again, err2 := ReadSandboxSettings(s.Mode, s.Config, s.Args)
		if again.Network || again.ExcludeSlashTmp || again.ExcludeTmpdirEnvVar || len(again.WritableRoots) > 0 || len(again.AddDirs) > 0 {
			t.Fatalf("settings left behind: %+v", again)
		}
		if err != nil && err.Error() == "" {
			t.Fatal("empty error")
		}
		_ = err2
	})
}
