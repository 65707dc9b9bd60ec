package openai_test

import (
	"context"
	"fmt"
	"strings"

	"github.com/openai/openai-go/v3"

	modelopenai "github.com/abridge-go/abridge/model/openai"
	"github.com/abridge-go/abridge/summarizer"
)

// Compacting an openai-go history directly, then continuing the
// conversation by appending the next user message. The offline digest
// stands in for the LLM summarizer.
func ExampleCompact() {
	history := []openai.ChatCompletionMessageParamUnion{
		openai.UserMessage("Rename Foo to Bar everywhere."),
		openai.AssistantMessage("Renamed in 12 files: " + strings.Repeat("pkg/x/file.go, ", 120) + "and their tests."),
		openai.UserMessage("Now update the docs."),
		openai.AssistantMessage("Docs updated: " + strings.Repeat("docs/guide.md section 3, ", 100) + "done."),
	}
	digest := summarizer.NewDigest(summarizer.DigestOptions{})
	out, rep, err := modelopenai.Compact(context.Background(), digest, history, "the docs")
	if err != nil {
		fmt.Println(err)
		return
	}
	out = append(out, openai.UserMessage("What is left?"))
	fmt.Println(rep.MessagesBefore, "->", rep.MessagesAfter, "messages;", len(out), "with the next prompt")
	// Output:
	// 4 -> 2 messages; 3 with the next prompt
}
