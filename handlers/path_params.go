package handlers

import (
	"net/url"
	"strconv"

	"github.com/labstack/echo/v4"
)

// pathParam is a path parameter as the client meant it. echo matches routes
// on the escaped path when the request has one that differs from the
// decoded path (a key containing "/" arrives as "%2F"), and then hands the
// parameter over still escaped; otherwise it is already decoded. Decoding
// exactly once in the first case makes every key round-trip through
// PartitionHref: "a/b", "a%2Fb", "p q" and "50%" each reach their own page.
func pathParam(c echo.Context, name string) string {
	v := c.Param(name)
	if c.Request().URL.RawPath == "" {
		return v
	}
	if u, err := url.PathUnescape(v); err == nil {
		return u
	}
	return v
}

// intParam is the whole number v of parameter name: def when v is "", or a
// 400 saying that name must be want when v is not a number of at least min.
func intParam(name, v string, def, min int64, want string) (int64, error) {
	if v == "" {
		return def, nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < min {
		return 0, BadRequest(name, "%s must be %s, got %q", name, want, v)
	}
	return n, nil
}
