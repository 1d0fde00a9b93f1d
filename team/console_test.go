package team

import (
	"strings"
	"testing"
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
		{name: "tls not yet", src: "console: {tls_cert: x}\n", problem: "tls_cert"},
		{name: "a name", src: "console: {listen: \"localhost:80\"}\n", problem: "must be an IP address"},
		{name: "wide", src: "console: {listen: \"0.0.0.0:8420\"}\n", problem: "only on a loopback address"},
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
