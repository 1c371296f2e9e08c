package verify_test

import (
	"fmt"
	"net"
	"net/http"
	"os"
	"sync/atomic"
	"testing"
)

// TestMain is the offline proof: every test of this package runs with
// HTTPS_PROXY and HTTP_PROXY pointing at a listener that counts connections.
// Requests to the loopback registries bypass a proxy (Go never proxies
// loopback); anything else (Rekor, Fulcio, a TUF mirror, a CT log) would
// reach the listener, and the run fails.
func TestMain(m *testing.M) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	var conns atomic.Int64
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			conns.Add(1)
			c.Close()
		}
	}()
	proxy := "http://" + ln.Addr().String()
	for _, k := range []string{"HTTPS_PROXY", "HTTP_PROXY", "https_proxy", "http_proxy"} {
		os.Setenv(k, proxy)
	}
	os.Unsetenv("NO_PROXY")
	os.Unsetenv("no_proxy")
	code := m.Run()
	ln.Close()
	if n := conns.Load() - canaries.Load(); n != 0 {
		fmt.Fprintf(os.Stderr, "FAIL: %d connection(s) went off the machine (through the recording proxy): verification must be offline\n", n)
		code = 1
	}
	os.Exit(code)
}

// canaries counts the connections TestProxyRecords makes on purpose.
var canaries atomic.Int64

// TestProxyRecords proves the listener sees what leaves the machine: a
// request to a name off loopback, through a transport that honours the
// proxy variables as go-containerregistry's does, reaches it.
func TestProxyRecords(t *testing.T) {
	tr := &http.Transport{Proxy: http.ProxyFromEnvironment}
	defer tr.CloseIdleConnections()
	canaries.Add(1)
	res, err := (&http.Client{Transport: tr}).Get("https://rekor.sigstore.dev/api/v1/log")
	if err == nil {
		res.Body.Close()
		t.Fatal("the request succeeded: the proxy is not in the way")
	}
}
