package processortest_test

import (
	"fmt"
	"math/rand/v2"

	"github.com/abridge-go/abridge/processor"
	"github.com/abridge-go/abridge/processor/processortest"
)

// A fuzz target or property test builds random valid histories, keeps a
// deep copy of the input, and checks the processor's output against it.
func ExampleRandomHistory() {
	r := rand.New(rand.NewPCG(1, 2))
	h := processortest.RandomHistory(r, 20)
	before := processortest.Clone(h)

	// ... run a processor on h here ...

	fmt.Println("about 20 messages:", len(h) >= 20 && len(h) <= 24)
	fmt.Println("valid:", processor.Validate(h) == nil)
	fmt.Println("pairs kept:", processortest.Pairs(h) == nil)
	fmt.Println("input untouched:", processortest.Diff(before, h) == nil)
	// Output:
	// about 20 messages: true
	// valid: true
	// pairs kept: true
	// input untouched: true
}
