// Package session stores agent conversations so that they survive restarts:
// every message as it happened (the transcript), each compaction as a record
// of which messages it took out of the working history and what replaced
// them, and the working history itself — what the agent sends next.
// Compacted messages are hidden from the working history, never deleted: the
// full transcript can always be read back.
//
// A [Store] is a SQLite file (pure Go, no cgo; one file created on first
// use) or a PostgreSQL database at scale; both behave the same. The
// database is named by a [Driver] from the subpackage of its driver, so
// that a program links the one it picks and not the other:
//
//	st, err := session.Open(ctx, sqlite.Driver{Path: path}, logger)   // session/sqlite
//	st, err := session.Open(ctx, postgres.Driver{DSN: dsn}, logger)   // session/postgres
//
// Package session itself links neither; config.SessionDriver picks one from
// a DSN (ABRIDGE_SESSION_DB), as the CLI does. A [Session] is one named
// conversation. Its Append and Replace methods match
// the agent's store hook, so a *Session can be handed to the agent directly:
// Append records new messages, Replace records the history the agent's
// processors produced.
//
// Concurrency is optimistic: every write bumps the session's version, Append
// is always accepted (appending cannot lose anything; a contended write is
// retried), and Replace is refused with [ErrConflict] when the session changed
// since this *Session last read or wrote it, so that a process never hides
// messages it has not seen.
//
// A turn that fails or is interrupted is not a compaction: a host that goes
// on from the history it had before the turn marks the turn's start with
// [Session.BeginTurn] and takes the turn back with [Session.Withdraw], which
// records a withdrawn turn saying why. Its messages stay in the transcript.
//
// The store returns the working history as it was stored. A process killed
// in the middle of a turn can leave it ending with a tool call that was never
// answered; a host that resumes a session calls [Session.Resume], which
// answers such calls as interrupted and stores the answers (in the
// transcript too, when they come at the end), or puts [processor.Repair]
// first in its chain. The store never alters what it recorded by itself.
//
// # Storage
//
// Both databases hold the same tables, created or migrated when a store is
// opened (schema_version records the migration a database is at; a database
// from a newer program is refused, not altered). Times are Unix nanoseconds;
// messages are the JSON of [MarshalMessage], kept as text.
//
//	schema_version(version)
//	sessions(id, name UNIQUE, version, created, updated)
//	    version is bumped by every write (optimistic concurrency).
//	messages(session_id, seq, synthetic, origin, compaction_id, data, created)
//	    KEY (session_id, seq). seq numbers a session's rows 1, 2, 3… in the
//	    order they were written. synthetic = false: a message appended with
//	    Append, part of the transcript, never changed or deleted.
//	    synthetic = true: a message that entered the working history through
//	    Replace (a summary marker, a trimmed copy); origin is the compaction
//	    that added it. compaction_id is the compaction that took the row out
//	    of the working history, 0 while it has not.
//	compactions(session_id, id, after_seq, summary, created, withdrawn)
//	    KEY (session_id, id); ids 1, 2, 3… per session. after_seq is the last
//	    seq written before the compaction. withdrawn is '' for a
//	    compaction; for the record of a withdrawn turn (see
//	    Session.Withdraw) it says why the turn was withdrawn.
//	working(session_id, pos, seq)
//	    KEY (session_id, pos): the working history, position by position,
//	    each a reference to a messages row.
//	summaries(key, digest, head, count, cleared, last, ref, summary, created, fallback, used, prepared)
//	    KEY (key, digest): the spans windows summarized (window.Span), by
//	    conversation key and content digest, both in hexadecimal; ref is
//	    the summary's reference (summary.Ref), indexed; (key, last) and
//	    used are indexed; prepared marks a summary written ahead, in the
//	    background, and not applied yet. Shared by every process on the
//	    database (see [Store.Summaries]). A span is kept until it has not
//	    been saved or read for SummaryMaxAge, or until the table holds more
//	    than SummaryMaxSpans spans and it is among the least recently used:
//	    never because other spans share its key.
//	summary_claims(digest, holder, expires)
//	    KEY digest: the span whose summary a process is writing ahead
//	    (window.Claimer, [Store.Summaries]), the holder naming the process
//	    and expires the time, in Unix nanoseconds, at which another
//	    process may take it over; a claim is renewed while its summary is
//	    being written and deleted once it is saved or given up, or an hour
//	    after it expired.
//	receipts(id, conversation, ref, created, used, data, first_usage, next_usage)
//	    KEY id: the receipt of each compaction a proxy made (see
//	    [Store.Receipts]); data is its JSON (receipt.Receipt, without the
//	    usages), first_usage and next_usage the JSON of the provider's
//	    usage of the first and the next request sent with its marker (''
//	    until known). Indexed by (conversation, created), ref, used and
//	    created;
//	    kept as summaries are (SummaryMaxAge, SummaryMaxSpans).
//	requests(id, conversation, created, api, model, status, client_messages,
//	    client_tokens, sent_messages, sent_tokens, provider_usage, receipt, compacted)
//	    A record of each request a proxy forwarded (receipt.Request; provider_usage
//	    is the JSON of the provider's usage, '' when none), indexed by
//	    (conversation, created) and created; kept for SummaryMaxAge, at
//	    most RequestMaxRows.
package session
