// Command bench measures resyncd side by side with a controller-runtime
// reconciler, a raw server-side-apply floor and a raw paged LIST, each in
// its own process, against one local kube-apiserver, in one run. Run it
// with `make bench` or `make bench-quick`; docs/benchmarks.md says what it
// measures and holds the latest figures.
//
// The same binary is also each contender that is not resyncd itself:
// `bench cr`, `bench floor` and `bench list`.
//
// bench is a module of its own (bench/go.mod, which replaces the daemon's
// module with ../), so that controller-runtime, which only its reconciler
// links, stays out of the daemon's go.mod: `cd bench && go build -o
// ../bin/bench .`.
package main

import (
	"fmt"
	"os"
	"time"
)

func main() {
	roles := map[string]func([]string) error{"cr": crMain, "floor": floorMain, "list": listMain}
	var err error
	if len(os.Args) > 1 && roles[os.Args[1]] != nil {
		err = roles[os.Args[1]](os.Args[2:])
	} else {
		err = orchestrate(os.Args[1:])
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

// started is when the process started, for progress.
var started = time.Now()

// progress says on stderr what the bench does now, after how long since
// it started: where the run's time went.
func progress(format string, args ...any) {
	d := time.Since(started).Round(time.Second)
	fmt.Fprintf(os.Stderr, "bench: %02d:%02d:%02d "+format+"\n", append([]any{int(d.Hours()), int(d.Minutes()) % 60, int(d.Seconds()) % 60}, args...)...)
}
