package llm_test

import (
	"context"
	"fmt"

	"github.com/abridge-go/abridge/model"
	"github.com/abridge-go/abridge/processor/processortest"
	"github.com/abridge-go/abridge/summarizer/llm"
)

// Render shows the transcript the model is asked to summarize.
func ExampleRender() {
	fmt.Print(llm.Render(processortest.OneEdit(), 0))
	// Output:
	// [1] user:
	// Add a --verbose flag to cmd/tool/main.go.
	//
	// [2] tool call Edit (c1):
	// {"file_path":"cmd/tool/main.go","old_string":"a","new_string":"b"}
	//
	// [3] tool result Edit (c1):
	// ok
	//
	// [4] assistant:
	// Added the flag.
}

// An LLM summarizer over any model.Model; here a scripted one.
func ExampleLLM_Summarize() {
	rec := model.NewRecorder(model.RespondText("Goal: a --verbose flag. Status: added. Next step: test it."))
	s := llm.New(rec, llm.Options{})
	summary, err := s.Summarize(context.Background(), processortest.OneEdit(), "", "")
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(summary)
	call := rec.Calls()[0]
	fmt.Println(len(call.Messages), call.Settings.ToolChoice, *call.Settings.Temperature)
	// Output:
	// Goal: a --verbose flag. Status: added. Next step: test it.
	// 2 none 0
}
