package jobs

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"

	"github.com/tessera-dev/tessera/db"
)

// requestHashOf is requestHash of a backfill request: the same hash of the
// same bytes as json.Marshal(req), with a long explicit key list written
// by db.AppendJSONStrings a few thousand keys at a time straight into the
// hash, not through encoding/json into a 20 MB buffer first.
func requestHashOf(req Request) string {
	keys := req.Selector.Keys
	whole := func() string {
		req.Selector.Keys = keys
		b, _ := json.Marshal(req)
		return hashHead(sha256.Sum256(b))
	}
	if len(keys) < 1000 {
		return whole()
	}
	const slot = `"keys":["\u0000"]` // only the field itself reads so: a string's quotes are escaped
	req.Selector.Keys = []string{"\x00"}
	b, err := json.Marshal(req)
	i := bytes.Index(b, []byte(slot))
	if err != nil || i < 0 {
		return whole()
	}
	h := sha256.New()
	h.Write(b[:i+len(`"keys":[`)])
	buf := make([]byte, 0, 64<<10)
	for lo := 0; lo < len(keys); lo += 2048 {
		buf = buf[:0]
		if lo > 0 {
			buf = append(buf, ',')
		}
		buf = db.AppendJSONStrings(buf, keys[lo:min(lo+2048, len(keys))])
		h.Write(buf)
	}
	h.Write(b[i+len(slot)-1:]) // the closing bracket on
	var sum [sha256.Size]byte
	h.Sum(sum[:0])
	return hashHead(sum)
}

// hashHead writes the part of a hash that requestHash keeps.
func hashHead(sum [sha256.Size]byte) string { return hex.EncodeToString(sum[:12]) }
