// Command conformance writes the report of a run of kro's e2e scenarios
// (chainsaw's JSON report) against resyncd: each scenario passed or
// failed, the first failure of each that failed, and the scenarios left
// out with their reasons. tools/conformance.sh runs it.
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// report is what this reads of chainsaw's JSON report.
type report struct {
	StartTime time.Time `json:"startTime"`
	EndTime   time.Time `json:"endTime"`
	Tests     []struct {
		Name      string    `json:"name"`
		BasePath  string    `json:"basePath"`
		StartTime time.Time `json:"startTime"`
		EndTime   time.Time `json:"endTime"`
		Steps     []struct {
			Name       string `json:"name"`
			Operations []struct {
				Type    string `json:"type"`
				Failure *struct {
					Error string `json:"error"`
				} `json:"failure"`
			} `json:"operations"`
		} `json:"steps"`
	} `json:"tests"`
}

// scenario is one line of the report.
type scenario struct {
	dir, name, step, failure string
	took                     time.Duration
}

func main() {
	in := flag.String("report", "", "chainsaw's JSON report")
	skipFile := flag.String("skip", "", "the scenarios left out, NAME: why a line")
	kro := flag.String("kro", "", "kro's version, whose scenarios ran")
	chainsaw := flag.String("chainsaw", "", "chainsaw's version")
	out := flag.String("out", "", "the Markdown report to write")
	flag.String("log", "", "chainsaw's log, named in the report")
	flag.Parse()
	if err := run(*in, *skipFile, *kro, *chainsaw, *out); err != nil {
		fmt.Fprintln(os.Stderr, "conformance:", err)
		os.Exit(1)
	}
}

func run(in, skipFile, kro, chainsaw, out string) error {
	data, err := os.ReadFile(in)
	if err != nil {
		return err
	}
	var rep report
	if err := json.Unmarshal(data, &rep); err != nil {
		return fmt.Errorf("%s: %w", in, err)
	}
	skipped, err := readSkips(skipFile)
	if err != nil {
		return err
	}
	var scenarios []scenario
	for _, t := range rep.Tests {
		s := scenario{dir: filepath.Base(t.BasePath), name: t.Name, took: t.EndTime.Sub(t.StartTime).Round(time.Second)}
	steps:
		for _, st := range t.Steps {
			for _, op := range st.Operations {
				if op.Failure != nil && !strings.HasPrefix(st.Name, "cleanup") {
					s.step, s.failure = st.Name+" ("+op.Type+")", firstProblems(op.Failure.Error)
					break steps
				}
			}
		}
		scenarios = append(scenarios, s)
	}
	sort.SliceStable(scenarios, func(i, j int) bool {
		return scenarios[i].dir+"/"+scenarios[i].name < scenarios[j].dir+"/"+scenarios[j].name
	})
	passed := 0
	for _, s := range scenarios {
		if s.failure == "" {
			passed++
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "# Conformance: kro's e2e scenarios against resyncd\n\n")
	fmt.Fprintf(&b, "`make conformance` runs kro's own chainsaw scenarios (`test/e2e/chainsaw` of kro %s, as the\n", kro)
	fmt.Fprintf(&b, "module proxy serves it; chainsaw %s) as they are, on the local control plane, with resyncd serving\n", chainsaw)
	fmt.Fprintf(&b, "the ResourceGraphDefinitions they apply (`testdata/config/conformance.yaml`) and no kro running.\n")
	fmt.Fprintf(&b, "This file is written by that run; do not edit it by hand.\n\n")
	fmt.Fprintf(&b, "Run of %s: **%d of %d scenario runs passed**, %d left out; %s in all.\n\n",
		rep.StartTime.UTC().Format("2006-01-02"), passed, len(scenarios), len(skipped), rep.EndTime.Sub(rep.StartTime).Round(time.Second))
	fmt.Fprintf(&b, "| scenario (directory) | test | result | time | first failure |\n|---|---|---|---|---|\n")
	for _, s := range scenarios {
		result, why := "pass", ""
		if s.failure != "" {
			result, why = "**fail**", "step "+s.step+": "+s.failure
		}
		fmt.Fprintf(&b, "| `%s` | %s | %s | %s | %s |\n", s.dir, s.name, result, s.took, strings.ReplaceAll(why, "|", `\|`))
	}
	fmt.Fprintf(&b, "\n## Left out\n\n")
	if len(skipped) == 0 {
		fmt.Fprintf(&b, "None: every scenario's resources are kinds the local control plane serves.\n")
	}
	for _, s := range skipped {
		fmt.Fprintf(&b, "- `%s`: %s\n", s[0], s[1])
	}
	return os.WriteFile(out, []byte(b.String()), 0o644)
}

// firstProblems is the lines of a chainsaw failure that say what differs
// ("* field: why"), or its first line when it has none.
func firstProblems(msg string) string {
	var lines []string
	for _, l := range strings.Split(msg, "\n") {
		if strings.HasPrefix(l, "* ") {
			lines = append(lines, "`"+strings.TrimPrefix(l, "* ")+"`")
		}
	}
	if len(lines) == 0 {
		for _, l := range strings.Split(msg, "\n") {
			if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "---") {
				return "`" + l + "`"
			}
		}
	}
	out := strings.Join(lines, "; ")
	if len(out) > 400 {
		out = out[:400] + "…`"
	}
	return out
}

// readSkips reads the NAME: why lines of path, leaving out comments.
func readSkips(path string) ([][2]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out [][2]string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		l := strings.TrimSpace(sc.Text())
		if l == "" || strings.HasPrefix(l, "#") {
			continue
		}
		name, why, ok := strings.Cut(l, ":")
		if !ok {
			return nil, fmt.Errorf("%s: %q is not NAME: why", path, l)
		}
		out = append(out, [2]string{strings.TrimSpace(name), strings.TrimSpace(why)})
	}
	return out, sc.Err()
}
