package codex

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/BurntSushi/toml"
)

// The configuration keys of Codex's sandbox settings.
const (
	keySandboxMode = "sandbox_mode"
	keySWW         = "sandbox_workspace_write"
	keyNetwork     = "network_access"
	keyRoots       = "writable_roots"
	keyExcludeTmp  = "exclude_slash_tmp"
	keyExcludeEnv  = "exclude_tmpdir_env_var"
)

// SandboxSettings is what Codex makes of a role's sandbox settings
// (team.yaml's codex.sandbox, codex.config and codex.args): its sandbox
// mode and the workspace-write sandbox's settings, with the config and
// arguments that are left once those settings are taken out.
type SandboxSettings struct {
	// Mode is the sandbox mode Codex runs with: the mode given, unless
	// codex.args set one (-s, --sandbox, --full-auto: workspace-write,
	// --dangerously-bypass-approvals-and-sandbox or --yolo:
	// danger-full-access; the last wins, as batty's own -s comes first).
	// A sandbox_mode of config or a -c counts only when neither did (-s
	// outranks it).
	Mode string
	// ModeSetBy names the first setting of config or args that sets a
	// sandbox mode (`codex.args "--yolo"`, `codex.config sandbox_mode`);
	// "" when none does. The mode stays in Config and Args.
	ModeSetBy string
	// Network is sandbox_workspace_write.network_access.
	Network bool
	// WritableRoots are sandbox_workspace_write.writable_roots as
	// written, config's first, then each -c's: all of them, the later not
	// replacing the earlier. A single string counts as one root.
	WritableRoots []string
	// ExcludeSlashTmp and ExcludeTmpdirEnvVar are
	// sandbox_workspace_write.exclude_slash_tmp and exclude_tmpdir_env_var:
	// /tmp and $TMPDIR not writable.
	ExcludeSlashTmp, ExcludeTmpdirEnvVar bool
	// AddDirs are the --add-dir directories of args, as written.
	AddDirs []string
	// Config is config without its sandbox_workspace_write keys.
	Config map[string]string
	// Args is args without the sandbox_workspace_write overrides and
	// the --add-dir flags.
	Args []string
}

// ReadSandboxSettings reads mode (codex.sandbox), config (codex.config:
// dotted key → TOML value text) and args (codex.args) as Codex takes
// them: config's keys in sorted order, then args in order, a later
// setting winning (but writable roots, which add up). A value is TOML; one
// that is not is a literal string, as Codex reads a -c. A setting may be
// dotted (sandbox_workspace_write.network_access=true) or an inline table
// (sandbox_workspace_write={network_access=true}).
//
// The error names each value that cannot be read (a boolean that is not
// true or false, writable roots that are not strings, a key of
// sandbox_workspace_write Codex does not have); the settings returned
// then hold the rest, an unreadable boolean read as false. It is a pure
// function; config and args are not changed.
func ReadSandboxSettings(mode string, config map[string]string, args []string) (SandboxSettings, error) {
	s := SandboxSettings{Mode: mode, Config: map[string]string{}}
	var errs []error
	configMode := ""
	for _, k := range slices.Sorted(maps.Keys(config)) {
		where := "codex.config " + k
		taken, m, err := s.setting(k, config[k], where)
		if err != nil {
			errs = append(errs, err)
		}
		if m != "" {
			configMode = m
		}
		if !taken {
			s.Config[k] = config[k]
		}
	}
	argsMode := ""
	for i := 0; i < len(args); i++ {
		a := args[i]
		has := i+1 < len(args)
		kv, isOverride := "", false
		switch {
		case (a == "-c" || a == "--config") && has:
			kv, isOverride = args[i+1], true
		case strings.HasPrefix(a, "--config="):
			kv, isOverride = strings.TrimPrefix(a, "--config="), true
		case strings.HasPrefix(a, "-c") && len(a) > 2 && !strings.HasPrefix(a, "--"):
			kv, isOverride = strings.TrimPrefix(a[2:], "="), true
		case a == "--add-dir" && has:
			s.AddDirs = append(s.AddDirs, args[i+1])
			i++
			continue
		case strings.HasPrefix(a, "--add-dir="):
			s.AddDirs = append(s.AddDirs, strings.TrimPrefix(a, "--add-dir="))
			continue
		case (a == "-s" || a == "--sandbox") && has:
			argsMode = args[i+1]
			s.setBy(fmt.Sprintf("codex.args %q", a))
		case strings.HasPrefix(a, "--sandbox="):
			argsMode = strings.TrimPrefix(a, "--sandbox=")
			s.setBy(fmt.Sprintf("codex.args %q", a))
		case strings.HasPrefix(a, "-s") && len(a) > 2 && !strings.HasPrefix(a, "--"):
			argsMode = strings.TrimPrefix(a[2:], "=")
			s.setBy(fmt.Sprintf("codex.args %q", a))
		case a == "--full-auto":
			argsMode = SandboxWorkspaceWrite
			s.setBy(fmt.Sprintf("codex.args %q", a))
		case a == "--dangerously-bypass-approvals-and-sandbox" || a == "--yolo":
			argsMode = SandboxDangerFullAccess
			s.setBy(fmt.Sprintf("codex.args %q", a))
		}
		taken := false
		if isOverride {
			k, v, _ := strings.Cut(kv, "=")
			var m string
			var err error
			taken, m, err = s.setting(strings.TrimSpace(k), v, fmt.Sprintf("codex.args %q", kv))
			if err != nil {
				errs = append(errs, err)
			}
			if m != "" {
				configMode = m
			}
		}
		if !taken {
			s.Args = append(s.Args, a)
			if isOverride && (a == "-c" || a == "--config") {
				s.Args = append(s.Args, args[i+1])
			}
		}
		if isOverride && (a == "-c" || a == "--config") {
			i++
		}
	}
	switch {
	case argsMode != "":
		s.Mode = argsMode
	case s.Mode == "" && configMode != "":
		s.Mode = configMode
	}
	return s, errors.Join(errs...)
}

// setBy records where a sandbox mode was first set.
func (s *SandboxSettings) setBy(where string) {
	if s.ModeSetBy == "" {
		s.ModeSetBy = where
	}
}

// setting applies the Codex configuration key and its TOML value text,
// where says where it was found (for errors and ModeSetBy). taken reports
// a sandbox_workspace_write setting (left out of Config and Args); mode is
// the sandbox_mode it sets, "" if none.
func (s *SandboxSettings) setting(key, text, where string) (taken bool, mode string, err error) {
	switch {
	case key == keySandboxMode:
		s.setBy(where)
		v, ok := tomlValue(text).(string)
		if !ok {
			return false, "", fmt.Errorf("%s: sandbox mode %.80s: want a string", where, strings.TrimSpace(text))
		}
		return false, v, nil
	case key == keySWW:
		table, ok := tomlValue(text).(map[string]any)
		if !ok {
			return true, "", fmt.Errorf("%s: %.80s: want a table of the workspace-write sandbox's settings", where, strings.TrimSpace(text))
		}
		var errs []error
		for _, k := range slices.Sorted(maps.Keys(table)) {
			errs = append(errs, s.sww(k, table[k], where))
		}
		return true, "", errors.Join(errs...)
	case strings.HasPrefix(key, keySWW+"."):
		return true, "", s.sww(strings.TrimPrefix(key, keySWW+"."), tomlValue(text), where)
	}
	return false, "", nil
}

// sww applies the sandbox_workspace_write setting key, value decoded.
func (s *SandboxSettings) sww(key string, value any, where string) error {
	flag := func(dst *bool) error {
		b, ok := value.(bool)
		*dst = b
		if !ok {
			return fmt.Errorf("%s: %s.%s = %.80s: want true or false", where, keySWW, key, show(value))
		}
		return nil
	}
	switch key {
	case keyNetwork:
		return flag(&s.Network)
	case keyExcludeTmp:
		return flag(&s.ExcludeSlashTmp)
	case keyExcludeEnv:
		return flag(&s.ExcludeTmpdirEnvVar)
	case keyRoots:
		switch v := value.(type) {
		case string:
			s.WritableRoots = append(s.WritableRoots, v)
			return nil
		case []any:
			for _, e := range v {
				d, ok := e.(string)
				if !ok {
					return fmt.Errorf("%s: %s.%s: %.80s is not a string: want an array of paths", where, keySWW, key, show(e))
				}
				s.WritableRoots = append(s.WritableRoots, d)
			}
			return nil
		}
		return fmt.Errorf("%s: %s.%s = %.80s: want an array of paths", where, keySWW, key, show(value))
	}
	return fmt.Errorf("%s: %s.%.80s is not a setting of the workspace-write sandbox", where, keySWW, key)
}

// tomlValue decodes text, one TOML value, as Codex decodes a -c value: a
// bool, string, int64, float64, time, []any or map[string]any; text that
// is not TOML is a literal string (trimmed, without its quotes).
func tomlValue(text string) any {
	var doc map[string]any
	if _, err := toml.Decode("_x_ = "+text, &doc); err == nil {
		if v, ok := doc["_x_"]; ok {
			return v
		}
	}
	return strings.Trim(strings.TrimSpace(text), `"'`)
}

// show renders a decoded TOML value for an error message.
func show(v any) string {
	if s, ok := v.(string); ok {
		return TOMLString(s)
	}
	return fmt.Sprint(v)
}
