package console

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"os"
)

// TLSConfig loads the console's certificate (its chain, PEM) and private
// key (PEM) from certFile and keyFile and returns the server's TLS
// settings (TLS 1.2 or later) and the names the certificate is for (its
// DNS names, then its IP addresses). The errors name the files and the fix.
func TLSConfig(certFile, keyFile string) (*tls.Config, []string, error) {
	pair, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return nil, nil, fmt.Errorf("console: the certificate %s and key %s (console.tls_cert, console.tls_key in the team file) cannot be used: %w", certFile, keyFile, err)
	}
	leaf := pair.Leaf
	if leaf == nil {
		if leaf, err = x509.ParseCertificate(pair.Certificate[0]); err != nil {
			return nil, nil, fmt.Errorf("console: the certificate %s: %w", certFile, err)
		}
	}
	return &tls.Config{Certificates: []tls.Certificate{pair}, MinVersion: tls.VersionTLS12}, CertNames(leaf), nil
}

// CertNames are the names c is for: its DNS names, then its IP
// addresses. It is a pure function.
func CertNames(c *x509.Certificate) []string {
	names := append([]string(nil), c.DNSNames...)
	for _, ip := range c.IPAddresses {
		names = append(names, ip.String())
	}
	return names
}

// LocalNames are the names this machine is reached by on a wildcard
// address (0.0.0.0, ::): the IPs of its interfaces, other than loopback
// first, and its host name. It reads the machine; what it cannot read is
// left out.
func LocalNames() []string {
	var wide, loop []string
	if addrs, err := net.InterfaceAddrs(); err == nil {
		for _, a := range addrs {
			ipn, ok := a.(*net.IPNet)
			if !ok || ipn.IP.IsLinkLocalUnicast() {
				continue
			}
			if ipn.IP.IsLoopback() {
				loop = append(loop, ipn.IP.String())
			} else {
				wide = append(wide, ipn.IP.String())
			}
		}
	}
	names := append(wide, loop...)
	if h, err := os.Hostname(); err == nil && h != "" {
		names = append(names, h)
	}
	return names
}

// PublicURL is the address `batty web` gives for a console bound to addr
// (host:port), over HTTPS when tls is set, reached by names (see
// AllowedHosts): with TLS the certificate's first name (what the browser
// checks it against); on a wildcard address the first of names; else the
// address itself. It is a pure function.
func PublicURL(addr string, tls bool, names []string) string {
	scheme := "http://"
	if tls {
		scheme = "https://"
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return scheme + addr + "/"
	}
	ip := net.ParseIP(host)
	if len(names) > 0 && (tls || (ip != nil && ip.IsUnspecified())) {
		host = names[0]
	}
	return scheme + net.JoinHostPort(host, port) + "/"
}
