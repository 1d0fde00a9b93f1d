package preflight

import (
	"strconv"
	"strings"
)

// Built-in model provider ids of Codex CLI 0.169.0 that need no OpenAI
// login are every id but this one; a provider a config.toml declares needs
// one only when it says requires_openai_auth = true.
const openaiProvider = "openai"

// apiKeyVars are the environment variables through which Codex takes an API
// key instead of a stored login.
var apiKeyVars = []string{"OPENAI_API_KEY", "CODEX_API_KEY"}

// LoginInput is what decides whether an agent's Codex needs an OpenAI
// login: the Codex settings of the agent and its environment.
type LoginInput struct {
	// Overrides are the agent's `-c key=value` settings in the order Codex
	// sees them (codex.config, then the -c pairs of codex.args): dotted
	// keys, values as TOML (a value that is not TOML is a bare string, as
	// Codex reads it).
	Overrides []string
	// Profile is the profile named by -p/--profile in codex.args, "" for
	// none.
	Profile string
	// OSS is set when codex.args has --oss (a local open-source provider).
	OSS bool
	// HomeConfig is the text of CODEX_HOME/config.toml ("" when missing).
	HomeConfig string
	// Getenv looks up the agent's environment (codex.env over the daemon's);
	// nil means an empty environment.
	Getenv func(string) string
}

// LoginDecision says whether `codex login status` must be checked.
type LoginDecision struct {
	// Provider is the model provider id Codex will use.
	Provider string
	// Needed reports whether the provider needs an OpenAI login that only
	// `codex login` provides.
	Needed bool
	// Why explains the decision in a few words (for logs).
	Why string
}

// NeedsLogin decides whether an agent's Codex needs a stored OpenAI login.
// It is a pure function of in. It says yes only when it is sure: the
// provider is the built-in "openai" (the default) on its own endpoint, or a
// declared provider with requires_openai_auth = true, and no API key
// variable is set. A custom provider with its own base_url, a local one
// (--oss, ollama, lmstudio), an openai provider pointed elsewhere
// (openai_base_url, OPENAI_BASE_URL) or an API key in the environment need
// no login.
func NeedsLogin(in LoginInput) LoginDecision {
	getenv := in.Getenv
	if getenv == nil {
		getenv = func(string) string { return "" }
	}
	file := flattenTOML(in.HomeConfig)
	over := map[string]string{}
	for _, kv := range in.Overrides {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			continue
		}
		over[strings.TrimSpace(k)] = tomlScalar(strings.TrimSpace(v))
	}
	lookup := func(k string) (string, bool) {
		if v, ok := over[k]; ok {
			return v, true
		}
		v, ok := file[k]
		return v, ok
	}
	if in.OSS {
		return LoginDecision{Provider: "oss", Why: "--oss uses a local provider"}
	}
	provider, ok := over["model_provider"]
	if !ok {
		profile := in.Profile
		if profile == "" {
			profile, _ = lookup("profile")
		}
		if p, found := lookup("profiles." + profile + ".model_provider"); profile != "" && found {
			provider = p
		} else if p, found := file["model_provider"]; found {
			provider = p
		} else {
			provider = openaiProvider
		}
	}
	d := LoginDecision{Provider: provider}
	keyed := func() bool {
		for _, k := range apiKeyVars {
			if getenv(k) != "" {
				d.Why = k + " is set"
				return true
			}
		}
		return false
	}
	switch {
	case provider == openaiProvider:
		if _, ok := lookup("openai_base_url"); ok || getenv("OPENAI_BASE_URL") != "" {
			d.Why = "the openai provider points at another endpoint"
			return d
		}
		if keyed() {
			return d
		}
		d.Needed, d.Why = true, "the openai provider without an API key"
	case isTrue(lookup("model_providers." + provider + ".requires_openai_auth")):
		if keyed() {
			return d
		}
		d.Needed, d.Why = true, "provider "+provider+" requires an OpenAI login"
	default:
		d.Why = "provider " + provider + " needs no OpenAI login"
	}
	return d
}

func isTrue(v string, ok bool) bool { return ok && v == "true" }

// ArgsSettings extracts from codex.args what NeedsLogin reads: the -c
// pairs, the profile and --oss. It is a pure function.
func ArgsSettings(args []string) (overrides []string, profile string, oss bool) {
	for i := 0; i < len(args); i++ {
		a := args[i]
		next := func() string {
			if i+1 < len(args) {
				i++
				return args[i]
			}
			return ""
		}
		switch {
		case a == "-c" || a == "--config":
			overrides = append(overrides, next())
		case strings.HasPrefix(a, "--config="):
			overrides = append(overrides, strings.TrimPrefix(a, "--config="))
		case strings.HasPrefix(a, "-c") && len(a) > 2:
			overrides = append(overrides, a[2:])
		case a == "-p" || a == "--profile":
			profile = next()
		case strings.HasPrefix(a, "--profile="):
			profile = strings.TrimPrefix(a, "--profile=")
		case a == "--oss":
			oss = true
		}
	}
	return overrides, profile, oss
}

// tomlScalar reads a TOML scalar the way Codex reads a -c value or a
// config.toml value: a basic or literal string is unquoted, anything else
// (true, 3, a bare word) is kept as written.
func tomlScalar(v string) string {
	v = strings.TrimSpace(v)
	switch {
	case len(v) >= 2 && v[0] == '"' && v[len(v)-1] == '"':
		if s, err := strconv.Unquote(v); err == nil {
			return s
		}
		return v[1 : len(v)-1]
	case len(v) >= 2 && v[0] == '\'' && v[len(v)-1] == '\'':
		return v[1 : len(v)-1]
	}
	return v
}

// flattenTOML reads the scalar keys of a config.toml into dotted keys
// ("model_providers.mock.base_url"): table headers, dotted keys, comments
// and one-line values. Multi-line strings and arrays are skipped, as are
// inline tables; what it cannot read it leaves out, so NeedsLogin falls back
// to its defaults. It never fails and never panics.
func flattenTOML(text string) map[string]string {
	out := map[string]string{}
	table := ""
	inMulti := "" // the closing delimiter of a multi-line string being skipped
	depth := 0    // open brackets of a multi-line array being skipped
	for _, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(strings.TrimSuffix(line, "\r"))
		if inMulti != "" {
			if strings.Contains(line, inMulti) {
				inMulti = ""
			}
			continue
		}
		if depth > 0 {
			depth += strings.Count(line, "[") - strings.Count(line, "]")
			continue
		}
		if line == "" || line[0] == '#' {
			continue
		}
		if line[0] == '[' {
			h := stripComment(line)
			if strings.HasPrefix(h, "[[") {
				table = "\x00" // an array of tables: nothing we read
				continue
			}
			if !strings.HasSuffix(h, "]") {
				table = "\x00"
				continue
			}
			table = joinKey(strings.TrimSpace(h[1 : len(h)-1]))
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok {
			continue
		}
		key := joinKey(strings.TrimSpace(k))
		v = strings.TrimSpace(v)
		switch {
		case strings.HasPrefix(v, `"""`) || strings.HasPrefix(v, "'''"):
			delim := v[:3]
			if !strings.Contains(v[3:], delim) {
				inMulti = delim
			}
			continue
		case strings.HasPrefix(v, "["):
			depth = strings.Count(v, "[") - strings.Count(v, "]")
			continue
		case strings.HasPrefix(v, "{"):
			continue
		}
		if key == "" || table == "\x00" {
			continue
		}
		if table != "" {
			key = table + "." + key
		}
		out[key] = tomlScalar(stripComment(v))
	}
	return out
}

// joinKey normalises a TOML key ("a . \"b\"" → "a.b"); quoted parts keep
// their text.
func joinKey(k string) string {
	var parts []string
	for k != "" {
		k = strings.TrimLeft(k, " \t")
		var part string
		switch {
		case k == "":
		case k[0] == '"' || k[0] == '\'':
			end := strings.IndexByte(k[1:], k[0])
			if end < 0 {
				return ""
			}
			part, k = k[1:1+end], k[2+end:]
		default:
			end := strings.IndexByte(k, '.')
			if end < 0 {
				end = len(k)
			}
			part, k = strings.TrimSpace(k[:end]), k[end:]
		}
		parts = append(parts, part)
		k = strings.TrimLeft(k, " \t")
		if strings.HasPrefix(k, ".") {
			k = k[1:]
		} else if k != "" {
			return ""
		}
	}
	return strings.Join(parts, ".")
}

// stripComment removes a trailing # comment outside quotes.
func stripComment(v string) string {
	var quote byte
	for i := 0; i < len(v); i++ {
		c := v[i]
		switch {
		case quote != 0:
			if c == '\\' && quote == '"' {
				i++
			} else if c == quote {
				quote = 0
			}
		case c == '"' || c == '\'':
			quote = c
		case c == '#':
			return strings.TrimSpace(v[:i])
		}
	}
	return strings.TrimSpace(v)
}

// LoginState is what `codex login status` said.
type LoginState int

// Login states.
const (
	LoggedIn    LoginState = iota // exit 0: a ChatGPT login or a stored API key
	NotLoggedIn                   // exit 1, "Not logged in"
	LoginError                    // anything else: the output says why
)

// ClassifyLoginStatus reads the exit code and the output (stdout and
// stderr) of `codex login status` (Codex CLI 0.169.0): exit 0 is logged in
// ("Logged in using ChatGPT", "Logged in using an API key - …"), exit 1
// with "Not logged in" is not, anything else is an error whose text the
// output holds (e.g. "Error checking login status: …" for an unreadable
// auth.json, "Error loading configuration: …"). It is a pure function.
func ClassifyLoginStatus(exitCode int, output string) LoginState {
	switch {
	case exitCode == 0:
		return LoggedIn
	case exitCode == 1 && strings.Contains(output, "Not logged in"):
		return NotLoggedIn
	}
	return LoginError
}
