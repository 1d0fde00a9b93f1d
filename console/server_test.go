package console

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/battyhq/batty/control"
	"github.com/battyhq/batty/project"
)

// fakeTeam is a team in memory, its transcripts in a directory; its
// inboxes, marks and event log are in a state directory of its own
// (stateFiles; see pages_test.go for the rest).
type fakeTeam struct {
	stateFiles
	dir string
	fakePages

	mu     sync.Mutex
	st     control.Status
	paused int
	sent   []string
}

func (f *fakeTeam) Status(context.Context) (*control.Status, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	st := f.st
	st.Agents = append([]control.AgentStatus(nil), f.st.Agents...)
	return &st, nil
}

func (f *fakeTeam) Pause(context.Context) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.paused++
	f.st.Dispatch.Paused = true
	return nil
}

func (f *fakeTeam) Resume(context.Context) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.st.Dispatch.Paused = false
	return nil
}

func (f *fakeTeam) Send(_ context.Context, agent, body string) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if agent != "eng" {
		return "", errors.New("no such agent")
	}
	f.sent = append(f.sent, body)
	return "20260101T000000.000000000Z-00000001", nil
}

func (f *fakeTeam) Transcript(agent string) string { return filepath.Join(f.dir, agent+".log") }

func (f *fakeTeam) set(change func(*control.Status)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	change(&f.st)
}

// hostile is a reply no page may render as markup or pass to a terminal.
const hostile = "<script>alert(1)</script><img src=x onerror=alert(2)>\x1b]52;c;ZXZpbA==\x07\x1b[31mred\x1b[0m"

// newConsole serves a console of a one-agent team on a real socket.
func newConsole(t *testing.T) (*httptest.Server, *Server, *fakeTeam) {
	t.Helper()
	dir := t.TempDir()
	fb := &fakeTeam{stateFiles: stateFiles{Layout: project.Layout{Dir: filepath.Join(dir, "state")}}, dir: dir, st: control.Status{Team: "crew", Agents: []control.AgentStatus{
		{Name: "eng", Role: "eng", State: "idle", LastError: hostile, TurnsCompleted: 1},
	}}}
	ts := httptest.NewUnstartedServer(nil)
	s, err := New(Config{Addr: ts.Listener.Addr().String(), Token: "secret-token", Team: fb})
	if err != nil {
		t.Fatal(err)
	}
	ts.Config.Handler = s
	ts.Start()
	t.Cleanup(func() { s.Close(); ts.Close() })
	return ts, s, fb
}

// client returns an HTTP client that does not follow redirects.
func client() *http.Client {
	return &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

// logIn logs in with the token and returns the session cookie.
func logIn(t *testing.T, ts *httptest.Server) *http.Cookie {
	t.Helper()
	resp, err := client().Get(ts.URL + "/login?token=secret-token")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/" {
		t.Fatalf("login: %s, Location %q", resp.Status, resp.Header.Get("Location"))
	}
	cs := resp.Cookies()
	if len(cs) != 1 || !cs[0].HttpOnly || cs[0].SameSite != http.SameSiteStrictMode || cs[0].Path != "/" {
		t.Fatalf("login cookie: %+v", cs)
	}
	if strings.Contains(cs[0].Value, "secret-token") {
		t.Fatal("the cookie holds the token")
	}
	return cs[0]
}

func do(t *testing.T, req *http.Request, c *http.Cookie) (*http.Response, string) {
	t.Helper()
	if c != nil {
		req.AddCookie(c)
	}
	resp, err := client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, string(b)
}

func get(t *testing.T, ts *httptest.Server, path string, c *http.Cookie) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest("GET", ts.URL+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	return do(t, req, c)
}

func post(t *testing.T, ts *httptest.Server, path string, form url.Values, c *http.Cookie, origin string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest("POST", ts.URL+path, strings.NewReader(form.Encode()))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if origin != "" {
		req.Header.Set("Origin", origin)
	}
	return do(t, req, c)
}

// csrfOn returns the CSRF token of the page's forms.
func csrfOn(t *testing.T, page string) string {
	t.Helper()
	_, rest, ok := strings.Cut(page, `name="csrf" value="`)
	if !ok {
		t.Fatalf("no CSRF token on the page:\n%s", page)
	}
	tok, _, _ := strings.Cut(rest, `"`)
	return tok
}

func TestEveryRequestIsAuthenticated(t *testing.T) {
	ts, _, _ := newConsole(t)
	for _, path := range []string{"/", "/agent/eng", "/events", "/agent/eng/transcript", "/static/live.js", "/nothing"} {
		resp, body := get(t, ts, path, nil)
		if resp.StatusCode != http.StatusUnauthorized || strings.Contains(body, "eng") {
			t.Errorf("GET %s without a cookie: %s %q", path, resp.Status, body)
		}
		resp, _ = get(t, ts, path, &http.Cookie{Name: "batty_console_" + ts.URL[strings.LastIndex(ts.URL, ":")+1:], Value: "forged"})
		if resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("GET %s with a forged cookie: %s", path, resp.Status)
		}
	}
	for _, path := range []string{"/login?token=wrong", "/login?token=", "/login?token=secret-tokenX"} {
		resp, _ := get(t, ts, path, nil)
		if resp.StatusCode != http.StatusForbidden || len(resp.Cookies()) != 0 {
			t.Errorf("GET %s: %s, cookies %v", path, resp.Status, resp.Cookies())
		}
	}
	c := logIn(t, ts)
	resp, body := get(t, ts, "/", c)
	if resp.StatusCode != 200 || !strings.Contains(body, `href="/agent/eng"`) {
		t.Fatalf("team page: %s\n%s", resp.Status, body)
	}
	for k, v := range map[string]string{"X-Frame-Options": "DENY", "X-Content-Type-Options": "nosniff", "Referrer-Policy": "same-origin"} {
		if resp.Header.Get(k) != v {
			t.Errorf("%s: %q", k, resp.Header.Get(k))
		}
	}
	if csp := resp.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "script-src 'self'") || strings.Contains(csp, "unsafe-inline") {
		t.Errorf("CSP %q", csp)
	}
	// DNS rebinding: the right cookie, another name for the address.
	req, _ := http.NewRequest("GET", ts.URL+"/", nil)
	req.Host = "evil.example:" + ts.URL[strings.LastIndex(ts.URL, ":")+1:]
	if resp, _ := do(t, req, c); resp.StatusCode != http.StatusMisdirectedRequest {
		t.Fatalf("a foreign Host: %s", resp.Status)
	}
}

func TestStateChangesNeedSameOriginAndCSRF(t *testing.T) {
	ts, _, fb := newConsole(t)
	c := logIn(t, ts)
	_, page := get(t, ts, "/", c)
	csrf := csrfOn(t, page)
	for _, tc := range []struct {
		name   string
		form   url.Values
		cookie *http.Cookie
		origin string
		status int
	}{
		{"no cookie", url.Values{"csrf": {csrf}}, nil, ts.URL, http.StatusUnauthorized},
		{"no CSRF token", url.Values{}, c, ts.URL, http.StatusForbidden},
		{"a wrong CSRF token", url.Values{"csrf": {"x" + csrf}}, c, ts.URL, http.StatusForbidden},
		{"cross-origin", url.Values{"csrf": {csrf}}, c, "http://evil.example", http.StatusForbidden},
		{"no origin", url.Values{"csrf": {csrf}}, c, "", http.StatusForbidden},
	} {
		if resp, _ := post(t, ts, "/pause", tc.form, tc.cookie, tc.origin); resp.StatusCode != tc.status {
			t.Errorf("%s: %s, want %d", tc.name, resp.Status, tc.status)
		}
	}
	if fb.paused != 0 {
		t.Fatal("a refused request paused the team")
	}
	resp, _ := post(t, ts, "/pause", url.Values{"csrf": {csrf}}, c, ts.URL)
	if resp.StatusCode != http.StatusSeeOther || fb.paused != 1 {
		t.Fatalf("pause: %s, paused %d", resp.Status, fb.paused)
	}
	resp, _ = post(t, ts, "/agent/eng/send", url.Values{"csrf": {csrf}, "body": {"hello <b>"}}, c, ts.URL)
	if resp.StatusCode != http.StatusSeeOther || !strings.HasPrefix(resp.Header.Get("Location"), "/agent/eng?sent=") || len(fb.sent) != 1 || fb.sent[0] != "hello <b>" {
		t.Fatalf("send: %s %q %q", resp.Status, resp.Header.Get("Location"), fb.sent)
	}
	if resp, _ := post(t, ts, "/agent/nobody/send", url.Values{"csrf": {csrf}, "body": {"x"}}, c, ts.URL); resp.StatusCode != http.StatusNotFound {
		t.Fatalf("send to no agent: %s", resp.Status)
	}
}

func TestAgentTextIsInert(t *testing.T) {
	ts, _, fb := newConsole(t)
	if err := os.WriteFile(fb.Transcript("eng"), []byte("ECHO: "+hostile+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	c := logIn(t, ts)
	for _, path := range []string{"/", "/agent/eng"} {
		_, body := get(t, ts, path, c)
		for _, bad := range []string{"<script>alert", "<img", "\x1b", "\x07"} {
			if strings.Contains(body, bad) {
				t.Errorf("%s holds %q:\n%s", path, bad, body)
			}
		}
		if !strings.Contains(body, "&lt;script&gt;alert(1)&lt;/script&gt;") {
			t.Errorf("%s does not show the reply as text:\n%s", path, body)
		}
	}
}

// sse reads server-sent events from a stream.
type sse struct{ r *bufio.Reader }

// next returns the next event's name and data.
func (s sse) next(t *testing.T) (string, string) {
	t.Helper()
	var name string
	var data []string
	for {
		line, err := s.r.ReadString('\n')
		if err != nil {
			t.Fatalf("event stream: %v", err)
		}
		line = strings.TrimSuffix(line, "\n")
		switch {
		case line == "" && name != "":
			return name, strings.Join(data, "\n")
		case strings.HasPrefix(line, "event: "):
			name = line[len("event: "):]
		case strings.HasPrefix(line, "data: "):
			data = append(data, line[len("data: "):])
		}
	}
}

func openStream(t *testing.T, ts *httptest.Server, path string, c *http.Cookie) sse {
	t.Helper()
	req, _ := http.NewRequest("GET", ts.URL+path, nil)
	req.AddCookie(c)
	resp, err := client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("%s: %s %s", path, resp.Status, resp.Header.Get("Content-Type"))
	}
	return sse{bufio.NewReader(resp.Body)}
}

func TestLiveStatus(t *testing.T) {
	ts, s, fb := newConsole(t)
	c := logIn(t, ts)
	ev := openStream(t, ts, "/events", c)
	name, data := ev.next(t)
	if name != "status" || !strings.Contains(data, `<td data-label="turns" class="turns">1</td>`) || strings.Contains(data, "<script>") {
		t.Fatalf("first event %s:\n%s", name, data)
	}
	fb.set(func(st *control.Status) { st.Agents[0].TurnsCompleted = 2 })
	s.Notify()
	for {
		_, data = ev.next(t)
		if strings.Contains(data, `class="turns">2</td>`) {
			break
		}
	}
	if resp, _ := get(t, ts, "/events?agent=nobody", c); resp.StatusCode != http.StatusNotFound {
		t.Fatalf("the live status of no agent: %s", resp.Status)
	}
	agent := openStream(t, ts, "/events?agent=eng", c)
	if name, data := agent.next(t); name != "status" || !strings.Contains(data, `<dd class="turns">2</dd>`) {
		t.Fatalf("agent event %s:\n%s", name, data)
	}
}

func TestLiveTranscript(t *testing.T) {
	ts, _, fb := newConsole(t)
	path := fb.Transcript("eng")
	if err := os.WriteFile(path, []byte("before\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	c := logIn(t, ts)
	ev := openStream(t, ts, "/agent/eng/transcript", c)
	if name, _ := ev.next(t); name != "reset" {
		t.Fatalf("first event %q", name)
	}
	if name, data := ev.next(t); name != "line" || data != "before" {
		t.Fatalf("history: %s %q", name, data)
	}
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString("ECHO: " + hostile + "\n"); err != nil {
		t.Fatal(err)
	}
	name, data := ev.next(t)
	if name != "line" || !strings.HasPrefix(data, "ECHO: <script>") || strings.ContainsAny(data, "\x1b\x07") {
		t.Fatalf("new line: %s %q", name, data)
	}
	if resp, _ := get(t, ts, "/agent/nobody/transcript", c); resp.StatusCode != http.StatusNotFound {
		t.Fatalf("transcript of no agent: %s", resp.Status)
	}
}

// The team's metrics, when on, are served behind the login; without them
// there is no /metrics.
func TestMetricsBehindTheLogin(t *testing.T) {
	ts, _, _ := newConsole(t)
	c := logIn(t, ts)
	if resp, _ := get(t, ts, "/metrics", c); resp.StatusCode != http.StatusNotFound {
		t.Fatalf("GET /metrics with no metrics: %s", resp.Status)
	}
	dir := t.TempDir()
	fb := &fakeTeam{stateFiles: stateFiles{Layout: project.Layout{Dir: filepath.Join(dir, "state")}}, dir: dir}
	ts2 := httptest.NewUnstartedServer(nil)
	metrics := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "batty_up 1\n") })
	s, err := New(Config{Addr: ts2.Listener.Addr().String(), Token: "secret-token", Team: fb, Metrics: metrics})
	if err != nil {
		t.Fatal(err)
	}
	ts2.Config.Handler = s
	ts2.Start()
	t.Cleanup(func() { s.Close(); ts2.Close() })
	if resp, body := get(t, ts2, "/metrics", nil); resp.StatusCode != http.StatusUnauthorized || strings.Contains(body, "batty_up") {
		t.Fatalf("GET /metrics without a session: %s %q", resp.Status, body)
	}
	if resp, body := get(t, ts2, "/metrics", logIn(t, ts2)); resp.StatusCode != 200 || body != "batty_up 1\n" {
		t.Fatalf("GET /metrics: %s %q", resp.Status, body)
	}
}
