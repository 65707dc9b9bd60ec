package config_test

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"go.uber.org/zap"

	"github.com/abridge-go/abridge/config"
	"github.com/abridge-go/abridge/processor"
)

func ExampleLoadFrom() {
	cfg, err := config.LoadFrom(map[string]string{
		"ABRIDGE_MAX_MESSAGES":    "60",
		"ABRIDGE_TRIM_MAX_CHARS":  "0",
		"ABRIDGE_SUMMARY_TIMEOUT": "2m",
		"OPENAI_API_KEY":          "sk-example",
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("model:", cfg.Model)
	fmt.Println("max messages:", cfg.MaxMessages)
	fmt.Println("trim chars:", cfg.TrimMaxChars)
	fmt.Println("summary timeout:", cfg.SummaryTimeout)
	fmt.Println("summarizer:", cfg.SummarizerKind())
	fmt.Println("key:", cfg.Redacted()["OPENAI_API_KEY"])
	// Output:
	// model: gpt-4.1-mini
	// max messages: 60
	// trim chars: 0
	// summary timeout: 2m0s
	// summarizer: llm
	// key: [REDACTED]
}

func ExampleLoadFrom_invalid() {
	_, err := config.LoadFrom(map[string]string{
		"ABRIDGE_TRIGGER_PERCENT": "150",
		"ABRIDGE_LOG_FORMAT":      "xml",
	})
	fmt.Println(errors.Is(err, config.ErrInvalid))
	fmt.Println(err)
	// Output:
	// true
	// ABRIDGE_TRIGGER_PERCENT="150": out of range; accepted: an integer from 1 to 100
	// ABRIDGE_LOG_FORMAT="xml": unknown value; accepted: console or json
}

func ExampleConfig_String() {
	cfg, err := config.LoadFrom(map[string]string{
		"OPENAI_API_KEY":     "sk-example",
		"ABRIDGE_SESSION_DB": "postgres://abridge:hunter2@db/abridge",
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	r := cfg.Redacted()
	fmt.Println(r["OPENAI_API_KEY"])
	fmt.Println(r["ABRIDGE_SESSION_DB"])
	fmt.Println(strings.Contains(cfg.String(), "sk-example"), strings.Contains(cfg.String(), "hunter2"))
	// Output:
	// [REDACTED]
	// postgres://abridge:[REDACTED]@db/abridge
	// false false
}

func ExampleConfig_Build() {
	// No endpoint is configured, so the window summarizes with the offline
	// digest and nothing goes over the network.
	cfg, err := config.LoadFrom(map[string]string{"ABRIDGE_MAX_MESSAGES": "6"})
	if err != nil {
		fmt.Println(err)
		return
	}
	c, err := cfg.Build(config.BuildOptions{Logger: zap.NewNop()})
	if err != nil {
		fmt.Println(err)
		return
	}
	history := []processor.Message{
		processor.UserMessage("Rename the config loader."),
		processor.TextMessage("Done: loader.go is now config.go."),
	}
	for i := range 5 {
		history = append(history,
			processor.UserMessage(fmt.Sprintf("Now fix test %d; it fails with a nil map in the loader.", i)),
			processor.TextMessage(fmt.Sprintf("Fixed test %d: the loader now builds its map before reading the file, "+
				"and the test checks the error when the file is missing. All tests in config/ pass.", i)))
	}
	history = append(history, processor.UserMessage("Run the tests."))
	out, err := c.Chain.Process(context.Background(), history)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("summarizer:", c.SummarizerKind)
	fmt.Println("compacted:", len(out) < len(history))
	fmt.Println("last request kept:", out[len(out)-1].Text())
	// Output:
	// summarizer: digest
	// compacted: true
	// last request kept: Run the tests.
}
