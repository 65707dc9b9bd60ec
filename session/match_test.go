package session

import (
	"fmt"
	"testing"

	"github.com/abridge-go/abridge/processor"
)

// FuzzMatch checks the pairing Replace relies on, over current histories
// with repeated messages and new histories made from them by dropping,
// keeping and inserting messages: every kept message is paired with an
// equal current one, pairs keep their order, and each current message is
// either kept once or dropped.
func FuzzMatch(f *testing.F) {
	f.Add([]byte{1, 2, 3, 4, 5, 6}, []byte{0, 1, 1, 2, 0, 0})
	f.Add([]byte{1, 1, 1, 1}, []byte{2, 1, 0, 1})
	f.Add([]byte{7, 3, 7, 3, 7}, []byte{1, 2, 1, 2, 1})
	f.Add([]byte{}, []byte{2, 2})
	f.Fuzz(func(t *testing.T, contents, ops []byte) {
		// contents: the current history, message i holding text contents[i]%5
		// (so repeats are common). ops, one per current message: 0 drop it,
		// 1 keep it, 2 keep it after inserting a new message; extra ops
		// append new messages.
		cur := make([]stored, len(contents))
		for i, c := range contents {
			cur[i] = stored{seq: int64(i + 1), msg: processor.UserMessage(fmt.Sprint("m", c%5))}
		}
		var next []processor.Message
		fresh := 0
		newMsg := func() processor.Message {
			fresh++
			return processor.TextMessage(fmt.Sprint("new", fresh))
		}
		for i, op := range ops {
			if i >= len(cur) {
				next = append(next, newMsg())
				continue
			}
			switch op % 3 {
			case 1:
				next = append(next, cur[i].msg)
			case 2:
				next = append(next, newMsg(), cur[i].msg)
			}
		}
		for i := len(ops); i < len(cur); i++ {
			next = append(next, cur[i].msg)
		}

		kept, dropped := match(cur, next)
		if len(kept) != len(next) {
			t.Fatalf("%d pairings for %d messages", len(kept), len(next))
		}
		bySeq := map[int64]processor.Message{}
		for _, c := range cur {
			bySeq[c.seq] = c.msg
		}
		used := map[int64]bool{}
		last := int64(0)
		for i, seq := range kept {
			if seq == 0 { // stored as new
				continue
			}
			m, ok := bySeq[seq]
			if !ok || !processor.Equal(m, next[i]) {
				t.Fatalf("message %d paired with seq %d, which is not equal", i, seq)
			}
			if seq <= last {
				t.Fatalf("pairs out of order: seq %d after %d", seq, last)
			}
			last = seq
			used[seq] = true
		}
		for _, seq := range dropped {
			if used[seq] {
				t.Fatalf("seq %d both kept and dropped", seq)
			}
			used[seq] = true
		}
		if len(used) != len(cur) {
			t.Fatalf("%d of %d current messages accounted for", len(used), len(cur))
		}
		// Nothing new is ever paired, and an unchanged history is kept whole.
		for i, seq := range kept {
			if _, isNew := next[i].Parts[0].(processor.Text); isNew && seq != 0 {
				t.Fatalf("new message %d paired with seq %d", i, seq)
			}
		}
		if len(ops) == 0 && len(dropped) != 0 {
			t.Fatalf("unchanged history: dropped %v", dropped)
		}
	})
}
