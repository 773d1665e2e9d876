package web

import (
	"net"
	"net/http"
	"net/netip"
	"strings"

	"github.com/labstack/echo/v4"
)

// clientAddr is the address a request comes from, in canonical form (one
// spelling per address: fd00:0::1 and FD00::1 are fd00::1; IPv4 in IPv6 is
// IPv4). Behind a trusted proxy it is the last X-Forwarded-For entry: the
// address the proxy itself saw, which it appends; entries before it are
// the client's to write and are never believed (a client sending
// "X-Forwarded-For: 10.0.0.7" cannot pass for 10.0.0.7).
func clientAddr(trustProxy bool) echo.IPExtractor {
	return func(r *http.Request) string {
		if trustProxy {
			if xs := r.Header.Values(echo.HeaderXForwardedFor); len(xs) > 0 {
				last := xs[len(xs)-1]
				if i := strings.LastIndexByte(last, ','); i >= 0 {
					last = last[i+1:]
				}
				if a, ok := canonicalAddr(strings.TrimSpace(last)); ok {
					return a
				}
			}
		}
		host, _, err := net.SplitHostPort(r.RemoteAddr)
		if err != nil {
			host = r.RemoteAddr
		}
		if a, ok := canonicalAddr(host); ok {
			return a
		}
		return host
	}
}

func canonicalAddr(s string) (string, bool) {
	a, err := netip.ParseAddr(strings.Trim(s, "[]"))
	if err != nil {
		return "", false
	}
	return a.Unmap().WithZone("").String(), true
}
