package redact

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestText(t *testing.T) {
	for _, tc := range []struct{ name, in, want string }{
		{"plain text", "nothing secret here: the token bucket has 5 tokens", "nothing secret here: the token bucket has 5 tokens"},
		{"openai", "export OPENAI_API_KEY=sk-proj-abcdefghijklmnopqrstuvwxyz012345", "export OPENAI_API_KEY=[REDACTED:openai]"},
		{"openai alone", "the key sk-abcdefghijklmnopqrstuvwx1234 leaked", "the key [REDACTED:openai] leaked"},
		{"github", "git clone https://ghp_abcdefghijklmnopqrstuvwxyz0123456789@github.com/x/y", "git clone https://[REDACTED:github]@github.com/x/y"},
		{"github fine-grained", "github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyz", "[REDACTED:github]"},
		{"aws", "aws id AKIAIOSFODNN7EXAMPLE and aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
			"aws id [REDACTED:aws-key-id] and aws_secret_access_key = [REDACTED:secret]"},
		{"bearer", "curl -H 'Authorization: Bearer abcdef0123456789abcdef.ghij' x", "curl -H 'Authorization: Bearer [REDACTED:bearer]' x"},
		{"basic", "Authorization: Basic dXNlcjpwYXNzd29yZDEyMzQ1Ng==", "Authorization: Basic [REDACTED:basic-auth]"},
		{"url password", "DATABASE_URL=postgres://app:s3cr3t-pw@db:5432/app", "DATABASE_URL=postgres://app:[REDACTED:url-password]@db:5432/app"},
		{"assignment", `password: "hunter2hunter2"`, `password: "[REDACTED:secret]"`},
		{"assignment json", `{"client_secret": "abcdefgh12345678"}`, `{"client_secret": "[REDACTED:secret]"}`},
		{"short value kept", "password=abc", "password=abc"},
		{"slack", "xoxb-1234567890-abcdefghij", "[REDACTED:slack]"},
		{"google", "key AIzaSyA1234567890abcdefghijklmnopqrstuv", "key [REDACTED:google]"},
		{"stripe", "sk_live_0123456789abcdefABCD", "[REDACTED:stripe]"},
		{"jwt", "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U", "[REDACTED:jwt]"},
		{"private key", "a\n-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\n-----END OPENSSH PRIVATE KEY-----\nb", "a\n[REDACTED:private-key]\nb"},
		{"private key cut", "-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEA", "[REDACTED:private-key]"},
		{"hugging face", "hf_abcdefghijklmnopqrstuvwxyzABCDEFGH", "[REDACTED:huggingface]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Text(tc.in); got != tc.want {
				t.Errorf("Text(%q)\n = %q\nwant %q", tc.in, got, tc.want)
			}
			if again := Text(tc.want); again != tc.want {
				t.Errorf("not idempotent: %q", again)
			}
		})
	}
	if _, n := Count("sk-abcdefghijklmnopqrstuvwx1234 and ghp_abcdefghijklmnopqrstuvwxyz0123456789"); n != 2 {
		t.Errorf("count %d", n)
	}
}

func FuzzText(f *testing.F) {
	for _, s := range []string{"password=hunter2hunter2", "sk-abcdefghijklmnopqrstuvwx1234", "https://u:p4ssw0rd!@h/", "-----BEGIN PRIVATE KEY-----\nx", "Bearer abcdefghijklmnopqrstu"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		out := Text(s)
		if Text(out) != out {
			t.Fatalf("not idempotent on %q: %q then %q", s, out, Text(out))
		}
		if utf8.ValidString(s) && !utf8.ValidString(out) {
			t.Fatalf("invalid UTF-8 out of %q", s)
		}
		for _, secret := range []string{"sk-abcdefghijklmnopqrstuvwx1234", "ghp_abcdefghijklmnopqrstuvwxyz0123456789"} {
			if strings.Contains(s, " "+secret+" ") && strings.Contains(out, secret) {
				t.Fatalf("%s left in %q", secret, out)
			}
		}
	})
}
