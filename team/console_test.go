package team

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/battyhq/batty/console/consoletest"
)

func TestConsoleSetting(t *testing.T) {
	const head = "name: t\nroles:\n  - name: a\n"
	for _, tc := range []struct {
		name, src string
		want      Console
		problem   string
	}{
		{name: "absent", src: "", want: Console{Listen: DefaultConsoleListen}},
		{name: "null", src: "console:\n", want: Console{Listen: DefaultConsoleListen}},
		{name: "off", src: "console: off\n", want: Console{Off: true, Listen: DefaultConsoleListen}},
		{name: "false", src: "console: false\n", want: Console{Off: true, Listen: DefaultConsoleListen}},
		{name: "listen", src: "console: {listen: \"127.0.0.1:8420\"}\n", want: Console{Listen: "127.0.0.1:8420"}},
		{name: "ipv6", src: "console:\n  listen: \"[::1]:0\"\n", want: Console{Listen: "[::1]:0"}},
		{name: "on is no word of it", src: "console: on\n", problem: "console must be off or a mapping"},
		{name: "unknown key", src: "console: {listen: \"127.0.0.1:1\", port: 3}\n", problem: "port"},
		{name: "a name", src: "console: {listen: \"localhost:80\"}\n", problem: "must be an IP address"},
		{name: "wide", src: "console: {listen: \"0.0.0.0:8420\"}\n", problem: `console.listen "0.0.0.0:8420" is not a loopback address: it needs TLS (give tls_cert and tls_key`},
		{name: "wide, insecure", src: "console: {listen: \"0.0.0.0:8420\", insecure: true}\n", want: Console{Listen: "0.0.0.0:8420", Insecure: true}},
		{name: "insecure not a bool", src: "console: {insecure: \"yes\"}\n", problem: "console.insecure must be true or false"},
		{name: "no such cert", src: "console: {tls_cert: nope.pem, tls_key: nope.key}\n", problem: `console.tls_cert "nope.pem" does not exist`},
		{name: "no port", src: "console: {listen: \"127.0.0.1\"}\n", problem: "not host:port"},
		{name: "bad port", src: "console: {listen: \"127.0.0.1:70000\"}\n", problem: "0 to 65535"},
		{name: "number", src: "console: {listen: 8420}\n", problem: "must be a string"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, msg, _ := loadString(t, head+tc.src)
			if tc.problem != "" {
				if !strings.Contains(msg, tc.problem) {
					t.Fatalf("error %q does not say %q", msg, tc.problem)
				}
				return
			}
			if msg != "" {
				t.Fatal(msg)
			}
			if cfg.Console != tc.want {
				t.Fatalf("console %+v, want %+v", cfg.Console, tc.want)
			}
		})
	}
}

// A console with TLS: the certificate and key files, relative to the team
// file or absolute, both needed, the key readable by its owner only and
// matching the certificate. A wide address with TLS needs no insecure.
func TestConsoleTLS(t *testing.T) {
	const head = "name: t\nroles:\n  - name: a\n"
	certs := t.TempDir()
	cert, key, _ := consoletest.SelfSigned(t, certs, "127.0.0.1")
	other := filepath.Join(certs, "other")
	if err := os.Mkdir(other, 0o700); err != nil {
		t.Fatal(err)
	}
	_, otherKey, _ := consoletest.SelfSigned(t, other, "127.0.0.1")
	open := filepath.Join(certs, "open.pem")
	b, err := os.ReadFile(key)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(open, b, 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, msg, _ := loadString(t, head+"console: {listen: \"0.0.0.0:0\", tls_cert: "+cert+", tls_key: "+key+"}\n")
	if msg != "" {
		t.Fatal(msg)
	}
	if want := (Console{Listen: "0.0.0.0:0", TLSCert: cert, TLSKey: key}); cfg.Console != want || !cfg.Console.TLS() || cfg.Console.Warning() != "" {
		t.Fatalf("console %+v, want %+v", cfg.Console, want)
	}
	for _, c := range []struct{ name, src, problem string }{
		{"cert only", "console: {tls_cert: " + cert + "}\n", "console.tls_key is missing (give both tls_cert"},
		{"key only", "console: {tls_key: " + key + "}\n", "console.tls_cert is missing"},
		{"a key others may read", "console: {tls_cert: " + cert + ", tls_key: " + open + "}\n", "others than its owner may read it (mode 0644) (chmod 600 " + open + ")"},
		{"another certificate's key", "console: {tls_cert: " + cert + ", tls_key: " + otherKey + "}\n", "cannot be used: tls: private key does not match public key"},
	} {
		if _, msg, _ := loadString(t, head+c.src); !strings.Contains(msg, c.problem) {
			t.Errorf("%s: error %q does not say %q", c.name, msg, c.problem)
		}
	}
}

func TestConsoleWarning(t *testing.T) {
	for _, c := range []struct {
		c    Console
		warn bool
	}{
		{Console{Listen: "0.0.0.0:8420", Insecure: true}, true},
		{Console{Listen: "[::]:8420", Insecure: true}, true},
		{Console{Listen: "127.0.0.1:8420", Insecure: true}, false},
		{Console{Listen: "0.0.0.0:8420", Insecure: true, TLSCert: "c", TLSKey: "k"}, false},
		{Console{Listen: "0.0.0.0:8420", Insecure: true, Off: true}, false},
	} {
		if got := c.c.Warning(); (got != "") != c.warn || (c.warn && !strings.Contains(got, "in the clear")) {
			t.Errorf("%+v: warning %q", c.c, got)
		}
	}
}
