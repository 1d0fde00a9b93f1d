package console

import (
	"fmt"
	"html/template"
	"strings"
	"time"

	"github.com/battyhq/batty/safetext"
	"github.com/battyhq/batty/statusview"
	"github.com/battyhq/batty/textclip"
)

// parsePages parses each page with the layout; every page defines
// "content", the layout "page".
func parsePages() (map[string]*template.Template, error) {
	funcs := template.FuncMap{"pct": statusview.Pct}
	pages := map[string]*template.Template{}
	for p, files := range pageFiles {
		t, err := template.New(p).Funcs(funcs).ParseFS(webFiles, append([]string{"web/layout.html"}, files...)...)
		if err != nil {
			return nil, fmt.Errorf("console: parse %s: %w", p, err)
		}
		pages[p] = t
	}
	return pages, nil
}

// pageFiles are the templates of each page, besides the layout.
var pageFiles = map[string][]string{
	"team":     {"web/team.html"},
	"agent":    {"web/agent.html", "web/messages.html"},
	"inbox":    {"web/inbox.html"},
	"landings": {"web/landings.html"},
	"landing":  {"web/landing.html"},
	"alerts":   {"web/alerts.html"},
	"usage":    {"web/usage.html"},
	"threads":  {"web/threads.html"},
	"thread":   {"web/thread.html"},
	"search":   {"web/search.html"},
	"blame":    {"web/blame.html", "web/story.html"},
	"show":     {"web/show.html", "web/story.html"},
}

// Limits of what the pages show of a text an agent or a model wrote.
const (
	maxShownBody  = 4000
	maxShownReply = 4000
	maxShownLine  = 300
)

// nav is the header's part of every page: where it is and what waits for
// the human.
type nav struct {
	// Page names the page ("team", "inbox", "landings", "alerts", "").
	Page string
	// Inbox counts the human's unread messages; Alerts the alerts not
	// seen; Review the landings waiting for review.
	Inbox, Alerts, Review int
}

// Unread is what the tab's title counts: unread messages and unseen
// alerts.
func (n nav) Unread() int { return n.Inbox + n.Alerts }

// shown is an agent's or a model's text for a page: escape sequences and
// control characters made inert (as the panes show them), at most max
// runes. html/template escapes the rest. It is a pure function.
func shown(s string, max int) string {
	return textclip.Runes(safetext.Text(strings.TrimRight(s, "\n")), max, textclip.Ellipsis)
}

// when shows a time on the pages. It is a pure function.
func when(t time.Time) string {
	if t.IsZero() {
		return "—"
	}
	return t.Local().Format("Jan 2 15:04:05")
}

// orDash is s, "—" when it is empty. It is a pure function.
func orDash(s string) string {
	if s == "" {
		return "—"
	}
	return s
}
