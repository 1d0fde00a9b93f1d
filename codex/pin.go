package codex

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
)

// Version is the Codex CLI version batty pins (npm @openai/codex): the
// newest of TestedVersions, the one scripts/test.sh, scripts/demo.sh and
// scripts/bench.sh install and run the whole suite with (their copy is
// checked by a test).
const Version = "0.171.0"

// TestedVersions are the Codex CLI versions batty is tested with, oldest
// first, Version last: scripts/test.sh runs the runtime conformance suite
// against each (its CODEX_TESTED, checked by a test). Another version runs,
// with a warning (`batty doctor`, the daemon's log) naming these.
var TestedVersions = []string{"0.169.0", Version}

// Tested reports whether version (as VersionOf reads it, "0.171.0") is one
// of TestedVersions. It is a pure function.
func Tested(version string) bool { return slices.Contains(TestedVersions, version) }

// versionRE finds the version in `codex --version`'s output, "codex-cli
// 0.171.0" (a pre-release keeps its suffix: "0.172.0-alpha.1").
var versionRE = regexp.MustCompile(`(?m)^codex(?:-cli)?[ \t]+v?([0-9]+\.[0-9]+\.[0-9]+[0-9A-Za-z.+-]*)[ \t\r]*$`)

// VersionOf reads the version out of the output of `codex --version`
// ("codex-cli 0.171.0", perhaps after warnings of its own); "" when it
// names none. It is a pure function.
func VersionOf(output string) string {
	m := versionRE.FindAllStringSubmatch(output, -1)
	if len(m) == 0 {
		return ""
	}
	return m[len(m)-1][1]
}

// EnvCache names the environment variable that overrides CacheDir.
const EnvCache = "BATTY_CODEX_CACHE"

// CacheDir returns the directory the scripts install pinned Codex CLIs
// into, one per version: $BATTY_CODEX_CACHE when set, else
// ~/.cache/batty-codex; "" when neither is known (no home directory).
func CacheDir() string {
	if d := os.Getenv(EnvCache); d != "" {
		return d
	}
	home, err := os.UserHomeDir()
	if err != nil || home == "" {
		return ""
	}
	return filepath.Join(home, ".cache", "batty-codex")
}

// PinnedDir returns where the pinned version is installed,
// CacheDir()/Version (its npm prefix), or "" when CacheDir is unknown.
func PinnedDir() string {
	c := CacheDir()
	if c == "" {
		return ""
	}
	return filepath.Join(c, Version)
}

// PinnedLauncher returns the npm launcher of the pinned install,
// PinnedDir()/node_modules/.bin/codex, or "" when PinnedDir is unknown. It
// does not say whether the file exists.
func PinnedLauncher() string {
	d := PinnedDir()
	if d == "" {
		return ""
	}
	return filepath.Join(d, "node_modules", ".bin", "codex")
}

// VersionWarning is the one warning about a Codex CLI of version (as
// VersionOf reads it) that batty was not tested with, naming the tested
// ones; "" for a tested version or an unknown one (""). Such a Codex runs
// all the same. It is a pure function.
func VersionWarning(version string) string {
	if version == "" || Tested(version) {
		return ""
	}
	return fmt.Sprintf("codex %s is not a version batty was tested with (%s); it runs, but check it with `batty doctor` and the conformance suite before a team depends on it (docs/doctor.md)",
		version, strings.Join(TestedVersions, ", "))
}
