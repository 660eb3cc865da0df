// Command testrun prints, from the `go test -json` event streams of a test
// run (gotestsum's --jsonfile), how long each package took, slowest
// first, and the slowest tests, so that a slow test shows at the end of
// `make test`.
//
//	testrun [-tests N] FILE...
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"
)

// event is the part of a test2json event this reads.
type event struct {
	Action  string    `json:"Action"`
	Package string    `json:"Package"`
	Test    string    `json:"Test"`
	Elapsed float64   `json:"Elapsed"`
	Time    time.Time `json:"Time"`
}

// result is a package's or a test's outcome and its seconds.
type result struct {
	name, action string
	seconds      float64
}

func main() {
	tests := flag.Int("tests", 10, "the slowest top-level tests to list (0: none)")
	flag.Parse()
	pkgs, slow, err := read(flag.Args())
	if err != nil {
		fmt.Fprintln(os.Stderr, "testrun:", err)
		os.Exit(1)
	}
	write(os.Stdout, pkgs, slow, *tests)
}

// read collects the packages' and the top-level tests' outcomes of the
// files. A package that started and never ended (its binary killed, say)
// is listed as such, with the time between its first and last event.
func read(files []string) (pkgs, tests []result, _ error) {
	type span struct{ first, last time.Time }
	seen := map[string]*span{}
	ended := map[string]bool{}
	for _, f := range files {
		file, err := os.Open(f)
		if err != nil {
			return nil, nil, err
		}
		sc := bufio.NewScanner(file)
		sc.Buffer(make([]byte, 1<<20), 64<<20)
		for sc.Scan() {
			var e event
			if json.Unmarshal(sc.Bytes(), &e) != nil || e.Package == "" {
				continue // a line go test printed beside the events
			}
			s := seen[e.Package]
			if s == nil {
				s = &span{first: e.Time}
				seen[e.Package] = s
			}
			s.last = e.Time
			if e.Action != "pass" && e.Action != "fail" && e.Action != "skip" {
				continue
			}
			switch {
			case e.Test == "":
				pkgs = append(pkgs, result{e.Package, e.Action, e.Elapsed})
				ended[e.Package] = true
			case !strings.Contains(e.Test, "/"):
				tests = append(tests, result{e.Package + " " + e.Test, e.Action, e.Elapsed})
			}
		}
		err = sc.Err()
		file.Close()
		if err != nil {
			return nil, nil, fmt.Errorf("%s: %w", f, err)
		}
	}
	for p, s := range seen {
		if !ended[p] {
			pkgs = append(pkgs, result{p, "did not end", s.last.Sub(s.first).Seconds()})
		}
	}
	return pkgs, tests, nil
}

// write prints the packages slowest first, and the n slowest tests.
func write(w io.Writer, pkgs, tests []result, n int) {
	slowest := func(a, b result) int {
		if a.seconds != b.seconds {
			if a.seconds > b.seconds {
				return -1
			}
			return 1
		}
		return strings.Compare(a.name, b.name)
	}
	slices.SortFunc(pkgs, slowest)
	slices.SortFunc(tests, slowest)
	fmt.Fprintln(w, "Time each package took (go test -json):")
	for _, p := range pkgs {
		fmt.Fprintf(w, "  %7.1fs  %-11s %s\n", p.seconds, p.action, p.name)
	}
	if n > 0 && len(tests) > 0 {
		fmt.Fprintf(w, "The slowest tests:\n")
		for _, t := range tests[:min(n, len(tests))] {
			fmt.Fprintf(w, "  %7.1fs  %-11s %s\n", t.seconds, t.action, t.name)
		}
	}
}
