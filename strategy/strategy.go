// Package strategy names abridge's ready configurations of the built-in
// processors, so a host picks one by name (ABRIDGE_STRATEGY) or in code:
//
//   - Default: the mission's chain, the trimmer at 2000 characters and the
//     window at 40 messages keeping the last 20;
//   - Economy: the cheapest on what providers bill (input tokens, the
//     cached prefix at a tenth or a quarter of the price): the trimmer at
//     1000 characters, the window at 24 messages keeping the last 6, and,
//     at each compaction (when the cached prefix breaks anyway), the
//     outputs of those 6 but the last round's cleared and folded into the
//     summary. It escalates from cheap to expensive: trim old outputs on
//     every request (only the message leaving the last two changes),
//     clear at a compaction, and summarize only when over the trigger.
//     With a token trigger set (window.Options.TriggerTokens), a clear
//     alone that brings the history under it makes no summary at all.
//
// The figures of each on the shared transcripts are in the README.
package strategy

import (
	"fmt"
	"strings"

	"github.com/abridge-go/abridge/processor"
	"github.com/abridge-go/abridge/processors/trimtools"
	"github.com/abridge-go/abridge/processors/window"
)

// Names of the strategies.
const (
	NameDefault = "default"
	NameEconomy = "economy"
)

// Settings are the options of a strategy's processors. Set what the
// strategy leaves to the host (the window's Summarizer, Store, OnEvent,
// Recall) before Build.
type Settings struct {
	// Name is the strategy's name.
	Name string
	// Trim configures the tool-return trimmer.
	Trim trimtools.Options
	// Window configures the sliding window.
	Window window.Options
}

// Default returns the settings of the default strategy: all defaults.
func Default() Settings {
	return Settings{Name: NameDefault}
}

// Economy returns the settings of the economy strategy (see the package
// documentation).
func Economy() Settings {
	return Settings{
		Name: NameEconomy,
		Trim: trimtools.Options{MaxChars: 1000},
		Window: window.Options{
			MaxMessages:  24,
			KeepMessages: 6,
			TailOutputs:  1,
		},
	}
}

// ByName returns the settings of the strategy called name ("default" or
// "economy", any case); an unknown name is an error naming the known ones.
func ByName(name string) (Settings, error) {
	switch strings.ToLower(strings.TrimSpace(name)) {
	case NameDefault, "":
		return Default(), nil
	case NameEconomy:
		return Economy(), nil
	}
	return Settings{}, fmt.Errorf("unknown strategy %q: want %s or %s", name, NameDefault, NameEconomy)
}

// Build returns the strategy's chain, the trimmer then the window, and the
// window (the compactor an agent forces after a context overflow).
func (s Settings) Build() (processor.Processor, *window.Window) {
	w := window.New(s.Window)
	return processor.Chain(trimtools.New(s.Trim), w), w
}
