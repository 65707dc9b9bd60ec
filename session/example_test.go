package session_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/abridge-go/abridge/processor"
	"github.com/abridge-go/abridge/session"
	"github.com/abridge-go/abridge/session/sqlite"
)

func Example() {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "abridge-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)

	// A SQLite file, created on first use; postgres.Driver{DSN: "postgres://…"}
	// works the same. The program links the driver it names, no other.
	st, err := session.Open(ctx, sqlite.Driver{Path: filepath.Join(dir, "sessions.db")}, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer st.Close()
	s, err := st.Session(ctx, "demo")
	if err != nil {
		log.Fatal(err)
	}

	// The agent appends messages as they happen…
	err = s.Append(ctx,
		processor.UserMessage("list the files"),
		processor.NewResponse(processor.ToolCall{ToolCallID: "c1", ToolName: "ls", Args: "{}"}),
		processor.NewRequest(processor.ToolReturn{ToolName: "ls", ToolCallID: "c1", Content: "a.go b.go"}),
		processor.TextMessage("There are two files."),
		processor.UserMessage("and now?"),
	)
	if err != nil {
		log.Fatal(err)
	}
	// …and stores the history its processors produced: here the first turn
	// replaced by a summary.
	w, err := s.Working(ctx)
	if err != nil {
		log.Fatal(err)
	}
	compacted := []processor.Message{processor.UserMessage("Summary: the user listed the files (a.go, b.go)."), w[4]}
	if err := s.Replace(ctx, compacted); err != nil {
		log.Fatal(err)
	}

	w, err = s.Working(ctx)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("working history:")
	for _, m := range w {
		fmt.Printf("  %s: %s\n", m.Kind, m.Text())
	}
	entries, err := s.Transcript(ctx)
	if err != nil {
		log.Fatal(err)
	}
	comps, err := s.Compactions(ctx)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("transcript:")
	if err := session.Format(os.Stdout, entries, comps); err != nil {
		log.Fatal(err)
	}
	infos, err := st.List(ctx)
	if err != nil {
		log.Fatal(err)
	}
	for _, i := range infos {
		fmt.Printf("session %s: %d messages, %d compaction, %d working\n", i.Name, i.Messages, i.Compactions, i.Working)
	}
	// Output:
	// working history:
	//   request: Summary: the user listed the files (a.go, b.go).
	//   request: and now?
	// transcript:
	//   seq   kind      message (c: compacted, w: from a withdrawn turn, +: added by a compaction, unmarked: in the working history)
	//     1 c request   user: list the files
	//     2 c response  assistant calls ls({})
	//     3 c request   tool ls: a.go b.go
	//     4 c response  assistant: There are two files.
	//     5   request   user: and now?
	//   --- compaction 1: messages 1-4 (4) replaced by message 6; summary: Summary: the user listed the files (a.go, b.go).
	//     6 + request   user: Summary: the user listed the files (a.go, b.go).
	// session demo: 5 messages, 1 compaction, 2 working
}
