package handlers

import (
	"net/url"

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
