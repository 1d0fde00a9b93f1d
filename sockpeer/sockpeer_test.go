package sockpeer

import (
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// kernelHex writes addr as the kernel's tables do: 32-bit words in this
// machine's byte order.
func kernelHex(ap netip.AddrPort) string {
	raw := ap.Addr().AsSlice()
	out := make([]byte, len(raw))
	for i := 0; i < len(raw); i += 4 {
		binary.NativeEndian.PutUint32(out[i:], binary.BigEndian.Uint32(raw[i:]))
	}
	return strings.ToUpper(hex.EncodeToString(out)) + fmt.Sprintf(":%04X", ap.Port())
}

func TestParseTableAndFind(t *testing.T) {
	srv := netip.MustParseAddrPort("127.0.0.1:8420")
	cli := netip.MustParseAddrPort("127.0.0.1:51000")
	v6 := netip.MustParseAddrPort("[::1]:51001")
	srv6 := netip.MustParseAddrPort("[::1]:8420")
	mapped := netip.AddrPortFrom(netip.MustParseAddr("::ffff:127.0.0.1"), 51002)
	table := "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n" +
		fmt.Sprintf("   0: %s 00000000:0000 0A 00000000:00000000 00:00000000 00000000  1000        0 111 1 0000000000000000 100 0 0 10 0\n", kernelHex(srv)) +
		fmt.Sprintf("   1: %s %s 01 00000000:00000000 00:00000000 00000000  1000        0 222 1 0000000000000000 20 4 30 10 -1\n", kernelHex(srv), kernelHex(cli)) +
		fmt.Sprintf("   2: %s %s 01 00000000:00000000 00:00000000 00000000  1001        0 333 1 0000000000000000 20 4 30 10 -1\n", kernelHex(cli), kernelHex(srv))
	table6 := "  sl  local_address                         remote_address                        st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n" +
		fmt.Sprintf("   0: %s %s 01 00000000:00000000 00:00000000 00000000  1000        0 444 1\n", kernelHex(v6), kernelHex(srv6)) +
		fmt.Sprintf("   1: %s %s 01 00000000:00000000 00:00000000 00000000  1000        0 555 1\n", kernelHex(mapped), kernelHex(netip.AddrPortFrom(netip.MustParseAddr("::ffff:127.0.0.1"), 8420)))
	es, err := ParseTable(strings.NewReader(table))
	if err != nil {
		t.Fatal(err)
	}
	if len(es) != 3 || es[0].Local != srv || es[1].Remote != cli || es[2].UID != 1001 || es[2].Inode != 333 {
		t.Fatalf("entries %+v", es)
	}
	es6, err := ParseTable(strings.NewReader(table6))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		entries     []Entry
		peer, local netip.AddrPort
		inode       uint64
	}{
		{es, cli, srv, 333},
		{es6, v6, srv6, 444},
		// A v4 client of a dual-stack listener: its address as Go gives it.
		{es6, netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), 51002), srv, 555},
	} {
		if e, ok := Find(c.entries, c.peer, c.local); !ok || e.Inode != c.inode {
			t.Errorf("Find(%s → %s) = %+v, %v; want inode %d", c.peer, c.local, e, ok, c.inode)
		}
	}
	if _, ok := Find(es, netip.MustParseAddrPort("127.0.0.1:9"), srv); ok {
		t.Error("Find found a peer not in the table")
	}
	for _, bad := range []string{"h\n 0: zz:1 00000000:0000 0A a b c 1000 0 1\n", "h\n 0: 0100007F:1F90 00000000:0000\n", "h\n 0: 0100007F:1F90 00000000:0000 0A a b c x 0 1\n"} {
		if _, err := ParseTable(strings.NewReader(bad)); err == nil || !strings.Contains(err.Error(), "line 2") {
			t.Errorf("ParseTable(%q) = %v; want an error naming line 2", bad, err)
		}
	}
}

func FuzzParseTable(f *testing.F) {
	f.Add("h\n   0: 0100007F:1F90 00000000:0000 0A 00000000:00000000 00:00000000 00000000  1000        0 111 1\n")
	f.Add("h\n   0: 00000000000000000000000001000000:1F90 00000000000000000000000000000000:0000 0A 0 0 0 1000 0 2\n")
	f.Fuzz(func(t *testing.T, s string) {
		es, err := ParseTable(strings.NewReader(s))
		if err == nil {
			for _, e := range es {
				if !e.Local.IsValid() || !e.Remote.IsValid() {
					t.Fatalf("an invalid address without an error: %+v", e)
				}
			}
		}
	})
}

// A real connection: the process at its other end is found, whether it
// is another process (a shell that connected) or this one.
func TestOfARealConnection(t *testing.T) {
	if _, err := os.Stat("/proc/net/tcp"); err != nil {
		t.Skip("no /proc/net/tcp")
	}
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("no bash to connect with")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	port := ln.Addr().(*net.TCPAddr).Port
	// The shell connects and waits for a line from the server.
	cmd := exec.Command(bash, "-c", fmt.Sprintf("exec 3<>/dev/tcp/127.0.0.1/%d; read -r -u 3 line", port))
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Wait()
	c, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	peer, local := c.RemoteAddr().(*net.TCPAddr).AddrPort(), c.LocalAddr().(*net.TCPAddr).AddrPort()
	p, err := Of("/proc", peer, local)
	if err != nil {
		t.Fatal(err)
	}
	if !p.Local || p.UID != os.Getuid() || !slices.Contains(p.PIDs, cmd.Process.Pid) || slices.Contains(p.PIDs, os.Getpid()) {
		t.Fatalf("peer %+v; want the shell %d", p, cmd.Process.Pid)
	}
	if !Holds("/proc", cmd.Process.Pid, p.Inode) {
		t.Fatal("Holds says the shell does not hold its socket")
	}
	c.Write([]byte("bye\n"))

	// This process's own connection.
	d, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	c2, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	p, err = Of("/proc", c2.RemoteAddr().(*net.TCPAddr).AddrPort(), c2.LocalAddr().(*net.TCPAddr).AddrPort())
	if err != nil || !p.Local || !slices.Equal(p.PIDs, []int{os.Getpid()}) {
		t.Fatalf("own connection: %+v, %v", p, err)
	}
	// An address no socket here has: from elsewhere.
	p, err = Of("/proc", netip.MustParseAddrPort("192.0.2.1:40000"), local)
	if err != nil || p.Local {
		t.Fatalf("a remote peer: %+v, %v", p, err)
	}
}
