package codextest

import (
	"io"
	"net/http"
	"strings"
	"testing"
)

func rawPost(t *testing.T, s *Server) (string, error) {
	t.Helper()
	c := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := c.Post(s.URL+"/responses", "application/json", strings.NewReader(`{"model":"m","input":[]}`))
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return string(b), err
}

func TestRefuseAndAcceptAgain(t *testing.T) {
	s := NewServer(t)
	if _, err := rawPost(t, s); err != nil {
		t.Fatal(err)
	}
	if err := s.Refuse(); err != nil {
		t.Fatal(err)
	}
	if _, err := rawPost(t, s); err == nil || !strings.Contains(err.Error(), "refused") {
		t.Fatalf("while refusing: %v", err)
	}
	if err := s.Accept(); err != nil {
		t.Fatal(err)
	}
	if body, err := rawPost(t, s); err != nil || !strings.Contains(body, "response.completed") {
		t.Fatalf("after accepting again: %v %q", err, body)
	}
}

func TestDropStreams(t *testing.T) {
	s := NewServer(t)
	s.DropStreams(2)
	for i := range 2 {
		body, err := rawPost(t, s)
		if err == nil || !strings.Contains(body, "response.created") || strings.Contains(body, "response.completed") {
			t.Fatalf("request %d: %v %q", i+1, err, body)
		}
	}
	if body, err := rawPost(t, s); err != nil || !strings.Contains(body, "response.completed") {
		t.Fatalf("third request: %v %q", err, body)
	}
}
