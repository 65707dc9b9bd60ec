package strategy_test

import (
	"context"
	"fmt"
	"strings"

	"github.com/abridge-go/abridge/processor"
	"github.com/abridge-go/abridge/strategy"
	"github.com/abridge-go/abridge/summary"
)

// The economy strategy keeps a short tail, with the outputs of all but its
// last tool round cleared at the compaction.
func ExampleEconomy() {
	s := strategy.Economy()
	// s.Window.Summarizer = llm.New(m, llm.Options{}) // the offline digest when nil
	chain, _ := s.Build()
	h := []processor.Message{processor.SystemMessage("You are a coding agent."), processor.UserMessage("Fix the build.")}
	for i := range 15 {
		id := fmt.Sprintf("c%d", i)
		h = append(h,
			processor.NewResponse(processor.ToolCall{ToolCallID: id, ToolName: "bash", Args: `{"command":"make"}`}),
			processor.NewRequest(processor.ToolReturn{ToolCallID: id, ToolName: "bash", Content: strings.Repeat("error: x\n", 100)}))
	}
	out, err := chain.Process(context.Background(), h)
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, m := range out {
		switch p := m.Parts[0].(type) {
		case processor.ToolReturn:
			if _, cleared := summary.ParsePlaceholder(p); cleared {
				fmt.Println("cleared output of", p.ToolCallID)
				continue
			}
			fmt.Println("output of", p.ToolCallID)
		case processor.UserPrompt:
			if summary.IsMarker(m) {
				fmt.Println("summary")
				continue
			}
			fmt.Println("user")
		case processor.ToolCall:
			fmt.Println("call", p.ToolCallID)
		default:
			fmt.Println(p.PartKind())
		}
	}
	// Output:
	// system-prompt
	// user
	// summary
	// call c12
	// cleared output of c12
	// call c13
	// cleared output of c13
	// call c14
	// output of c14
}

// The budget strategy is one dial: the prompt budget in tokens. Under it
// nothing is compacted; over it, the window keeps a tail of up to half the
// budget and a summary marker carrying the facts of what it replaced.
func ExampleBudget() {
	for _, tokens := range []int{12000, 30000, 100000} {
		s := strategy.Budget(tokens)
		fmt.Printf("%s: compact above %d tokens, trim old outputs at %d characters\n",
			s.Name, s.Window.TriggerTokens, s.Trim.MaxChars)
	}
	s, _ := strategy.ByName("budget-60k")
	chain, _ := s.Build()
	h := []processor.Message{processor.SystemMessage("You are a coding agent."), processor.UserMessage("Fix the build.")}
	out, _ := chain.Process(context.Background(), h)
	fmt.Println(len(out), "messages: under the budget, nothing changes")
	// Output:
	// budget-12k: compact above 12000 tokens, trim old outputs at 2000 characters
	// budget: compact above 30000 tokens, trim old outputs at 2000 characters
	// budget-100k: compact above 100000 tokens, trim old outputs at 4000 characters
	// 2 messages: under the budget, nothing changes
}
