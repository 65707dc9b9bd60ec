package session

import (
	"github.com/abridge-go/abridge/session/internal/backend"

	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/abridge-go/abridge/processor"
)

// ErrConflict is matched (with errors.Is) by the error [Session.Replace]
// returns when the session was written by someone else since this *Session
// last read or wrote it. Read the working history again ([Session.Working]),
// process it, and replace again.
var ErrConflict = errors.New("session changed concurrently")

// Session is one stored conversation. Its methods are safe for concurrent
// use. A Session remembers the version of the session it last read or wrote;
// [Session.Replace] is accepted only while that is still the stored version.
// Two Sessions opened on the same name (in one process or several) are
// separate handles, each with its own remembered version.
type Session struct {
	st   *Store
	id   int64
	name string

	mu      sync.Mutex
	version int64   // the stored version this handle last read or wrote
	inTurn  bool    // BeginTurn was called
	turn    []int64 // the seqs this handle appended since BeginTurn
}

// Entry is one stored message with its place in the session.
type Entry struct {
	// Seq is the message's sequence number in the session: 1, 2, 3… in the
	// order messages were written. Transcript messages and the messages
	// compactions added share the sequence, so a transcript's seqs can
	// have gaps.
	Seq int64
	// Message is the message as it was written.
	Message processor.Message
	// Compacted reports whether a compaction, or the withdrawal of its
	// turn, removed the message from the working history.
	Compacted bool
	// CompactionID is the ID of that compaction or withdrawal (see
	// [Compaction]), 0 when Compacted is false.
	CompactionID int64
}

// Compaction records one change of the working history: a compaction by
// [Session.Replace], with the messages it removed and those it added, or a
// withdrawn turn (Withdrawn set) by [Session.Withdraw], with the messages
// of the turn it removed.
type Compaction struct {
	// ID numbers the session's records, compactions and withdrawn turns
	// together, 1, 2, 3… in order.
	ID int64
	// Covered holds the seqs of the transcript messages the compaction
	// removed from the working history, in order.
	Covered []int64
	// Superseded holds the seqs of messages added by earlier compactions
	// (an older summary, a trimmed copy) that this one removed.
	Superseded []int64
	// Inserted holds the messages the compaction added to the working
	// history (a summary marker, trimmed copies), in order. They are not
	// part of the transcript. An inserted message that a later compaction
	// removed has Compacted set.
	Inserted []Entry
	// Summary is the text of the inserted messages (see
	// [processor.Message.Text]), joined by blank lines, with invalid UTF-8
	// and NUL bytes replaced by U+FFFD; empty when they have none.
	Summary string
	// After is the seq of the last message written before the compaction.
	After int64
	// Time is when the compaction was recorded.
	Time time.Time
	// Withdrawn is "" for a compaction. For a withdrawn turn it says why
	// the turn was withdrawn ("interrupted", "failed: …"), and Covered
	// holds the turn's messages.
	Withdrawn string
}

// Name returns the session's name.
func (s *Session) Name() string { return s.name }

// seen records that this handle has read or written version v.
func (s *Session) seen(v int64) {
	s.mu.Lock()
	if v > s.version {
		s.version = v
	}
	s.mu.Unlock()
}

// Working returns the working history: the messages the agent sends next,
// as they were stored (see the package doc about resuming after a crash).
// It returns an empty history for a new session.
func (s *Session) Working(ctx context.Context) ([]processor.Message, error) {
	var (
		version int64
		out     []processor.Message
	)
	err := s.st.read(ctx, "read working history of session "+strconv.Quote(s.name), func(t backend.Tx) error {
		out = out[:0]
		if err := queryRow(ctx, t, `SELECT version FROM sessions WHERE id = $1`, s.id).Scan(&version); err != nil {
			return err
		}
		rs, err := t.Query(ctx, `SELECT w.seq, m.data FROM working w
			JOIN messages m ON m.session_id = w.session_id AND m.seq = w.seq
			WHERE w.session_id = $1 ORDER BY w.pos`, s.id)
		if err != nil {
			return err
		}
		defer rs.Close()
		for rs.Next() {
			var (
				seq  int64
				data string
			)
			if err := rs.Scan(&seq, &data); err != nil {
				return err
			}
			m, err := UnmarshalMessage([]byte(data))
			if err != nil {
				return fmt.Errorf("message %d: %w", seq, err)
			}
			out = append(out, m)
		}
		return rs.Err()
	})
	if err != nil {
		return nil, err
	}
	s.seen(version)
	return out, nil
}

// Transcript returns every message ever appended to the session, in order,
// each with its seq and whether a compaction removed it from the working
// history. The messages compactions added are not part of it: see
// [Session.Compactions].
func (s *Session) Transcript(ctx context.Context) ([]Entry, error) {
	var out []Entry
	err := s.st.read(ctx, "read transcript of session "+strconv.Quote(s.name), func(t backend.Tx) error {
		out = out[:0]
		rs, err := t.Query(ctx, `SELECT seq, compaction_id, data FROM messages
			WHERE session_id = $1 AND NOT synthetic ORDER BY seq`, s.id)
		if err != nil {
			return err
		}
		defer rs.Close()
		for rs.Next() {
			var (
				e    Entry
				data string
			)
			if err := rs.Scan(&e.Seq, &e.CompactionID, &data); err != nil {
				return err
			}
			if e.Message, err = UnmarshalMessage([]byte(data)); err != nil {
				return fmt.Errorf("message %d: %w", e.Seq, err)
			}
			e.Compacted = e.CompactionID != 0
			out = append(out, e)
		}
		return rs.Err()
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// Compactions returns the session's compactions and withdrawn turns (see
// [Compaction]) in order.
func (s *Session) Compactions(ctx context.Context) ([]Compaction, error) {
	var out []Compaction
	err := s.st.read(ctx, "read compactions of session "+strconv.Quote(s.name), func(t backend.Tx) error {
		out = out[:0]
		rs, err := t.Query(ctx, `SELECT id, after_seq, summary, created, withdrawn FROM compactions
			WHERE session_id = $1 ORDER BY id`, s.id)
		if err != nil {
			return err
		}
		byID := map[int64]int{}
		for rs.Next() {
			var (
				c       Compaction
				created int64
			)
			if err := rs.Scan(&c.ID, &c.After, &c.Summary, &created, &c.Withdrawn); err != nil {
				rs.Close()
				return err
			}
			c.Time = time.Unix(0, created)
			byID[c.ID] = len(out)
			out = append(out, c)
		}
		rs.Close()
		if err := rs.Err(); err != nil {
			return err
		}
		rs, err = t.Query(ctx, `SELECT seq, synthetic, origin, compaction_id,
			CASE WHEN synthetic THEN data ELSE '' END
			FROM messages WHERE session_id = $1 AND (synthetic OR compaction_id <> 0) ORDER BY seq`, s.id)
		if err != nil {
			return err
		}
		defer rs.Close()
		for rs.Next() {
			var (
				seq, origin, removedBy int64
				synthetic              bool
				data                   string
			)
			if err := rs.Scan(&seq, &synthetic, &origin, &removedBy, &data); err != nil {
				return err
			}
			if i, ok := byID[removedBy]; ok {
				if synthetic {
					out[i].Superseded = append(out[i].Superseded, seq)
				} else {
					out[i].Covered = append(out[i].Covered, seq)
				}
			}
			if i, ok := byID[origin]; ok && synthetic {
				m, err := UnmarshalMessage([]byte(data))
				if err != nil {
					return fmt.Errorf("message %d: %w", seq, err)
				}
				out[i].Inserted = append(out[i].Inserted, Entry{Seq: seq, Message: m, Compacted: removedBy != 0, CompactionID: removedBy})
			}
		}
		return rs.Err()
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// Append adds msgs to the end of the transcript and of the working history,
// atomically. It is always accepted, whatever other handles wrote meanwhile
// (a write that meets contention is run again); but when someone else wrote
// since this handle last read or wrote, the handle does not catch up, so
// that its next Replace is refused with [ErrConflict] rather than hiding
// messages its caller has not seen.
//
// Appending no message does nothing. A message the codec cannot represent
// (see [MarshalMessage]) is an error, and nothing is written.
func (s *Session) Append(ctx context.Context, msgs ...processor.Message) error {
	if len(msgs) == 0 {
		return nil
	}
	what := "append to session " + strconv.Quote(s.name)
	datas := make([]string, len(msgs))
	for i, m := range msgs {
		b, err := MarshalMessage(m)
		if err != nil {
			return fmt.Errorf("%s: message %d: %w", what, i, err)
		}
		datas[i] = string(b)
	}
	var version, lastSeq int64
	err := s.st.write(ctx, what, func(t backend.Tx) error {
		now := time.Now().UnixNano()
		if err := queryRow(ctx, t, `UPDATE sessions SET version = version + 1, updated = $2
			WHERE id = $1 RETURNING version`, s.id, now).Scan(&version); err != nil {
			return err
		}
		var lastPos int64
		if err := queryRow(ctx, t, `SELECT COALESCE(MAX(seq), 0) FROM messages WHERE session_id = $1`, s.id).Scan(&lastSeq); err != nil {
			return err
		}
		if err := queryRow(ctx, t, `SELECT COALESCE(MAX(pos), -1) FROM working WHERE session_id = $1`, s.id).Scan(&lastPos); err != nil {
			return err
		}
		if err := insertMessages(ctx, t, s.id, lastSeq+1, datas, false, 0, now); err != nil {
			return err
		}
		seqs := make([]int64, len(datas))
		for i := range seqs {
			seqs[i] = lastSeq + 1 + int64(i)
		}
		return insertWorking(ctx, t, s.id, lastPos+1, seqs)
	})
	if err != nil {
		return err
	}
	s.mu.Lock()
	if s.version == version-1 {
		s.version = version
	}
	if s.inTurn {
		for i := range msgs {
			s.turn = append(s.turn, lastSeq+1+int64(i))
		}
	}
	s.mu.Unlock()
	return nil
}

// errUnchanged ends a Replace that found nothing to change.
var errUnchanged = errors.New("working history unchanged")

// Replace makes working the session's working history: the history the
// agent's processors produced from the current one. Messages of working
// equal ([processor.Equal]) to messages of the current working history, as
// stored (invalid UTF-8 replaced: see [MarshalMessage]), are kept, with
// their seqs; the current messages it no longer holds are marked
// compacted (never deleted); messages that are new (a summary marker, a
// trimmed copy) are stored as the compaction's inserted messages, not as
// transcript. All of it is recorded as one [Compaction]. A working history
// equal to the current one records nothing.
//
// Messages the agent received must be given to [Session.Append] first: a
// message that reaches the session only through Replace is not part of the
// transcript.
//
// Replace is refused with an error matching [ErrConflict], and writes
// nothing, when the session changed since this handle last read or wrote it.
func (s *Session) Replace(ctx context.Context, working []processor.Message) error {
	return s.replace(ctx, "replace working history of session "+strconv.Quote(s.name), working, "")
}

// replace is Replace recording a withdrawn turn when withdrawn, the
// reason, is not "".
func (s *Session) replace(ctx context.Context, what string, working []processor.Message, withdrawn string) error {
	s.mu.Lock()
	expected := s.version
	s.mu.Unlock()
	var version int64
	err := s.st.write(ctx, what, func(t backend.Tx) error {
		now := time.Now().UnixNano()
		err := queryRow(ctx, t, `UPDATE sessions SET version = version + 1, updated = $3
			WHERE id = $1 AND version = $2 RETURNING version`, s.id, expected, now).Scan(&version)
		if errors.Is(err, errNoRows) {
			var stored int64
			if err := queryRow(ctx, t, `SELECT version FROM sessions WHERE id = $1`, s.id).Scan(&stored); err != nil {
				return err
			}
			return fmt.Errorf("%w: the session is at version %d, this handle last saw version %d", ErrConflict, stored, expected)
		}
		if err != nil {
			return err
		}
		cur, err := loadWorking(ctx, t, s.id)
		if err != nil {
			return err
		}
		kept, dropped := match(cur, working)
		if stored, ok := asStored(working, kept); ok {
			kept, dropped = match(cur, stored)
		}
		first := 0 // the first position whose message changes
		for first < len(cur) && first < len(working) && kept[first] == cur[first].seq {
			first++
		}
		if first == len(cur) && first == len(working) {
			return errUnchanged
		}
		var compID, lastSeq int64
		if err := queryRow(ctx, t, `SELECT COALESCE(MAX(id), 0) + 1 FROM compactions WHERE session_id = $1`, s.id).Scan(&compID); err != nil {
			return err
		}
		if err := queryRow(ctx, t, `SELECT COALESCE(MAX(seq), 0) FROM messages WHERE session_id = $1`, s.id).Scan(&lastSeq); err != nil {
			return err
		}
		var (
			datas    []string
			summary  []string
			nextSeqs = make([]int64, len(working))
		)
		for i, m := range working {
			if kept[i] != 0 {
				nextSeqs[i] = kept[i]
				continue
			}
			b, err := MarshalMessage(m)
			if err != nil {
				return fmt.Errorf("message %d: %w", i, err)
			}
			datas = append(datas, string(b))
			nextSeqs[i] = lastSeq + int64(len(datas))
			if text := m.Text(); text != "" {
				summary = append(summary, storableText(text))
			}
		}
		if _, err := t.Exec(ctx, `INSERT INTO compactions (session_id, id, after_seq, summary, created, withdrawn)
			VALUES ($1, $2, $3, $4, $5, $6)`, s.id, compID, lastSeq, strings.Join(summary, "\n\n"), now, withdrawn); err != nil {
			return err
		}
		if err := insertMessages(ctx, t, s.id, lastSeq+1, datas, true, compID, now); err != nil {
			return err
		}
		if err := markCompacted(ctx, t, s.id, compID, dropped); err != nil {
			return err
		}
		if _, err := t.Exec(ctx, `DELETE FROM working WHERE session_id = $1 AND pos >= $2`, s.id, int64(first)); err != nil {
			return err
		}
		return insertWorking(ctx, t, s.id, int64(first), nextSeqs[first:])
	})
	if errors.Is(err, errUnchanged) {
		return nil
	}
	if err != nil {
		return err
	}
	s.seen(version)
	return nil
}

// BeginTurn marks the start of a turn: from now on the handle remembers
// the messages it appends, so that [Session.Withdraw] can take them back.
// Each call forgets those of the turn before.
func (s *Session) BeginTurn() {
	s.mu.Lock()
	s.inTurn, s.turn = true, nil
	s.mu.Unlock()
}

// Withdraw takes back a turn that failed or was interrupted: the working
// history becomes before again, the history the caller had when the turn
// began, and one withdrawn turn is recorded (a [Compaction] whose
// Withdrawn is reason, "withdrawn" when reason is ""), not a compaction.
// The turn's messages stay in the transcript.
//
// When someone else wrote to the session since this handle last read or
// wrote it, the working history is theirs too, and before would hide what
// they wrote: Withdraw then takes out of the working history only the
// messages this handle appended since [Session.BeginTurn] (those still in
// it), and the caller reads the working history again ([Session.Working]
// or [Session.Resume]) to go on. Withdraw ends the turn; with nothing to
// take back it records nothing.
func (s *Session) Withdraw(ctx context.Context, before []processor.Message, reason string) error {
	if reason == "" {
		reason = "withdrawn"
	}
	reason = storableText(strings.ToValidUTF8(reason, "\uFFFD"))
	s.mu.Lock()
	own := s.turn
	s.inTurn, s.turn = false, nil
	s.mu.Unlock()
	what := "withdraw turn from session " + strconv.Quote(s.name)
	err := s.replace(ctx, what, before, reason)
	if !errors.Is(err, ErrConflict) {
		return err
	}
	if len(own) == 0 {
		return nil
	}
	return s.withdrawOwn(ctx, what, own, reason)
}

// withdrawOwn takes the messages whose seqs are own out of the working
// history, whatever version the session is at, as one withdrawn turn.
func (s *Session) withdrawOwn(ctx context.Context, what string, own []int64, reason string) error {
	mine := make(map[int64]bool, len(own))
	for _, seq := range own {
		mine[seq] = true
	}
	var version int64
	err := s.st.write(ctx, what, func(t backend.Tx) error {
		cur, err := loadWorking(ctx, t, s.id)
		if err != nil {
			return err
		}
		first := -1
		var removed, rest []int64
		for i, c := range cur {
			switch {
			case mine[c.seq]:
				removed = append(removed, c.seq)
				if first < 0 {
					first = i
				}
			case first >= 0:
				rest = append(rest, c.seq)
			}
		}
		if len(removed) == 0 {
			return errUnchanged
		}
		now := time.Now().UnixNano()
		if err := queryRow(ctx, t, `UPDATE sessions SET version = version + 1, updated = $2
			WHERE id = $1 RETURNING version`, s.id, now).Scan(&version); err != nil {
			return err
		}
		var compID, lastSeq int64
		if err := queryRow(ctx, t, `SELECT COALESCE(MAX(id), 0) + 1 FROM compactions WHERE session_id = $1`, s.id).Scan(&compID); err != nil {
			return err
		}
		if err := queryRow(ctx, t, `SELECT COALESCE(MAX(seq), 0) FROM messages WHERE session_id = $1`, s.id).Scan(&lastSeq); err != nil {
			return err
		}
		if _, err := t.Exec(ctx, `INSERT INTO compactions (session_id, id, after_seq, summary, created, withdrawn)
			VALUES ($1, $2, $3, '', $4, $5)`, s.id, compID, lastSeq, now, reason); err != nil {
			return err
		}
		if err := markCompacted(ctx, t, s.id, compID, removed); err != nil {
			return err
		}
		if _, err := t.Exec(ctx, `DELETE FROM working WHERE session_id = $1 AND pos >= $2`, s.id, int64(first)); err != nil {
			return err
		}
		return insertWorking(ctx, t, s.id, int64(first), rest)
	})
	if errors.Is(err, errUnchanged) {
		return nil
	}
	if err != nil {
		return err
	}
	s.mu.Lock()
	if s.version == version-1 {
		s.version = version
	}
	s.mu.Unlock()
	return nil
}

// Current reports whether this handle has seen the session's latest
// version: false when someone else wrote to it since this handle last read
// or wrote it, so that its next [Session.Replace] would be refused with
// [ErrConflict] and the caller should read the working history again.
func (s *Session) Current(ctx context.Context) (bool, error) {
	var stored int64
	err := s.st.readOne(ctx, "read version of session "+strconv.Quote(s.name), func(t backend.Tx) error {
		return queryRow(ctx, t, `SELECT version FROM sessions WHERE id = $1`, s.id).Scan(&stored)
	})
	if err != nil {
		return false, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return stored == s.version, nil
}

// asStored returns working with each message that match paired with no
// stored message (kept[i] == 0) replaced by the message the store gives
// back for it (see [MarshalMessage]: invalid UTF-8 becomes U+FFFD), so that
// match recognises a message the caller still holds in its own form; and
// whether any message changed.
func asStored(working []processor.Message, kept []int64) ([]processor.Message, bool) {
	var out []processor.Message
	for i, m := range working {
		if kept[i] != 0 {
			continue
		}
		b, err := MarshalMessage(m)
		if err != nil {
			continue // Replace reports it when it stores the message
		}
		back, err := UnmarshalMessage(b)
		if err != nil || processor.Equal(back, m) {
			continue
		}
		if out == nil {
			out = slices.Clone(working)
		}
		out[i] = back
	}
	return out, out != nil
}

// storableText returns s as every database can store it in a text column:
// invalid UTF-8 and NUL bytes become U+FFFD, byte by byte.
func storableText(s string) string {
	return strings.Map(func(r rune) rune {
		if r == 0 {
			return utf8.RuneError
		}
		return r
	}, s)
}

// stored is a message of the working history with its seq.
type stored struct {
	seq int64
	msg processor.Message
}

func loadWorking(ctx context.Context, t backend.Tx, sessionID int64) ([]stored, error) {
	rs, err := t.Query(ctx, `SELECT w.seq, m.data FROM working w
		JOIN messages m ON m.session_id = w.session_id AND m.seq = w.seq
		WHERE w.session_id = $1 ORDER BY w.pos`, sessionID)
	if err != nil {
		return nil, err
	}
	defer rs.Close()
	var out []stored
	for rs.Next() {
		var (
			st   stored
			data string
		)
		if err := rs.Scan(&st.seq, &data); err != nil {
			return nil, err
		}
		if st.msg, err = UnmarshalMessage([]byte(data)); err != nil {
			return nil, fmt.Errorf("message %d: %w", st.seq, err)
		}
		out = append(out, st)
	}
	return out, rs.Err()
}

// match pairs the messages of next with equal messages of cur, in order. It
// returns, for each message of next, the seq of the current message it
// keeps (0 for a new message), and the seqs of the current messages next no
// longer holds. The common prefix and suffix are paired first (the head and
// tail a window keeps); in between, each message of next is paired with the
// first equal message after the previous pair.
func match(cur []stored, next []processor.Message) (kept, dropped []int64) {
	kept = make([]int64, len(next))
	p := 0
	for p < len(cur) && p < len(next) && processor.Equal(cur[p].msg, next[p]) {
		kept[p] = cur[p].seq
		p++
	}
	sfx := 0
	for sfx < len(cur)-p && sfx < len(next)-p && processor.Equal(cur[len(cur)-1-sfx].msg, next[len(next)-1-sfx]) {
		kept[len(next)-1-sfx] = cur[len(cur)-1-sfx].seq
		sfx++
	}
	curEnd, nextEnd := len(cur)-sfx, len(next)-sfx
	j := p
	for i := p; i < nextEnd; i++ {
		for k := j; k < curEnd; k++ {
			if processor.Equal(cur[k].msg, next[i]) {
				for _, c := range cur[j:k] {
					dropped = append(dropped, c.seq)
				}
				kept[i] = cur[k].seq
				j = k + 1
				break
			}
		}
	}
	for _, c := range cur[j:curEnd] {
		dropped = append(dropped, c.seq)
	}
	return kept, dropped
}

// rowsPerStatement bounds the rows of one multi-row statement, keeping the
// parameters well under both databases' limits.
const rowsPerStatement = 200

// insertMessages inserts datas as the rows seq first, first+1, ….
func insertMessages(ctx context.Context, t backend.Tx, sessionID, first int64, datas []string, synthetic bool, origin, created int64) error {
	flag := "FALSE"
	if synthetic {
		flag = "TRUE"
	}
	for start := 0; start < len(datas); start += rowsPerStatement {
		chunk := datas[start:min(start+rowsPerStatement, len(datas))]
		var sb strings.Builder
		sb.WriteString(`INSERT INTO messages (session_id, seq, synthetic, origin, compaction_id, data, created) VALUES `)
		args := []any{sessionID, origin, created}
		for i, d := range chunk {
			if i > 0 {
				sb.WriteString(", ")
			}
			n := len(args)
			fmt.Fprintf(&sb, "($1, $%d, %s, $2, 0, $%d, $3)", n+1, flag, n+2)
			args = append(args, first+int64(start+i), d)
		}
		if _, err := t.Exec(ctx, sb.String(), args...); err != nil {
			return err
		}
	}
	return nil
}

// insertWorking inserts seqs into the working history from position pos.
func insertWorking(ctx context.Context, t backend.Tx, sessionID, pos int64, seqs []int64) error {
	for start := 0; start < len(seqs); start += rowsPerStatement {
		chunk := seqs[start:min(start+rowsPerStatement, len(seqs))]
		var sb strings.Builder
		sb.WriteString(`INSERT INTO working (session_id, pos, seq) VALUES `)
		args := []any{sessionID}
		for i, seq := range chunk {
			if i > 0 {
				sb.WriteString(", ")
			}
			n := len(args)
			fmt.Fprintf(&sb, "($1, $%d, $%d)", n+1, n+2)
			args = append(args, pos+int64(start+i), seq)
		}
		if _, err := t.Exec(ctx, sb.String(), args...); err != nil {
			return err
		}
	}
	return nil
}

// markCompacted records that compaction compID removed the rows seqs.
func markCompacted(ctx context.Context, t backend.Tx, sessionID, compID int64, seqs []int64) error {
	for start := 0; start < len(seqs); start += rowsPerStatement {
		chunk := seqs[start:min(start+rowsPerStatement, len(seqs))]
		var sb strings.Builder
		sb.WriteString(`UPDATE messages SET compaction_id = $2 WHERE session_id = $1 AND seq IN (`)
		args := []any{sessionID, compID}
		for i, seq := range chunk {
			if i > 0 {
				sb.WriteString(", ")
			}
			fmt.Fprintf(&sb, "$%d", len(args)+1)
			args = append(args, seq)
		}
		sb.WriteString(")")
		if _, err := t.Exec(ctx, sb.String(), args...); err != nil {
			return err
		}
	}
	return nil
}

// Resume returns the session's working history made ready for the next
// turn, and the fixes that took. A process stopped in the middle of a turn
// (killed while a tool ran) can leave calls unanswered or, rarely, a tool
// return answering no call: [processor.RepairHistory] answers the calls
// with [processor.InterruptedContent] and drops the orphans, and the repair
// is stored. Answers that come after everything the working history holds
// are appended, so the transcript holds them too and stays a valid
// sequence; any other repair is recorded with [Session.Replace]. With
// nothing to repair nothing is written.
func (s *Session) Resume(ctx context.Context) ([]processor.Message, []processor.Fix, error) {
	w, err := s.Working(ctx)
	if err != nil {
		return nil, nil, err
	}
	repaired, fixes := processor.RepairHistory(w)
	if len(fixes) == 0 {
		return w, nil, nil
	}
	if extends(repaired, w) {
		err = s.Append(ctx, repaired[len(w):]...)
	} else {
		err = s.Replace(ctx, repaired)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("resume session %q: store the repair: %w", s.name, err)
	}
	return repaired, fixes, nil
}

// extends reports whether h begins with the messages of prefix.
func extends(h, prefix []processor.Message) bool {
	if len(h) < len(prefix) {
		return false
	}
	for i := range prefix {
		if !processor.Equal(h[i], prefix[i]) {
			return false
		}
	}
	return true
}
