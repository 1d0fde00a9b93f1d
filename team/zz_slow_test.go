package team

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestZZSlow(t *testing.T) {
	dir := newTeamDir(t)
	files, _ := filepath.Glob(filepath.Join(os.Getenv("CORPUS"), "*"))
	for _, f := range files {
		raw, _ := os.ReadFile(f)
		body, _ := strings.CutPrefix(strings.TrimSpace(string(raw)), "go test fuzz v1\n[]byte(")
		body, _ = strings.CutSuffix(body, ")")
		data, err := strconv.Unquote(body)
		if err != nil {
			continue
		}
		st := time.Now()
		Parse(filepath.Join(dir, "team.yaml"), []byte(data))
		if d := time.Since(st); d > 20*time.Millisecond {
			t.Logf("%s %v %d bytes", filepath.Base(f), d, len(data))
		}
	}
}
