package codex

import (
	"reflect"
	"strings"
	"testing"
)

func TestExecArgs(t *testing.T) {
	const id = "01a1fe06-da19-7320-bb56-f999f5fa1a4a"
	full := ExecOptions{
		Model:            "gpt-5.5",
		ReasoningEffort:  "high",
		Sandbox:          SandboxWorkspaceWrite,
		ApprovalPolicy:   ApprovalNever,
		AddDirs:          []string{"/srv/project/.batty/inboxes"},
		Config:           []string{`model_provider="mock"`, "shell_environment_policy.inherit=all"},
		OutputSchema:     "/srv/project/schema.json",
		ExtraArgs:        []string{"--ephemeral", "-C", "/srv/project"},
		SkipGitRepoCheck: true,
	}
	fullFlags := []string{
		"--skip-git-repo-check",
		"-m", "gpt-5.5",
		"-c", `model_reasoning_effort="high"`,
		"-s", "workspace-write",
		"-c", `approval_policy="never"`,
		"--add-dir", "/srv/project/.batty/inboxes",
		"-c", `model_provider="mock"`,
		"-c", "shell_environment_policy.inherit=all",
		"--output-schema", "/srv/project/schema.json",
		"--ephemeral", "-C", "/srv/project",
	}
	cases := []struct {
		name   string
		opts   ExecOptions
		resume string
		want   []string
	}{
		{"zero", ExecOptions{}, "", []string{"exec", "--json", "-"}},
		{"zero resume", ExecOptions{}, id, []string{"exec", "--json", "resume", id, "-"}},
		// The argv the fixtures were recorded with.
		{"fixture first turn", ExecOptions{SkipGitRepoCheck: true}, "", []string{"exec", "--json", "--skip-git-repo-check", "-"}},
		{"fixture resume", ExecOptions{SkipGitRepoCheck: true}, id, []string{"exec", "--json", "--skip-git-repo-check", "resume", id, "-"}},
		{"full", full, "", append(append([]string{"exec", "--json"}, fullFlags...), "-")},
		{"full resume", full, id, append(append([]string{"exec", "--json"}, fullFlags...), "resume", id, "-")},
		{"schema only", ExecOptions{OutputSchema: "s.json"}, "", []string{"exec", "--json", "--output-schema", "s.json", "-"}},
		{"quoted effort", ExecOptions{ReasoningEffort: `a"b\c`}, "", []string{"exec", "--json", "-c", `model_reasoning_effort="a\"b\\c"`, "-"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := ExecArgs(c.opts, c.resume)
			if !reflect.DeepEqual(got, c.want) {
				t.Errorf("ExecArgs:\n got  %q\n want %q", got, c.want)
			}
			if got[len(got)-1] != "-" {
				t.Error("prompt is not read from stdin")
			}
		})
	}
	// ExecArgs must not alias the caller's slices.
	a := ExecArgs(full, "")
	a[len(a)-2] = "changed"
	if full.ExtraArgs[2] != "/srv/project" {
		t.Error("ExecArgs result aliases ExtraArgs")
	}
}

func TestExecOptionsValidate(t *testing.T) {
	good := []ExecOptions{
		{},
		{Sandbox: SandboxReadOnly, ApprovalPolicy: ApprovalOnRequest},
		{Sandbox: SandboxDangerFullAccess, ApprovalPolicy: ApprovalUntrusted, Config: []string{"a.b=1"}},
		{ApprovalPolicy: ApprovalOnFailure, Model: "o3"},
	}
	for _, o := range good {
		if err := o.Validate(); err != nil {
			t.Errorf("%+v: %v", o, err)
		}
	}
	bad := []ExecOptions{
		{Sandbox: "full"},
		{ApprovalPolicy: "always"},
		{Config: []string{"novalue"}},
		{Config: []string{"=x"}},
		{Model: "a\nb"},
		{AddDirs: []string{""}},
		{OutputSchema: "--json"},
	}
	for _, o := range bad {
		if err := o.Validate(); err == nil || !strings.HasPrefix(err.Error(), "codex: ") {
			t.Errorf("%+v: err %v, want an error", o, err)
		}
	}
}

func TestTOMLString(t *testing.T) {
	cases := map[string]string{
		"high":          `"high"`,
		"":              `""`,
		`say "hi"`:      `"say \"hi\""`,
		`C:\dir`:        `"C:\\dir"`,
		"a\nb\tc\r\b\f": `"a\nb\tc\r\b\f"`,
		"\x00\x1f\x7f":  `"\u0000\u001f\u007f"`,
		"naïve ’quote’": `"naïve ’quote’"`,
	}
	for in, want := range cases {
		if got := TOMLString(in); got != want {
			t.Errorf("TOMLString(%q) = %s, want %s", in, got, want)
		}
	}
}

func TestIsThreadID(t *testing.T) {
	for s, want := range map[string]bool{
		"01a1fe06-da19-7320-bb56-f999f5fa1a4a":   true,
		"01A1FE06-DA19-7320-BB56-F999F5FA1A4A":   true,
		"not-a-thread-id":                        false,
		"":                                       false,
		"01a1fe06da197320bb56f999f5fa1a4a":       false,
		"-01a1fe06-da19-7320-bb56-f999f5fa1a4":   false,
		"01a1fe06-da19-7320-bb56-f999f5fa1a4a\n": false,
	} {
		if IsThreadID(s) != want {
			t.Errorf("IsThreadID(%q) != %v", s, want)
		}
	}
}
