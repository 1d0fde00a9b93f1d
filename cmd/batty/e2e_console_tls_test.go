package main

import (
	"crypto/tls"
	"crypto/x509"
	"net/http"
	"net/http/cookiejar"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/battyhq/batty/console/consoletest"
	"github.com/battyhq/batty/control"
)

// appendTeam adds lines to the team file in dir.
func appendTeam(t *testing.T, dir, lines string) {
	t.Helper()
	f, err := os.OpenFile(filepath.Join(dir, "team.yaml"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(lines); err != nil {
		t.Fatal(err)
	}
}

var tlsLoginRE = regexp.MustCompile(`batty: console: (https://127\.0\.0\.1:\d+/)login\?token=\S+`)

// TestE2EConsoleOverTLS: with tls_cert and tls_key the daemon serves
// the console over HTTPS; `batty web` gives its https address; a client
// that trusts the certificate logs in (a Secure cookie) and sees the team;
// plain HTTP gets no page.
func TestE2EConsoleOverTLS(t *testing.T) {
	dir := fakeTeam(t, "tlsweb", 1)
	cert, key, leaf := consoletest.SelfSigned(t, t.TempDir(), "127.0.0.1")
	appendTeam(t, dir, "console:\n  listen: \"127.0.0.1:0\"\n  tls_cert: "+cert+"\n  tls_key: "+key+"\n")
	t.Cleanup(func() { runBattyIn(t, dir, nil, "", "stop", "--timeout", "5s") })
	if out := mustBatty(t, dir, "start", "--no-tmux"); !strings.Contains(out, "batty: console at https://127.0.0.1:") {
		t.Fatalf("batty start does not give the https address:\n%s", out)
	}
	waitJSONStatus(t, dir, "an idle agent", func(st control.Status) bool { return len(st.Agents) == 1 && st.Agents[0].State == "idle" })
	m := tlsLoginRE.FindStringSubmatch(mustBatty(t, dir, "web", "--no-open"))
	if m == nil {
		t.Fatal("batty web prints no https login address")
	}
	login, home := m[0][len("batty: console: "):], m[1]

	pool := x509.NewCertPool()
	pool.AddCert(leaf)
	jar, err := cookiejar.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	var secure bool
	c := &http.Client{Jar: jar, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}},
		CheckRedirect: func(req *http.Request, _ []*http.Request) error {
			for _, ck := range req.Response.Cookies() {
				secure = secure || ck.Secure
			}
			return nil
		}}
	resp, err := c.Get(login)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 || resp.Request.URL.String() != home || !secure {
		t.Fatalf("login over https: %s at %s, secure cookie %v", resp.Status, resp.Request.URL, secure)
	}
	// Plain HTTP on the same port: no page, no token.
	plain := "http://" + strings.TrimPrefix(login, "https://")
	if resp, err := http.Get(plain); err == nil {
		resp.Body.Close()
		if resp.StatusCode == 200 {
			t.Fatalf("plain http served the login: %s", resp.Status)
		}
	}
}

// TestValidateConsoleListen: a console on a wide address needs TLS, or
// insecure: true, which validate accepts with a warning naming the file.
func TestValidateConsoleListen(t *testing.T) {
	dir := fakeTeam(t, "wide", 1)
	appendTeam(t, dir, "console: {listen: \"0.0.0.0:8420\"}\n")
	_, errOut, code := runBattyIn(t, dir, nil, "", "validate")
	if code != 1 || !strings.Contains(errOut, `console.listen "0.0.0.0:8420" is not a loopback address: it needs TLS (give tls_cert and tls_key`) {
		t.Fatalf("validate of a wide console without TLS: exit %d\n%s", code, errOut)
	}
	if err := os.WriteFile(filepath.Join(dir, "team.yaml"), []byte(strings.Replace(readFile(t, filepath.Join(dir, "team.yaml")),
		`console: {listen: "0.0.0.0:8420"}`, `console: {listen: "0.0.0.0:8420", insecure: true}`, 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	out, errOut, code := runBattyIn(t, dir, nil, "", "validate")
	if code != 0 || !strings.Contains(out, "valid") || !strings.Contains(errOut, `batty: warning: team.yaml: console.listen "0.0.0.0:8420" is not a loopback address and insecure: true serves it without TLS`) {
		t.Fatalf("validate of an insecure wide console: exit %d\n%s\n%s", code, out, errOut)
	}
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
