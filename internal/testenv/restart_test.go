package testenv

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestServerPIDs: the ids found are this control plane's kube-apiserver
// and etcd, and a second control plane's are others.
func TestServerPIDs(t *testing.T) {
	var pids [2][2]int
	for i := range pids {
		env, err := Start(Options{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			if err := env.Stop(); err != nil {
				t.Errorf("stop: %v", err)
			}
		})
		api, etcd, err := env.ServerPIDs()
		if err != nil {
			t.Fatal(err)
		}
		for pid, want := range map[int]string{api: "kube-apiserver", etcd: "etcd"} {
			cmdline, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "cmdline"))
			if arg0, _, _ := strings.Cut(string(cmdline), "\x00"); err != nil || filepath.Base(arg0) != want {
				t.Errorf("pid %d runs %q (%v), want %s", pid, arg0, err, want)
			}
		}
		pids[i] = [2]int{api, etcd}
	}
	if pids[0][0] == pids[1][0] || pids[0][1] == pids[1][1] {
		t.Errorf("two control planes, the same processes: %v", pids)
	}
}
