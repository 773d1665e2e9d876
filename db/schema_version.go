package db

import (
	"context"
	"fmt"

	"github.com/pressly/goose/v3"
)

// SchemaTooNewError is a database whose schema is of a newer version than
// the newest migration this binary has: a newer Tessera migrated it.
// Nothing is written to it.
type SchemaTooNewError struct {
	Database int64 // the version recorded in the database (goose's version table)
	Binary   int64 // this binary's newest migration
}

func (e *SchemaTooNewError) Error() string {
	return fmt.Sprintf("the database's schema is at version %d, newer than this binary's newest migration %d", e.Database, e.Binary)
}

// checkNotNewer refuses (*SchemaTooNewError) a database whose recorded
// version is past p's newest migration. It reads only: a database without
// goose's version table is a new one (Up creates it).
func checkNotNewer(ctx context.Context, p *goose.Provider) error {
	srcs := p.ListSources()
	if len(srcs) == 0 {
		return nil
	}
	newest := srcs[len(srcs)-1].Version
	cur, err := p.GetDBVersion(ctx)
	if err != nil {
		return nil // no version table yet: Up creates it and says what fails
	}
	if cur > newest {
		return &SchemaTooNewError{Database: cur, Binary: newest}
	}
	return nil
}
