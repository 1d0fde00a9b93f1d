package preflight

import (
	"reflect"
	"testing"
)

const mockHome = `model = "gpt-5.5"
model_provider = "mock"   # the local server
approval_policy = "never"

[features]
plugins = false

[model_providers.mock]
name = "codextest mock"
base_url = "http://127.0.0.1:1234/v1"
wire_api = "responses"
`

func TestNeedsLogin(t *testing.T) {
	env := func(kv ...string) func(string) string {
		return func(k string) string {
			for i := 0; i+1 < len(kv); i += 2 {
				if kv[i] == k {
					return kv[i+1]
				}
			}
			return ""
		}
	}
	tests := []struct {
		name     string
		in       LoginInput
		need     bool
		provider string
	}{
		{"default provider, nothing configured", LoginInput{}, true, "openai"},
		{"OPENAI_API_KEY in the env", LoginInput{Getenv: env("OPENAI_API_KEY", "sk-x")}, false, "openai"},
		{"CODEX_API_KEY in the env", LoginInput{Getenv: env("CODEX_API_KEY", "sk-x")}, false, "openai"},
		{"an empty key does not count", LoginInput{Getenv: env("OPENAI_API_KEY", "")}, true, "openai"},
		{"custom provider in config.toml", LoginInput{HomeConfig: mockHome}, false, "mock"},
		{"custom provider in codex.config", LoginInput{Overrides: []string{`model_provider="local"`, `model_providers.local.base_url="http://x"`}}, false, "local"},
		{"codex.config names openai over a custom config.toml", LoginInput{Overrides: []string{`model_provider="openai"`}, HomeConfig: mockHome}, true, "openai"},
		{"a bare -c value is a string", LoginInput{Overrides: []string{`model_provider=mock`}}, false, "mock"},
		{"custom provider that requires the OpenAI login", LoginInput{HomeConfig: "model_provider = \"corp\"\n[model_providers.corp]\nbase_url = \"https://corp\"\nrequires_openai_auth = true\n"}, true, "corp"},
		{"... unless an API key is set", LoginInput{HomeConfig: "model_provider = \"corp\"\n[model_providers.corp]\nrequires_openai_auth = true\n", Getenv: env("OPENAI_API_KEY", "k")}, false, "corp"},
		{"requires_openai_auth by -c", LoginInput{Overrides: []string{`model_provider="corp"`, `model_providers.corp.requires_openai_auth=true`}}, true, "corp"},
		{"built-in local provider", LoginInput{Overrides: []string{`model_provider="ollama"`}}, false, "ollama"},
		{"--oss", LoginInput{OSS: true}, false, "oss"},
		{"openai pointed elsewhere by config", LoginInput{HomeConfig: `openai_base_url = "http://proxy"`}, false, "openai"},
		{"openai pointed elsewhere by OPENAI_BASE_URL", LoginInput{Getenv: env("OPENAI_BASE_URL", "http://proxy")}, false, "openai"},
		{"profile in config.toml", LoginInput{HomeConfig: "profile = \"fast\"\nmodel_provider = \"openai\"\n[profiles.fast]\nmodel_provider = \"mock\"\n"}, false, "mock"},
		{"profile from --profile", LoginInput{Profile: "fast", HomeConfig: "[profiles.fast]\nmodel_provider = \"mock\"\n"}, false, "mock"},
		{"profile without a provider falls back", LoginInput{Profile: "slow", HomeConfig: "model_provider = \"mock\"\n[profiles.slow]\nmodel = \"x\"\n"}, false, "mock"},
		{"-c beats the profile", LoginInput{Overrides: []string{`model_provider="openai"`}, Profile: "fast", HomeConfig: "[profiles.fast]\nmodel_provider = \"mock\"\n"}, true, "openai"},
		{"dotted keys and quoted table names", LoginInput{HomeConfig: "model_provider = 'my.corp'\n[model_providers.\"my.corp\"]\nrequires_openai_auth = true\n"}, true, "my.corp"},
		{"a multi-line string is skipped", LoginInput{HomeConfig: "instructions = \"\"\"\nmodel_provider = \"mock\"\n\"\"\"\n"}, true, "openai"},
		{"a key in an array of tables is not top-level", LoginInput{HomeConfig: "[[hooks]]\nmodel_provider = \"mock\"\n"}, true, "openai"},
		{"commented out", LoginInput{HomeConfig: "# model_provider = \"mock\"\n"}, true, "openai"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := NeedsLogin(tt.in)
			if d.Needed != tt.need || d.Provider != tt.provider {
				t.Errorf("NeedsLogin = %+v; want needed=%v provider=%s", d, tt.need, tt.provider)
			}
			if d.Why == "" {
				t.Errorf("no reason given: %+v", d)
			}
		})
	}
}

func TestArgsSettings(t *testing.T) {
	over, profile, oss := ArgsSettings([]string{"-c", "a=1", "--config=b=2", "-cc=3", "--config", "d=4", "-p", "fast", "--oss", "--skip-git-repo-check"})
	if !reflect.DeepEqual(over, []string{"a=1", "b=2", "c=3", "d=4"}) || profile != "fast" || !oss {
		t.Fatalf("ArgsSettings = %q, %q, %v", over, profile, oss)
	}
	if _, p, _ := ArgsSettings([]string{"--profile=x", "-p"}); p != "" {
		t.Fatalf("a trailing -p without a value: profile %q", p)
	}
}

// The outputs are what Codex CLI 0.169.0 printed (on stderr) for an empty
// CODEX_HOME, a stored API key, a ChatGPT login and an unreadable auth.json.
func TestClassifyLoginStatus(t *testing.T) {
	tests := []struct {
		code int
		out  string
		want LoginState
	}{
		{1, "WARNING: proceeding, even though we could not create PATH aliases: …\nNot logged in\n", NotLoggedIn},
		{0, "API key configured - ***\nAuthentication is checked when you send a request.\n", LoggedIn},
		{0, "Logged in using ChatGPT\n", LoggedIn},
		{1, "Error checking login status: failed to deserialize CLI auth from file: expected value at line 1 column 1\n", LoginError},
		{1, "Error loading configuration: CODEX_HOME points to \"/x\", but that path does not exist\n", LoginError},
		{2, "error: unrecognized subcommand 'login'\n", LoginError},
		{-1, "", LoginError},
	}
	for _, tt := range tests {
		if got := ClassifyLoginStatus(tt.code, tt.out); got != tt.want {
			t.Errorf("ClassifyLoginStatus(%d, %q) = %v; want %v", tt.code, tt.out, got, tt.want)
		}
	}
}

func TestFlattenTOML(t *testing.T) {
	got := flattenTOML(mockHome + "\n[a . 'b.c']\nd = \"x # not a comment\" # a comment\nlist = [\n  \"y\",\n]\ne = 'z'\n")
	want := map[string]string{
		"model": "gpt-5.5", "model_provider": "mock", "approval_policy": "never", "features.plugins": "false",
		"model_providers.mock.name": "codextest mock", "model_providers.mock.base_url": "http://127.0.0.1:1234/v1",
		"model_providers.mock.wire_api": "responses", "a.b.c.d": "x # not a comment", "a.b.c.e": "z",
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("flattenTOML =\n%v\nwant\n%v", got, want)
	}
}

// config.toml is outside input: reading it never panics, whatever it holds.
func FuzzNeedsLogin(f *testing.F) {
	f.Add(mockHome, `model_provider="x"`)
	f.Add("[[a]]\n[b\nc = \"\"\"\nd = '''x'''\n[\"unterminated\n", "=")
	f.Add("a.\"b\".'c' = [1, [2,\n3]]\n{", "-c")
	f.Fuzz(func(t *testing.T, home, override string) {
		d := NeedsLogin(LoginInput{HomeConfig: home, Overrides: []string{override}})
		if d.Provider == "" && d.Needed {
			t.Fatalf("login needed for an empty provider: %+v", d)
		}
	})
}
