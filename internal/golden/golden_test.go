package golden

import (
	"os"
	"path/filepath"
	"testing"
)

// TestCheckMatches: equal content passes. (A mismatch fails the calling
// test, which a test of this package cannot observe without failing.)
func TestCheckMatches(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.golden")
	if err := os.WriteFile(path, []byte("a\nb\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	Check(t, path, "a\nb\n")
}
