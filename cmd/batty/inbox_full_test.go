package main

import (
	"encoding/json"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/battyhq/batty/inbox"
)

// TestInboxLongReplies: replies of 2 MiB and 20 MiB in the human's inbox
// are listed as a preview with the command that prints them whole, and
// `batty inbox --full ID` prints them whole; an agent's long reply likewise.
func TestInboxLongReplies(t *testing.T) {
	dir, l := writeTeam(t)
	human := openBox(t, l, "human")
	texts := map[string]string{}
	var ids []string
	for i, n := range []int{2 << 20, 20 << 20} {
		text := "line one of reply " + strconv.Itoa(i) + "\n" + strings.Repeat("ß", n/2)
		m := deliver(t, human, inbox.Message{From: "architect", To: "human", Body: text})
		texts[m.ID] = text
		ids = append(ids, m.ID)
	}
	out, errOut, code := runBattyIn(t, dir, nil, "", "inbox")
	if code != 0 || errOut != "" {
		t.Fatalf("exit %d\nstderr: %s", code, errOut)
	}
	inOrder(t, out, inbox.ShortID(ids[1]), "line one of reply 1", "… (64.0 KiB shown of 20.0 MiB; the whole text: batty inbox --full "+inbox.ShortID(ids[1])+")",
		inbox.ShortID(ids[0]), "line one of reply 0", "… (64.0 KiB shown of 2.0 MiB; the whole text: batty inbox --full "+inbox.ShortID(ids[0])+")")
	if len(out) > 4*inbox.PreviewLen {
		t.Fatalf("the listing is %d bytes: more than previews", len(out))
	}
	for _, id := range ids {
		out, errOut, code := runBattyIn(t, dir, nil, "", "inbox", "--full", id)
		if code != 0 || errOut != "" || out != texts[id]+"\n" {
			t.Fatalf("--full %s: exit %d, %d bytes (want %d)\nstderr: %s", id, code, len(out), len(texts[id])+1, errOut)
		}
	}
	out, _, code = runBattyIn(t, dir, nil, "", "inbox", "--full", ids[0], "--json")
	var m listedMessage
	if err := json.Unmarshal([]byte(out), &m); code != 0 || err != nil || m.Body != texts[ids[0]] || m.BodySize != int64(len(texts[ids[0]])) || m.State != "new" {
		t.Fatalf("--full --json: exit %d, %v, body of %d bytes", code, err, len(m.Body))
	}
	if _, errOut, code := runBattyIn(t, dir, nil, "", "inbox", "--full", "20261121T125100.123456789Z-00000000"); code != 1 || !strings.Contains(errOut, "no message 20261121T125100.123456789Z-00000000 in the inbox of human") {
		t.Fatalf("--full of a missing message: exit %d, %s", code, errOut)
	}

	// An agent's done record keeps its long reply whole too.
	eng := openBox(t, l, "engineer-1")
	reply := "Report\n" + strings.Repeat("r", 3<<20)
	done := finish(t, eng, inbox.Message{From: "human", To: "engineer-1", Body: "write the report"},
		inbox.Outcome{Status: inbox.StatusCompleted, Agent: "engineer-1", Reply: reply})
	out, _, code = runBattyIn(t, dir, nil, "", "inbox", "engineer-1")
	if code != 0 {
		t.Fatalf("exit %d", code)
	}
	inOrder(t, out, inbox.ShortID(done.ID), "reply:   Report …", "(3.0 MiB in all: batty inbox engineer-1 --full "+inbox.ShortID(done.ID)+")")
	out, _, code = runBattyIn(t, dir, nil, "", "inbox", "engineer-1", "--full", done.ID)
	if code != 0 || out != reply+"\n" {
		t.Fatalf("--full of the agent's reply: exit %d, %d bytes", code, len(out))
	}
}

// TestChatLongReply: batty chat prints a reply longer than a frame whole,
// and leaves no reply file behind.
func TestChatLongReply(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	const n = 17 << 20
	tmp := t.TempDir()
	out, errOut, code := runBatty(t, []string{"TMPDIR=" + tmp}, "scenario:huge:"+strconv.Itoa(n)+"\n",
		"chat", "--json", "--codex-bin", self, "--env", "BATTY_TEST_ROLE=fakecodex", "--env", "FAKE_CODEX_STATE="+t.TempDir(), "--cwd", t.TempDir())
	if code != 0 {
		t.Fatalf("exit %d\nstderr: %s", code, errOut)
	}
	var finished *struct {
		Event     string `json:"event"`
		Reply     string `json:"reply"`
		ReplyFile string `json:"reply_file"`
		ReplySize int64  `json:"reply_size"`
	}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		if !strings.HasPrefix(line, `{"event":"turn_finished"`) {
			continue
		}
		if err := json.Unmarshal([]byte(line), &finished); err != nil {
			t.Fatal(err)
		}
	}
	if finished == nil || len(finished.Reply) != n || finished.ReplyFile != "" || finished.ReplySize != n {
		t.Fatalf("turn_finished: %+v", finished != nil)
	}
	if des, _ := os.ReadDir(tmp); len(des) != 0 {
		t.Fatalf("left in TMPDIR: %v", des)
	}
}
