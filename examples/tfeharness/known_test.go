package tfeharness

import (
	"bufio"
	"bytes"
	"flag"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
)

// update rewrites the entries of KNOWN-FAILURES.md from the results of the
// run, instead of failing on differences.
var update = flag.Bool("update", false, "rewrite KNOWN-FAILURES.md from this run's results (reasons of entries that stay are kept)")

// knownFile is the list of tests that do not pass.
const knownFile = "KNOWN-FAILURES.md"

// tableHeader starts the list's table in knownFile.
const tableHeader = "| test | result | reason |"

// Outcomes of a test.
const (
	pass = "pass"
	fail = "fail"
	skip = "skip"
)

// entry is one row of the list: a test that does not pass.
type entry struct {
	name, result, reason string
}

// knownMu serializes the reads and writes of knownFile by tests running
// in parallel.
var knownMu sync.Mutex

// readKnown parses knownFile: the text before the table, its rows, and
// the text after it.
func readKnown() (before []string, rows []entry, after []string, err error) {
	b, err := os.ReadFile(knownFile)
	if err != nil {
		return nil, nil, nil, err
	}
	state := 0 // 0: before the table, 1: in it, 2: after it
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		line := sc.Text()
		switch {
		case state == 0 && strings.TrimSpace(line) == tableHeader:
			state = 1
		case state == 0:
			before = append(before, line)
		case state == 1 && strings.HasPrefix(line, "|---") || state == 1 && strings.HasPrefix(line, "| ---"):
		case state == 1 && strings.HasPrefix(line, "|"):
			cells := strings.Split(strings.Trim(line, "|"), "|")
			if len(cells) != 3 {
				return nil, nil, nil, fmt.Errorf("%s: row %q: want 3 cells", knownFile, line)
			}
			for i := range cells {
				cells[i] = strings.TrimSpace(cells[i])
			}
			rows = append(rows, entry{name: strings.Trim(cells[0], "`"), result: cells[1], reason: cells[2]})
		case state == 1:
			state = 2
			after = append(after, line)
		default:
			after = append(after, line)
		}
	}
	if state == 0 {
		return nil, nil, nil, fmt.Errorf("%s: no table starting %q", knownFile, tableHeader)
	}
	return before, rows, after, sc.Err()
}

// writeKnown writes knownFile back.
func writeKnown(before []string, rows []entry, after []string) error {
	var b strings.Builder
	for _, l := range before {
		b.WriteString(l + "\n")
	}
	b.WriteString(tableHeader + "\n|---|---|---|\n")
	for _, r := range rows {
		fmt.Fprintf(&b, "| `%s` | %s | %s |\n", r.name, r.result, r.reason)
	}
	for _, l := range after {
		b.WriteString(l + "\n")
	}
	return os.WriteFile(knownFile, []byte(b.String()), 0o644)
}

// readKnownEntries returns the entries of knownFile by name.
func readKnownEntries(t *testing.T) map[string]entry {
	t.Helper()
	knownMu.Lock()
	defer knownMu.Unlock()
	_, rows, _, err := readKnown()
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]entry{}
	for _, e := range rows {
		m[e.name] = e
	}
	return m
}

// results are the outcomes of the tests of one run, by name
// ("terraform/GROUP/STEP", "go-tfe/TEST/SUBTEST"), with what each printed.
type results struct {
	outcome map[string]string
	output  map[string]string
	// ran reports whether the unit a name belongs to (a Terraform group,
	// a go-tfe top-level test) ran at all: entries of units that did not
	// run (a narrowed run) are not compared.
	ran func(name string) bool
}

// checkKnown compares the results r of the tests whose names start with
// prefix against knownFile, and fails t for every difference: a test that
// did not pass and is not listed, a listed one that passes now or ends
// otherwise or did not run, an entry without a reason. With -update it
// rewrites the entries of prefix instead.
func checkKnown(t *testing.T, prefix string, r results) {
	t.Helper()
	knownMu.Lock()
	defer knownMu.Unlock()
	before, rows, after, err := readKnown()
	if err != nil {
		t.Fatal(err)
	}
	listed := map[string]entry{}
	var problems []string
	for _, e := range rows {
		if !strings.HasPrefix(e.name, prefix) {
			continue
		}
		if _, dup := listed[e.name]; dup {
			problems = append(problems, fmt.Sprintf("TWICE: %s is listed twice in %s", e.name, knownFile))
		}
		listed[e.name] = e
	}
	var names []string
	for name := range r.outcome {
		names = append(names, name)
	}
	slices.Sort(names)

	if *update {
		var kept []entry
		for _, e := range rows {
			if !strings.HasPrefix(e.name, prefix) || !r.ran(e.name) {
				kept = append(kept, e)
			}
		}
		for _, name := range names {
			if oc := r.outcome[name]; oc != pass {
				reason := "TODO"
				if e, ok := listed[name]; ok {
					reason = e.reason
				}
				kept = append(kept, entry{name: name, result: oc, reason: reason})
			}
		}
		slices.SortStableFunc(kept, func(a, b entry) int { return strings.Compare(a.name, b.name) })
		if err := writeKnown(before, kept, after); err != nil {
			t.Fatal(err)
		}
		t.Logf("%s: rewrote the entries of %s*", knownFile, prefix)
		return
	}

	for _, name := range names {
		oc := r.outcome[name]
		e, ok := listed[name]
		switch {
		case !ok && oc != pass:
			problems = append(problems, fmt.Sprintf("NEW %s: %s, not in %s:\n%s", strings.ToUpper(oc), name, knownFile, indent(r.output[name])))
		case ok && oc == pass:
			problems = append(problems, fmt.Sprintf("NOW PASSES: %s (listed as %s: %s): remove it from %s", name, e.result, e.reason, knownFile))
		case ok && oc != e.result:
			problems = append(problems, fmt.Sprintf("CHANGED: %s: %s, listed as %s (%s):\n%s", name, oc, e.result, e.reason, indent(r.output[name])))
		case ok && (e.reason == "" || e.reason == "TODO"):
			problems = append(problems, fmt.Sprintf("NO REASON: %s (%s) has no reason in %s", name, oc, knownFile))
		case ok:
			t.Logf("known %s: %s (%s)", oc, name, e.reason)
		}
	}
	for name, e := range listed {
		if _, seen := r.outcome[name]; !seen && r.ran(name) {
			problems = append(problems, fmt.Sprintf("DID NOT RUN: %s (listed as %s: %s): its test ran, it did not (a panic or an earlier failure stopped it?)", name, e.result, e.reason))
		}
	}
	slices.Sort(problems)
	for _, p := range problems {
		t.Error(p)
	}
	if len(problems) > 0 {
		t.Logf("%d difference(s) from %s; after fixing what must be fixed, rewrite it with: go test -count=1 -run '%s' ./... -args -update", len(problems), knownFile, t.Name())
	}
}

// indent indents s for a failure message, at most 40 lines of it.
func indent(s string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > 40 {
		lines = append(lines[:40], fmt.Sprintf("… (%d more lines)", len(lines)-40))
	}
	return "\t" + strings.Join(lines, "\n\t")
}
