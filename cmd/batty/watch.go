package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"
	"unicode/utf8"

	"golang.org/x/sys/unix"

	"github.com/battyhq/batty/control"
	"github.com/battyhq/batty/logtail"
	"github.com/battyhq/batty/safetext"
	"github.com/battyhq/batty/statusview"
	"github.com/battyhq/batty/textclip"
)

// watchRefreshGap is the least time between two asks for the status: a
// burst of events is one refresh.
const watchRefreshGap = 200 * time.Millisecond

// Terminal sequences of the live view.
const (
	enterAltScreen = "\x1b[?1049h\x1b[?25l" // alternate screen, cursor hidden
	leaveAltScreen = "\x1b[?25h\x1b[?1049l" // cursor shown, main screen back
)

// watchStatus is `batty status --watch` on the terminal out: the live view
// on the alternate screen, drawn again when the team's event log grows
// (followed with fsnotify through logtail: no polling for state; a burst
// of events is one ask for the status, at most one per watchRefreshGap),
// when the terminal is resized (SIGWINCH), and once a second for the ages
// it shows, which it advances itself from the last status. It returns nil
// on Ctrl-C or SIGTERM, with the terminal restored; an error when the
// event log cannot be followed. in is the terminal its keys come from (nil
// when stdin is none); fetch asks for the status.
func watchStatus(ctx context.Context, in, out *os.File, eventsLog string, fetch func() (control.Status, error)) (err error) {
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	if in != nil {
		// Ctrl-C as a key, not a signal: a signal would have the terminal
		// flush the output not yet shown, the restoring sequence with it.
		quit, restore, err := watchKeys(in)
		if err != nil {
			return err
		}
		defer func() {
			if rerr := restore(); rerr != nil && err == nil {
				err = rerr
			}
		}()
		var cancel context.CancelFunc
		ctx, cancel = context.WithCancel(ctx)
		defer cancel()
		go func() {
			select {
			case <-quit:
				cancel()
			case <-ctx.Done():
			}
		}()
	}
	winch := make(chan os.Signal, 1)
	signal.Notify(winch, syscall.SIGWINCH)
	defer signal.Stop(winch)

	// The event log's follower: each write is a wake-up, never blocking.
	changed := make(chan struct{}, 1)
	tailCtx, cancelTail := context.WithCancel(ctx)
	tailDone := make(chan error, 1)
	tail := &logtail.Tail{Path: eventsLog, Label: "event log", Out: wakeWriter(changed)}
	go func() { tailDone <- tail.Follow(tailCtx, 0, 0) }()
	defer func() {
		cancelTail()
		<-tailDone
	}()

	fmt.Fprint(out, enterAltScreen)
	defer fmt.Fprint(out, leaveAltScreen)

	var (
		st        control.Status
		fetchErr  error
		fetchedAt time.Time
		debounce  <-chan time.Time
	)
	refresh := func() {
		s, err := fetch()
		fetchedAt, fetchErr = time.Now(), err
		if err == nil {
			st = s
		}
	}
	draw := func() {
		w, h := terminalSize(out)
		now := time.Now()
		lines := renderWatch(advanceAges(st, now.Sub(fetchedAt)), w, h, fetchErr, now)
		fmt.Fprint(out, drawScreen(lines))
	}
	refresh()
	draw()
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case err := <-tailDone:
			tailDone <- err // for the deferred wait
			if err != nil {
				return fmt.Errorf("status --watch: %w", err)
			}
			return nil
		case <-changed:
			if debounce == nil {
				debounce = time.After(max(0, watchRefreshGap-time.Since(fetchedAt)))
			}
			continue
		case <-debounce:
			debounce = nil
			refresh()
		case <-winch:
		case <-tick.C:
		}
		draw()
	}
}

// watchKeys reads the keys typed on the terminal in, one at a time and
// unechoed, with Ctrl-C and Ctrl-\ keys rather than signals; quit is closed
// when Ctrl-C, q or Q is typed (or the terminal hangs up). restore stops
// the reading goroutine, waits for it, and puts the terminal's modes back.
func watchKeys(in *os.File) (quit <-chan struct{}, restore func() error, err error) {
	fd := int(in.Fd())
	saved, err := unix.IoctlGetTermios(fd, unix.TCGETS)
	if err != nil {
		return nil, nil, fmt.Errorf("status --watch: terminal modes: %w", err)
	}
	var wake [2]int
	if err := unix.Pipe2(wake[:], unix.O_CLOEXEC); err != nil {
		return nil, nil, fmt.Errorf("status --watch: %w", err)
	}
	keys := *saved
	keys.Lflag &^= unix.ICANON | unix.ECHO | unix.ISIG
	keys.Cc[unix.VMIN], keys.Cc[unix.VTIME] = 1, 0
	if err := unix.IoctlSetTermios(fd, unix.TCSETS, &keys); err != nil {
		unix.Close(wake[0])
		unix.Close(wake[1])
		return nil, nil, fmt.Errorf("status --watch: terminal modes: %w", err)
	}
	q := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer close(q)
		buf := make([]byte, 64)
		for {
			fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}, {Fd: int32(wake[0]), Events: unix.POLLIN}}
			if _, err := unix.Poll(fds, -1); err != nil {
				if errors.Is(err, unix.EINTR) {
					continue
				}
				return
			}
			if fds[1].Revents != 0 {
				return
			}
			if fds[0].Revents&(unix.POLLHUP|unix.POLLERR|unix.POLLNVAL) != 0 {
				return
			}
			n, err := unix.Read(fd, buf)
			if err != nil && !errors.Is(err, unix.EINTR) && !errors.Is(err, unix.EAGAIN) {
				return
			}
			if quitKey(buf[:max(n, 0)]) {
				return
			}
		}
	}()
	restore = func() error {
		unix.Write(wake[1], []byte{0})
		<-done
		unix.Close(wake[0])
		unix.Close(wake[1])
		if err := unix.IoctlSetTermios(fd, unix.TCSETS, saved); err != nil {
			return fmt.Errorf("status --watch: restoring the terminal's modes: %w", err)
		}
		return nil
	}
	return q, restore, nil
}

// quitKey reports whether keys hold one that quits the live view: Ctrl-C,
// Ctrl-\, q or Q. It is a pure function.
func quitKey(keys []byte) bool {
	for _, k := range keys {
		switch k {
		case 3, 0x1c, 'q', 'Q':
			return true
		}
	}
	return false
}

// wakeWriter is an io.Writer that swallows what it is given and signals
// on its channel, without blocking when a signal is already pending.
type wakeWriter chan<- struct{}

func (w wakeWriter) Write(p []byte) (int, error) {
	select {
	case w <- struct{}{}:
	default:
	}
	return len(p), nil
}

// terminalSize returns f's columns and rows, 80×24 when it cannot tell.
func terminalSize(f *os.File) (cols, rows int) {
	ws, err := unix.IoctlGetWinsize(int(f.Fd()), unix.TIOCGWINSZ)
	if err != nil || ws.Col == 0 || ws.Row == 0 {
		return 80, 24
	}
	return int(ws.Col), int(ws.Row)
}

// drawScreen is what draws lines over the whole screen: from the top
// left, each line cleared to its end, and the rest of the screen cleared
// below them. It is a pure function.
func drawScreen(lines []string) string {
	var b strings.Builder
	b.WriteString("\x1b[H")
	for i, l := range lines {
		if i > 0 {
			b.WriteString("\r\n")
		}
		b.WriteString(l + "\x1b[K")
	}
	b.WriteString("\x1b[J")
	return b.String()
}

// advanceAges returns st as it is d after it was taken: the daemon's
// uptime and each turn in flight d older. It is a pure function.
func advanceAges(st control.Status, d time.Duration) control.Status {
	s := int64(d / time.Second)
	if s <= 0 {
		return st
	}
	if st.Daemon.PID != 0 {
		st.Daemon.UptimeS += s
	}
	agents := make([]control.AgentStatus, len(st.Agents))
	for i, a := range st.Agents {
		if a.InFlight != nil {
			a.InFlightAgeS += s
		}
		agents[i] = a
	}
	st.Agents = agents
	return st
}

// Widths at which the live view shows more columns.
const (
	watchWide     = 110 // ROLE and LAST ERROR
	watchVeryWide = 150 // THREAD
)

// renderWatch returns the live view of st for a terminal of cols×rows:
// the headline, one line per agent (state, what it is doing and for how
// long, backlog, turns, tokens, context), the team's totals, a line per
// account paused by a usage limit, and a footer with the time, fetchErr if
// the last ask failed, and how to quit. At most rows lines of at most cols
// runes: agents that do not fit are counted on one line; wider terminals
// get more columns. Text from outside is made safe by safetext. It is a
// pure function.
func renderWatch(st control.Status, cols, rows int, fetchErr error, now time.Time) []string {
	cols, rows = max(cols, 20), max(rows, 4)
	head := []string{statusHeadline(st), ""}
	if st.TeamFileChanged {
		head = []string{statusHeadline(st), teamChangedNotice, ""}
	}
	var tail []string
	for _, a := range st.Accounts {
		if a.Paused {
			tail = append(tail, "QUOTA "+accountPauseLine(a))
		}
	}
	footer := now.Local().Format("15:04:05") + " · live: redrawn on every event · Ctrl-C quits"
	if fetchErr != nil {
		footer = now.Local().Format("15:04:05") + " · status failed: " + safetext.Line(fetchErr.Error(), 0) + " · Ctrl-C quits"
	}
	tail = append(tail, "", footer)

	// Room for the table: header, agents, totals.
	room := rows - len(head) - len(tail) - 2
	agents := st.Agents
	more := 0
	if room < len(agents) {
		keep := max(room-1, 0)
		more = len(agents) - keep
		agents = agents[:keep]
	}
	// AHEAD (the worktree agents' commits not on base) when the table
	// fits with it, but for the free text of LAST ERROR, which is clipped
	// anyway; columns two spaces apart when they fit.
	ahead := hasWorkspace(st.Agents) && widest(watchTable(st.Agents, withoutLastError(agents), more, cols, 1, true)) <= cols
	table := watchTable(st.Agents, agents, more, cols, 2, ahead)
	if widest(table) > cols {
		table = watchTable(st.Agents, agents, more, cols, 1, ahead)
	}
	lines := append(head, table...)
	lines = append(lines, tail...)
	for i, l := range lines {
		lines[i] = textclip.Runes(l, cols, "…")
	}
	if len(lines) > rows {
		lines = lines[:rows]
	}
	return lines
}

// watchTable is the live view's table for a terminal of cols columns:
// the header, shown (the agents that fit), a line counting the more that
// do not, and the TOTAL row of all, its columns padding spaces apart;
// with ahead, an AHEAD column counts each worktree agent's commits not on
// the base branch ("-" for the others). It is a pure function.
func watchTable(all, shown []control.AgentStatus, more, cols, padding int, ahead bool) []string {
	var b strings.Builder
	tw := tabwriter.NewWriter(&b, 0, 4, padding, ' ', 0)
	wide, veryWide := cols >= watchWide, cols >= watchVeryWide
	tokens := "TOKENS"
	if wide {
		tokens = "TOKENS IN/OUT"
	}
	row := func(name, role, state, thread, doing, backlog, turns, tokens, ctx, aheadCell, lastErr string) {
		cells := []string{name}
		if wide {
			cells = append(cells, role)
		}
		cells = append(cells, state)
		if veryWide {
			cells = append(cells, thread)
		}
		cells = append(cells, doing, backlog, turns, tokens, ctx)
		if ahead {
			cells = append(cells, aheadCell)
		}
		if wide {
			cells = append(cells, lastErr)
		}
		fmt.Fprintln(tw, strings.Join(cells, "\t"))
	}
	row("AGENT", "ROLE", "STATE", "THREAD", "DOING", "BACKLOG", "TURNS", tokens, "CTX", "AHEAD", "LAST ERROR")
	for _, a := range shown {
		r := statusview.NewAgent(a)
		doing := "-"
		if r.Busy {
			doing = r.InFlight + " " + r.InFlightFor
		}
		row(r.Name, r.Role, r.State, r.Thread, doing, fmt.Sprint(r.Backlog), fmt.Sprint(r.Turns), r.Input+"/"+r.Output,
			r.Context, r.Ahead, or(r.LastError, "-"))
	}
	if more > 0 {
		fmt.Fprintf(tw, "… %d more agent(s): a taller terminal shows them\n", more)
	}
	t := statusview.TeamTotals(all)
	row("TOTAL", "", t.Summary(), "", t.FlightCell(), fmt.Sprint(t.Backlog), fmt.Sprint(t.Turns), t.Input+"/"+t.Output, "", "", "")
	tw.Flush()
	return strings.Split(strings.TrimRight(b.String(), "\n"), "\n")
}

// hasWorkspace reports whether an agent of agents works in a worktree.
func hasWorkspace(agents []control.AgentStatus) bool {
	for _, a := range agents {
		if a.Workspace != nil {
			return true
		}
	}
	return false
}

// withoutLastError returns a copy of agents with no last error. It is a
// pure function.
func withoutLastError(agents []control.AgentStatus) []control.AgentStatus {
	out := slices.Clone(agents)
	for i := range out {
		out[i].LastError = ""
	}
	return out
}

// widest returns the runes of the longest of lines.
func widest(lines []string) int {
	n := 0
	for _, l := range lines {
		n = max(n, utf8.RuneCountInString(strings.TrimRight(l, " ")))
	}
	return n
}
