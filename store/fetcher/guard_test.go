package fetcher

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"
	"time"
)

func TestGuardCheck(t *testing.T) {
	p := netip.MustParsePrefix
	tests := []struct {
		addr  string
		allow []netip.Prefix
		ok    bool
	}{
		{addr: "8.8.8.8", ok: true},
		{addr: "93.184.215.14", ok: true},
		{addr: "2606:4700:4700::1111", ok: true},
		{addr: "127.0.0.1"},
		{addr: "127.255.0.9"},
		{addr: "::1"},
		{addr: "::ffff:127.0.0.1"}, // IPv4-mapped loopback
		{addr: "::ffff:10.0.0.1"},
		{addr: "10.1.2.3"},
		{addr: "172.16.0.1"},
		{addr: "172.31.255.255"},
		{addr: "192.168.1.1"},
		{addr: "169.254.169.254"},
		{addr: "169.254.170.2"},
		{addr: "169.254.1.1"},
		{addr: "100.64.0.1"},
		{addr: "100.100.100.200"},
		{addr: "0.0.0.0"},
		{addr: "::"},
		{addr: "224.0.0.1"},
		{addr: "255.255.255.255"},
		{addr: "fc00::1"},
		{addr: "fd00:ec2::254"},
		{addr: "fe80::1"},
		{addr: "ff02::1"},
		{addr: "64:ff9b::a9fe:a9fe"}, // NAT64 of 169.254.169.254
		{addr: "64:ff9b::808:808", ok: true},
		{addr: "2002:0a00:0001::1"}, // 6to4 of 10.0.0.1
		{addr: "127.0.0.1", allow: []netip.Prefix{p("127.0.0.0/8")}, ok: true},
		{addr: "::1", allow: []netip.Prefix{p("127.0.0.0/8")}},
		{addr: "10.9.9.9", allow: []netip.Prefix{p("10.0.0.0/8")}, ok: true},
		{addr: "169.254.169.254", allow: []netip.Prefix{p("169.254.0.0/16")}},
		{addr: "169.254.169.254", allow: []netip.Prefix{p("0.0.0.0/0")}},
		{addr: "169.254.169.254", allow: []netip.Prefix{p("169.254.169.254/32")}, ok: true},
		{addr: "169.254.1.1", allow: []netip.Prefix{p("169.254.0.0/16")}, ok: true},
	}
	for _, tc := range tests {
		err := guard{allow: tc.allow}.check(netip.MustParseAddr(tc.addr))
		if (err == nil) != tc.ok {
			t.Errorf("check(%s) with allow %v = %v, want ok=%t", tc.addr, tc.allow, err, tc.ok)
		}
		if err != nil && !errors.Is(err, ReasonRefusedAddress) {
			t.Errorf("check(%s) = %v, does not match ReasonRefusedAddress", tc.addr, err)
		}
	}
}

func TestGuardControlAddresses(t *testing.T) {
	g := guard{}
	for _, a := range []string{"127.0.0.1:80", "[::1]:443", "[fe80::1%eth0]:80", "garbage"} {
		if err := g.control("tcp", a, nil); err == nil {
			t.Errorf("control(%q) = nil, want refused", a)
		}
	}
	if err := g.control("tcp", "8.8.8.8:443", nil); err != nil {
		t.Errorf("control(8.8.8.8:443) = %v", err)
	}
}

// The default guard refuses the loopback test server itself, by address and by
// a name that resolves to it.
func TestDefaultGuardRefusesLoopback(t *testing.T) {
	srv := httptest.NewServer(serveBody(string(cardJSON("1", true))))
	defer srv.Close()
	o := Options{TotalTimeout: 5 * time.Second, ConnectTimeout: 2 * time.Second}
	f := newFetcher(t, o)
	ctx := context.Background()

	_, err := f.Observe(ctx, srv.URL+"/card", false)
	fetchErr(t, err, ReasonRefusedAddress)

	_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	_, err = f.Fetch(ctx, Request{URL: "http://localhost:" + port + "/card"})
	fetchErr(t, err, ReasonRefusedAddress)

	if ln, lerr := net.Listen("tcp", "[::1]:0"); lerr == nil {
		v6 := &httptest.Server{Listener: ln, Config: &http.Server{Handler: serveBody(string(cardJSON("1", true)))}}
		v6.Start()
		defer v6.Close()
		_, err = f.Fetch(ctx, Request{URL: v6.URL + "/card"})
		fetchErr(t, err, ReasonRefusedAddress)
	} else {
		t.Logf("no IPv6 loopback (%v): [::1] covered by TestGuardCheck only", lerr)
	}

	for _, u := range []string{
		"http://10.0.0.1/card",
		"http://192.168.1.1/.well-known/agent-card.json",
		"http://169.254.169.254/latest/meta-data/",
		"http://[fd00:ec2::254]/",
		"http://100.100.100.200/",
		"http://0.0.0.0:" + port + "/",
	} {
		_, err := f.Fetch(ctx, Request{URL: u})
		fe := fetchErr(t, err, ReasonRefusedAddress)
		if !strings.Contains(fe.Error(), "refused") {
			t.Errorf("%s: error text %q", u, fe.Error())
		}
		assertRefusedByDialer(t, err, "")
	}
}

// assertRefusedByDialer checks that err comes from the guard in the dialer's
// Control hook (so connect(2) never ran), for addr when addr is not "".
func assertRefusedByDialer(t *testing.T, err error, addr string) {
	t.Helper()
	var re *refusedError
	if !errors.As(err, &re) {
		t.Fatalf("%v: not refused by the dial guard", err)
	}
	var op *net.OpError
	if !errors.As(err, &op) || op.Op != "dial" {
		t.Errorf("%v: refusal is not a dial error", err)
	}
	if addr != "" && (op == nil || op.Addr == nil || op.Addr.String() != addr) {
		t.Errorf("refused dial of %v, want %s", op.Addr, addr)
	}
}
