package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	cdpbrowser "github.com/chromedp/cdproto/browser"
	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"

	"github.com/battyhq/batty/agentenv"
	"github.com/battyhq/batty/control"
)

// step is one action of a browser test, named for its failure.
type step struct {
	what string
	do   chromedp.Action
}

// runSteps runs steps in the browser of ctx, each within 20 s; a failure
// fails the test with the page as it was.
func runSteps(t *testing.T, ctx context.Context, steps ...step) {
	t.Helper()
	// The browser starts on ctx, not on a step's: it outlives the step.
	if err := chromedp.Run(ctx); err != nil {
		t.Fatalf("start the browser: %v", err)
	}
	for _, s := range steps {
		sctx, cancel := context.WithTimeout(ctx, 20*time.Second)
		err := chromedp.Run(sctx, s.do)
		cancel()
		if err != nil {
			var page string
			dctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			chromedp.Run(dctx, chromedp.OuterHTML("html", &page, chromedp.ByQuery))
			cancel()
			t.Fatalf("%s: %v\npage:\n%s", s.what, err, page)
		}
	}
}

// clickNow clicks the element sel names in one script: a live update may
// replace the part that holds it between a lookup and a click.
func clickNow(sel string) chromedp.Action {
	return chromedp.Evaluate(`document.querySelector(`+jsString(sel)+`).click()`, nil)
}

// humanMessage returns the id of the message in the human's inbox whose
// body holds text, "" when none does.
func humanMessage(t *testing.T, dir, text string) string {
	t.Helper()
	var ms []listedMessage
	if err := json.Unmarshal([]byte(mustBatty(t, dir, "inbox", "--json")), &ms); err != nil {
		t.Fatal(err)
	}
	for _, m := range ms {
		if strings.Contains(m.Body, text) {
			return m.ID
		}
	}
	return ""
}

var unreadTitleRE = regexp.MustCompile(`^\((\d+)\) `)

// TestE2EConsolePagesInABrowser runs a team of worktree agents whose
// landings wait for the human's review: in a real browser, opted in to
// notifications, the page notifies of a landing waiting for review and of
// a message to the human, the agent's text as it wrote it; the tab's title
// counts what is unread and follows a new message live; a message to the
// human answered on the Inbox page reaches its agent with in_reply_to; a
// landing approved on its page, after its diff is seen, lands; one
// rejected there with a reason tells its agent the reason.
func TestE2EConsolePagesInABrowser(t *testing.T) {
	ctx := browser(t)
	dir, _ := newGitProject(t)
	writeWorktreeTeam(t, dir, "workspace:\n  base: main\n  review: human\n")
	gitIn(t, dir, "commit", "-q", "-am", "review: human")
	env := gitTestEnv(dir)
	t.Cleanup(func() { runBattyIn(t, dir, nil, "", "stop", "--timeout", "5s") })
	if out, errOut, code := runBattyIn(t, dir, env, "", "start", "--no-tmux"); code != 0 {
		t.Fatalf("start: exit %d\n%s%s", code, out, errOut)
	}
	m := loginRE.FindStringSubmatch(mustBatty(t, dir, "web", "--no-open"))
	if m == nil {
		t.Fatal("batty web prints no login address")
	}
	home := m[1]

	// Opt in to notifications before anything waits for the human: the
	// browser is granted the permission a person would click, and every
	// notification the page makes is recorded.
	runSteps(t, ctx,
		step{"allow notifications", grantNotifications(strings.TrimSuffix(home, "/"))},
		step{"record notifications", recordNotifications()},
		step{"log in", chromedp.Navigate(m[0][len("batty: console: "):])},
		step{"see the team", chromedp.WaitVisible(`tr.agent`, chromedp.ByQuery)},
		step{"see the button", chromedp.WaitVisible(`#notify`, chromedp.ByID)},
		step{"opt in", clickNow(`#notify`)},
		step{"see it on", chromedp.Poll(`document.getElementById("notify").getAttribute("aria-pressed") === "true"`, nil)},
		// The first badge is what was there before: no notification.
		step{"take the first look", chromedp.Poll(`localStorage.getItem("batty-seen:" + location.host) !== null`, nil)},
	)

	// Both engineers' branches wait for review: one is approved, the other
	// rejected.
	for _, a := range []string{"engineer-1", "engineer-2"} {
		mustSend(t, dir, nil, "", a, "scenario:write:notes-"+a+".txt=from-"+a)
	}
	waitJSONStatus(t, dir, "both turns committed", func(st control.Status) bool {
		for _, a := range []string{"engineer-1", "engineer-2"} {
			if w := agentStatus(st, a).Workspace; w == nil || w.Ahead != 1 {
				return false
			}
		}
		return true
	})
	tip := gitIn(t, dir, "rev-parse", "batty/engineer-1")
	inAgent := append([]string{agentenv.Agent + "=engineer-1"}, env...)
	for _, a := range []string{"engineer-1", "engineer-2"} {
		if out, errOut, code := runBattyIn(t, dir, append([]string{agentenv.Agent + "=" + a}, env...), "", "merge", a); code != 0 {
			t.Fatalf("%s's merge: exit %d\n%s%s", a, code, out, errOut)
		}
	}
	var req, req2 string
	waitJSONStatus(t, dir, "the landings waiting for review", func(st control.Status) bool {
		req, req2 = landingOf(st, "engineer-1", "review"), landingOf(st, "engineer-2", "review")
		return req != "" && req2 != ""
	})
	const question = `may I delete <img src=x onerror="document.title='pwned'"> the old flag &lt;b&gt;?`
	mustSend(t, dir, inAgent, "", "human", question)
	var questionID string
	waitJSONStatus(t, dir, "engineer-1's question in the human's inbox", func(control.Status) bool {
		questionID = humanMessage(t, dir, "may I delete")
		return questionID != ""
	})

	// The open page notified of both, the agent's text as it wrote it:
	// neither markup nor decoded twice.
	var notes []shownNote
	runSteps(t, ctx,
		step{"see the notifications", chromedp.Poll(`(window.battyShown || []).some(n => n.title === "batty: engineer-1 writes to you") &&
			(window.battyShown || []).some(n => n.body.startsWith("engineer-2's branch passed verify"))`, nil, chromedp.WithPollingTimeout(15*time.Second))},
		step{"read them", chromedp.Evaluate(`window.battyShown`, &notes)},
	)
	var asked, review bool
	for _, n := range notes {
		switch {
		case n.Title == "batty: engineer-1 writes to you":
			asked = n.Body == question && n.Tag == "m:"+questionID
		case n.Title == "batty: review waiting" && strings.HasPrefix(n.Body, "engineer-1's branch passed verify and waits for your review"):
			review = true
		}
	}
	if !asked || !review {
		t.Fatalf("notifications (the question shown as written: %v, engineer-1's review: %v):\n%+v", asked, review, notes)
	}

	answerBox := `form[action="/inbox/` + questionID + `/answer"] textarea`
	var read []string
	runSteps(t, ctx,
		step{"open the inbox", chromedp.Click(`nav.pages a[href="/inbox"]`, chromedp.ByQuery)},
		step{"see the question", chromedp.WaitVisible(answerBox, chromedp.ByQuery)},
		step{"go live", chromedp.WaitVisible(`body.is-live`, chromedp.ByQuery)},
		step{"read the title and the counts", chromedp.Evaluate(`[document.title, document.getElementById("n-inbox").textContent,
			document.getElementById("n-alerts").textContent]`, &read)},
	)
	title, inboxN, alertsN := read[0], read[1], read[2]
	// Unread: the engineers' answers to the scenarios, engineer-1's
	// question; unseen: the alerts of the replies and of the landings
	// waiting for review.
	var inboxCount, alertsCount int
	fmt.Sscan(inboxN, &inboxCount)
	fmt.Sscan(alertsN, &alertsCount)
	if mt := unreadTitleRE.FindStringSubmatch(title); mt == nil || mt[1] != fmt.Sprint(inboxCount+alertsCount) || inboxCount != 3 || alertsCount < 1 {
		t.Fatalf("title %q with %q unread and %q alerts", title, inboxN, alertsN)
	}

	// A new message to the human: the open page's title counts it live.
	mustSend(t, dir, inAgent, "", "human", "one more thing")
	want := fmt.Sprintf("(%d) ", inboxCount+alertsCount+1)
	runSteps(t, ctx, step{"see the title count the new message", chromedp.Poll(`document.title.startsWith(`+jsString(want)+`)`, nil, chromedp.WithPollingTimeout(15*time.Second))})

	// Answer the question in place.
	runSteps(t, ctx,
		step{"type the answer", chromedp.SendKeys(answerBox, "yes, keep an alias", chromedp.ByQuery)},
		step{"answer", clickNow(`form[action="/inbox/` + questionID + `/answer"] button`)},
		step{"see it answered", chromedp.WaitVisible(`#done`, chromedp.ByID)},
		step{"read the title", chromedp.Title(&title)},
	)
	if title == "pwned" || !strings.HasPrefix(title, fmt.Sprintf("(%d) ", inboxCount+alertsCount)) {
		t.Fatalf("after the answer the title is %q", title)
	}
	var ms []listedMessage
	waitJSONStatus(t, dir, "the answer in engineer-1's inbox", func(control.Status) bool {
		if err := json.Unmarshal([]byte(mustBatty(t, dir, "inbox", "engineer-1", "--json")), &ms); err != nil {
			t.Fatal(err)
		}
		for _, m := range ms {
			if m.From == "human" && m.InReplyTo == questionID && m.Body == "yes, keep an alias" {
				return true
			}
		}
		return false
	})

	// Review the landing: its diff, then approve.
	var diff string
	var adds int
	runSteps(t, ctx,
		step{"open the landings", chromedp.Click(`nav.pages a[href="/landings"]`, chromedp.ByQuery)},
		step{"see the request", chromedp.WaitVisible(`a.button[href="/landing/`+req+`"]`, chromedp.ByQuery)},
		step{"open the request", clickNow(`a.button[href="/landing/` + req + `"]`)},
		step{"see the diff", chromedp.WaitVisible(`#diff`, chromedp.ByID)},
		step{"read the diff", chromedp.Evaluate(`document.getElementById("diff").textContent`, &diff)},
		step{"count the added lines", chromedp.Evaluate(`document.querySelectorAll("#diff span.add").length`, &adds)},
	)
	if !strings.Contains(diff, "+from-engineer-1") || adds != 1 {
		t.Fatalf("the landing's diff (%d added lines):\n%s", adds, diff)
	}
	shots := map[string][]byte{}
	var deskLanding, phoneLanding, phoneInbox []byte
	runSteps(t, ctx,
		step{"shoot the landing", chromedp.CaptureScreenshot(&deskLanding)},
		step{"be a phone", chromedp.EmulateViewport(390, 844)},
		step{"shoot the landing", chromedp.CaptureScreenshot(&phoneLanding)},
		step{"be a laptop", chromedp.EmulateViewport(1280, 800)},
	)
	// The added line's blame, on engineer-1's branch: its turn and message.
	var story string
	runSteps(t, ctx,
		step{"open the added line's blame", clickNow(`#diff span.add a`)},
		step{"see the line", chromedp.WaitVisible(`#blame tr.focus`, chromedp.ByQuery)},
		step{"read its story", chromedp.Evaluate(`document.querySelector("section.story").textContent`, &story)},
	)
	if !strings.Contains(story, "Made by engineer-1 in the turn of message") || !strings.Contains(story, "scenario:write:notes-engineer-1.txt") {
		t.Fatalf("the added line's blame:\n%s", story)
	}
	runSteps(t, ctx,
		step{"back to the request", chromedp.Navigate(home + "landing/" + req)},
		step{"see the review", chromedp.WaitVisible(`#approve`, chromedp.ByID)},
		step{"approve", clickNow(`#approve`)},
		step{"see it approved", chromedp.WaitVisible(`#done`, chromedp.ByID)},
	)
	st := waitJSONStatus(t, dir, "the landing", func(st control.Status) bool { return landingOf(st, "engineer-1", "landed") == req })
	if got := gitIn(t, dir, "rev-parse", "main^2"); got != tip {
		t.Fatalf("main's merge holds %s, want %s (landings %+v)", got, tip, st.Landings)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "notes-engineer-1.txt")); err != nil || string(b) != "from-engineer-1\n" {
		t.Fatalf("the project's checkout: %q, %v", b, err)
	}

	// The landed line's blame on main names the landing; the Threads page,
	// a conversation and the Search page, at a phone's width too.
	var landed, threadsText, turnText, hits string
	var phoneBlame, phoneThreads []byte
	var overflow, overflowThreads []bool
	wide := `document.documentElement.scrollWidth > window.innerWidth`
	runSteps(t, ctx,
		step{"open the landed line's blame", chromedp.Navigate(home + "blame?path=notes-engineer-1.txt&line=1")},
		step{"see the line", chromedp.WaitVisible(`#blame tr.focus`, chromedp.ByQuery)},
		step{"read its story", chromedp.Evaluate(`document.querySelector("section.story").textContent`, &landed)},
		step{"be a phone", chromedp.EmulateViewport(390, 844)},
		step{"shoot the blame", chromedp.CaptureScreenshot(&phoneBlame)},
		step{"measure the blame", chromedp.Evaluate(`[`+wide+`]`, &overflow)},
		step{"open the threads", chromedp.Navigate(home + "threads?agent=engineer-1")},
		step{"see a thread", chromedp.WaitVisible(`tr.thread a`, chromedp.ByQuery)},
		step{"read the threads", chromedp.Evaluate(`document.querySelector("main").textContent`, &threadsText)},
		step{"shoot the threads", chromedp.CaptureScreenshot(&phoneThreads)},
		step{"measure the threads", chromedp.Evaluate(`[`+wide+`]`, &overflowThreads)},
		step{"open a thread", clickNow(`tr.thread a`)},
		step{"see its turns", chromedp.WaitVisible(`li.turn`, chromedp.ByQuery)},
		step{"read its turns", chromedp.Evaluate(`document.querySelector("ol.turns").textContent`, &turnText)},
		step{"be a laptop", chromedp.EmulateViewport(1280, 800)},
		step{"open the search", chromedp.Navigate(home + "search")},
		step{"see the search", chromedp.WaitVisible(`#search-q`, chromedp.ByID)},
		step{"type words", chromedp.SendKeys(`#search-q`, "notes engineer", chromedp.ByID)},
		step{"search", clickNow(`#search-go`)},
		step{"see the hits", chromedp.WaitVisible(`li.hit`, chromedp.ByQuery)},
		step{"read the hits", chromedp.Evaluate(`document.querySelector("ol.hits").textContent`, &hits)},
	)
	if !strings.Contains(landed, "Made by engineer-1") || !strings.Contains(landed, "landing request "+req) {
		t.Fatalf("the landed line's blame:\n%s", landed)
	}
	if len(overflow) != 1 || overflow[0] || len(overflowThreads) != 1 || overflowThreads[0] {
		t.Fatalf("wider than a phone: the blame view %v, the threads page %v", overflow, overflowThreads)
	}
	if !strings.Contains(threadsText, "scenario:write:notes-engineer-1.txt") || !strings.Contains(turnText, "scenario:write:notes-engineer-1.txt") {
		t.Fatalf("the threads page:\n%s\nthe thread's page:\n%s", threadsText, turnText)
	}
	if !strings.Contains(hits, "engineer-") {
		t.Fatalf("the search's hits:\n%s", hits)
	}
	shots["console-blame-390x844.png"], shots["console-threads-390x844.png"] = phoneBlame, phoneThreads

	// Reject engineer-2's landing with a reason: engineer-2 is told it, and
	// the page shows it as text.
	const reason = "split it: <b>one</b> change per branch"
	var rejection string
	runSteps(t, ctx,
		step{"open the other request", chromedp.Navigate(home + "landing/" + req2)},
		step{"see the review", chromedp.WaitVisible(`#reject-reason`, chromedp.ByID)},
		step{"type the reason", chromedp.SendKeys(`#reject-reason`, reason, chromedp.ByID)},
		step{"reject", clickNow(`#reject`)},
		step{"see it rejected", chromedp.WaitVisible(`#done`, chromedp.ByID)},
		step{"read the rejection", chromedp.Poll(`[...document.querySelectorAll("pre.output")].map(p => p.textContent).join("\n")`, &rejection)},
	)
	if !strings.Contains(rejection, reason) {
		t.Fatalf("the rejected landing's page does not show the reason as text:\n%s", rejection)
	}
	waitJSONStatus(t, dir, "the reason in engineer-2's inbox", func(st control.Status) bool {
		if landingOf(st, "engineer-2", "failed") != req2 {
			return false
		}
		if err := json.Unmarshal([]byte(mustBatty(t, dir, "inbox", "engineer-2", "--json")), &ms); err != nil {
			t.Fatal(err)
		}
		for _, m := range ms {
			if m.From == "human" && m.InReplyTo == req2 && strings.Contains(m.Body, "rejected it:\n\n"+reason+"\n") {
				return true
			}
		}
		return false
	})

	// The pages at a phone's size and a laptop's.
	runSteps(t, ctx,
		step{"open the inbox", chromedp.Navigate(home + "inbox")},
		step{"see it", chromedp.WaitVisible(`body.is-live`, chromedp.ByQuery)},
		step{"be a phone", chromedp.EmulateViewport(390, 844)},
		step{"shoot the inbox", chromedp.CaptureScreenshot(&phoneInbox)},
	)
	shots["console-landing-1280x800.png"], shots["console-landing-390x844.png"] = deskLanding, phoneLanding
	shots["console-inbox-390x844.png"] = phoneInbox
	out := t.TempDir()
	if d := os.Getenv("BATTY_SCREENSHOTS"); d != "" {
		out = d
	}
	for name, png := range shots {
		if err := os.WriteFile(filepath.Join(out, name), png, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// landingOf returns the id of agent's landing in state, "" when it has
// none.
func landingOf(st control.Status, agent, state string) string {
	for _, l := range st.Landings {
		if l.Agent == agent && l.State == state {
			return l.ID
		}
	}
	return ""
}

// grantNotifications grants origin the notifications permission, as a
// person would in the prompt that headless chromium cannot show.
func grantNotifications(origin string) chromedp.Action {
	return chromedp.ActionFunc(func(ctx context.Context) error {
		c := chromedp.FromContext(ctx)
		return cdpbrowser.GrantPermissions([]cdpbrowser.PermissionType{cdpbrowser.PermissionTypeNotifications}).
			WithOrigin(origin).Do(cdp.WithExecutor(ctx, c.Browser))
	})
}

// shownNote is a notification a page made (recordNotifications).
type shownNote struct {
	Title string `json:"title"`
	Body  string `json:"body"`
	Tag   string `json:"tag"`
}

// recordNotifications wraps every page's Notification, before the page's
// own scripts run, to record what each notification shows in
// window.battyShown; it still shows them.
func recordNotifications() chromedp.Action {
	return chromedp.ActionFunc(func(ctx context.Context) error {
		_, err := page.AddScriptToEvaluateOnNewDocument(`(function () {
  var Real = window.Notification;
  if (!Real) { return; }
  window.battyShown = [];
  function Recorded(title, opts) {
    opts = opts || {};
    window.battyShown.push({title: String(title), body: String(opts.body || ""), tag: String(opts.tag || "")});
    return new Real(title, opts);
  }
  Object.defineProperty(Recorded, "permission", {get: function () { return Real.permission; }});
  Recorded.requestPermission = function () { return Real.requestPermission.apply(Real, arguments); };
  Recorded.prototype = Real.prototype;
  window.Notification = Recorded;
})();`).Do(ctx)
		return err
	})
}

// jsString quotes s for a script.
func jsString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}
