package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestParentKindOffline: with no cluster, a resource that names only a
// kro graph watches the kind its spec.schema declares, a group set
// otherwise is refused with the key and both places, and a graph without
// spec.schema renders a parent defaulted by the team's crd file.
func TestParentKindOffline(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write := func(name, text string) string {
		t.Helper()
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	storefront, err := filepath.Abs("../../testdata/kro/storefront.yaml")
	if err != nil {
		t.Fatal(err)
	}
	webapp, _ := filepath.Abs("../../docs/examples/webapp.yaml")
	crd, _ := filepath.Abs("../../testdata/crds/example.resyncd.io_webapps.yaml")

	cfg := write("good.yaml", "resources:\n  - {graph: "+storefront+"}\n  - {graph: "+webapp+", crd: "+crd+"}\n")
	if out, code := resyncd(t, "validate", "--config", cfg); code != 0 || !strings.Contains(out, "valid, 2 watched resources") {
		t.Errorf("graph alone: exit %d\n%s", code, out)
	}

	cfg = write("bad.yaml", "resources:\n  - {group: shop.example.com, graph: "+storefront+"}\n")
	want := cfg + `:2: resources[0].group: is "shop.example.com", but the parent kind of ` + storefront + `:9 has "kro.run"; leave group out, or make the two agree`
	if out, code := resyncd(t, "validate", "--config", cfg); code != 1 || out != want {
		t.Errorf("group that disagrees: exit %d\n%s\nwant:\n%s", code, out, want)
	}

	cfg = write("crd.yaml", "resources:\n  - {graph: "+webapp+", crd: "+crd+"}\n")
	parent := write("parent.yaml", "apiVersion: example.resyncd.io/v1alpha1\nkind: WebApp\nmetadata: {name: shop, namespace: team}\nspec: {image: nginx}\n")
	out, code := resyncd(t, "render", "--config", cfg, "--parent", parent)
	if code != 0 || !strings.Contains(out, "# WebApp team/shop: 2 children") || !strings.Contains(out, "name: shop-config") || !strings.Contains(out, "kind: Deployment") {
		t.Errorf("render with the crd file's defaults: exit %d\n%s", code, out)
	}
}
