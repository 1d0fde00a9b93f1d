package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/battyhq/batty/eventlog"
	"github.com/battyhq/batty/procstat"
	"github.com/battyhq/batty/project/projecttest"
)

// BenchmarkConsole100 measures the console of a 100-agent team run by the
// real batty binary (its codex the fake): the team page served (a logged-in
// client on this machine, the whole request: the daemon's status over its
// control socket and the page rendered), 50 times, its median and maximum
// (team-page-p50-ms, team-page-max-ms); the daemon's CPU, as a percentage
// of one core, over a 30-second window while the team is idle, without a
// console open (idle-cpu-%) and with 20 open (sse20-cpu-%: 20 live
// streams of the team page); and, in chromium, the time from a turn's
// turn_finished event (its time in the event log) to the page showing
// the turn (the agent's turns cell, seen by a MutationObserver), for 5
// turns one after another (screen-p50-ms, screen-max-ms). Run with
// -benchtime 1x.
func BenchmarkConsole100(b *testing.B) {
	const agents, pageLoads, consoles, turns = 100, 50, 20, 5
	const window = 30 * time.Second
	ctx := browser(b)
	self := projecttest.Executable(b) // outside /tmp, where the agents may write
	for range b.N {
		p := newBenchProject(b, fakeTeamYAML("console", self, b.TempDir(), agents))
		p.batty("start", "--no-tmux")
		st, pids := p.idleTeam(agents)
		m := loginRE.FindStringSubmatch(p.batty("web", "--no-open"))
		if m == nil {
			b.Fatal("batty web prints no login address")
		}
		login, home := m[0][len("batty: console: "):], m[1]
		jar, err := cookiejar.New(nil)
		if err != nil {
			b.Fatal(err)
		}
		hc := &http.Client{Jar: jar}
		get := func(url string) string {
			resp, err := hc.Get(url)
			if err != nil {
				b.Fatal(err)
			}
			defer resp.Body.Close()
			body, err := io.ReadAll(resp.Body)
			if err != nil || resp.StatusCode != 200 {
				b.Fatalf("GET %s: %s %v", url, resp.Status, err)
			}
			return string(body)
		}
		get(login)

		// The team page.
		var loads []float64
		for range pageLoads {
			t0 := time.Now()
			page := get(home)
			loads = append(loads, float64(time.Since(t0).Microseconds())/1000)
			if n := strings.Count(page, `<tr class="agent"`); n != agents {
				b.Fatalf("the team page shows %d agents", n)
			}
		}

		// The daemon's CPU, idle, without a console and with 20.
		cpu := func() float64 {
			t0, c0 := time.Now(), cpuTicks(b, pids[:1])
			time.Sleep(window) // the measurement window itself
			return float64(cpuTicks(b, pids[:1])-c0) / procstat.ClockTicks / time.Since(t0).Seconds() * 100
		}
		idle := cpu()
		sctx, stopStreams := context.WithCancel(context.Background())
		streams := make(chan error, consoles)
		for range consoles {
			// Each its own connection, as 20 browsers'.
			c := &http.Client{Jar: jar, Transport: &http.Transport{}}
			req, err := http.NewRequestWithContext(sctx, "GET", home+"events", nil)
			if err != nil {
				b.Fatal(err)
			}
			resp, err := c.Do(req)
			if err != nil || resp.StatusCode != 200 {
				b.Fatalf("open a live stream: %v", err)
			}
			first := make(chan struct{})
			go func() {
				defer resp.Body.Close()
				r := bufio.NewReader(resp.Body)
				once := false
				for {
					line, err := r.ReadString('\n')
					if err != nil {
						streams <- err
						return
					}
					if !once && strings.HasPrefix(line, "event: status") {
						once = true
						close(first)
					}
				}
			}()
			select {
			case <-first:
			case <-time.After(30 * time.Second):
				b.Fatal("a live stream sent no status")
			}
		}
		open := cpu()
		stopStreams()
		for range consoles {
			<-streams
		}

		// Event to screen, in the browser.
		var screen []float64
		if err := chromedp.Run(ctx, chromedp.Navigate(login), chromedp.WaitVisible(`body.is-live`, chromedp.ByQuery)); err != nil {
			b.Fatal(err)
		}
		agent := st.Agents[0].Name
		for k := 1; k <= turns; k++ {
			watch := fmt.Sprintf(`window.__seen = 0; new MutationObserver(function (_, obs) {
  var c = document.querySelector('tr.agent[data-agent=%q] td.turns');
  if (c && c.textContent === "%d") { window.__seen = Date.now(); obs.disconnect(); }
}).observe(document.getElementById("live"), {childList: true, subtree: true, characterData: true}); true`, agent, k)
			var ok bool
			if err := chromedp.Run(ctx, chromedp.Evaluate(watch, &ok)); err != nil {
				b.Fatal(err)
			}
			p.batty("send", agent, fmt.Sprintf("turn %d", k))
			var seen float64
			if err := chromedp.Run(ctx, chromedp.Poll(`window.__seen || false`, &seen, chromedp.WithPollingTimeout(30*time.Second))); err != nil {
				b.Fatalf("turn %d never showed: %v", k, err)
			}
			at := turnFinished(b, p.dir, agent, k)
			screen = append(screen, seen-float64(at.UnixMilli()))
		}
		p.stop(pids)

		b.ReportMetric(medianOf(loads), "team-page-p50-ms")
		b.ReportMetric(slices.Max(loads), "team-page-max-ms")
		b.ReportMetric(idle, "idle-cpu-%")
		b.ReportMetric(open, "sse20-cpu-%")
		b.ReportMetric(medianOf(screen), "screen-p50-ms")
		b.ReportMetric(slices.Max(screen), "screen-max-ms")
	}
}

// turnFinished returns the time of agent's k-th turn_finished event in
// the event log of the project in dir.
func turnFinished(b *testing.B, dir, agent string, k int) time.Time {
	b.Helper()
	f, err := os.Open(layoutOf(b, dir).EventsLog())
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	n := 0
	for sc.Scan() {
		e, err := eventlog.Decode(sc.Bytes())
		if err == nil && e.Type == eventlog.EvTurnFinished && e.Agent == agent {
			if n++; n == k {
				return e.Time
			}
		}
	}
	b.Fatalf("no turn_finished event %d of %s", k, agent)
	return time.Time{}
}
