package handlers

import (
	"strings"

	"github.com/labstack/echo/v4"
)

// maxIdempotencyKey is the longest Idempotency-Key header taken.
const maxIdempotencyKey = 200

// idempotencyKey is the request's Idempotency-Key header ("" when absent),
// or the 400 naming the header when it is sent empty (a client's unset
// variable: taken as "no key", a retry would be done twice) or more than
// once (which one counts?), longer than maxIdempotencyKey or not UTF-8
// (stored and shown back in messages, it must be text).
func idempotencyKey(c echo.Context) (string, error) {
	vals := c.Request().Header.Values("Idempotency-Key")
	switch {
	case len(vals) == 0:
		return "", nil
	case len(vals) > 1:
		return "", BadRequest("Idempotency-Key", "the Idempotency-Key header is sent %d times; send it once, with one key", len(vals))
	case strings.TrimSpace(vals[0]) == "":
		return "", BadRequest("Idempotency-Key", "the Idempotency-Key header is empty; send a key such as a UUID (the same key returns the first answer), or leave the header out")
	}
	k := vals[0]
	if len(k) > maxIdempotencyKey {
		return "", BadRequest("Idempotency-Key", "the Idempotency-Key header is longer than %d characters", maxIdempotencyKey)
	}
	if off := firstInvalidUTF8([]byte(k)); off >= 0 {
		return "", BadRequest("Idempotency-Key", "the Idempotency-Key header is not valid UTF-8 (byte 0x%02x at byte %d); send a key of UTF-8 text, e.g. a UUID", k[off], off)
	}
	return k, nil
}

// scopedIdempotencyKey is the request's Idempotency-Key (idempotencyKey)
// under scope ("api:user.create:"), so that one key does not answer for
// another kind of request; "" when the request has none.
func scopedIdempotencyKey(c echo.Context, scope string) (string, error) {
	key, err := idempotencyKey(c)
	if key == "" || err != nil {
		return "", err
	}
	return scope + key, nil
}
