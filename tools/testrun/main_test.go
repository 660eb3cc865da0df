package main

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// TestTimes: packages slowest first with their outcome, a package whose
// binary never ended listed as such, subtests not among the slowest tests.
func TestTimes(t *testing.T) {
	stream := `{"Time":"2026-12-07T10:00:00Z","Action":"start","Package":"example.com/a"}
{"Time":"2026-12-07T10:00:01Z","Action":"run","Package":"example.com/a","Test":"TestSlow"}
{"Time":"2026-12-07T10:00:09Z","Action":"pass","Package":"example.com/a","Test":"TestSlow/sub","Elapsed":7.5}
{"Time":"2026-12-07T10:00:09Z","Action":"pass","Package":"example.com/a","Test":"TestSlow","Elapsed":8}
{"Time":"2026-12-07T10:00:09Z","Action":"fail","Package":"example.com/a","Test":"TestQuick","Elapsed":0.2}
{"Time":"2026-12-07T10:00:10Z","Action":"fail","Package":"example.com/a","Elapsed":9.1}
go: downloading example.com/x v1.0.0
{"Time":"2026-12-07T10:00:00Z","Action":"start","Package":"example.com/b"}
{"Time":"2026-12-07T10:00:30Z","Action":"output","Package":"example.com/b","Output":"panic: test timed out\n"}
{"Time":"2026-12-07T10:00:00Z","Action":"skip","Package":"example.com/c","Elapsed":0}
`
	f := filepath.Join(t.TempDir(), "events.json")
	if err := os.WriteFile(f, []byte(stream), 0o644); err != nil {
		t.Fatal(err)
	}
	pkgs, tests, err := read([]string{f})
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	write(&out, pkgs, tests, 10)
	want := `Time each package took (go test -json):
     30.0s  did not end example.com/b
      9.1s  fail        example.com/a
      0.0s  skip        example.com/c
The slowest tests:
      8.0s  pass        example.com/a TestSlow
      0.2s  fail        example.com/a TestQuick
`
	if out.String() != want {
		t.Errorf("got:\n%s\nwant:\n%s", out.String(), want)
	}
}
