package main

import (
	"archive/tar"
	"bytes"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// TestImage: the tarball holds one image with /resyncd as written, run as
// the nonroot user, under the given tag.
func TestImage(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "resyncd")
	content := []byte("#!/bin/true\nnot really a binary\n")
	if err := os.WriteFile(bin, content, 0o755); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "image.tar")
	if err := run(bin, "ghcr.io/resyncd/resyncd:test", out, "amd64", "test"); err != nil {
		t.Fatal(err)
	}
	tag, err := name.NewTag("ghcr.io/resyncd/resyncd:test")
	if err != nil {
		t.Fatal(err)
	}
	img, err := tarball.ImageFromPath(out, &tag)
	if err != nil {
		t.Fatal(err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if cf.Config.User != "65532:65532" || cf.Config.Entrypoint[0] != "/resyncd" || cf.OS != "linux" || cf.Architecture != "amd64" {
		t.Errorf("config: user %q, entrypoint %v, platform %s/%s", cf.Config.User, cf.Config.Entrypoint, cf.OS, cf.Architecture)
	}
	layers, err := img.Layers()
	if err != nil || len(layers) != 1 {
		t.Fatalf("layers: %d, %v", len(layers), err)
	}
	rc, err := layers[0].Uncompressed()
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	tr := tar.NewReader(rc)
	found := false
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if h.Name == "resyncd" {
			got, _ := io.ReadAll(tr)
			found = bytes.Equal(got, content) && h.Mode == 0o755
		}
	}
	if !found {
		t.Error("/resyncd is not in the layer as written, mode 0755")
	}
}
