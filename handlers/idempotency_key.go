package handlers

import (
	"github.com/labstack/echo/v4"
)

// maxIdempotencyKey is the longest Idempotency-Key header taken.
const maxIdempotencyKey = 200

// idempotencyKey is the request's Idempotency-Key header ("" when absent),
// or the 400 naming the header when it is longer than maxIdempotencyKey or
// not UTF-8 (stored and shown back in messages, it must be text).
func idempotencyKey(c echo.Context) (string, error) {
	k := c.Request().Header.Get("Idempotency-Key")
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
