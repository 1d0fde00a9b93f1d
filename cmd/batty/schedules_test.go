package main

import (
	"strings"
	"testing"
	"time"

	"github.com/battyhq/batty/control"
)

func TestFeedShowsScheduleEvents(t *testing.T) {
	next := time.Date(2030, 1, 2, 4, 0, 0, 0, time.UTC)
	nextLocal := next.Local().Format("2006-01-02 15:04:05")
	id := "20300102T030000.000000000Z-schedule.nightly-report.3"
	for _, tc := range []struct{ line, want string }{
		{`{"type":"schedule_run_started","message_id":"` + id + `","data":{"schedule":"nightly-report","run":3,"to":"manager"}}`,
			"⏲ schedule nightly-report: run 3 sent to manager (message schedule.nightly-report.3)"},
		{`{"type":"schedule_run_finished","message_id":"` + id + `","data":{"schedule":"nightly-report","run":3,"runs_completed":3,"next_due":"2030-01-02T04:00:00Z"}}`,
			"⏲ schedule nightly-report: run 3 done (3 completed); next run " + nextLocal},
		{`{"type":"schedule_run_finished","message_id":"` + id + `","detail":"failed exit: boom","data":{"schedule":"nightly-report","run":3}}`,
			"⏲ schedule nightly-report: run 3 failed: failed exit: boom"},
		{`{"type":"schedule_stopped","detail":"max_runs (3) reached","data":{"schedule":"nightly-report"}}`,
			"■ schedule nightly-report stopped: max_runs (3) reached"},
		{`{"type":"schedule_failed","detail":"failed exit: boom","data":{"schedule":"nightly-report"}}`,
			"✘ schedule nightly-report failed: failed exit: boom"},
	} {
		got := strings.TrimPrefix(renderFeedLine([]byte(tc.line), false), "--:--:-- ")
		if got != tc.want {
			t.Errorf("renderFeedLine(%s)\n got %q\nwant %q", tc.line, got, tc.want)
		}
	}
}

func TestPrintStatusSchedules(t *testing.T) {
	next := time.Now().Add(time.Hour).Truncate(time.Second)
	st := control.Status{Team: "t", Schedules: []control.ScheduleStatus{
		{Name: "nightly", To: "manager", Every: "24h0m0s", State: "waiting", RunsCompleted: 3, NextDue: next},
		{Name: "poll", To: "eng", Every: "30m0s", State: "failed", RunsCompleted: 1, RunsFailed: 1, LastError: "failed exit: boom"},
	}}
	var b strings.Builder
	printStatus(&b, st)
	out := b.String()
	for _, want := range []string{"SCHEDULE", "nightly", "manager", "24h0m0s", "waiting", next.Local().Format("2006-01-02 15:04:05"),
		"poll", "failed", "failed exit: boom"} {
		if !strings.Contains(out, want) {
			t.Errorf("status lacks %q:\n%s", want, out)
		}
	}
	b.Reset()
	printStatus(&b, control.Status{Team: "t"})
	if strings.Contains(b.String(), "SCHEDULE") {
		t.Errorf("a team without schedules shows a schedules table:\n%s", b.String())
	}
}
