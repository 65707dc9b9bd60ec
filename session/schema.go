package session

import (
	"github.com/abridge-go/abridge/session/internal/backend"

	"context"
	"fmt"
	"strings"
)

// schemaVersion is the migration this program brings databases to. The
// schema is described in the package documentation; it is the same on
// SQLite and PostgreSQL but for the type of the sessions' key.
const schemaVersion = 6

// migrations[i] takes a database from version i to version i+1. The
// sessions' key type is written {{key}}: the dialect's auto-increment key.
var migrations = [][]string{
	{
		`CREATE TABLE sessions (
			id {{key}},
			name TEXT NOT NULL UNIQUE,
			version BIGINT NOT NULL DEFAULT 0,
			created BIGINT NOT NULL,
			updated BIGINT NOT NULL
		)`,
		`CREATE TABLE messages (
			session_id BIGINT NOT NULL REFERENCES sessions(id),
			seq BIGINT NOT NULL,
			synthetic BOOLEAN NOT NULL,
			origin BIGINT NOT NULL DEFAULT 0,
			compaction_id BIGINT NOT NULL DEFAULT 0,
			data TEXT NOT NULL,
			created BIGINT NOT NULL,
			PRIMARY KEY (session_id, seq)
		)`,
		`CREATE TABLE compactions (
			session_id BIGINT NOT NULL REFERENCES sessions(id),
			id BIGINT NOT NULL,
			after_seq BIGINT NOT NULL,
			summary TEXT NOT NULL,
			created BIGINT NOT NULL,
			PRIMARY KEY (session_id, id)
		)`,
		`CREATE TABLE working (
			session_id BIGINT NOT NULL REFERENCES sessions(id),
			pos BIGINT NOT NULL,
			seq BIGINT NOT NULL,
			PRIMARY KEY (session_id, pos),
			FOREIGN KEY (session_id, seq) REFERENCES messages(session_id, seq)
		)`,
	},
	{
		// Version 2: the windows' summary store (Store.Summaries).
		`CREATE TABLE summaries (
			key TEXT NOT NULL,
			digest TEXT NOT NULL,
			head BIGINT NOT NULL,
			count BIGINT NOT NULL,
			last TEXT NOT NULL,
			ref TEXT NOT NULL,
			summary TEXT NOT NULL,
			created BIGINT NOT NULL,
			PRIMARY KEY (key, digest)
		)`,
		`CREATE INDEX summaries_ref ON summaries (ref)`,
	},
	{
		// Version 3: a record of compactions may instead be a withdrawn
		// turn (withdrawn says why, and is '' for a compaction); a span
		// may clear tool outputs after the messages it summarizes.
		`ALTER TABLE compactions ADD COLUMN withdrawn TEXT NOT NULL DEFAULT ''`,
		`ALTER TABLE summaries ADD COLUMN cleared BIGINT NOT NULL DEFAULT 0`,
	},
	{
		// Version 4: a span may hold a fallback's summary, to be written
		// again; spans are kept by when they were last saved or read
		// (used), not by how many share a key, and found by the key and
		// the message they end with.
		`ALTER TABLE summaries ADD COLUMN fallback BOOLEAN NOT NULL DEFAULT FALSE`,
		`ALTER TABLE summaries ADD COLUMN used BIGINT NOT NULL DEFAULT 0`,
		`UPDATE summaries SET used = created`,
		`CREATE INDEX summaries_last ON summaries (key, last)`,
		`CREATE INDEX summaries_used ON summaries (used)`,
	},
	{
		// Version 5: a span may be prepared ahead of its compaction (its
		// summary written in the background, not applied yet); a summary
		// being written is claimed, so that one process writes it while
		// the others sharing the database wait for it or go on without.
		`ALTER TABLE summaries ADD COLUMN prepared BOOLEAN NOT NULL DEFAULT FALSE`,
		`CREATE TABLE summary_claims (
			digest TEXT NOT NULL PRIMARY KEY,
			holder TEXT NOT NULL,
			expires BIGINT NOT NULL
		)`,
	},
	{
		// Version 6: the receipts of compactions and the records of the
		// requests a proxy forwarded (Store.Receipts).
		`CREATE TABLE receipts (
			id TEXT NOT NULL PRIMARY KEY,
			conversation TEXT NOT NULL,
			ref TEXT NOT NULL,
			created BIGINT NOT NULL,
			used BIGINT NOT NULL,
			data TEXT NOT NULL,
			first_usage TEXT NOT NULL DEFAULT '',
			next_usage TEXT NOT NULL DEFAULT ''
		)`,
		`CREATE INDEX receipts_conversation ON receipts (conversation, created)`,
		`CREATE INDEX receipts_ref ON receipts (ref)`,
		`CREATE INDEX receipts_used ON receipts (used)`,
		`CREATE INDEX receipts_created ON receipts (created)`,
		`CREATE TABLE requests (
			id {{key}},
			conversation TEXT NOT NULL,
			created BIGINT NOT NULL,
			api TEXT NOT NULL,
			model TEXT NOT NULL,
			status BIGINT NOT NULL,
			client_messages BIGINT NOT NULL,
			client_tokens BIGINT NOT NULL,
			sent_messages BIGINT NOT NULL,
			sent_tokens BIGINT NOT NULL,
			provider_usage TEXT NOT NULL,
			receipt TEXT NOT NULL,
			compacted BOOLEAN NOT NULL
		)`,
		`CREATE INDEX requests_conversation ON requests (conversation, created)`,
		`CREATE INDEX requests_created ON requests (created)`,
	},
}

// migrate brings the database to schemaVersion, inside one transaction that
// the backend serialises against other processes migrating at once.
func migrate(ctx context.Context, b backend.DB) error {
	tx, err := b.Begin(ctx, true)
	if err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	defer tx.Rollback()
	if err := b.LockSchema(ctx, tx); err != nil {
		return fmt.Errorf("migrate: lock: %w", err)
	}
	if _, err := tx.Exec(ctx, `CREATE TABLE IF NOT EXISTS schema_version (version BIGINT NOT NULL)`); err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	var have int64
	if err := queryRow(ctx, tx, `SELECT COALESCE(MAX(version), 0) FROM schema_version`).Scan(&have); err != nil {
		return fmt.Errorf("migrate: read schema version: %w", err)
	}
	if have > schemaVersion {
		return fmt.Errorf("migrate: database schema version %d is newer than this program's %d", have, schemaVersion)
	}
	if have == schemaVersion {
		return tx.Commit(ctx)
	}
	for v := have; v < schemaVersion; v++ {
		for _, stmt := range migrations[v] {
			if _, err := tx.Exec(ctx, strings.ReplaceAll(stmt, "{{key}}", b.KeyType())); err != nil {
				return fmt.Errorf("migrate to version %d: %w", v+1, err)
			}
		}
	}
	if _, err := tx.Exec(ctx, `DELETE FROM schema_version`); err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	if _, err := tx.Exec(ctx, `INSERT INTO schema_version (version) VALUES ($1)`, int64(schemaVersion)); err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	if err := tx.Commit(ctx); err != nil {
		return fmt.Errorf("migrate: commit: %w", err)
	}
	return nil
}
