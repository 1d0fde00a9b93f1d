package team

import (
	"reflect"
	"strings"
	"testing"
)

const hostsExample = `name: t
hosts:
  - name: build1
    ssh: dev@build1.example.com
    dir: ~/src/myproj
  - name: pod1
    command: [kubectl, exec, -i, batty-0, --]
roles:
  - name: engineer
    instances: 5
    hosts: [build1, pod1, local]
  - name: solo
    hosts: [pod1]
  - name: here
`

func TestParseHosts(t *testing.T) {
	cfg, msg, dir := loadString(t, hostsExample)
	if msg != "" {
		t.Fatalf("Load: %s", msg)
	}
	want := []Host{
		{Name: "build1", SSH: "dev@build1.example.com", Dir: "~/src/myproj", Line: 3},
		{Name: "pod1", Command: []string{"kubectl", "exec", "-i", "batty-0", "--"}, Line: 6},
	}
	if !reflect.DeepEqual(cfg.Hosts, want) {
		t.Fatalf("Hosts = %+v, want %+v", cfg.Hosts, want)
	}
	got := map[string]string{}
	for _, a := range cfg.Agents() {
		got[a.Name] = a.Host
		if b, ok := cfg.Agent(a.Name); !ok || b.Host != a.Host {
			t.Errorf("Agent(%q).Host = %q, Agents() says %q", a.Name, b.Host, a.Host)
		}
	}
	wantHosts := map[string]string{
		"engineer-1": "build1", "engineer-2": "pod1", "engineer-3": "", "engineer-4": "build1", "engineer-5": "pod1",
		"solo": "pod1", "here": "",
	}
	if !reflect.DeepEqual(got, wantHosts) {
		t.Fatalf("agent hosts = %v, want %v", got, wantHosts)
	}
	h, ok := cfg.Host("pod1")
	if !ok || h.ProjectDir(cfg.Dir) != dir {
		t.Fatalf("Host(pod1) = %+v, %v; ProjectDir %q, want %q", h, ok, h.ProjectDir(cfg.Dir), dir)
	}
	if h, _ := cfg.Host("build1"); h.ProjectDir(cfg.Dir) != "~/src/myproj" {
		t.Fatalf("build1 ProjectDir = %q", h.ProjectDir(cfg.Dir))
	}
	for _, name := range []string{"local", "", "nope"} {
		if _, ok := cfg.Host(name); ok {
			t.Errorf("Host(%q) found", name)
		}
	}
}

func TestParseHostsErrors(t *testing.T) {
	const roles = "roles: [{name: a}]\n"
	tests := []struct {
		name string
		src  string
		want string // one full line of the error
	}{
		{"not a list", "name: t\nhosts: {name: b}\n" + roles,
			`team.yaml:2:8: hosts must be a list, not a mapping (write a list of hosts, each starting with "- name:")`},
		{"not a mapping", "name: t\nhosts: [b]\n" + roles,
			`team.yaml:2:9: host must be a mapping, not a string (each host is a mapping starting with "- name:", with ssh: or command:)`},
		{"missing name", "name: t\nhosts: [{ssh: b}]\n" + roles,
			`team.yaml:2:9: host is missing required key "name" (add e.g. "name: build1")`},
		{"invalid name", "name: t\nhosts: [{name: B_1, ssh: b}]\n" + roles,
			`team.yaml:2:16: invalid host name "B_1"`},
		{"reserved name", "name: t\nhosts: [{name: local, ssh: b}]\n" + roles,
			`team.yaml:2:16: host name "local" is reserved ("local" stands for this machine in a role's hosts; pick another name)`},
		{"duplicate name", "name: t\nhosts:\n  - {name: b, ssh: x}\n  - {name: b, ssh: y}\n" + roles,
			`team.yaml:4:12: duplicate host name "b" (first defined at line 3)`},
		{"unknown key", "name: t\nhosts: [{name: b, sh: x}]\n" + roles,
			`team.yaml:2:19: unknown key "sh" in host (did you mean "ssh"?)`},
		{"both ssh and command", "name: t\nhosts: [{name: b, ssh: x, command: [y]}]\n" + roles,
			`team.yaml:2:27: host "b" sets both ssh and command (keep ssh: for a host reached over ssh, or command: for any other way in, not both)`},
		{"neither ssh nor command", "name: t\nhosts: [{name: b, dir: /x}]\n" + roles,
			`team.yaml:2:9: host "b" sets neither ssh nor command (add e.g. "ssh: dev@build1.example.com", or "command: [kubectl, exec, -i, POD, --]")`},
		{"ssh option", "name: t\nhosts: [{name: b, ssh: -oProxyCommand=x}]\n" + roles,
			`team.yaml:2:24: host ssh "-oProxyCommand=x" starts with "-": it would be read as an option (put ssh options in ~/.ssh/config under a Host entry and name that host here)`},
		{"ssh blank inside", "name: t\nhosts: [{name: b, ssh: 'a b'}]\n" + roles,
			`team.yaml:2:24: host ssh "a b" holds a blank or a control character`},
		{"ssh empty", "name: t\nhosts: [{name: b, ssh: ''}]\n" + roles,
			`team.yaml:2:24: host ssh must not be empty`},
		{"ssh null", "name: t\nhosts: [{name: b, ssh: }]\n" + roles,
			`host ssh must not be empty`},
		{"ssh not a string", "name: t\nhosts: [{name: b, ssh: 22}]\n" + roles,
			`team.yaml:2:24: host ssh must be a string, not an integer (quote it: "22")`},
		{"command a string", "name: t\nhosts: [{name: b, command: kubectl exec}]\n" + roles,
			`team.yaml:2:28: host command must be a list, not a string (write the command as a list of words, e.g. [kubectl, exec, -i, batty-0, --])`},
		{"command empty", "name: t\nhosts: [{name: b, command: []}]\n" + roles,
			`team.yaml:2:28: host command must not be empty`},
		{"command without program", "name: t\nhosts: [{name: b, command: ['', x]}]\n" + roles,
			`team.yaml:2:29: host command must start with a program`},
		{"dir relative", "name: t\nhosts: [{name: b, ssh: x, dir: src/p}]\n" + roles,
			`team.yaml:2:32: host dir "src/p" is relative (write an absolute path, or one starting with ~/`},
		{"dir tilde user", "name: t\nhosts: [{name: b, ssh: x, dir: ~bob/p}]\n" + roles,
			`team.yaml:2:32: host dir "~bob/p" is relative`},
		{"dir empty", "name: t\nhosts: [{name: b, ssh: x, dir: ''}]\n" + roles,
			`team.yaml:2:32: host dir must not be empty`},
		{"role host unknown", "name: t\nhosts: [{name: build1, ssh: x}]\nroles: [{name: a, hosts: [biuld1]}]\n",
			`team.yaml:3:27: role hosts names unknown host "biuld1" (did you mean "build1"?)`},
		{"role host unknown without hosts", "name: t\nroles: [{name: a, hosts: [zzz]}]\n",
			`team.yaml:2:27: role hosts names unknown host "zzz" (define it in the top-level hosts list, or name one of: local)`},
		{"role host twice", "name: t\nhosts: [{name: b, ssh: x}]\nroles: [{name: a, hosts: [b, b]}]\n",
			`team.yaml:3:30: host "b" is listed twice (name each host once; instances are spread over the list in turn)`},
		{"role hosts empty", "name: t\nroles: [{name: a, hosts: []}]\n",
			`team.yaml:2:26: role hosts is empty (name hosts of the hosts list, or leave hosts out to run the role here)`},
		{"accounts on a host", "name: t\naccounts: [{name: w, codex_home: /tmp/w}]\nhosts: [{name: b, ssh: x}]\nroles: [{name: a, hosts: [b], accounts: [w]}]\n",
			`team.yaml:4:31: accounts for agents on other hosts are not supported yet (remove accounts from this role, or its hosts to run it here)`},
		{"cwd outside the project on a host", "name: t\nhosts: [{name: b, ssh: x}]\nroles: [{name: a, hosts: [b], cwd: /}]\n",
			`team.yaml:3:36: the cwd of a role on other hosts must lie inside the project directory (set cwd to a directory inside the project: the host has the project directory only)`},
		{"role hosts a string", "name: t\nhosts: [{name: b, ssh: x}]\nroles: [{name: a, hosts: b}]\n",
			`team.yaml:3:26: role hosts must be a list, not a string (write a list: [b])`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, msg, _ := loadString(t, tt.src)
			if msg == "" {
				t.Fatalf("accepted:\n%s", tt.src)
			}
			found := false
			for _, line := range strings.Split(msg, "\n") {
				if strings.Contains(line, tt.want) {
					found = true
				}
			}
			if !found {
				t.Fatalf("error:\n%s\nwant a line containing:\n%s", msg, tt.want)
			}
		})
	}
}

// TestParseHostsNoCascade checks that a host with a problem other than its
// name is still known to the roles that name it: one problem, not two.
func TestParseHostsNoCascade(t *testing.T) {
	_, msg, _ := loadString(t, "name: t\nhosts: [{name: b, ssh: -x}]\nroles: [{name: a, hosts: [b]}]\n")
	if n := strings.Count(msg, "\n") + 1; msg == "" || n != 1 {
		t.Fatalf("want exactly one problem, got %d:\n%s", n, msg)
	}
}
