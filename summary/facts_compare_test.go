package summary_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/abridge-go/abridge/summarizer"
	"github.com/abridge-go/abridge/summary"
	"github.com/abridge-go/abridge/testkit/transcripts"
)

var (
	updateCompare  = flag.Bool("update", false, "rewrite testdata/facts-compare.txt from the current extraction")
	updateBaseline = flag.Bool("facts-baseline", false, "rewrite testdata/facts-baseline.json.gz from the current extraction")
)

// Files of the comparison.
const (
	baselineFile = "testdata/facts-baseline.json.gz"
	compareFile  = "testdata/facts-compare.txt"
)

// compareSpan is the length of the spans the comparison cuts a transcript
// in: about the mean of the window's compactions (see factsSpan).
const compareSpan = factsSpan

// transcriptFacts is what the comparison keeps of one transcript: its
// SHA-256, the rolling sections of its spans (default bound), and the
// section of the whole transcript at once with no practical bound (every
// fact the extraction finds).
type transcriptFacts struct {
	SHA256   string   `json:"sha256"`
	Sections []string `json:"sections"`
	Whole    string   `json:"whole"`
	// Written and Mentioned are the transcript's paths (see summary.Paths),
	// Digest its offline digest: they read the same shell commands,
	// errors and paths.
	Written   []string `json:"written"`
	Mentioned []string `json:"mentioned"`
	Digest    string   `json:"digest"`
}

// compareSets returns the transcript sets the comparison reads, by name:
// the shared set and the validation set beside it.
func compareSets(t *testing.T) map[string][]string {
	dir, ok := transcripts.SharedDir()
	if !ok {
		t.Skipf("shared transcripts not found at %s (set %s, or run beside ../shared): skipping the comparison", dir, transcripts.EnvDir)
	}
	sets := map[string][]string{}
	for name, d := range map[string]string{"shared": dir, "validation": filepath.Join(dir, "..", "validation", "openai")} {
		files, err := filepath.Glob(filepath.Join(d, "*.json"))
		if err != nil {
			t.Fatal(err)
		}
		if len(files) == 0 {
			t.Logf("no transcripts in %s: the %s set is left out", d, name)
			continue
		}
		slices.Sort(files)
		sets[name] = files
	}
	return sets
}

// factsOf computes a transcript's facts with the current extraction.
func factsOf(t *testing.T, file string) transcriptFacts {
	raw, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(raw)
	h := trimmedHistory(t, file)
	tf := transcriptFacts{SHA256: hex.EncodeToString(sum[:])}
	f := summary.NewFacts(summary.FactsOptions{})
	prev := ""
	for from := 0; from < len(h); from += compareSpan {
		s := f.Section(h[from:min(len(h), from+compareSpan)], prev, 0)
		tf.Sections = append(tf.Sections, s)
		_, prev = summary.SplitFacts(s)
	}
	tf.Whole = summary.NewFacts(summary.FactsOptions{MaxChars: 1 << 30}).Section(h, "", 0)
	tf.Written, tf.Mentioned = summary.Paths(h)
	tf.Digest, err = summarizer.NewDigest(summarizer.DigestOptions{}).Summarize(context.Background(), h, "", "")
	if err != nil {
		t.Fatal(err)
	}
	return tf
}

// TestFactsCompare computes the facts sections of the shared and
// validation transcripts, and compares them, kind by kind, with those of
// the baseline extraction stored in testdata/facts-baseline.json.gz: the
// report (what each keeps, what was added and lost) must be the one in
// testdata/facts-compare.txt, where each difference is there to be read.
// -update rewrites the report; -facts-baseline makes the current
// extraction the baseline. It skips when the transcripts are absent or
// are not those of the baseline.
func TestFactsCompare(t *testing.T) {
	if testing.Short() {
		t.Skip("the comparison reads every shared transcript: skipped with -short")
	}
	sets := compareSets(t)
	current := map[string]map[string]transcriptFacts{}
	for name, files := range sets {
		current[name] = map[string]transcriptFacts{}
		for _, file := range files {
			current[name][filepath.Base(file)] = factsOf(t, file)
		}
	}
	if *updateBaseline {
		writeBaseline(t, current)
	}
	baseline := readBaseline(t)
	if diff := cmp.Diff(transcriptSums(baseline), transcriptSums(current)); diff != "" {
		t.Skipf("the transcripts are not those of the baseline (-baseline +here):\n%s\nskipping the comparison", diff)
	}
	report := compareReport(baseline, current)
	if *updateCompare {
		if err := os.WriteFile(compareFile, []byte(report), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(compareFile)
	if err != nil {
		t.Fatalf("%v (run with -update to write it)", err)
	}
	if diff := cmp.Diff(string(want), report); diff != "" {
		t.Errorf("the facts compared with the baseline differ from %s (-want +got):\n%s", compareFile, diff)
	}
}

func writeBaseline(t *testing.T, facts map[string]map[string]transcriptFacts) {
	var buf bytes.Buffer
	zw, err := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	if err != nil {
		t.Fatal(err)
	}
	enc := json.NewEncoder(zw)
	enc.SetIndent("", " ")
	if err := enc.Encode(facts); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(baselineFile, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

func readBaseline(t *testing.T) map[string]map[string]transcriptFacts {
	f, err := os.Open(baselineFile)
	if err != nil {
		t.Fatalf("%v (run with -facts-baseline to write it)", err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatalf("%s: %v", baselineFile, err)
	}
	var facts map[string]map[string]transcriptFacts
	if err := json.NewDecoder(zr).Decode(&facts); err != nil {
		t.Fatalf("%s: %v", baselineFile, err)
	}
	return facts
}

// factKinds are the labels of a section's kinds, in their order.
var factKinds = []struct {
	label string
	list  bool // "- " lines rather than one comma-separated line
}{
	{"User said:", true},
	{"Files edited: ", false},
	{"Files read or named: ", false},
	{"Commands and tool calls:", true},
	{"Errors met:", true},
	{"Names used: ", false},
}

// sectionEntries reads a section's entries by kind (in factKinds' order).
func sectionEntries(section string) [][]string {
	out := make([][]string, len(factKinds))
	_, facts := summary.SplitFacts(section)
	kind := -1 // the kind "- " lines go to
	for line := range strings.SplitSeq(facts, "\n") {
		matched := false
		for k, fk := range factKinds {
			if fk.list && line == fk.label {
				kind, matched = k, true
				break
			}
			if rest, ok := strings.CutPrefix(line, fk.label); ok && !fk.list {
				out[k] = append(out[k], strings.Split(rest, ", ")...)
				kind, matched = -1, true
				break
			}
		}
		switch {
		case matched || kind < 0:
		case strings.HasPrefix(line, "- "):
			out[kind] = append(out[kind], line[2:])
		case len(out[kind]) > 0:
			// A clipped entry the baseline wrote on several lines (its note
			// of what was cut between line breaks): one entry, as the
			// extraction now writes it.
			out[kind][len(out[kind])-1] += " " + line
		}
	}
	return out
}

// compareReport writes, for each set, the entries each extraction keeps
// by kind (in all the rolling sections, and distinct in the whole
// transcript's section), the paths written and mentioned, and how many
// digests are the same; then each transcript's entries added and lost:
// in the whole transcript's extraction, and in its rolling sections
// (where an entry may come or go as room is freed or taken), and the
// transcripts whose digest changed.
func compareReport(baseline, current map[string]map[string]transcriptFacts) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Facts sections of the transcripts, the current extraction against the baseline (%s).\n", baselineFile)
	fmt.Fprintf(&b, "Rolling sections: spans of %d messages, old tool outputs trimmed, %d characters.\n", compareSpan, summary.DefaultFactsChars)
	fmt.Fprintf(&b, "Whole: each transcript at once, unbounded; paths and digest of each transcript whole.\n")
	fmt.Fprintf(&b, "Rewrite with: go test ./summary -run TestFactsCompare -update\n")
	// The kinds compared: the facts' kinds, then the paths.
	labels := []string{"Paths written", "Paths mentioned"}
	for _, fk := range slices.Backward(factKinds) {
		labels = slices.Insert(labels, 0, strings.TrimSuffix(strings.TrimSpace(fk.label), ":"))
	}
	for _, set := range slices.Sorted(maps.Keys(current)) {
		names := slices.Sorted(maps.Keys(current[set]))
		type counts struct{ keptOld, keptNew, wholeOld, wholeNew, added, lost int }
		total := make([]counts, len(labels))
		var details strings.Builder
		sections, sameDigests := 0, 0
		for _, name := range names {
			old, cur := baseline[set][name], current[set][name]
			sections += len(cur.Sections)
			oldKept, newKept := keptEntries(old.Sections), keptEntries(cur.Sections)
			oldWhole := append(sectionEntries(old.Whole), old.Written, old.Mentioned)
			newWhole := append(sectionEntries(cur.Whole), cur.Written, cur.Mentioned)
			for k, label := range labels {
				c := &total[k]
				c.wholeOld += len(oldWhole[k])
				c.wholeNew += len(newWhole[k])
				added, lost := diffEntries(oldWhole[k], newWhole[k])
				c.added += len(added)
				c.lost += len(lost)
				writeDiff(&details, set+" "+name+", "+label+", whole", added, lost)
				if k >= len(factKinds) {
					continue // the paths have no sections
				}
				for _, e := range oldKept[k] {
					c.keptOld += e.n
				}
				for _, e := range newKept[k] {
					c.keptNew += e.n
				}
				added, lost = diffEntries(entryNames(oldKept[k]), entryNames(newKept[k]))
				writeDiff(&details, set+" "+name+", "+label+", sections", added, lost)
			}
			if old.Digest == cur.Digest {
				sameDigests++
			} else {
				fmt.Fprintf(&details, "%s %s: the digest changed\n", set, name)
			}
		}
		fmt.Fprintf(&b, "\n%s: %d transcripts, %d rolling sections, %d digests the same\n", set, len(names), sections, sameDigests)
		fmt.Fprintf(&b, "%-25s %12s %12s %12s %12s %8s %8s\n", "kind", "kept before", "kept after", "whole before", "whole after", "added", "lost")
		for k, label := range labels {
			c := total[k]
			keptOld, keptNew := fmt.Sprint(c.keptOld), fmt.Sprint(c.keptNew)
			if k >= len(factKinds) {
				keptOld, keptNew = "-", "-"
			}
			fmt.Fprintf(&b, "%-25s %12s %12s %12d %12d %8d %8d\n", label, keptOld, keptNew, c.wholeOld, c.wholeNew, c.added, c.lost)
		}
		b.WriteString(details.String())
	}
	return b.String()
}

// transcriptSums returns the SHA-256 of each transcript of facts, by set
// and name.
func transcriptSums(facts map[string]map[string]transcriptFacts) map[string]map[string]string {
	out := map[string]map[string]string{}
	for set, tfs := range facts {
		out[set] = map[string]string{}
		for name, tf := range tfs {
			out[set][name] = tf.SHA256
		}
	}
	return out
}

// keptCount is an entry of rolling sections and how many of them keep it.
type keptCount struct {
	e string
	n int
}

// keptEntries returns, by kind, the distinct entries of sections (in the
// order they first appear) and how many sections keep each.
func keptEntries(sections []string) [][]keptCount {
	out := make([][]keptCount, len(factKinds))
	for _, s := range sections {
		for k, es := range sectionEntries(s) {
			for _, e := range es {
				i := slices.IndexFunc(out[k], func(c keptCount) bool { return c.e == e })
				if i < 0 {
					out[k] = append(out[k], keptCount{e: e})
					i = len(out[k]) - 1
				}
				out[k][i].n++
			}
		}
	}
	return out
}

func entryNames(cs []keptCount) []string {
	var out []string
	for _, c := range cs {
		out = append(out, c.e)
	}
	return out
}

// writeDiff writes a line for each entry added and lost, after what.
func writeDiff(b *strings.Builder, what string, added, lost []string) {
	for _, e := range added {
		fmt.Fprintf(b, "%s: + %q\n", what, e)
	}
	for _, e := range lost {
		fmt.Fprintf(b, "%s: - %q\n", what, e)
	}
}

// diffEntries returns the entries of b not in a, and those of a not in b,
// each in its list's order.
func diffEntries(a, b []string) (added, lost []string) {
	inA, inB := map[string]bool{}, map[string]bool{}
	for _, e := range a {
		inA[e] = true
	}
	for _, e := range b {
		inB[e] = true
		if !inA[e] {
			added = append(added, e)
		}
	}
	for _, e := range a {
		if !inB[e] {
			lost = append(lost, e)
		}
	}
	return added, lost
}
