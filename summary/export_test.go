package summary

// RefSection is the reference extraction (facts_ref_test.go): the old
// code, every message read whole, for a Facts of maxChars.
var RefSection = refSection

// AppendTokensOf is appendTokensOf, for the benchmarks.
var AppendTokensOf = appendTokensOf
