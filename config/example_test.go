package config_test

import (
	"errors"
	"fmt"

	"github.com/abridge-go/abridge/config"
)

func ExampleLoadFrom() {
	cfg, err := config.LoadFrom(map[string]string{
		"ABRIDGE_MAX_MESSAGES":    "60",
		"ABRIDGE_TRIM_CHARS":      "0",
		"ABRIDGE_SUMMARY_TIMEOUT": "2m",
		"OPENAI_API_KEY":          "sk-example",
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("model:", cfg.Model)
	fmt.Println("max messages:", cfg.MaxMessages)
	fmt.Println("trim chars:", cfg.TrimChars)
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
		"ABRIDGE_THRESHOLD_PERCENT": "150",
		"ABRIDGE_LOG_FORMAT":        "xml",
	})
	fmt.Println(errors.Is(err, config.ErrInvalid))
	fmt.Println(err)
	// Output:
	// true
	// ABRIDGE_THRESHOLD_PERCENT="150": out of range; accepted: an integer from 1 to 100
	// ABRIDGE_LOG_FORMAT="xml": unknown value; accepted: console or json
}
