package codex

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A rollout recorded by Codex CLI 0.169.0 (an engineer of the demo: three
// model requests, the last of 10,241 input and 19 output tokens).
const rolloutThread = "01a2090e-eece-7071-b39c-8f807d327602"

func TestLastRequestReadsTheRecordedRollout(t *testing.T) {
	u, err := LastRequest(filepath.Join("testdata", "rollout"), rolloutThread)
	if err != nil || u != (RequestUsage{Input: 10241, Output: 19, Window: 258400}) {
		t.Fatalf("LastRequest = %+v, %v", u, err)
	}
}

func TestLastRequestRefuses(t *testing.T) {
	home := t.TempDir()
	day := filepath.Join(home, "sessions", "2026", "01", "02")
	if err := os.MkdirAll(day, 0o700); err != nil {
		t.Fatal(err)
	}
	write := func(id, content string) string {
		t.Helper()
		p := filepath.Join(day, "rollout-2026-01-02T03-04-05-"+id+".jsonl")
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	good := `{"type":"event_msg","payload":{"type":"token_count","info":{"last_token_usage":{"input_tokens":500,"output_tokens":7},"model_context_window":1000}}}` + "\n"
	const (
		idCut   = "01a2090e-0000-7000-8000-000000000001"
		idNone  = "01a2090e-0000-7000-8000-000000000002"
		idLink  = "01a2090e-0000-7000-8000-000000000003"
		idNoUse = "01a2090e-0000-7000-8000-000000000004"
	)
	// A last line cut by a write in progress: the complete record before it counts.
	write(idCut, good+`{"type":"event_msg","payload":{"type":"token_count","info":{"last_token_us`)
	if u, err := LastRequest(home, idCut); err != nil || u.Input != 500 || u.Output != 7 || u.Window != 1000 {
		t.Errorf("cut last line: %+v, %v", u, err)
	}
	// The record further from the end than the first read (64 KiB).
	const idFar = "01a2090e-0000-7000-8000-000000000005"
	filler := strings.Repeat(`{"type":"response_item","payload":{"type":"message","content":"`+strings.Repeat("x", 1000)+`"}}`+"\n", 300)
	write(idFar, good+filler)
	if u, err := LastRequest(home, idFar); err != nil || u.Input != 500 {
		t.Errorf("record 300 KiB before the end: %+v, %v", u, err)
	}
	// token_count records without usage (info null, as codex writes first).
	write(idNoUse, `{"type":"event_msg","payload":{"type":"token_count","info":null}}`+"\n")
	if _, err := LastRequest(home, idNoUse); err == nil {
		t.Error("a rollout without usage: no error")
	}
	if _, err := LastRequest(home, idNone); err == nil {
		t.Error("no rollout: no error")
	}
	if _, err := LastRequest(home, "../../etc/passwd"); err == nil || !strings.Contains(err.Error(), "not a thread id") {
		t.Errorf("a path for a thread id: %v", err)
	}
	target := write(idCut+"x", good) // not a rollout name of a valid id
	if err := os.Symlink(target, filepath.Join(day, "rollout-2026-01-02T03-04-05-"+idLink+".jsonl")); err != nil {
		t.Fatal(err)
	}
	if _, err := LastRequest(home, idLink); err == nil {
		t.Error("a rollout that is a link was followed")
	}
}

func FuzzLastTokenCount(f *testing.F) {
	f.Add([]byte(`{"type":"event_msg","payload":{"type":"token_count","info":{"last_token_usage":{"input_tokens":5,"output_tokens":1},"model_context_window":9}}}`))
	f.Add([]byte("\n\n{\"token_count\"\n"))
	f.Add([]byte(`{"type":"event_msg","payload":{"type":"token_count","info":{"last_token_usage":null}}}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		if u, ok := lastTokenCount(b); ok && (u.Input <= 0 || u.Output < 0 || u.Window < 0) {
			t.Fatalf("accepted %+v", u)
		}
	})
}

func TestCarryThread(t *testing.T) {
	from, to := t.TempDir(), t.TempDir()
	rel := filepath.Join("sessions", "2026", "01", "02", "rollout-2026-01-02T03-04-05-"+rolloutThread+".jsonl")
	src := filepath.Join(from, rel)
	if err := os.MkdirAll(filepath.Dir(src), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(src, []byte("first\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	dst, err := CarryThread(from, to, rolloutThread)
	if err != nil || dst != filepath.Join(to, rel) {
		t.Fatalf("CarryThread = %q, %v", dst, err)
	}
	if b, err := os.ReadFile(dst); err != nil || string(b) != "first\n" {
		t.Fatalf("copy = %q, %v", b, err)
	}
	if fi, err := os.Stat(dst); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("copy mode = %v, %v", fi.Mode(), err)
	}
	// The thread went on at the source: carrying it again replaces the copy.
	if err := os.WriteFile(src, []byte("first\nsecond\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := CarryThread(from, to, rolloutThread); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(dst); string(b) != "first\nsecond\n" {
		t.Fatalf("copy after the second carry = %q", b)
	}
	// And back: LastRequest finds the same rollout in both homes.
	if _, err := CarryThread(to, from, rolloutThread); err != nil {
		t.Fatal(err)
	}

	if _, err := CarryThread(from, to, "not-a-thread"); err == nil {
		t.Error("a bad thread id: no error")
	}
	if _, err := CarryThread(from, to, "01a2090e-0000-7000-8000-00000000000f"); err == nil {
		t.Error("an unknown thread: no error")
	}
	// A link where a directory of the destination should be is refused.
	evil := t.TempDir()
	linked := t.TempDir()
	if err := os.Symlink(evil, filepath.Join(linked, "sessions")); err != nil {
		t.Fatal(err)
	}
	if _, err := CarryThread(from, linked, rolloutThread); err == nil {
		t.Error("a link below the destination home: no error")
	}
	if ents, _ := os.ReadDir(evil); len(ents) != 0 {
		t.Errorf("written through the link: %v", ents)
	}
}
