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
// landings wait for the human's review: in a real browser, the tab's title
// counts what is unread and follows a new message live; a message to the
// human answered on the Inbox page reaches its agent with in_reply_to; a
// landing approved on its page, after its diff is seen, lands.
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
	mustSend(t, dir, nil, "", "engineer-1", "scenario:write:notes.txt=from-engineer-1")
	waitJSONStatus(t, dir, "engineer-1's turn committed", func(st control.Status) bool {
		a := agentStatus(st, "engineer-1")
		return a.Workspace != nil && a.Workspace.Ahead == 1
	})
	tip := gitIn(t, dir, "rev-parse", "batty/engineer-1")
	inAgent := append([]string{agentenv.Agent + "=engineer-1"}, env...)
	if out, errOut, code := runBattyIn(t, dir, inAgent, "", "merge", "engineer-1"); code != 0 {
		t.Fatalf("the agent's merge: exit %d\n%s%s", code, out, errOut)
	}
	st := waitJSONStatus(t, dir, "the landing waiting for review", func(st control.Status) bool {
		return len(st.Landings) == 1 && st.Landings[0].State == "review"
	})
	req := st.Landings[0].ID
	mustSend(t, dir, inAgent, "", "human", `may I delete <img src=x onerror="document.title='pwned'"> the old flag?`)
	var question string
	waitJSONStatus(t, dir, "engineer-1's question in the human's inbox", func(control.Status) bool {
		question = humanMessage(t, dir, "may I delete")
		return question != ""
	})

	m := loginRE.FindStringSubmatch(mustBatty(t, dir, "web", "--no-open"))
	if m == nil {
		t.Fatal("batty web prints no login address")
	}
	home := m[1]
	answerBox := `form[action="/inbox/` + question + `/answer"] textarea`
	var read []string
	runSteps(t, ctx,
		step{"log in", chromedp.Navigate(m[0][len("batty: console: "):])},
		step{"see the team", chromedp.WaitVisible(`tr.agent`, chromedp.ByQuery)},
		step{"open the inbox", chromedp.Click(`nav.pages a[href="/inbox"]`, chromedp.ByQuery)},
		step{"see the question", chromedp.WaitVisible(answerBox, chromedp.ByQuery)},
		step{"go live", chromedp.WaitVisible(`body.is-live`, chromedp.ByQuery)},
		step{"read the title and the counts", chromedp.Evaluate(`[document.title, document.getElementById("n-inbox").textContent,
			document.getElementById("n-alerts").textContent]`, &read)},
	)
	title, inboxN, alertsN := read[0], read[1], read[2]
	// Unread: engineer-1's answer to the scenario, its question; unseen:
	// the alerts of the reply and of the landing waiting for review.
	var inboxCount, alertsCount int
	fmt.Sscan(inboxN, &inboxCount)
	fmt.Sscan(alertsN, &alertsCount)
	if mt := unreadTitleRE.FindStringSubmatch(title); mt == nil || mt[1] != fmt.Sprint(inboxCount+alertsCount) || inboxCount != 2 || alertsCount < 1 {
		t.Fatalf("title %q with %q unread and %q alerts", title, inboxN, alertsN)
	}

	// A new message to the human: the open page's title counts it live.
	mustSend(t, dir, inAgent, "", "human", "one more thing")
	want := fmt.Sprintf("(%d) ", inboxCount+alertsCount+1)
	runSteps(t, ctx, step{"see the title count the new message", chromedp.Poll(`document.title.startsWith(`+jsString(want)+`)`, nil, chromedp.WithPollingTimeout(15*time.Second))})

	// Answer the question in place.
	runSteps(t, ctx,
		step{"type the answer", chromedp.SendKeys(answerBox, "yes, keep an alias", chromedp.ByQuery)},
		step{"answer", clickNow(`form[action="/inbox/` + question + `/answer"] button`)},
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
			if m.From == "human" && m.InReplyTo == question && m.Body == "yes, keep an alias" {
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
		step{"approve", clickNow(`#approve`)},
		step{"see it approved", chromedp.WaitVisible(`#done`, chromedp.ByID)},
	)
	st = waitJSONStatus(t, dir, "the landing", func(st control.Status) bool {
		return len(st.Landings) == 1 && st.Landings[0].State == "landed"
	})
	if got := gitIn(t, dir, "rev-parse", "main^2"); got != tip || st.Landings[0].Approved != tip {
		t.Fatalf("main's merge holds %s, want %s (landing %+v)", got, tip, st.Landings[0])
	}
	if b, err := os.ReadFile(filepath.Join(dir, "notes.txt")); err != nil || string(b) != "from-engineer-1\n" {
		t.Fatalf("the project's checkout: %q, %v", b, err)
	}

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

// jsString quotes s for a script.
func jsString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}
