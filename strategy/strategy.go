// Package strategy names abridge's ready configurations of the built-in
// processors, so a host picks one by name (ABRIDGE_STRATEGY) or in code.
// Each trades what the provider bills against what the model still sees,
// and each keeps the facts of what it compacts (the files, commands,
// errors, names and user messages, verbatim, beside the summary; see
// summary.Facts):
//
//   - Default: the mission's chain, the trimmer at 2000 characters and the
//     window at 40 messages keeping the last 20, its marker holding a
//     summary and up to 3000 characters of facts;
//   - Economy: the cheapest: the trimmer at 1000 characters, the window at
//     24 messages keeping the last 6, and, at each compaction (when the
//     cached prefix breaks anyway), the outputs of those 6 but the last
//     round's cleared and folded into the summary; 2000 characters of
//     facts;
//   - Budget(tokens): one dial from cheap to faithful. The window compacts
//     once the prompt passes the budget (about 4 characters a token; no
//     count trigger) and keeps a tail of up to half of it; the trimmer caps
//     old outputs at 2000 characters, and at budget/25 characters above a
//     budget of 60,000 tokens. A small budget bills little and keeps less;
//     a large one keeps nearly everything. Named "budget" (30,000 tokens)
//     or "budget-Nk" (N thousand tokens).
//
// The figures of each on the shared transcripts, beside the peers', are in
// docs/figures.md ("Cost and fidelity against peers").
package strategy

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/abridge-go/abridge/processor"
	"github.com/abridge-go/abridge/processors/trimtools"
	"github.com/abridge-go/abridge/processors/window"
)

// Names of the strategies.
const (
	NameDefault = "default"
	NameEconomy = "economy"
	// NameBudget is the budget strategy at DefaultBudget tokens; a budget
	// of N thousand tokens is named NameBudget + "-Nk".
	NameBudget = "budget"
)

// DefaultBudget is the budget, in tokens, of the strategy named "budget".
const DefaultBudget = 30000

// MinBudget is the smallest budget [Budget] takes; a smaller one is raised
// to it.
const MinBudget = 2000

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
			FactsChars:   2000,
			SummaryClip:  300,
		},
	}
}

// Budget returns the settings of the budget strategy for a prompt budget
// of tokens (see the package documentation); a budget below MinBudget is
// raised to it.
func Budget(tokens int) Settings {
	tokens = max(tokens, MinBudget)
	name := NameBudget
	if tokens != DefaultBudget {
		name = NameBudget + "-" + strconv.Itoa(tokens/1000) + "k"
		if tokens%1000 != 0 {
			name = NameBudget + "-" + strconv.Itoa(tokens)
		}
	}
	return Settings{
		Name: name,
		Trim: trimtools.Options{MaxChars: budgetTrim(tokens)},
		Window: window.Options{
			MaxMessages:   -1,
			TriggerTokens: tokens,
			SummaryClip:   300,
			FactsChars:    2000,
		},
	}
}

// budgetTrim returns the trimmer's cap for a budget: 2000 characters up
// to 60,000 tokens, budget/25 above.
func budgetTrim(tokens int) int {
	if tokens <= 60000 {
		return trimtools.DefaultMaxChars
	}
	return max(trimtools.DefaultMaxChars, tokens/25)
}

// Frontier lists the names of the strategies whose figures docs/figures.md
// reports against the peers: the economy, the default, and the budget dial
// at six points. The peers harness (an optional tool outside the
// repository) replays each of them.
func Frontier() []string {
	return []string{NameEconomy, NameDefault, "budget-12k", "budget-15k", "budget-20k", NameBudget, "budget-60k", "budget-100k"}
}

// ByName returns the settings of the strategy called name (any case):
// "default", "economy", "budget", or "budget-Nk" / "budget-N" for a budget
// of N thousand / N tokens. An unknown name is an error naming the known
// ones.
func ByName(name string) (Settings, error) {
	n := strings.ToLower(strings.TrimSpace(name))
	switch n {
	case NameDefault, "":
		return Default(), nil
	case NameEconomy:
		return Economy(), nil
	case NameBudget:
		return Budget(DefaultBudget), nil
	}
	if size, ok := strings.CutPrefix(n, NameBudget+"-"); ok {
		mult := 1
		if s, k := strings.CutSuffix(size, "k"); k {
			size, mult = s, 1000
		}
		v, err := strconv.Atoi(size)
		if err != nil || v <= 0 || v > 100_000_000/mult {
			return Settings{}, fmt.Errorf("strategy %q: the budget must be a positive number of tokens, as budget-60k or budget-60000", name)
		}
		return Budget(v * mult), nil
	}
	return Settings{}, fmt.Errorf("unknown strategy %q: want %s, %s, %s or %s-Nk (a budget of N thousand tokens)", name, NameDefault, NameEconomy, NameBudget, NameBudget)
}

// Build returns the strategy's chain, the trimmer then the window, and the
// window (the compactor an agent forces after a context overflow).
func (s Settings) Build() (processor.Processor, *window.Window) {
	w := window.New(s.Window)
	return processor.Chain(trimtools.New(s.Trim), w), w
}
