package console

import (
	"context"
	"encoding/json"
	"errors"
	"github.com/battyhq/batty/alerts"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/battyhq/batty/blame"
	"github.com/battyhq/batty/control"
	"github.com/battyhq/batty/eventlog"
	"github.com/battyhq/batty/inbox"
	"github.com/battyhq/batty/journal"
	"github.com/battyhq/batty/landing"
	"github.com/battyhq/batty/project"
	"github.com/battyhq/batty/protocol"
	"github.com/battyhq/batty/searchindex"
	"github.com/battyhq/batty/team"
	"github.com/battyhq/batty/teamstatus"
	"github.com/battyhq/batty/threads"
	"github.com/hashicorp/go-hclog"
)

// fakePages records what the daemon's control requests of the pages were
// asked, and holds the merge queue's requests and a branch's diff.
type fakePages struct {
	cancels  []string // id, with " interrupt" when asked to
	resets   []string // agent: reason
	approved []string
	rejected []string // id: reason
	requests []landing.Request
	diff     string
	blamed   []string // rev path
	blameRes *blame.Result
	shown    *blame.Shown
}

// The crew's memory of the fake: the threads and the search read the
// turn journal of its state directory (written with journal.Append), as
// the daemon's; blame and show answer what the test set.

func (f *fakeTeam) Threads(context.Context) ([]threads.Thread, error) {
	ld, err := threads.Load(f.Layout, map[string]string{"eng": "eng"})
	if err != nil {
		return nil, err
	}
	return threads.Build(ld.Records), nil
}

func (f *fakeTeam) Conversation(_ context.Context, id string) (threads.Show, error) {
	ld, err := threads.Load(f.Layout, map[string]string{"eng": "eng"})
	if err != nil {
		return threads.Show{}, err
	}
	th, err := threads.Find(threads.Build(ld.Records), id)
	if err != nil {
		return threads.Show{}, err
	}
	return threads.Show{Thread: th, Turns: threads.Conversation(ld.Journal, th.Agent, th.ID)}.Redact(), nil
}

func (f *fakeTeam) Search(ctx context.Context, q searchindex.Query) (searchindex.Result, error) {
	return searchindex.Search(ctx, f.Layout, q)
}

func (f *fakeTeam) Blame(_ context.Context, rev, path string, _ blame.Range) (blame.Result, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.blamed = append(f.blamed, rev+" "+path)
	if f.blameRes == nil {
		return blame.Result{}, errors.New("blame " + path + ": no such path in HEAD")
	}
	return *f.blameRes, nil
}

func (f *fakeTeam) Show(_ context.Context, what string) (blame.Shown, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.shown == nil || f.shown.Query != what {
		return blame.Shown{}, errors.New(what + " is neither a message nor a commit")
	}
	return *f.shown, nil
}

func (f *fakeTeam) Cancel(_ context.Context, id string, interrupt bool) (control.CancelResult, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if interrupt {
		f.cancels = append(f.cancels, id+" interrupt")
		return control.CancelResult{ID: id, Box: "eng", Result: control.CancelInterrupting}, nil
	}
	f.cancels = append(f.cancels, id)
	return control.CancelResult{ID: id, Box: "eng", Result: control.CancelDone}, nil
}

func (f *fakeTeam) Reset(_ context.Context, agent, reason string) (bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.resets = append(f.resets, agent+": "+reason)
	return false, nil
}

func (f *fakeTeam) Approve(_ context.Context, id string) (control.Response, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.approved = append(f.approved, id)
	return control.Response{OK: true, Landing: &control.LandingStatus{ID: id}}, nil
}

func (f *fakeTeam) Reject(_ context.Context, id, reason string) (control.Response, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.rejected = append(f.rejected, id+": "+reason)
	return control.Response{OK: true, Landing: &control.LandingStatus{ID: id}}, nil
}

func (f *fakeTeam) Landings(context.Context) ([]landing.Request, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]landing.Request(nil), f.requests...), nil
}

func (f *fakeTeam) Diff(_ context.Context, agent string, w io.Writer) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.diff == "" {
		return errors.New("diff: " + agent + " has no branch batty/" + agent)
	}
	_, err := io.WriteString(w, f.diff)
	return err
}

// deliver puts a message into box of the fake's inboxes.
func deliver(t *testing.T, fb *fakeTeam, box string, m inbox.Message) inbox.Message {
	t.Helper()
	bx, err := fb.box(box)
	if err != nil {
		t.Fatal(err)
	}
	got, err := bx.Deliver(m)
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// pagePosts are the requests of the pages that change something.
var pagePosts = []string{"/agent/eng/cancel", "/agent/eng/reset", "/inbox/read", "/inbox/X/answer",
	"/landing/L1/approve", "/landing/L1/reject", "/alerts/seen"}

func TestPagesAreAuthenticated(t *testing.T) {
	ts, _, fb := newConsole(t)
	for _, path := range []string{"/inbox", "/landings", "/landing/L1", "/alerts", "/events?page=inbox", "/threads", "/thread/0199",
		"/search?q=x", "/blame?path=a.go", "/show?id=m-1", "/events?page=threads"} {
		if resp, body := get(t, ts, path, nil); resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("GET %s without a cookie: %s %q", path, resp.Status, body)
		}
	}
	c := logIn(t, ts)
	_, page := get(t, ts, "/", c)
	csrf := csrfOn(t, page)
	form := url.Values{"csrf": {csrf}, "id": {"20260101T000000.000000000Z-00000001"}, "reason": {"r"}, "body": {"b"}}
	for _, path := range pagePosts {
		for _, tc := range []struct {
			name   string
			csrf   string
			cookie *http.Cookie
			origin string
			status int
		}{
			{"no cookie", csrf, nil, ts.URL, http.StatusUnauthorized},
			{"no CSRF token", "", c, ts.URL, http.StatusForbidden},
			{"a wrong CSRF token", csrf + "x", c, ts.URL, http.StatusForbidden},
			{"cross-origin", csrf, c, "http://evil.example", http.StatusForbidden},
		} {
			f := url.Values{}
			for k, v := range form {
				f[k] = v
			}
			f.Set("csrf", tc.csrf)
			if resp, _ := post(t, ts, path, f, tc.cookie, tc.origin); resp.StatusCode != tc.status {
				t.Errorf("POST %s, %s: %s, want %d", path, tc.name, resp.Status, tc.status)
			}
		}
	}
	if fb.cancels != nil || fb.resets != nil || fb.approved != nil || fb.rejected != nil {
		t.Fatalf("a refused request reached the daemon: %q %q %q %q", fb.cancels, fb.resets, fb.approved, fb.rejected)
	}
	if m, err := fb.LoadMarks(); err != nil || !reflect.DeepEqual(m, Marks{}) {
		t.Fatalf("a refused request marked something: %+v, %v", m, err)
	}
}

// noMarkup fails unless page shows hostile as text.
func noMarkup(t *testing.T, what, page string) {
	t.Helper()
	for _, bad := range []string{"<script>alert", "<img", "\x1b", "\x07"} {
		if strings.Contains(page, bad) {
			t.Errorf("%s holds %q:\n%s", what, bad, page)
		}
	}
	if !strings.Contains(page, "&lt;script&gt;alert(1)&lt;/script&gt;") {
		t.Errorf("%s does not show the text:\n%s", what, page)
	}
}

func TestAgentPageCancelsInterruptsAndResets(t *testing.T) {
	ts, _, fb := newConsole(t)
	waiting := deliver(t, fb, "eng", inbox.Message{From: team.Human, To: "eng", Body: "queued " + hostile})
	running := deliver(t, fb, "eng", inbox.Message{From: team.Human, To: "eng", Body: "running"})
	bx, _ := fb.box("eng")
	if _, err := bx.Claim(running.ID); err != nil {
		t.Fatal(err)
	}
	c := logIn(t, ts)
	_, page := get(t, ts, "/agent/eng", c)
	noMarkup(t, "the agent's page", page)
	for _, want := range []string{`<input type="hidden" name="id" value="` + waiting.ID + `">`, `class="quiet cancel">Cancel</button>`,
		`name="interrupt" value="1">`, `class="danger interrupt">Interrupt</button>`, `action="/agent/eng/reset"`, "in flight (attempt 1)"} {
		if !strings.Contains(page, want) {
			t.Fatalf("the agent's page has no %q:\n%s", want, page)
		}
	}
	csrf := csrfOn(t, page)
	resp, _ := post(t, ts, "/agent/eng/cancel", url.Values{"csrf": {csrf}, "id": {waiting.ID}}, c, ts.URL)
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/agent/eng?done=cancelled" {
		t.Fatalf("cancel: %s %q", resp.Status, resp.Header.Get("Location"))
	}
	resp, _ = post(t, ts, "/agent/eng/cancel", url.Values{"csrf": {csrf}, "id": {running.ID}, "interrupt": {"1"}}, c, ts.URL)
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/agent/eng?done=interrupting" {
		t.Fatalf("interrupt: %s %q", resp.Status, resp.Header.Get("Location"))
	}
	if want := []string{waiting.ID, running.ID + " interrupt"}; !reflect.DeepEqual(fb.cancels, want) {
		t.Fatalf("cancels %q, want %q", fb.cancels, want)
	}
	if resp, _ := post(t, ts, "/agent/eng/cancel", url.Values{"csrf": {csrf}, "id": {"../x"}}, c, ts.URL); resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("cancel of no id: %s", resp.Status)
	}
	resp, _ = post(t, ts, "/agent/eng/reset", url.Values{"csrf": {csrf}, "reason": {"context full"}}, c, ts.URL)
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/agent/eng?done=reset" {
		t.Fatalf("reset: %s %q", resp.Status, resp.Header.Get("Location"))
	}
	if resp, _ := post(t, ts, "/agent/nobody/reset", url.Values{"csrf": {csrf}}, c, ts.URL); resp.StatusCode != http.StatusNotFound {
		t.Fatalf("reset of no agent: %s", resp.Status)
	}
	if want := []string{"eng: context full"}; !reflect.DeepEqual(fb.resets, want) {
		t.Fatalf("resets %q, want %q", fb.resets, want)
	}
	if _, page := get(t, ts, "/agent/eng?done=reset", c); !strings.Contains(page, "its next message starts a fresh thread") {
		t.Fatalf("the page does not say what the reset did:\n%s", page)
	}
	if _, page := get(t, ts, "/agent/eng?done=<b>x</b>", c); strings.Contains(page, "<b>x") || strings.Contains(page, `id="done"`) {
		t.Fatalf("the address wrote on the page:\n%s", page)
	}
}

func TestInboxAnswersAndMarksRead(t *testing.T) {
	ts, _, fb := newConsole(t)
	asked := deliver(t, fb, "eng", inbox.Message{From: team.Human, To: "eng", Body: "what broke?"})
	reply, _, err := func() (inbox.Message, bool, error) {
		bx, _ := fb.box(team.Human)
		return bx.DeliverReply(inbox.Message{From: "eng", To: team.Human, Body: "the build", InReplyTo: asked.ID})
	}()
	if err != nil {
		t.Fatal(err)
	}
	question := deliver(t, fb, team.Human, inbox.Message{From: "eng", To: team.Human, Body: "may I? " + hostile})
	c := logIn(t, ts)
	_, page := get(t, ts, "/inbox", c)
	noMarkup(t, "the inbox", page)
	if !strings.Contains(page, "<title>(2) Inbox · crew · batty</title>") {
		t.Fatalf("the title does not count the unread:\n%s", page)
	}
	if !strings.Contains(page, "your message: what broke?") || !strings.Contains(page, `action="/inbox/`+question.ID+`/answer"`) {
		t.Fatalf("the inbox page:\n%s", page)
	}
	csrf := csrfOn(t, page)
	resp, _ := post(t, ts, "/inbox/"+question.ID+"/answer", url.Values{"csrf": {csrf}, "body": {"yes <b>go</b>"}}, c, ts.URL)
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/inbox?done=answered" {
		t.Fatalf("answer: %s %q", resp.Status, resp.Header.Get("Location"))
	}
	ms, err := fb.Messages("eng", 10)
	if err != nil || len(ms) != 2 {
		t.Fatalf("eng's inbox: %v, %v", ms, err)
	}
	if m := ms[0]; m.From != team.Human || m.InReplyTo != question.ID || m.Body != "yes <b>go</b>" {
		t.Fatalf("the answer as delivered: %+v", m)
	}
	_, page = get(t, ts, "/inbox", c)
	if !strings.Contains(page, "<title>(1) Inbox") {
		t.Fatalf("the answered message is still unread:\n%s", page)
	}
	// Unread first: the reply, then the answered question.
	if i, j := strings.Index(page, `id="m-`+inbox.ShortID(reply.ID)+`"`), strings.Index(page, `id="m-`+inbox.ShortID(question.ID)+`"`); i < 0 || j < 0 || i > j {
		t.Fatalf("unread not first (%d, %d):\n%s", i, j, page)
	}
	if resp, _ := post(t, ts, "/inbox/"+question.ID+"/answer", url.Values{"csrf": {csrf}, "body": {"  "}}, c, ts.URL); resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("an empty answer: %s", resp.Status)
	}
	if resp, _ := post(t, ts, "/inbox/20990101T000000.000000000Z-0000beef/answer", url.Values{"csrf": {csrf}, "body": {"x"}}, c, ts.URL); resp.StatusCode != http.StatusNotFound {
		t.Fatalf("an answer to no message: %s", resp.Status)
	}
	resp, _ = post(t, ts, "/inbox/read", url.Values{"csrf": {csrf}, "id": {reply.ID}}, c, ts.URL)
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("mark read: %s", resp.Status)
	}
	if _, page = get(t, ts, "/inbox", c); !strings.Contains(page, "<title>Inbox · crew") {
		t.Fatalf("a message is still unread:\n%s", page)
	}
	deliver(t, fb, team.Human, inbox.Message{From: "eng", To: team.Human, Body: "more"})
	deliver(t, fb, team.Human, inbox.Message{From: "eng", To: team.Human, Body: "and more"})
	if _, page = get(t, ts, "/", c); !strings.Contains(page, "<title>(2) crew · batty</title>") || !strings.Contains(page, `<b class="n" id="n-inbox">2</b>`) {
		t.Fatalf("the team page does not count the unread:\n%s", page)
	}
	post(t, ts, "/inbox/read", url.Values{"csrf": {csrf}}, c, ts.URL)
	if _, page = get(t, ts, "/", c); !strings.Contains(page, "<title>crew · batty</title>") {
		t.Fatalf("mark all read left some unread:\n%s", page)
	}
}

// review is a landing waiting for review in the fake's status.
func withLandings(fb *fakeTeam) {
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	fb.set(func(st *control.Status) {
		st.Landings = []control.LandingStatus{
			{ID: "20260102T030405Z-0000aaaa", Agent: "eng", State: "landed", RequestedAt: at, By: "human", Commit: "c0ffee"},
			{ID: "20260102T030405Z-0000bbbb", Agent: "eng", State: "review", RequestedAt: at, By: "eng", Tip: "abc123", Review: true,
				Detail: teamstatus.ReviewDetail("eng")},
		}
	})
	fb.mu.Lock()
	fb.requests = []landing.Request{{ID: "20260102T030405Z-0000bbbb", Agent: "eng", State: landing.Review, OutputTail: "ok " + hostile, Attempts: 1}}
	fb.diff = "diff --git a/x.go b/x.go\nindex 1..2 100644\n--- a/x.go\n+++ b/x.go\n@@ -1 +1 @@\n-old\n+new " + hostile + "\n ctx\n"
	fb.mu.Unlock()
}

func TestLandingsReviewAndDiff(t *testing.T) {
	ts, _, fb := newConsole(t)
	withLandings(fb)
	c := logIn(t, ts)
	_, page := get(t, ts, "/landings", c)
	if !strings.Contains(page, `<a class="button" href="/landing/20260102T030405Z-0000bbbb">Review</a>`) || !strings.Contains(page, "c0ffee") ||
		!strings.Contains(page, `<b class="n" id="n-review">1</b>`) {
		t.Fatalf("the landings page:\n%s", page)
	}
	resp, page := get(t, ts, "/landing/20260102T030405Z-0000bbbb", c)
	if resp.StatusCode != 200 {
		t.Fatalf("the landing's page: %s\n%s", resp.Status, page)
	}
	noMarkup(t, "the landing's page", page)
	for _, want := range []string{`<span class="file">diff --git a/x.go b/x.go</span>`, `<span class="meta">&#43;&#43;&#43; b/x.go</span>`,
		`<span class="hunk">@@ -1 &#43;1 @@</span>`, `<span class="del">-old</span>`, `<span class="add"><a href="/blame?line=1&amp;path=x.go&amp;rev=batty%2Feng#L1" title="who wrote it">&#43;new &lt;script&gt;`,
		`<span class="ctx"> ctx</span>`, `id="verify-output">ok &lt;script&gt;`, `id="approve"`, `id="reject"`} {
		if !strings.Contains(page, want) {
			t.Fatalf("the landing's page has no %q:\n%s", want, page)
		}
	}
	if resp, _ := get(t, ts, "/landing/nothing", c); resp.StatusCode != http.StatusNotFound {
		t.Fatalf("the page of no landing: %s", resp.Status)
	}
	csrf := csrfOn(t, page)
	resp, _ = post(t, ts, "/landing/20260102T030405Z-0000bbbb/approve", url.Values{"csrf": {csrf}}, c, ts.URL)
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/landing/20260102T030405Z-0000bbbb?done=approved" {
		t.Fatalf("approve: %s %q", resp.Status, resp.Header.Get("Location"))
	}
	if resp, _ := post(t, ts, "/landing/20260102T030405Z-0000bbbb/reject", url.Values{"csrf": {csrf}, "reason": {" "}}, c, ts.URL); resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("a reject without a reason: %s", resp.Status)
	}
	post(t, ts, "/landing/20260102T030405Z-0000bbbb/reject", url.Values{"csrf": {csrf}, "reason": {"keep the flag"}}, c, ts.URL)
	if !reflect.DeepEqual(fb.approved, []string{"20260102T030405Z-0000bbbb"}) || !reflect.DeepEqual(fb.rejected, []string{"20260102T030405Z-0000bbbb: keep the flag"}) {
		t.Fatalf("approved %q, rejected %q", fb.approved, fb.rejected)
	}
	ev := openStream(t, ts, "/events?page=landing&id=20260102T030405Z-0000bbbb", c)
	if name, data := ev.next(t); name != "status" || !strings.Contains(data, `id="landing-state">review</span>`) || !strings.Contains(data, `id="verify-output">ok &lt;script&gt;`) {
		t.Fatalf("the landing's live part %s:\n%s", name, data)
	}
	for _, path := range []string{"/events?page=landing&id=nothing", "/events?page=landing", "/events?page=nothing"} {
		if resp, _ := get(t, ts, path, c); resp.StatusCode != http.StatusNotFound {
			t.Fatalf("%s: %s", path, resp.Status)
		}
	}
	// A landed request's page: no review, the diff's error as text.
	fb.mu.Lock()
	fb.diff = ""
	fb.mu.Unlock()
	_, page = get(t, ts, "/landing/20260102T030405Z-0000aaaa", c)
	if strings.Contains(page, `id="approve"`) || !strings.Contains(page, "has no branch batty/eng") {
		t.Fatalf("a landed request's page:\n%s", page)
	}
}

// appendEvents writes events to the fake's event log and gives each to
// the console as it is read back, as the daemon's log does (SetObserver):
// its alerts through a fan-out to the console's sink.
func appendEvents(t *testing.T, s *Server, fb *fakeTeam, es ...eventlog.Event) {
	t.Helper()
	l, err := eventlog.Open(fb.Layout, func(err error) { t.Error(err) })
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	l.SetObserver(eventlog.Chain(alerts.NewFanout("t", nil, s.AlertSink()).Event, s.Observe))
	for _, e := range es {
		l.Append(e)
	}
}

func TestAlertsAndTheBadge(t *testing.T) {
	ts, s, fb := newConsole(t)
	c := logIn(t, ts)
	ev := openStream(t, ts, "/events?page=alerts", c)
	if name, data := ev.next(t); name != "status" || !strings.Contains(data, "No alerts.") {
		t.Fatalf("first event %s:\n%s", name, data)
	}
	if name, data := ev.next(t); name != "badge" || !strings.Contains(data, `"unread":0`) {
		t.Fatalf("first badge %s: %s", name, data)
	}
	appendEvents(t, s, fb,
		eventlog.Event{Type: eventlog.EvDelivered, Agent: "eng"},
		eventlog.Event{Type: eventlog.EvLandingFailed, Agent: "eng", Detail: "verify failed: " + hostile},
		eventlog.Event{Type: eventlog.EvReviewWaiting, Agent: "eng"})
	var b badge
	for b.Alerts < 2 {
		name, data := ev.next(t)
		if name != "badge" {
			continue
		}
		if err := json.Unmarshal([]byte(data), &b); err != nil {
			t.Fatal(err)
		}
	}
	if b.Unread != 2 || len(b.Notes) != 2 || b.Notes[0].URL != "/landings" || !strings.Contains(b.Notes[1].Body, "<script>") || strings.Contains(b.Notes[1].Body, "\x1b") {
		t.Fatalf("badge %+v", b)
	}
	_, page := get(t, ts, "/alerts", c)
	noMarkup(t, "the alerts page", page)
	if !strings.Contains(page, "<title>(2) Alerts") || strings.Count(page, `<span class="state new">new</span>`) != 2 {
		t.Fatalf("the alerts page:\n%s", page)
	}
	resp, _ := post(t, ts, "/alerts/seen", url.Values{"csrf": {csrfOn(t, page)}}, c, ts.URL)
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("seen: %s", resp.Status)
	}
	if _, page := get(t, ts, "/alerts", c); !strings.Contains(page, "<title>Alerts") || strings.Contains(page, `<span class="state new">new</span>`) {
		t.Fatalf("after seen:\n%s", page)
	}
	// A message to the human that is no reply is a note too.
	m := deliver(t, fb, team.Human, inbox.Message{From: "eng", To: team.Human, Body: "a question"})
	s.Notify()
	for {
		name, data := ev.next(t)
		if name == "badge" && strings.Contains(data, `"key":"m:`+m.ID+`"`) {
			break
		}
	}
}

func TestDiffLines(t *testing.T) {
	got := diffLines("diff --git a/a b/a\nnew file mode 100644\n--- /dev/null\n+++ b/a\n@@ -0,0 +1,2 @@\n+x\n-y\n z\n\\ No newline at end of file\nnote: 1 path not committed\n"+
		"diff --git a/d/b.go b/d/b.go\n--- a/d/b.go\n+++ b/d/b.go\n@@ -10,3 +12,4 @@ func f()\n ctx\n-old\n+new\n+more\n", "batty/eng")
	want := []diffLine{{"file", "diff --git a/a b/a", ""}, {"meta", "new file mode 100644", ""}, {"meta", "--- /dev/null", ""}, {"meta", "+++ b/a", ""},
		{"hunk", "@@ -0,0 +1,2 @@", ""}, {"add", "+x", "/blame?line=1&path=a&rev=batty%2Feng#L1"}, {"del", "-y", ""}, {"ctx", " z", ""},
		{"note", `\ No newline at end of file`, ""}, {"note", "note: 1 path not committed", ""},
		{"file", "diff --git a/d/b.go b/d/b.go", ""}, {"meta", "--- a/d/b.go", ""}, {"meta", "+++ b/d/b.go", ""}, {"hunk", "@@ -10,3 +12,4 @@ func f()", ""},
		{"ctx", " ctx", ""}, {"del", "-old", ""}, {"add", "+new", "/blame?line=13&path=d%2Fb.go&rev=batty%2Feng#L13"}, {"add", "+more", "/blame?line=14&path=d%2Fb.go&rev=batty%2Feng#L14"}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("diffLines = %q\nwant %q", got, want)
	}
	if got := diffLines("", ""); got != nil {
		t.Fatalf("diffLines of nothing = %q", got)
	}
}

func TestMarks(t *testing.T) {
	m := Marks{}.WithRead([]string{"a", "b", "c"}, "b", "x", "b")
	if !reflect.DeepEqual(m.Read, []string{"b"}) || !m.IsRead("b") || m.IsRead("a") || m.Unread([]string{"a", "b", "c"}) != 2 {
		t.Fatalf("marks %+v", m)
	}
	if m = m.WithRead([]string{"c"}, "c"); !reflect.DeepEqual(m.Read, []string{"c"}) {
		t.Fatalf("a message gone stays marked: %+v", m)
	}
	for _, bad := range []string{`{"read":["../x"]}`, `{"read":[1]}`, `{"other":1}`, `{} {}`, `[]`, strings.Repeat(" ", maxMarksFile+1)} {
		if _, err := DecodeMarks([]byte(bad)); err == nil {
			t.Errorf("DecodeMarks(%.40q) took it", bad)
		}
	}
	got, err := DecodeMarks([]byte(`{"read":["b","a","b"],"alerts_seen":"2026-01-02T03:04:05Z"}`))
	if err != nil || !reflect.DeepEqual(got.Read, []string{"a", "b"}) || got.AlertsSeen.IsZero() {
		t.Fatalf("DecodeMarks = %+v, %v", got, err)
	}
}

func FuzzDecodeMarks(f *testing.F) {
	f.Add([]byte(`{"read":["20260101T000000.000000000Z-00000001"],"alerts_seen":"2026-01-02T03:04:05Z"}`))
	f.Add([]byte(`{"read":null}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := DecodeMarks(data)
		if err != nil {
			return
		}
		for _, id := range m.Read {
			if !inbox.ValidID(id) {
				t.Fatalf("an invalid id kept: %q", id)
			}
		}
		if len(m.Read) > maxRead {
			t.Fatalf("%d ids kept", len(m.Read))
		}
	})
}

// The alert history a console starts with is read from the event log's
// end: alerts only, oldest first; a log not written yet has none.
func TestAlertFeedLoadsTheHistory(t *testing.T) {
	l := project.Layout{Dir: filepath.Join(t.TempDir(), "state")}
	empty := &alertFeed{path: l.EventsLog(), log: hclog.NewNullLogger()}
	empty.load()
	if got := empty.latest(10); len(got) != 0 {
		t.Fatalf("alerts of no log: %+v", got)
	}
	if err := os.MkdirAll(l.Dir, 0o700); err != nil {
		t.Fatal(err)
	}
	log, err := eventlog.Open(l, func(err error) { t.Error(err) })
	if err != nil {
		t.Fatal(err)
	}
	log.Append(eventlog.Event{Type: eventlog.EvDelivered, Agent: "eng"})
	log.Append(eventlog.Event{Type: eventlog.EvLandingFailed, Agent: "eng", Detail: "verify failed"})
	log.Append(eventlog.Event{Type: eventlog.EvReviewWaiting, Agent: "ops"})
	log.Close()
	f := &alertFeed{path: empty.path, log: hclog.NewNullLogger()}
	f.load()
	got := f.latest(10)
	if len(got) != 2 || got[0].Agent != "ops" || got[1].Agent != "eng" {
		t.Fatalf("alerts read back: %+v", got)
	}
}

// memory writes eng's turn journal: two turns on one thread, the second
// holding a secret and hostile text, and a turn on an earlier thread.
func memory(t *testing.T, fb *fakeTeam) {
	t.Helper()
	at := time.Date(2030, 5, 1, 12, 0, 0, 0, time.UTC)
	for i, tc := range []struct{ id, thread, body, reply string }{
		{"m-old", "0199aaaa-0000-7000-8000-000000000001", "the first thread's zanzibar question", "answered"},
		{"m-1", "0199bbbb-0000-7000-8000-000000000002", "fix the parser " + hostile, "fixed " + hostile},
		{"m-2", "0199bbbb-0000-7000-8000-000000000002", "use key sk-proj-AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA now", "done"},
	} {
		tn := journal.Turn{Agent: "eng", Role: "eng", At: at.Add(time.Duration(i) * time.Minute),
			Message:  inbox.Message{ID: tc.id, From: "human", To: "eng", Body: tc.body, CreatedAt: at, Attempt: 1},
			Finished: protocol.TurnFinished{MessageID: tc.id, ThreadID: tc.thread, Status: protocol.TurnCompleted, Reply: tc.reply},
			Files:    []string{"parser.go"}, Commit: journal.Commit{SHA: strings.Repeat("c", 40), Branch: "batty/eng"}}
		if _, _, err := journal.Append(fb.Layout, journal.Build(tn)); err != nil {
			t.Fatal(err)
		}
	}
}

// The Threads page lists eng's two threads (live too), a thread's page
// its conversation (escaped, the secret redacted), the Search page finds
// a turn, the blame view tells a line's commit, turn and landing, and
// the show page a message's commits — every text inert.
func TestThreadsSearchBlameAndShowPages(t *testing.T) {
	ts, _, fb := newConsole(t)
	memory(t, fb)
	c := logIn(t, ts)
	_, page := get(t, ts, "/threads", c)
	noMarkup(t, "the threads page", page)
	for _, want := range []string{`href="/thread/0199aaaa-0000-7000-8000-000000000001"`, `href="/thread/0199bbbb-0000-7000-8000-000000000002"`,
		"the first thread&#39;s zanzibar question", `<a href="/threads" aria-current="page">Threads</a>`} {
		if !strings.Contains(page, want) {
			t.Fatalf("the threads page has no %q:\n%s", want, page)
		}
	}
	if _, page := get(t, ts, "/threads?agent=nobody", c); strings.Contains(page, `href="/thread/`) {
		t.Fatalf("the threads of no agent:\n%s", page)
	}
	ev := openStream(t, ts, "/events?page=threads&agent-filter=eng", c)
	if name, data := ev.next(t); name != "status" || !strings.Contains(data, `href="/thread/0199bbbb-0000-7000-8000-000000000002"`) {
		t.Fatalf("the threads page's live part %s:\n%s", name, data)
	}

	resp, page := get(t, ts, "/thread/0199bbbb", c)
	if resp.StatusCode != 200 {
		t.Fatalf("a thread's page: %s", resp.Status)
	}
	noMarkup(t, "a thread's page", page)
	for _, want := range []string{"fix the parser", "fixed &lt;script&gt;alert(1)&lt;/script&gt;", "[REDACTED:", `href="/show?id=m-2"`, "parser.go"} {
		if !strings.Contains(page, want) {
			t.Fatalf("a thread's page has no %q:\n%s", want, page)
		}
	}
	if strings.Contains(page, "sk-proj-AAAA") || strings.Contains(page, "zanzibar") {
		t.Fatalf("a thread's page shows a secret or another thread's turn:\n%s", page)
	}
	if resp, _ := get(t, ts, "/thread/nothing", c); resp.StatusCode != http.StatusNotFound {
		t.Fatalf("the page of no thread: %s", resp.Status)
	}

	_, page = get(t, ts, "/search?q=zanzibar", c)
	if !strings.Contains(page, `href="/thread/0199aaaa-0000-7000-8000-000000000001"`) || !strings.Contains(page, "zanzibar question") || strings.Contains(page, "0199bbbb") {
		t.Fatalf("the search page:\n%s", page)
	}
	_, page = get(t, ts, "/search?q=parser+script", c)
	noMarkup(t, "the search page", page)
	if !strings.Contains(page, `href="/thread/0199bbbb-0000-7000-8000-000000000002"`) {
		t.Fatalf("the search page:\n%s", page)
	}
	if _, page := get(t, ts, "/search?q=parser&agent=nobody", c); !strings.Contains(page, `id="no-hits"`) {
		t.Fatalf("a search of no agent's turns:\n%s", page)
	}
	if _, page := get(t, ts, "/search?q=%3C%3E", c); !strings.Contains(page, "No word to search for") {
		t.Fatalf("a search of no word:\n%s", page)
	}

	sha := strings.Repeat("c", 40)
	fb.mu.Lock()
	fb.blameRes = &blame.Result{Path: "parser.go", Branch: "main", Lines: []blame.Line{{N: 1, Text: "package p", Commit: sha}, {N: 2, Text: hostile, Commit: sha}},
		Commits: []*blame.Commit{{SHA: sha, Subject: "fix " + hostile, Author: "eng <eng@batty.invalid>", MessageID: "m-1", Agent: "eng", Made: true,
			Turn:    &blame.Turn{Agent: "eng", Thread: "0199bbbb-0000-7000-8000-000000000002", MessageID: "m-1", From: "human", Text: "fix the parser " + hostile},
			Landing: &blame.Landing{Merge: strings.Repeat("d", 40), Subject: "Land batty/eng (1 commit)", Agent: "eng", Request: "20260102T030405Z-0000aaaa", RequestedBy: "eng"}}}}
	fb.shown = &blame.Shown{Query: "m-1", MessageID: "m-1", Turns: []blame.Turn{*fb.blameRes.Commits[0].Turn}, Commits: fb.blameRes.Commits}
	fb.commitsFiles(sha, "parser.go")
	fb.mu.Unlock()
	resp, page = get(t, ts, "/blame?path=parser.go&line=2", c)
	if resp.StatusCode != 200 {
		t.Fatalf("the blame view: %s", resp.Status)
	}
	noMarkup(t, "the blame view", page)
	for _, want := range []string{`<tr id="L2" class="focus">`, "<h2>Line 2</h2>", `Made by <b>eng</b> in the turn of message <a href="/show?id=m-1">m-1</a>`,
		`href="/landing/20260102T030405Z-0000aaaa"`, `href="/thread/0199bbbb-0000-7000-8000-000000000002"`, "fix the parser &lt;script&gt;"} {
		if !strings.Contains(page, want) {
			t.Fatalf("the blame view has no %q:\n%s", want, page)
		}
	}
	for _, bad := range []string{"/blame?path=-x", "/blame?path=", "/blame?path=a&rev=--output%3D/tmp/x", "/blame?path=a&rev=main~1"} {
		if resp, _ := get(t, ts, bad, c); resp.StatusCode != http.StatusBadRequest {
			t.Errorf("%s: %s", bad, resp.Status)
		}
	}
	get(t, ts, "/blame?path=a.go&rev=batty%2Feng", c)
	if !reflect.DeepEqual(fb.blamed, []string{" parser.go", "batty/eng a.go"}) {
		t.Fatalf("blamed %q", fb.blamed)
	}
	_, page = get(t, ts, "/show?id=m-1", c)
	noMarkup(t, "the show page", page)
	for _, want := range []string{"message <code>m-1</code>", "The commits it made", "<code>parser.go</code>", `href="/landing/20260102T030405Z-0000aaaa"`} {
		if !strings.Contains(page, want) {
			t.Fatalf("the show page has no %q:\n%s", want, page)
		}
	}
	if _, page := get(t, ts, "/show?id=nothing", c); !strings.Contains(page, `class="error"`) {
		t.Fatalf("the show page of nothing:\n%s", page)
	}
}

// commitsFiles sets the files of the fake's shown commit sha.
func (f *fakeTeam) commitsFiles(sha string, files ...string) {
	for _, c := range f.shown.Commits {
		if c.SHA == sha {
			c.Files = files
		}
	}
}
