package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/battyhq/batty/control"
	"github.com/battyhq/batty/project/projecttest"
)

// TestE2EConsoleUsageInABrowser runs a priced team with budgets, has its
// agents use tokens, and looks at the team page and the usage page in
// chromium at a laptop's size and a phone's: the usage and budget percents
// on the team page, the charts of tokens by agent and by role (SVG in the
// page), the cost and the budgets on the usage page; at 390 px nothing is
// wider than the screen. The screenshots go to BATTY_SCREENSHOTS when set
// (docs/guide/img).
func TestE2EConsoleUsageInABrowser(t *testing.T) {
	ctx := browser(t)
	self := projecttest.Executable(t) // outside /tmp, where the agents may write
	dir := t.TempDir()
	yaml := fmt.Sprintf(`name: crew
codex:
  bin: %s
  model: gpt-5-codex
  env:
    BATTY_TEST_ROLE: fakecodex
    CODEX_API_KEY: fake-key-no-login-needed
    FAKE_CODEX_STATE: %s
timeouts:
  shutdown: 5s
pricing:
  gpt-5-codex: {input: 1.25, cached_input: 0.125, output: 10}
budgets:
  - {for: team, tokens: 20000, per: day, warn_at: 80%%}
  - {for: engineer, tokens: 5000, per: hour}
roles:
  - name: architect
  - name: engineer
    instances: 3
`, self, t.TempDir())
	if err := os.WriteFile(filepath.Join(dir, "team.yaml"), []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { runBattyIn(t, dir, nil, "", "stop", "--timeout", "5s") })
	mustBatty(t, dir, "start", "--no-tmux")
	waitJSONStatus(t, dir, "idle agents", func(st control.Status) bool {
		for _, a := range st.Agents {
			if a.State != "idle" {
				return false
			}
		}
		return len(st.Agents) == 4
	})
	work := map[string]int{"architect": 2600, "engineer-1": 3100, "engineer-2": 900, "engineer-3": 400}
	for agent, n := range work {
		mustBatty(t, dir, "send", agent, fmt.Sprintf("scenario:usage:%d", n))
	}
	st := waitJSONStatus(t, dir, "every turn done", func(st control.Status) bool {
		for _, a := range st.Agents {
			if a.TurnsCompleted != 1 {
				return false
			}
		}
		return true
	})
	for _, a := range st.Agents {
		if a.BudgetPct == nil {
			t.Fatalf("no budget %% for %s in the status", a.Name)
		}
	}
	m := loginRE.FindStringSubmatch(mustBatty(t, dir, "web", "--no-open"))
	if m == nil {
		t.Fatal("batty web prints no login address")
	}
	login := m[0][len("batty: console: "):]

	// The browser starts with ctx, not with a step's shorter one.
	if err := chromedp.Run(ctx); err != nil {
		t.Fatal(err)
	}
	shots := map[string][]byte{}
	var teamText, usageText string
	var bars, svgs int
	for _, size := range [][2]int64{{1280, 800}, {390, 844}} {
		w, h := size[0], size[1]
		name := func(page string) string { return fmt.Sprintf("console-%s-%dx%d.png", page, w, h) }
		var team, usage []byte
		var teamWide, usageWide bool
		overflow := `document.scrollingElement.scrollWidth > window.innerWidth`
		steps := []step{
			{"size the window", chromedp.EmulateViewport(w, h)},
			{"log in", chromedp.Navigate(login)},
			{"see the team", chromedp.WaitVisible(`body.is-live`, chromedp.ByQuery)},
			{"read the team", chromedp.Text(`main`, &teamText, chromedp.ByQuery)},
			{"measure the team page", chromedp.Evaluate(overflow, &teamWide)},
			{"shoot the team page", chromedp.CaptureScreenshot(&team)},
			{"open the usage page", chromedp.Click(`a[href="/usage"]`, chromedp.ByQuery)},
			{"see the charts", chromedp.WaitVisible(`#by-role svg.bars`, chromedp.ByQuery)},
			{"read the usage", chromedp.Text(`main`, &usageText, chromedp.ByQuery)},
			{"count the bars", chromedp.Evaluate(`document.querySelectorAll("svg.bars rect").length`, &bars)},
			{"count the drawings", chromedp.Evaluate(`document.querySelectorAll("main svg").length`, &svgs)},
			{"measure the usage page", chromedp.Evaluate(overflow, &usageWide)},
			{"shoot the usage page", shoot(w, &usage)},
		}
		for i := range steps {
			steps[i].what = fmt.Sprintf("%dx%d: %s", w, h, steps[i].what)
		}
		runSteps(t, ctx, steps...)
		if w == 390 && (teamWide || usageWide) {
			t.Errorf("at 390 px a page is wider than the screen: team %v, usage %v", teamWide, usageWide)
		}
		shots[name("team")], shots[name("usage")] = team, usage
	}
	for _, want := range []string{"budget 94%", "94%", "37%"} {
		if !strings.Contains(teamText, want) {
			t.Errorf("the team page lacks %q:\n%s", want, teamText)
		}
	}
	for _, want := range []string{"Tokens by agent", "Tokens by role", "engineer-1", "architect", "$", "per day", "per hour", "No rate-limit windows"} {
		if !strings.Contains(usageText, want) {
			t.Errorf("the usage page lacks %q:\n%s", want, usageText)
		}
	}
	if bars < 4 || svgs < 4 {
		t.Errorf("the usage page draws %d bars in %d drawings", bars, svgs)
	}
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

// shoot takes the page whole at a laptop's width, the screen's worth at a
// phone's (a whole page's picture there is a long strip).
func shoot(width int64, png *[]byte) chromedp.Action {
	if width < 800 {
		return chromedp.CaptureScreenshot(png)
	}
	return chromedp.FullScreenshot(png, 100)
}
