package team

import (
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestParseAlerts(t *testing.T) {
	cfg, msg, dir := loadString(t, "name: t\non_alert: [./hooks/alert.sh, --to, me]\nalert_on_reply: true\ntimeouts: {alert: 3s}\nroles:\n  - name: a\n")
	if msg != "" {
		t.Fatal(msg)
	}
	if want := []string{filepath.Join(dir, "hooks", "alert.sh"), "--to", "me"}; !reflect.DeepEqual(cfg.OnAlert, want) {
		t.Errorf("OnAlert = %q, want %q", cfg.OnAlert, want)
	}
	if !cfg.AlertOnReply || cfg.Timeouts.Alert != 3*time.Second {
		t.Errorf("AlertOnReply %v, Timeouts.Alert %s", cfg.AlertOnReply, cfg.Timeouts.Alert)
	}
	cfg, msg, _ = loadString(t, "name: t\non_alert: [notify-send, batty]\nroles:\n  - name: a\n")
	if msg != "" {
		t.Fatal(msg)
	}
	if want := []string{"notify-send", "batty"}; !reflect.DeepEqual(cfg.OnAlert, want) || cfg.AlertOnReply || cfg.Timeouts.Alert != DefaultAlertTimeout {
		t.Errorf("OnAlert %q, AlertOnReply %v, Timeouts.Alert %s", cfg.OnAlert, cfg.AlertOnReply, cfg.Timeouts.Alert)
	}
}

func TestParseAlertsErrors(t *testing.T) {
	for _, tc := range []struct{ src, want string }{
		{"on_alert: notify-send", "team.yaml:2:11: on_alert must be a list, not a string"},
		{"on_alert: []", "team.yaml:2:11: on_alert must name a command, not an empty list"},
		{`on_alert: ["", x]`, "team.yaml:2:12: on_alert's command (its first element) must not be empty"},
		{"on_alert: [curl, 3]", "team.yaml:2:18: on_alert element must be a string, not an integer"},
		{"alert_on_reply: yes please", "team.yaml:2:17: alert_on_reply must be true or false, not a string"},
		{`alert_on_reply: "true"`, "team.yaml:2:17: alert_on_reply must be true or false, not a string"},
		{"timeouts: {alert: 0s}", "timeouts.alert"},
		{"on_alerts: [x]", `team.yaml:2:1: unknown key "on_alerts" in team file`},
	} {
		_, msg, _ := loadString(t, "name: t\n"+tc.src+"\nroles:\n  - name: a\n")
		if !strings.Contains(msg, tc.want) {
			t.Errorf("%s:\n got %q\nwant it to contain %q", tc.src, msg, tc.want)
		}
	}
}
