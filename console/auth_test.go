package console

import (
	"net/http"
	"reflect"
	"testing"
)

func TestDecide(t *testing.T) {
	hosts := []string{"127.0.0.1:8420", "localhost:8420"}
	const host = "127.0.0.1:8420"
	for _, tc := range []struct {
		name   string
		f      Facts
		want   Verdict
		status int
	}{
		{"page with a session", Facts{Method: "GET", Host: host, Session: true}, Allow, 0},
		{"page by localhost", Facts{Method: "GET", Host: "localhost:8420", Session: true}, Allow, 0},
		{"page without a session", Facts{Method: "GET", Host: host}, Refuse, http.StatusUnauthorized},
		{"rebound name", Facts{Method: "GET", Host: "evil.example:8420", Session: true}, Refuse, http.StatusMisdirectedRequest},
		{"another port", Facts{Method: "GET", Host: "127.0.0.1:80", Session: true}, Refuse, http.StatusMisdirectedRequest},
		{"no host", Facts{Method: "GET", Session: true}, Refuse, http.StatusMisdirectedRequest},
		{"login", Facts{Method: "GET", Host: host, Login: true, TokenGiven: true, TokenOK: true}, LogIn, 0},
		{"login, wrong token", Facts{Method: "GET", Host: host, Login: true, TokenGiven: true}, Refuse, http.StatusForbidden},
		{"login, no token", Facts{Method: "GET", Host: host, Login: true}, Refuse, http.StatusUnauthorized},
		{"login by POST", Facts{Method: "POST", Host: host, Login: true, TokenGiven: true, TokenOK: true}, Refuse, http.StatusMethodNotAllowed},
		{"login on a rebound name", Facts{Method: "GET", Host: "evil.example:8420", Login: true, TokenGiven: true, TokenOK: true}, Refuse, http.StatusMisdirectedRequest},
		{"post", Facts{Method: "POST", Host: host, Origin: "http://" + host, Session: true, CSRFOK: true}, Allow, 0},
		{"post, fetch metadata only", Facts{Method: "POST", Host: host, FetchSite: "same-origin", Session: true, CSRFOK: true}, Allow, 0},
		{"post without a session", Facts{Method: "POST", Host: host, Origin: "http://" + host, CSRFOK: true}, Refuse, http.StatusUnauthorized},
		{"post cross-origin", Facts{Method: "POST", Host: host, Origin: "http://evil.example", Session: true, CSRFOK: true}, Refuse, http.StatusForbidden},
		{"post from the other name", Facts{Method: "POST", Host: host, Origin: "http://localhost:8420", Session: true, CSRFOK: true}, Refuse, http.StatusForbidden},
		{"post, null origin", Facts{Method: "POST", Host: host, Origin: "null", Session: true, CSRFOK: true}, Refuse, http.StatusForbidden},
		{"post, cross-site fetch", Facts{Method: "POST", Host: host, FetchSite: "cross-site", Session: true, CSRFOK: true}, Refuse, http.StatusForbidden},
		{"post, no origin at all", Facts{Method: "POST", Host: host, Session: true, CSRFOK: true}, Refuse, http.StatusForbidden},
		{"post without CSRF", Facts{Method: "POST", Host: host, Origin: "http://" + host, Session: true}, Refuse, http.StatusForbidden},
		{"post over TLS", Facts{Method: "POST", Host: host, Origin: "https://" + host, Session: true, CSRFOK: true, TLS: true}, Allow, 0},
		{"post over TLS from http", Facts{Method: "POST", Host: host, Origin: "http://" + host, Session: true, CSRFOK: true, TLS: true}, Refuse, http.StatusForbidden},
		{"post over http from https", Facts{Method: "POST", Host: host, Origin: "https://" + host, Session: true, CSRFOK: true}, Refuse, http.StatusForbidden},
		{"put", Facts{Method: "PUT", Host: host, Origin: "http://" + host, Session: true, CSRFOK: true}, Refuse, http.StatusMethodNotAllowed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := Decide(tc.f, hosts)
			if d.Verdict != tc.want || d.Status != tc.status {
				t.Fatalf("Decide = %+v, want verdict %d status %d", d, tc.want, tc.status)
			}
			if d.Verdict == Refuse && d.Reason == "" {
				t.Fatal("a refusal without a reason")
			}
		})
	}
}

func TestAllowedHosts(t *testing.T) {
	for _, tc := range []struct {
		addr  string
		names []string
		want  []string
	}{
		{"127.0.0.1:8420", nil, []string{"127.0.0.1:8420", "localhost:8420"}},
		{"[::1]:9", nil, []string{"[::1]:9", "localhost:9"}},
		{"192.0.2.1:80", nil, []string{"192.0.2.1:80"}},
		{"192.0.2.1:443", []string{"box.example", "192.0.2.1", "2001:db8::1"}, []string{"192.0.2.1:443", "box.example:443", "[2001:db8::1]:443"}},
		{"0.0.0.0:8420", []string{"192.0.2.7", "box"}, []string{"0.0.0.0:8420", "localhost:8420", "192.0.2.7:8420", "box:8420"}},
	} {
		got, err := AllowedHosts(tc.addr, tc.names...)
		if err != nil || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("AllowedHosts(%q) = %v, %v; want %v", tc.addr, got, err, tc.want)
		}
	}
	if _, err := AllowedHosts("nonsense"); err == nil {
		t.Error("AllowedHosts(nonsense) did not fail")
	}
}

func TestSame(t *testing.T) {
	if same("", "") || same("a", "") || same("a", "b") || !same("abc", "abc") {
		t.Fatal("same compares wrongly")
	}
}

func TestPublicURL(t *testing.T) {
	for _, tc := range []struct {
		addr  string
		tls   bool
		names []string
		want  string
	}{
		{"127.0.0.1:8420", false, nil, "http://127.0.0.1:8420/"},
		{"[::1]:9", false, nil, "http://[::1]:9/"},
		{"0.0.0.0:8420", false, []string{"192.0.2.7", "box"}, "http://192.0.2.7:8420/"},
		{"192.0.2.7:8420", false, []string{"box"}, "http://192.0.2.7:8420/"},
		{"0.0.0.0:443", true, []string{"box.example", "192.0.2.7"}, "https://box.example:443/"},
		{"127.0.0.1:8420", true, []string{"2001:db8::1"}, "https://[2001:db8::1]:8420/"},
		{"127.0.0.1:8420", true, nil, "https://127.0.0.1:8420/"},
	} {
		if got := PublicURL(tc.addr, tc.tls, tc.names); got != tc.want {
			t.Errorf("PublicURL(%q, %v, %v) = %q, want %q", tc.addr, tc.tls, tc.names, got, tc.want)
		}
	}
}
