package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/battyhq/batty/control"
	"github.com/battyhq/batty/reap"
)

// chromium returns Debian's chromium, skipping the test (failing it under
// CI=true) where there is none.
func chromium(t testing.TB) string {
	t.Helper()
	for _, name := range []string{"/usr/bin/chromium", "chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("CI") == "true" {
		t.Fatal("no chromium: scripts/test.sh installs it (apt-get install chromium)")
	}
	t.Skip("no chromium to drive (apt-get install chromium; scripts/test.sh installs it)")
	return ""
}

// browser starts a headless chromium of its own for the test.
func browser(t testing.TB) context.Context {
	t.Helper()
	// Not t.TempDir: removed only once the browser's processes are gone.
	data, err := os.MkdirTemp("", "batty-chromium-")
	if err != nil {
		t.Fatal(err)
	}
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(chromium(t)),
		chromedp.Flag("headless", true), chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.Flag("disable-background-networking", true), chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true), chromedp.NoFirstRun, chromedp.NoDefaultBrowserCheck,
		chromedp.UserDataDir(data), chromedp.WindowSize(1280, 800),
	}
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(actx)
	ctx, cancelTimeout := context.WithTimeout(ctx, 90*time.Second)
	t.Cleanup(func() {
		cancelTimeout()
		cancel()
		cancelAlloc()
		// The browser's helpers (renderers, the crash handler) may still
		// be writing its profile: wait for every process that names it.
		waitProcessesNaming(data, time.Now().Add(30*time.Second))
		if err := os.RemoveAll(data); err != nil {
			t.Errorf("remove the browser's profile: %v", err)
		}
	})
	return ctx
}

// waitProcessesNaming waits, until deadline, for every process whose
// command line holds s to exit.
func waitProcessesNaming(s string, deadline time.Time) {
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		cmdline, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil || !strings.Contains(string(cmdline), s) {
			continue
		}
		if fd, err := reap.OpenPidfd(pid); err == nil {
			fd.WaitExit(deadline)
			fd.Close()
		}
	}
}

var loginRE = regexp.MustCompile(`batty: console: (http://127\.0\.0\.1:\d+/)login\?token=\S+`)

// TestE2EConsoleInABrowser runs a team (the fake codex), logs a real
// browser in to its console with `batty web`'s address, sees the team,
// sends a message from the agent's page and sees its finished turn appear
// there live; an <img onerror> in the message stays text; a reset from
// that page leaves the agent without a thread.
func TestE2EConsoleInABrowser(t *testing.T) {
	ctx := browser(t)
	dir := fakeTeam(t, "web", 1)
	t.Cleanup(func() { runBattyIn(t, dir, nil, "", "stop", "--timeout", "5s") })
	if out := mustBatty(t, dir, "start", "--no-tmux"); !strings.Contains(out, "batty: console at http://127.0.0.1:") {
		t.Fatalf("batty start does not say where the console is:\n%s", out)
	}
	st := waitJSONStatus(t, dir, "an idle agent", func(st control.Status) bool { return len(st.Agents) == 1 && st.Agents[0].State == "idle" })
	agent := st.Agents[0].Name
	m := loginRE.FindStringSubmatch(mustBatty(t, dir, "web", "--no-open"))
	if m == nil {
		t.Fatal("batty web prints no login address")
	}
	base := m[0][len("batty: console: "):]
	home := m[1]

	var loc, rows string
	if err := chromedp.Run(ctx,
		chromedp.Navigate(base),
		chromedp.WaitVisible(`tr.agent`, chromedp.ByQuery),
		chromedp.Location(&loc),
		chromedp.Text(`table.agents tbody`, &rows, chromedp.ByQuery),
	); err != nil {
		t.Fatal(err)
	}
	if loc != home {
		t.Fatalf("after login the address is %q, want %q (the token dropped)", loc, home)
	}
	if !strings.Contains(rows, agent) || !strings.Contains(rows, "idle") {
		t.Fatalf("team page rows: %q", rows)
	}

	// Pause and resume from the page: the daemon's own requests pass its
	// judge of who asks.
	if err := chromedp.Run(ctx,
		clickNow(`#pause`),
		chromedp.WaitVisible(`#resume`, chromedp.ByID),
	); err != nil {
		t.Fatalf("pause from the page: %v", err)
	}
	if st := jsonStatus(t, dir); !st.Dispatch.Paused || st.Dispatch.Reason != "paused from the console" {
		t.Fatalf("after Pause the dispatch is %+v", st.Dispatch)
	}
	if err := chromedp.Run(ctx,
		clickNow(`#resume`),
		chromedp.WaitVisible(`#pause`, chromedp.ByID),
	); err != nil {
		t.Fatalf("resume from the page: %v", err)
	}

	const payload = `<img src=x onerror="document.title='pwned'"> scenario:sleepms:1500`
	var before, after, title string
	var imgs int
	runSteps(t, ctx,
		step{"open the agent's page", clickNow(`a[href="/agent/` + agent + `"]`)},
		step{"see the message box", chromedp.WaitVisible(`#body`, chromedp.ByID)},
		step{"go live", chromedp.WaitVisible(`body.is-live`, chromedp.ByQuery)},
		step{"type", chromedp.SendKeys(`#body`, payload, chromedp.ByID)},
		step{"send", chromedp.Click(`#send`, chromedp.ByID)},
		step{"see it sent", chromedp.WaitVisible(`p.sent`, chromedp.ByQuery)},
		step{"read the transcript", chromedp.Evaluate(`document.getElementById("transcript").textContent`, &before)},
		// The turn sleeps 1.5 s: its end arrives over the live streams.
		step{"see the turn finish", chromedp.Poll(`document.getElementById("transcript").textContent.includes("SLEPT") &&
			document.querySelector("dd.turns").textContent === "1"`, nil, chromedp.WithPollingTimeout(20*time.Second))},
		step{"read the transcript again", chromedp.Evaluate(`document.getElementById("transcript").textContent`, &after)},
		step{"count images", chromedp.Evaluate(`document.querySelectorAll("main img").length`, &imgs)},
		step{"read the title", chromedp.Title(&title)},
	)
	if strings.Contains(before, "SLEPT") {
		t.Fatalf("the reply was on the page as it loaded: this proves nothing live\n%s", before)
	}
	if imgs != 0 || title == "pwned" || !strings.Contains(after, "<img src=x") {
		t.Fatalf("the message's markup was not shown as text: %d images, title %q\n%s", imgs, title, after)
	}

	// The pages at a laptop's size and at a phone's.
	shots := map[string][]byte{}
	var desk, phoneTeam, phoneAgent []byte
	if err := chromedp.Run(ctx,
		chromedp.CaptureScreenshot(&desk),
		chromedp.EmulateViewport(390, 844),
		chromedp.Navigate(home),
		chromedp.WaitVisible(`tr.agent`, chromedp.ByQuery),
		chromedp.CaptureScreenshot(&phoneTeam),
		chromedp.Navigate(home+"agent/"+agent),
		chromedp.WaitVisible(`body.is-live`, chromedp.ByQuery),
		chromedp.CaptureScreenshot(&phoneAgent),
	); err != nil {
		t.Fatal(err)
	}
	shots["console-agent-1280x800.png"], shots["console-team-390x844.png"], shots["console-agent-390x844.png"] = desk, phoneTeam, phoneAgent
	out := t.TempDir()
	if d := os.Getenv("BATTY_SCREENSHOTS"); d != "" {
		out = d
	}
	for name, png := range shots {
		if err := os.WriteFile(filepath.Join(out, name), png, 0o644); err != nil {
			t.Fatal(err)
		}
	}

	// Reset the agent's thread from its page: status shows it threadless.
	if th := agentStatus(jsonStatus(t, dir), agent).ThreadID; th == "" {
		t.Fatal("the agent has no thread to reset")
	}
	runSteps(t, ctx,
		step{"open the reset", clickNow(`section.reset summary`)},
		step{"see the reason box", chromedp.WaitVisible(`#reset-reason`, chromedp.ByID)},
		step{"type why", chromedp.SendKeys(`#reset-reason`, "start over", chromedp.ByID)},
		step{"reset", clickNow(`#reset`)},
		step{"see it reset", chromedp.WaitVisible(`#done`, chromedp.ByID)},
	)
	waitJSONStatus(t, dir, "the agent's thread reset", func(st control.Status) bool {
		a := agentStatus(st, agent)
		return a.ThreadID == "" && a.State == "idle"
	})
}

// TestConsoleOff: with console: off the daemon serves none, batty start
// says nothing of one and batty web says why there is none.
func TestConsoleOff(t *testing.T) {
	dir := fakeTeam(t, "noweb", 1)
	f, err := os.OpenFile(filepath.Join(dir, "team.yaml"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString("console: off\n"); err != nil {
		t.Fatal(err)
	}
	f.Close()
	t.Cleanup(func() { runBattyIn(t, dir, nil, "", "stop", "--timeout", "5s") })
	if out := mustBatty(t, dir, "start", "--no-tmux"); strings.Contains(out, "console") {
		t.Fatalf("batty start speaks of a console that is off:\n%s", out)
	}
	out, errOut, code := runBattyIn(t, dir, nil, "", "web", "--no-open")
	if code != 1 || out != "" || !strings.Contains(errOut, "console: off") {
		t.Fatalf("batty web with the console off: exit %d, %q, %q", code, out, errOut)
	}
}
