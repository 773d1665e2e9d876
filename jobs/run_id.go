package jobs

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base32"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"strings"

	"github.com/oklog/ulid/v2"

	"github.com/tessera-dev/tessera/db"
)

// Run ids and run keys: how a chunk's run is named.

func runSecret(ctx context.Context, store *db.Store) ([]byte, error) {
	v, ok, err := store.RunIDSecret(ctx)
	if err == nil && !ok {
		b := make([]byte, 32)
		if _, err := rand.Read(b); err != nil {
			return nil, err
		}
		v, err = store.KeepRunIDSecret(ctx, hex.EncodeToString(b))
	}
	if err != nil {
		return nil, err
	}
	return hex.DecodeString(v)
}

// RunID is the id of chunk chunk of backfill backfillID: derived from the
// two, so that every instance planning the chunk names its run alike, and
// in the order runs are planned. It is "run_" and 24 characters of
// base32hex (an alphabet that sorts as the bytes it encodes) of 120 bits:
// the 48-bit time of the backfill's ULID, 37 bits of an HMAC of the
// backfill's id under the server's secret (two backfills created in the
// same millisecond), and the chunk's 35 bits. Runs are the keys of the
// runs' primary index and of attempts: ids in planning order are written
// at the end of each, where a random id (the HMAC of the run key, before)
// made every controller step rewrite a page at a random place of each
// (tessera bench backfill of a million partitions writes 13 % fewer bytes
// with these). A backfill id that is not a ULID, or a chunk past 2^35,
// keeps that older id.
func (e *Engine) RunID(backfillID string, chunk int64) string {
	u, err := ulid.ParseStrict(strings.ToUpper(strings.TrimPrefix(backfillID, "bf_")))
	if !strings.HasPrefix(backfillID, "bf_") || err != nil || chunk < 0 || chunk >= 1<<35 {
		m := hmac.New(sha256.New, e.secret)
		m.Write([]byte(RunKey(backfillID, chunk)))
		return "run_" + strings.ToLower(base32.StdEncoding.WithPadding(base32.NoPadding).EncodeToString(m.Sum(nil)[:15]))
	}
	m := hmac.New(sha256.New, e.secret)
	m.Write([]byte(backfillID))
	h := m.Sum(nil)
	var raw [15]byte
	copy(raw[:6], u[:6]) // the ULID's time, big-endian
	// Then 72 bits: the hash's 37 and the chunk's 35.
	hash := binary.BigEndian.Uint64(h[:8]) >> 27
	raw[6] = byte(hash >> 29)
	binary.BigEndian.PutUint64(raw[7:], hash<<35|uint64(chunk))
	return "run_" + strings.ToLower(base32.HexEncoding.WithPadding(base32.NoPadding).EncodeToString(raw[:]))
}

// RunKey is the run key of chunk i of backfill b.
func RunKey(b string, i int64) string { return fmt.Sprintf("backfill:%s:chunk:%d", b, i) }
