// Package sockpeer finds the processes of this machine at the other end
// of a TCP connection: the socket's entry in the kernel's tables
// (/proc/net/tcp and tcp6 of this network namespace) gives its owner's
// uid and inode, and the processes holding that inode are found among the
// open files of the processes of that uid (/proc/<pid>/fd). The console
// asks it who connected, to refuse a process that runs inside an agent.
package sockpeer

import (
	"bufio"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// Entry is one socket of a /proc/net/tcp table.
type Entry struct {
	Local, Remote netip.AddrPort
	UID           int
	Inode         uint64
}

// maxLine bounds a line of a table.
const maxLine = 4096

// ParseTable reads a /proc/net/tcp or tcp6 table: its header line, then a
// socket a line (addresses in the kernel's hex, in this machine's byte
// order). A line it cannot read is an error naming it; it never panics.
func ParseTable(r io.Reader) ([]Entry, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 512), maxLine)
	var out []Entry
	for n := 1; sc.Scan(); n++ {
		if n == 1 {
			continue // the header
		}
		line := strings.TrimSpace(sc.Text())
		if line == "" {
			continue
		}
		e, err := parseLine(line)
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", n, err)
		}
		out = append(out, e)
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	return out, nil
}

// parseLine reads one socket: sl local remote st queues timer retrnsmt
// uid timeout inode ...
func parseLine(line string) (Entry, error) {
	f := strings.Fields(line)
	if len(f) < 10 {
		return Entry{}, fmt.Errorf("%d fields, want at least 10", len(f))
	}
	var e Entry
	var err error
	if e.Local, err = parseAddr(f[1]); err != nil {
		return Entry{}, fmt.Errorf("local address: %w", err)
	}
	if e.Remote, err = parseAddr(f[2]); err != nil {
		return Entry{}, fmt.Errorf("remote address: %w", err)
	}
	uid, err := strconv.ParseUint(f[7], 10, 32)
	if err != nil {
		return Entry{}, fmt.Errorf("uid: %w", err)
	}
	e.UID = int(uid)
	if e.Inode, err = strconv.ParseUint(f[9], 10, 64); err != nil {
		return Entry{}, fmt.Errorf("inode: %w", err)
	}
	return e, nil
}

// parseAddr reads ADDR:PORT, ADDR 8 or 32 hex digits (an IPv4 or IPv6
// address as 32-bit words in this machine's byte order), PORT 4.
func parseAddr(s string) (netip.AddrPort, error) {
	a, p, ok := strings.Cut(s, ":")
	if !ok || len(p) != 4 || (len(a) != 8 && len(a) != 32) {
		return netip.AddrPort{}, fmt.Errorf("%.60q is not ADDR:PORT", s)
	}
	raw, err := hex.DecodeString(a)
	if err != nil {
		return netip.AddrPort{}, fmt.Errorf("%.60q: %w", s, err)
	}
	port, err := strconv.ParseUint(p, 16, 16)
	if err != nil {
		return netip.AddrPort{}, fmt.Errorf("%.60q: %w", s, err)
	}
	var b [16]byte
	for i := 0; i < len(raw); i += 4 {
		binary.BigEndian.PutUint32(b[i:], binary.NativeEndian.Uint32(raw[i:]))
	}
	var addr netip.Addr
	if len(raw) == 4 {
		addr = netip.AddrFrom4([4]byte(b[:4]))
	} else {
		addr = netip.AddrFrom16(b)
	}
	return netip.AddrPortFrom(addr, uint16(port)), nil
}

// Find returns the entry of entries whose local end is peer and remote
// end is local (the peer's side of a connection accepted on local),
// comparing IPv4-mapped addresses as IPv4. It is a pure function.
func Find(entries []Entry, peer, local netip.AddrPort) (Entry, bool) {
	same := func(a, b netip.AddrPort) bool { return a.Port() == b.Port() && a.Addr().Unmap() == b.Addr().Unmap() }
	for _, e := range entries {
		if same(e.Local, peer) && same(e.Remote, local) {
			return e, true
		}
	}
	return Entry{}, false
}

// Peer is the other end of a connection.
type Peer struct {
	// Local says the peer's socket is one of this machine (in this
	// network namespace); false: it came from elsewhere.
	Local bool
	// UID owns the peer's socket; Inode names it.
	UID   int
	Inode uint64
	// PIDs are the processes of UID holding the socket.
	PIDs []int
}

// Of finds the peer of a connection accepted on local from peer, reading
// the tables and processes under proc (/proc). Its cost is a read of the
// two tables and, for a peer of this machine, of the open files of the
// processes of its uid.
func Of(proc string, peer, local netip.AddrPort) (Peer, error) {
	for _, name := range []string{"tcp", "tcp6"} {
		f, err := os.Open(filepath.Join(proc, "net", name))
		if errors.Is(err, os.ErrNotExist) {
			continue // no IPv6
		}
		if err != nil {
			return Peer{}, err
		}
		entries, err := ParseTable(f)
		f.Close()
		if err != nil {
			return Peer{}, fmt.Errorf("%s: %w", filepath.Join(proc, "net", name), err)
		}
		if e, ok := Find(entries, peer, local); ok {
			pids, err := Holders(proc, e.Inode, e.UID)
			return Peer{Local: true, UID: e.UID, Inode: e.Inode, PIDs: pids}, err
		}
	}
	return Peer{}, nil
}

// Holders returns the processes of uid that hold the socket inode open,
// read from proc. A process that exits meanwhile is skipped.
func Holders(proc string, inode uint64, uid int) ([]int, error) {
	ents, err := os.ReadDir(proc)
	if err != nil {
		return nil, err
	}
	var pids []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid <= 0 {
			continue
		}
		info, err := e.Info()
		if err != nil {
			continue
		}
		if st, ok := info.Sys().(*syscall.Stat_t); !ok || int(st.Uid) != uid {
			continue
		}
		if Holds(proc, pid, inode) {
			pids = append(pids, pid)
		}
	}
	return pids, nil
}

// Holds reports whether process pid holds the socket inode open.
func Holds(proc string, pid int, inode uint64) bool {
	dir := filepath.Join(proc, strconv.Itoa(pid), "fd")
	d, err := os.Open(dir)
	if err != nil {
		return false
	}
	defer d.Close()
	want := "socket:[" + strconv.FormatUint(inode, 10) + "]"
	for {
		names, err := d.Readdirnames(256)
		for _, n := range names {
			if l, err := os.Readlink(dir + "/" + n); err == nil && l == want {
				return true
			}
		}
		if err != nil {
			return false
		}
	}
}
