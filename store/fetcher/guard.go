package fetcher

import (
	"net"
	"net/netip"
	"syscall"
)

// The SSRF guard decides, for every connection the Fetcher makes, whether the
// address actually being dialed may be contacted. It runs in the dialer's
// Control hook, after DNS resolution and before connect(2), so it sees the real
// IP of the first request, of every redirect hop, and of a host name that
// rebinds between lookups; a refused address is never contacted.

// refusedPrefixes are refused by default. Each entry says why, for the error.
var refusedPrefixes = []struct {
	prefix netip.Prefix
	why    string
}{
	{netip.MustParsePrefix("0.0.0.0/8"), "this-network"},
	{netip.MustParsePrefix("10.0.0.0/8"), "private"},
	{netip.MustParsePrefix("100.64.0.0/10"), "carrier-grade NAT"},
	{netip.MustParsePrefix("127.0.0.0/8"), "loopback"},
	{netip.MustParsePrefix("169.254.0.0/16"), "link-local"},
	{netip.MustParsePrefix("172.16.0.0/12"), "private"},
	{netip.MustParsePrefix("192.0.0.0/24"), "IETF protocol assignments"},
	{netip.MustParsePrefix("192.168.0.0/16"), "private"},
	{netip.MustParsePrefix("198.18.0.0/15"), "benchmarking"},
	{netip.MustParsePrefix("224.0.0.0/4"), "multicast"},
	{netip.MustParsePrefix("240.0.0.0/4"), "reserved"}, // includes 255.255.255.255
	{netip.MustParsePrefix("::/128"), "unspecified"},
	{netip.MustParsePrefix("::1/128"), "loopback"},
	{netip.MustParsePrefix("::/96"), "IPv4-compatible (deprecated)"},
	{netip.MustParsePrefix("100::/64"), "discard-only"},
	{netip.MustParsePrefix("fc00::/7"), "unique local (private)"},
	{netip.MustParsePrefix("fe80::/10"), "link-local"},
	{netip.MustParsePrefix("fec0::/10"), "site-local"},
	{netip.MustParsePrefix("ff00::/8"), "multicast"},
}

// metadataAddrs are cloud instance-metadata endpoints. They lie inside refused
// ranges already, and stay refused even when an Allow prefix covers them,
// unless the Allow prefix is that single address (a /32 or /128).
var metadataAddrs = []netip.Addr{
	netip.MustParseAddr("169.254.169.254"), // AWS, GCP, Azure, OpenStack, ...
	netip.MustParseAddr("169.254.170.2"),   // AWS ECS task metadata
	netip.MustParseAddr("fd00:ec2::254"),   // AWS IPv6
	netip.MustParseAddr("100.100.100.200"), // Alibaba Cloud
}

// Prefixes that embed an IPv4 address: the embedded address is checked too.
var (
	nat64Prefix     = netip.MustParsePrefix("64:ff9b::/96")
	nat64Local      = netip.MustParsePrefix("64:ff9b:1::/48")
	sixToFourPrefix = netip.MustParsePrefix("2002::/16")
)

// guard is the address policy. The zero value refuses the default ranges.
type guard struct {
	allow []netip.Prefix
}

// check returns nil if addr may be dialed, else a *refusedError.
func (g guard) check(addr netip.Addr) error {
	addr = addr.Unmap().WithZone("")
	if !addr.IsValid() {
		return &refusedError{addr: "invalid", why: "unparseable"}
	}
	for _, m := range metadataAddrs {
		if addr == m && !g.allowsExactly(addr) {
			return &refusedError{addr: addr.String(), why: "cloud metadata"}
		}
	}
	if g.allows(addr) {
		return nil
	}
	for _, r := range refusedPrefixes {
		if r.prefix.Contains(addr) {
			return &refusedError{addr: addr.String(), why: r.why}
		}
	}
	// IPv6 addresses that route to an embedded IPv4 address are judged by it.
	if v4, ok := embeddedV4(addr); ok {
		if err := g.check(v4); err != nil {
			return &refusedError{addr: addr.String(), why: "embeds " + v4.String()}
		}
	}
	return nil
}

func (g guard) allows(addr netip.Addr) bool {
	for _, p := range g.allow {
		if p.Contains(addr) {
			return true
		}
	}
	return false
}

func (g guard) allowsExactly(addr netip.Addr) bool {
	for _, p := range g.allow {
		if p.Bits() == addr.BitLen() && p.Addr() == addr {
			return true
		}
	}
	return false
}

func embeddedV4(addr netip.Addr) (netip.Addr, bool) {
	if !addr.Is6() {
		return netip.Addr{}, false
	}
	b := addr.As16()
	switch {
	case nat64Prefix.Contains(addr), nat64Local.Contains(addr):
		return netip.AddrFrom4([4]byte{b[12], b[13], b[14], b[15]}), true
	case sixToFourPrefix.Contains(addr):
		return netip.AddrFrom4([4]byte{b[2], b[3], b[4], b[5]}), true
	}
	return netip.Addr{}, false
}

// control is a net.Dialer Control func: it refuses the connection before
// connect(2) when the address being dialed is refused.
func (g guard) control(network, address string, _ syscall.RawConn) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		host, _, splitErr := net.SplitHostPort(address)
		if splitErr != nil {
			return &refusedError{addr: address, why: "unparseable"}
		}
		a, perr := netip.ParseAddr(host)
		if perr != nil {
			return &refusedError{addr: address, why: "unparseable"}
		}
		return g.check(a)
	}
	return g.check(ap.Addr())
}
