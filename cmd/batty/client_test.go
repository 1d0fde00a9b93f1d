package main

import (
	"encoding/json"
	"errors"
	"net"
	"reflect"
	"testing"
	"time"

	"github.com/battyhq/batty/control"
	"github.com/battyhq/batty/project"
)

// callOr runs the offline path exactly when no daemon listens, and hands
// back what it answered; a daemon's refusal is its error, never a reason to
// fall back.
func TestDaemonClientCallOr(t *testing.T) {
	c := daemonClient{layout: project.Layout{Dir: t.TempDir()}}
	req := control.Request{Op: control.OpPause, Reason: "why"}
	offlineErr := errors.New("offline failed")
	ran := 0
	offline := func() (control.Response, error) {
		ran++
		return control.Response{Changed: true, Schedules: []string{"nightly"}}, offlineErr
	}

	resp, running, err := c.callOr(req, 5*time.Second, offline)
	if running || ran != 1 || !errors.Is(err, offlineErr) || !resp.Changed || len(resp.Schedules) != 1 {
		t.Fatalf("no daemon: running %v, offline ran %d times, %+v, %v", running, ran, resp, err)
	}

	// A daemon answers once, then refuses.
	ln, err := net.Listen("unix", c.layout.Socket())
	if err != nil {
		t.Fatal(err)
	}
	answers := []control.Response{{OK: true, Changed: true}, {Error: "no agent \"x\""}}
	served := make(chan error, 1)
	go func() {
		defer close(served)
		served <- func() error {
			for _, a := range answers {
				conn, err := ln.Accept()
				if err != nil {
					return err
				}
				var got control.Request
				if err := json.NewDecoder(conn).Decode(&got); err != nil {
					conn.Close()
					return err
				}
				if !reflect.DeepEqual(got, req) {
					a = control.Response{Error: "unexpected request"}
				}
				err = json.NewEncoder(conn).Encode(a)
				conn.Close()
				if err != nil {
					return err
				}
			}
			return nil
		}()
	}()
	t.Cleanup(func() { ln.Close(); <-served })

	resp, running, err = c.callOr(req, 5*time.Second, offline)
	if !running || ran != 1 || err != nil || !resp.Changed {
		t.Fatalf("daemon: running %v, offline ran %d times, %+v, %v", running, ran, resp, err)
	}
	_, running, err = c.callOr(req, 5*time.Second, offline)
	if !running || ran != 1 || err == nil || err.Error() != `no agent "x"` {
		t.Fatalf("refused: running %v, offline ran %d times, %v", running, ran, err)
	}
	if err := <-served; err != nil {
		t.Fatal(err)
	}
}

// stop runs the offline path when no daemon holds the project's lock.
func TestDaemonClientStopWithoutDaemon(t *testing.T) {
	c := daemonClient{layout: project.Layout{Dir: t.TempDir()}}
	ran := false
	pid, running, err := c.stop(0, func() error { ran = true; return nil })
	if pid != 0 || running || err != nil || !ran {
		t.Fatalf("stop = %d, %v, %v; offline ran %v", pid, running, err, ran)
	}
}
