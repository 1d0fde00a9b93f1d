package inbox

import (
	"fmt"
	"strconv"
	"syscall"
	"testing"
	"time"
)

// helperRoute plays a daemon with a role queue (the box it is given) and
// two instances until it is killed: reconcile and recover, then deliver to
// the queue, route to an instance, claim and complete there, forever.
func helperRoute(queue *Box) error {
	a, b, err := routeBoxes(queue)
	if err != nil {
		return err
	}
	if _, errs := Reconcile([]*Box{a, b, queue}); len(errs) > 0 {
		return errs[0]
	}
	for _, x := range []*Box{a, b} {
		redeliver, errs := x.Recover()
		if len(errs) > 0 {
			return errs[0]
		}
		for _, m := range redeliver {
			if _, err := x.Complete(m.ID, Outcome{Status: StatusInterrupted}); err != nil {
				return err
			}
		}
	}
	pending, errs := queue.Pending()
	if len(errs) > 0 {
		return errs[0]
	}
	for _, m := range pending {
		if _, err := queue.MoveTo(m.ID, a); err != nil {
			return err
		}
	}
	for i := 0; ; i++ {
		m, err := queue.Deliver(msg(strconv.Itoa(i)))
		if err != nil {
			return err
		}
		dst := []*Box{a, b}[i%2]
		if _, err := queue.MoveTo(m.ID, dst); err != nil {
			return err
		}
		if i%3 == 2 {
			continue // stays pending in the instance
		}
		if _, err := dst.Claim(m.ID); err != nil {
			return err
		}
		if _, err := dst.Complete(m.ID, Outcome{Status: StatusCompleted}); err != nil {
			return err
		}
	}
}

// routeBoxes opens the two instance boxes next to a queue.
func routeBoxes(queue *Box) (a, b *Box, err error) {
	if a, err = queue.store.Box("eng-1"); err != nil {
		return nil, nil, err
	}
	b, err = queue.store.Box("eng-2")
	return a, b, err
}

// TestKillWhileRouting SIGKILLs a process that routes messages from a role
// queue to two instances at varying points, and checks after each kill that
// no message is in two boxes (routing is one rename), and that after
// Reconcile and Recover every message has exactly one file.
func TestKillWhileRouting(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns processes")
	}
	s, queue := newBox(t, "@eng")
	a, b, err := routeBoxes(queue)
	if err != nil {
		t.Fatal(err)
	}
	boxes := []*Box{queue, a, b}
	for round := range 8 {
		cmd := helperCmd(t.Context(), t, "route", s.Root, queue.Name)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		deadline := time.Now().Add(10 * time.Second)
		for {
			n := len(idSet(t, a, dirDone)) + len(idSet(t, b, dirDone))
			if n >= 10*(round+1) || time.Now().After(deadline) {
				break
			}
			time.Sleep(time.Millisecond)
		}
		time.Sleep(time.Duration(round*3) * time.Millisecond)
		cmd.Process.Signal(syscall.SIGKILL)
		cmd.Wait()

		// Before any repair: an id is never in two boxes.
		in := map[string]string{}
		for _, x := range boxes {
			seen := map[string]bool{}
			for _, sub := range []string{dirNew, dirCur, dirDone} {
				for id := range idSet(t, x, sub) {
					seen[id] = true
				}
			}
			for id := range seen {
				if prev, ok := in[id]; ok {
					t.Fatalf("round %d: %s is in %s and %s", round, id, prev, x.Name)
				}
				in[id] = x.Name
			}
		}
		_, errs := Reconcile([]*Box{a, b, queue})
		noErrs(t, errs)
		for _, x := range []*Box{a, b} {
			_, errs := x.Recover()
			noErrs(t, errs)
		}
		for id := range in {
			copies, err := Find(id, boxes)
			if err != nil {
				t.Fatal(err)
			}
			if len(copies) != 1 {
				t.Fatalf("round %d: %s has %d copies: %v", round, id, len(copies), fmt.Sprint(copies))
			}
		}
	}
}
