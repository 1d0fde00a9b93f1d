package orchestrator

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"os"

	"github.com/battyhq/batty/team"
)

// teamFiles lists the files a team is read from: its team file, then the
// prompt file of each role that has one. It is a pure function.
func teamFiles(cfg *team.Config) []string {
	files := []string{cfg.Path}
	for _, r := range cfg.Roles {
		if r.Prompt != "" {
			files = append(files, r.Prompt)
		}
	}
	return files
}

// fingerprint is the SHA-256 of the contents of files, as read: each
// file's path, then its bytes or, when it cannot be read, its error. Two
// fingerprints differ when any file changed, appeared or went away. It is
// a pure function of what read returns.
func fingerprint(files []string, read func(string) ([]byte, error)) string {
	h := sha256.New()
	for _, f := range files {
		data, err := read(f)
		h.Write([]byte(f + "\x00"))
		if err != nil {
			h.Write([]byte("error\x00" + err.Error() + "\x00"))
			continue
		}
		h.Write([]byte("ok\x00"))
		h.Write(binary.LittleEndian.AppendUint64(nil, uint64(len(data))))
		h.Write(data)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// teamFingerprint is the fingerprint of the team's files as they are on
// disk now.
func teamFingerprint(cfg *team.Config) string {
	return fingerprint(teamFiles(cfg), os.ReadFile)
}

// teamFileChanged reports whether the team's files differ from what they
// were when the daemon started (`batty restart` applies them).
func (d *Daemon) teamFileChanged() bool {
	return teamFingerprint(d.cfg) != d.teamHash
}
