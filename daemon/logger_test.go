package daemon

import (
	"errors"
	"io"
	"os"
	"strings"
	"testing"

	"k8s.io/klog/v2"

	"github.com/resyncd/resyncd/config"
)

// TestClientGoLogsOneLine: what client-go logs at error level (the event
// broadcaster's refused Event, say) is one line, without a stack trace.
func TestClientGoLogsOneLine(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	stderr := os.Stderr
	os.Stderr = w
	log, err := NewLogger(config.Log{Level: "info", Format: "json"})
	os.Stderr = stderr
	defer klog.ClearLogger()
	if err != nil {
		t.Fatal(err)
	}
	klog.ErrorS(errors.New(`events.events.k8s.io "web.1" is forbidden: unable to create new content in namespace shop because it is being terminated`),
		"Server rejected event (will not retry!)")
	_ = log.Sync()
	w.Close()
	out, err := io.ReadAll(r)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) != 1 || strings.Contains(string(out), "stacktrace") || !strings.Contains(lines[0], "being terminated") {
		t.Errorf("client-go's error logged as %d lines:\n%s", len(lines), out)
	}
}
