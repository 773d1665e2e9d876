package bench

import (
	"os"
	"path/filepath"

	"github.com/tessera-dev/tessera/db"
)

// tempStore opens a fresh store, bench.db in a new temporary directory
// named after the benchmark; cleanup closes it and removes the directory.
func tempStore(name string) (store *db.Store, cleanup func(), err error) {
	dir, err := os.MkdirTemp("", "tessera-bench-"+name+"-")
	if err != nil {
		return nil, nil, err
	}
	store, err = db.Open(filepath.Join(dir, "bench.db"))
	if err != nil {
		os.RemoveAll(dir)
		return nil, nil, err
	}
	return store, func() { store.Close(); os.RemoveAll(dir) }, nil
}
