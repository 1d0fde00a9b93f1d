package inbox

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"
)

// helperEnv switches the test binary into a helper process (see TestMain).
const helperEnv = "BATTY_INBOX_TEST_HELPER"

func TestMain(m *testing.M) {
	switch os.Getenv(helperEnv) {
	case "":
		os.Exit(m.Run())
	case "deliver":
		os.Exit(helper(helperDeliver))
	case "churn":
		os.Exit(helper(helperChurn))
	case "route":
		os.Exit(helper(helperRoute))
	default:
		fmt.Fprintf(os.Stderr, "unknown helper %q\n", os.Getenv(helperEnv))
		os.Exit(2)
	}
}

func helper(run func(b *Box) error) int {
	s, err := Open(os.Getenv("INBOX_ROOT"))
	if err == nil {
		var b *Box
		if b, err = s.Box(os.Getenv("INBOX_BOX")); err == nil {
			err = run(b)
		}
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// helperDeliver delivers INBOX_N messages with bodies "<INBOX_TAG>-<i>".
func helperDeliver(b *Box) error {
	n, err := strconv.Atoi(os.Getenv("INBOX_N"))
	if err != nil {
		return err
	}
	for i := range n {
		if _, err := b.Deliver(msg(fmt.Sprintf("%s-%d", os.Getenv("INBOX_TAG"), i))); err != nil {
			return err
		}
	}
	return nil
}

// helperChurn plays a daemon and its senders until it is killed: recover,
// then deliver, claim, and complete or requeue, forever.
func helperChurn(b *Box) error {
	redeliver, errs := b.Recover()
	if len(errs) > 0 {
		return errs[0]
	}
	for _, m := range redeliver {
		if _, err := b.Complete(m.ID, Outcome{Status: StatusInterrupted}); err != nil {
			return err
		}
	}
	for i := 0; ; i++ {
		m, err := b.Deliver(msg(strconv.Itoa(i)))
		if err != nil {
			return err
		}
		if i%5 == 4 {
			continue // stays pending
		}
		if _, err := b.Claim(m.ID); err != nil {
			return err
		}
		if i%7 == 3 {
			if err := b.Requeue(m.ID); err != nil {
				return err
			}
			if _, err := b.Claim(m.ID); err != nil {
				return err
			}
		}
		if _, err := b.Complete(m.ID, Outcome{Status: StatusCompleted, Reply: m.Body}); err != nil {
			return err
		}
	}
}

func helperCmd(ctx context.Context, t *testing.T, kind, root, box string, env ...string) *exec.Cmd {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(ctx, exe)
	cmd.Env = append(os.Environ(), helperEnv+"="+kind, "INBOX_ROOT="+root, "INBOX_BOX="+box)
	cmd.Env = append(cmd.Env, env...)
	cmd.Stderr = os.Stderr
	return cmd
}

// TestConcurrentDeliver delivers from several processes and, at the same
// time, from many goroutines of this one.
func TestConcurrentDeliver(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns processes")
	}
	s, b := newBox(t, "eng")
	const procs, perProc, goroutines, perGoroutine = 4, 40, 8, 20
	var wg sync.WaitGroup
	for p := range procs {
		cmd := helperCmd(t.Context(), t, "deliver", s.Root, b.Name,
			"INBOX_N="+strconv.Itoa(perProc), fmt.Sprintf("INBOX_TAG=proc%d", p))
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		wg.Go(func() {
			if err := cmd.Wait(); err != nil {
				t.Errorf("helper %d: %v", p, err)
			}
		})
	}
	for g := range goroutines {
		wg.Go(func() {
			for i := range perGoroutine {
				if _, err := b.Deliver(msg(fmt.Sprintf("g%d-%d", g, i))); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()

	msgs, errs := b.Pending()
	noErrs(t, errs)
	want := map[string]bool{}
	for p := range procs {
		for i := range perProc {
			want[fmt.Sprintf("proc%d-%d", p, i)] = true
		}
	}
	for g := range goroutines {
		for i := range perGoroutine {
			want[fmt.Sprintf("g%d-%d", g, i)] = true
		}
	}
	if len(msgs) != len(want) {
		t.Fatalf("%d messages, want %d", len(msgs), len(want))
	}
	seen := map[string]bool{}
	for _, m := range msgs {
		if !want[m.Body] || seen[m.Body] {
			t.Fatalf("unexpected or duplicate body %q", m.Body)
		}
		seen[m.Body] = true
	}
	got := ids(msgs)
	if !slices.IsSorted(got) || len(slices.Compact(slices.Clone(got))) != len(got) {
		t.Fatal("ids not sorted or not unique")
	}
	if names := dirNames(t, b.path(dirTmp)); len(names) != 0 {
		t.Fatalf("tmp/ holds %q", names)
	}
	if p, f, err := b.Count(); p != len(want) || f != 0 || err != nil {
		t.Fatalf("Count = %d, %d, %v", p, f, err)
	}
}

// TestKillAndRecover kills a process using the box with SIGKILL at random
// points, several times, and checks after each restart that every message is
// intact and in exactly one state, and that exactly the messages without a
// recorded outcome are redelivered.
func TestKillAndRecover(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns processes")
	}
	s, b := newBox(t, "eng")
	for round := range 5 {
		cmd := helperCmd(t.Context(), t, "churn", s.Root, b.Name)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		// Let it run a little: until it has done some work, at least.
		deadline := time.Now().Add(10 * time.Second)
		for {
			d, err := b.names(dirDone)
			if err != nil {
				t.Fatal(err)
			}
			if len(d) >= 10*(round+1) || time.Now().After(deadline) {
				break
			}
			time.Sleep(time.Millisecond)
		}
		time.Sleep(time.Duration(round*7) * time.Millisecond)
		cmd.Process.Signal(syscall.SIGKILL)
		cmd.Wait()

		// Before recovery: which messages have no recorded outcome?
		done := idSet(t, b, dirDone)
		cur := idSet(t, b, dirCur)
		var want []string
		for id := range cur {
			if !done[id] {
				want = append(want, id)
			}
		}
		slices.Sort(want)
		redeliver, errs := b.Recover()
		noErrs(t, errs)
		if got := ids(redeliver); !slices.Equal(got, want) {
			t.Fatalf("round %d: Recover returned %q, want %q", round, got, want)
		}
		pending, errs := b.Pending()
		noErrs(t, errs)
		inflight, errs := b.InFlight()
		noErrs(t, errs)
		finished, err := b.Done(0)
		if err != nil {
			t.Fatal(err)
		}
		where := map[string]string{}
		for state, list := range map[string][]Message{StateNew: pending, StateCur: inflight, StateDone: finished} {
			for _, m := range list {
				if prev, ok := where[m.ID]; ok {
					t.Fatalf("round %d: %s is in %s and %s", round, m.ID, prev, state)
				}
				where[m.ID] = state
			}
		}
		if len(dirNames(t, b.Dir)) != 4 {
			t.Fatalf("round %d: box holds %q (bad/ appeared?)", round, dirNames(t, b.Dir))
		}
	}
}

func idSet(t *testing.T, b *Box, sub string) map[string]bool {
	t.Helper()
	names, err := b.names(sub)
	if err != nil {
		t.Fatal(err)
	}
	set := map[string]bool{}
	for _, id := range names {
		set[id] = true
	}
	return set
}
