package doctor

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/battyhq/batty/control"
	"github.com/battyhq/batty/unixsock"
)

// SharedFacts is one shared app-server of the running team
// (codex.app_server: per-account), as its status names it, and what
// Gather found of it.
type SharedFacts struct {
	// Key, PID, CodexHome and Socket are the status's (control.AppServerStatus).
	Key       string
	PID       int
	CodexHome string
	Socket    string
	// Agents are the agents on it, in the status's order.
	Agents []string
	// Dead says why the process is not running ("" when it is).
	Dead string
	// Silent says why its broker did not answer ("" when it did).
	Silent string
}

// SharedFromStatus are the shared app-servers of a running team's status,
// one per key in the order of their first agent. It is a pure function.
func SharedFromStatus(agents []control.AgentStatus) []SharedFacts {
	var out []SharedFacts
	for _, a := range agents {
		s := a.AppServer
		if s == nil {
			continue
		}
		i := slices.IndexFunc(out, func(f SharedFacts) bool { return f.Key == s.Key })
		if i < 0 {
			out = append(out, SharedFacts{Key: s.Key, PID: s.PID, CodexHome: s.CodexHome, Socket: s.Socket})
			i = len(out) - 1
		}
		out[i].Agents = append(out[i].Agents, a.Name)
	}
	return out
}

// brokerTimeout bounds the wait for a broker's answer.
const brokerTimeout = 5 * time.Second

// gatherShared finds whether f's process runs (its pid is a live
// `codex app-server`) and whether its broker answers: a connection from a
// process that is none of the team's shims is refused with one JSON-RPC
// error line, which is the answer looked for.
func gatherShared(f SharedFacts) SharedFacts {
	f.Dead = processDead(f.PID)
	f.Silent = brokerSilent(f.Socket)
	return f
}

// processDead says why pid is not a running app-server, "" when it is.
func processDead(pid int) string {
	if pid <= 0 {
		return "no process: the daemon is starting it (again)"
	}
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return fmt.Sprintf("process %d is gone", pid)
	}
	// The state follows the command's closing parenthesis.
	if i := strings.LastIndexByte(string(stat), ')'); i >= 0 && i+2 < len(stat) && (stat[i+2] == 'Z' || stat[i+2] == 'X') {
		return fmt.Sprintf("process %d has exited", pid)
	}
	cmdline, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
	if err != nil {
		return fmt.Sprintf("process %d is gone", pid)
	}
	if !slices.Contains(strings.Split(string(cmdline), "\x00"), "app-server") {
		return fmt.Sprintf("process %d is not a codex app-server", pid)
	}
	return ""
}

// brokerSilent says why the broker behind socket did not answer, "" when
// it did.
func brokerSilent(socket string) string {
	if socket == "" {
		return "the status names no socket"
	}
	ctx, cancel := context.WithTimeout(context.Background(), brokerTimeout)
	c, err := unixsock.Dial(ctx, socket)
	cancel()
	if err != nil {
		return "cannot connect to " + socket + ": " + err.Error()
	}
	defer c.Close()
	if err := c.SetReadDeadline(time.Now().Add(brokerTimeout)); err != nil {
		return err.Error()
	}
	line, err := bufio.NewReader(c).ReadBytes('\n')
	if err != nil {
		return fmt.Sprintf("%s accepted a connection but did not answer: %v", socket, err)
	}
	var m struct {
		Error *struct {
			Message string `json:"message"`
		} `json:"error"`
	}
	if json.Unmarshal(line, &m) != nil || m.Error == nil {
		return socket + " answered something other than the broker's refusal"
	}
	return ""
}

// sharedCheck is the line of one shared app-server.
func sharedCheck(f SharedFacts) Check {
	ch := Check{Name: "appserver", Subject: "shared by " + strings.Join(f.Agents, ", ") + " (key " + f.Key + ", CODEX_HOME " + f.CodexHome + ")"}
	fix := "the daemon starts a dead shared app-server again by itself; if it keeps failing, see daemon.log in the state directory and run batty restart"
	switch {
	case f.Dead != "":
		ch.Status, ch.Detail, ch.Fix = Fail, f.Dead, fix
	case f.Silent != "":
		ch.Status, ch.Detail, ch.Fix = Fail, fmt.Sprintf("process %d runs, but its broker does not answer: %s", f.PID, f.Silent), fix
	default:
		ch.Status, ch.Detail = OK, fmt.Sprintf("process %d runs; its broker answers on %s", f.PID, f.Socket)
	}
	return ch
}
