package codex

import (
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/battyhq/batty/agentenv"
)

// Home is the CODEX_HOME a codex process started with env (KEY=VALUE
// entries, the last of a key winning, as for the process) in directory cwd
// uses: CODEX_HOME, else ~/.codex under HOME (else under this user's home
// directory), as a cleaned absolute path — a relative value is taken from
// cwd, as codex would. It is a pure function but for that last fallback
// (os.UserHomeDir).
func Home(env []string, cwd string) string {
	home := agentenv.Lookup(env, "CODEX_HOME")
	if home == "" {
		h := agentenv.Lookup(env, "HOME")
		if h == "" {
			h, _ = os.UserHomeDir()
		}
		home = filepath.Join(h, ".codex")
	}
	if !filepath.IsAbs(home) {
		home = filepath.Join(cwd, home)
	}
	return filepath.Clean(home)
}

// WithHome returns a copy of env (KEY=VALUE entries) with CODEX_HOME set to
// home and every earlier CODEX_HOME entry removed: how a worker is moved to
// another account. env is not changed. It is a pure function.
func WithHome(env []string, home string) []string {
	env = slices.DeleteFunc(slices.Clone(env), func(kv string) bool { return strings.HasPrefix(kv, "CODEX_HOME=") })
	return append(env, "CODEX_HOME="+home)
}
