package config

import (
	"fmt"
	"sort"
	"strings"
)

// Problem is one thing wrong with a configuration.
type Problem struct {
	// Source is the file, or the environment variable or flag, that set the key.
	Source string
	// Line is the line in Source, or 0 when unknown.
	Line int
	// Key is the key path, for example resources[0].interval.
	Key string
	// Message says what is wrong and, where it can, what would fix it.
	Message string
}

func (p Problem) String() string {
	if p.Source == "" && p.Key == "" {
		return p.Message // a graph file's problem names its own file and line
	}
	src := p.Source
	if p.Line > 0 {
		src = fmt.Sprintf("%s:%d", src, p.Line)
	}
	if p.Key == "" {
		return fmt.Sprintf("%s: %s", src, p.Message)
	}
	return fmt.Sprintf("%s: %s: %s", src, p.Key, p.Message)
}

// Error lists every problem found in a configuration.
type Error struct {
	// Problems are in the order of the file, then environment, then flags.
	Problems []Problem
}

func (e *Error) Error() string {
	lines := make([]string, len(e.Problems))
	for i, p := range e.Problems {
		lines[i] = p.String()
	}
	return strings.Join(lines, "\n")
}

// problems collects Problems as the loader finds them.
type problems struct {
	source string
	lines  map[string]int // key path → line, as read from the file
	list   []Problem
	// reported are the key paths whose values were found wrong and left
	// out: what their defaults then show is not reported again.
	reported map[string]bool
}

func (ps *problems) add(key, format string, args ...any) {
	for k := range ps.reported {
		if key == k || strings.HasPrefix(key, k+".") || strings.HasPrefix(key, k+"[") {
			return
		}
	}
	ps.list = append(ps.list, Problem{Source: ps.source, Line: ps.lines[key], Key: key, Message: fmt.Sprintf(format, args...)})
}

// addNear is add of a key the file leaves out, at the line of the key
// near that holds it.
func (ps *problems) addNear(near, key, format string, args ...any) {
	n := len(ps.list)
	ps.add(key, format, args...)
	if len(ps.list) > n && ps.list[n].Line == 0 {
		ps.list[n].Line = ps.lines[near]
	}
}

// isSet reports whether the file sets the key path.
func (ps *problems) isSet(key string) bool {
	_, ok := ps.lines[key]
	return ok
}

func (ps *problems) addAt(line int, key, format string, args ...any) {
	ps.list = append(ps.list, Problem{Source: ps.source, Line: line, Key: key, Message: fmt.Sprintf(format, args...)})
}

func (ps *problems) err() error {
	if len(ps.list) == 0 {
		return nil
	}
	sort.SliceStable(ps.list, func(i, j int) bool {
		a, b := ps.list[i], ps.list[j]
		if a.Source != b.Source {
			return false // keep file, environment, flags in the order found
		}
		return a.Line < b.Line
	})
	return &Error{Problems: ps.list}
}
