// Command image packs a static resyncd binary into an OCI image from
// scratch — no base image, no Docker engine — and writes it as a tarball
// that `docker load`, `podman load`, `kind load image-archive` and
// `crane push` take.
//
//	go run . -binary ../../bin/linux-amd64/resyncd -tag ghcr.io/resyncd/resyncd:0.1.0 -out ../../bin/resyncd-image.tar
package main

import (
	"archive/tar"
	"bytes"
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// nonroot is the user and group the image runs as, as distroless's nonroot.
const nonroot = 65532

func main() {
	binary := flag.String("binary", "", "static linux binary to pack as /resyncd")
	tag := flag.String("tag", "ghcr.io/resyncd/resyncd:dev", "image reference written into the tarball")
	out := flag.String("out", "resyncd-image.tar", "tarball to write")
	arch := flag.String("arch", "amd64", "architecture of the binary")
	version := flag.String("version", "dev", "version, for the image's labels")
	flag.Parse()
	if err := run(*binary, *tag, *out, *arch, *version); err != nil {
		fmt.Fprintf(os.Stderr, "image: %v\n", err)
		os.Exit(1)
	}
}

func run(binary, tag, out, arch, version string) error {
	data, err := os.ReadFile(binary)
	if err != nil {
		return err
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return layerTar(data) })
	if err != nil {
		return err
	}
	img, err := mutate.AppendLayers(empty.Image, layer)
	if err != nil {
		return err
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return err
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture = "linux", arch
	cf.Created = v1.Time{Time: time.Unix(0, 0).UTC()} // reproducible
	cf.Config.Entrypoint = []string{"/resyncd"}
	cf.Config.Cmd = []string{"run"}
	cf.Config.User = fmt.Sprintf("%d:%d", nonroot, nonroot)
	cf.Config.WorkingDir = "/"
	cf.Config.Labels = map[string]string{
		"org.opencontainers.image.title":    "resyncd",
		"org.opencontainers.image.version":  version,
		"org.opencontainers.image.source":   "https://github.com/resyncd/resyncd",
		"org.opencontainers.image.licenses": "Apache-2.0",
	}
	img, err = mutate.ConfigFile(img, cf)
	if err != nil {
		return err
	}
	ref, err := name.NewTag(tag)
	if err != nil {
		return err
	}
	if err := tarball.WriteToFile(out, ref, img); err != nil {
		return err
	}
	digest, err := img.Digest()
	if err != nil {
		return err
	}
	fmt.Printf("%s %s -> %s\n", ref, digest, out)
	return nil
}

// layerTar is the one layer: /resyncd, and /tmp for libraries that want it.
func layerTar(binary []byte) (io.ReadCloser, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	epoch := time.Unix(0, 0)
	if err := tw.WriteHeader(&tar.Header{Name: "tmp/", Typeflag: tar.TypeDir, Mode: 0o1777, ModTime: epoch}); err != nil {
		return nil, err
	}
	if err := tw.WriteHeader(&tar.Header{Name: "resyncd", Typeflag: tar.TypeReg, Mode: 0o755, Size: int64(len(binary)), ModTime: epoch}); err != nil {
		return nil, err
	}
	if _, err := tw.Write(binary); err != nil {
		return nil, err
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return io.NopCloser(&buf), nil
}
