package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	"github.com/resyncd/resyncd/config"
	"github.com/resyncd/resyncd/daemon"
	"github.com/resyncd/resyncd/desired"
	"github.com/resyncd/resyncd/desired/graph"
)

func newRenderCommand(g *globals) *cobra.Command {
	var parentPath, graphPath, format string
	cmd := &cobra.Command{
		Use:   "render",
		Short: "Print the children a parent would get, without a cluster",
		Long: "render reads parents (YAML, several separated by ---) from --parent or standard input,\n" +
			"finds the watched resource of each in the configuration, and prints the children its\n" +
			"renderer or graph makes, stamped with the labels and owner reference resyncd applies.\n" +
			"Nothing is read from a cluster: a child that refers to another child's fields is rendered\n" +
			"from that child as rendered, as one pass writes a chain; one that reads what only the API\n" +
			"server sets (a uid, a clusterIP, a status) is listed as waiting. It exits 1 when a parent\n" +
			"cannot be rendered.\n\n" +
			"With --format dot or mermaid it draws instead the dependency graph of the graph file\n" +
			"--graph, read with no configuration and no cluster: the parent, each resource with its\n" +
			"kind, forEach, includeWhen and readyWhen, an arrow from what is read to what reads it,\n" +
			"external references dashed and the parent's status last (dot -Tsvg draws the first;\n" +
			"GitHub draws the second in a mermaid block).",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			switch {
			case format == "dot" || format == "mermaid":
				if graphPath == "" {
					return exitWith(1, fmt.Errorf("--format %s draws a graph file: name it with --graph", format))
				}
				return drawGraph(g.stdout, graphPath, format)
			case format != "yaml":
				return exitWith(1, fmt.Errorf("--format %q: yaml (the children of parents), dot or mermaid (the graph of --graph)", format))
			case graphPath != "":
				return exitWith(1, fmt.Errorf("--graph is drawn with --format dot or mermaid; parents are rendered by the graphs of the configuration"))
			}
			cfg, err := g.loadConfig(false)
			if err != nil {
				return exitWith(1, err)
			}
			in := cmd.InOrStdin()
			if parentPath != "" && parentPath != "-" {
				f, err := os.Open(parentPath)
				if err != nil {
					return exitWith(1, err)
				}
				defer func() { _ = f.Close() }()
				in = f
			}
			return renderParents(g.stdout, cfg, in)
		},
	}
	cmd.Flags().StringVar(&parentPath, "parent", "", "file of parent objects; default or -: standard input")
	cmd.Flags().StringVar(&graphPath, "graph", "", "graph file to draw (with --format dot or mermaid)")
	cmd.Flags().StringVar(&format, "format", "yaml", "yaml: the children of the parents; dot or mermaid: the dependency graph of --graph")
	return cmd
}

func renderParents(out io.Writer, cfg *config.Config, in io.Reader) error {
	reg := desired.DefaultRegistry()
	for _, r := range cfg.Resources {
		if r.Graph != "" {
			opts, _, err := daemon.OfflineOptions(r, cfg.CEL)
			if err != nil {
				return exitWith(1, err)
			}
			gr, err := graph.Load(r.GraphPath(), opts)
			if err != nil {
				return exitWith(1, err)
			}
			reg[r.RendererKey()] = gr
		}
	}
	dec := utilyaml.NewYAMLOrJSONDecoder(in, 4096)
	var errs []error
	first := true
	for {
		parent := &unstructured.Unstructured{}
		if err := dec.Decode(&parent.Object); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			return exitWith(1, fmt.Errorf("read parents: %w", err))
		}
		if len(parent.Object) == 0 {
			continue
		}
		text, err := renderParent(cfg, reg, parent)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if !first {
			text = "---\n" + text
		}
		first = false
		if _, err := io.WriteString(out, text); err != nil {
			return err
		}
	}
	if len(errs) > 0 {
		return exitWith(1, errors.Join(errs...))
	}
	return nil
}

// parentDefaulter is a renderer that knows the parent kind's schema and
// fills in its defaults (a graph with kro's spec.schema, or beside the
// resource's crd file).
type parentDefaulter interface {
	Default(*unstructured.Unstructured)
}

// renderParent renders one parent with the renderer of its watched
// resource and returns its children as YAML documents.
func renderParent(cfg *config.Config, reg desired.Registry, parent *unstructured.Unstructured) (string, error) {
	id := parent.GetKind() + " " + parent.GetNamespace() + "/" + parent.GetName()
	r, err := resourceOf(cfg, parent.GroupVersionKind())
	if err != nil {
		return "", fmt.Errorf("%s: %w", id, err)
	}
	rd, err := reg.Get(r.RendererKey())
	if err != nil {
		return "", fmt.Errorf("%s: %w", id, err)
	}
	if d, ok := rd.(parentDefaulter); ok {
		// What the API server would have stored: a graph that declares its
		// parent kind's schema (kro's spec.schema) defaults it.
		d.Default(parent)
	}
	g, stop, err := renderChain(rd, parent)
	if err != nil {
		return "", fmt.Errorf("%s: %w", id, err)
	}
	desired.Stamp(g, parent)
	var b bytes.Buffer
	fmt.Fprintf(&b, "# %s: %d children\n", id, len(g.Children))
	for _, w := range g.Waiting {
		fmt.Fprintf(&b, "# waiting: %s\n", w.Message)
	}
	if stop != nil {
		fmt.Fprintf(&b, "# not rendered from the children above: %v\n", stop)
	}
	refused := map[int]bool{}
	for i, c := range g.Children {
		if why := refusedPlace(r, parent, c); why != "" {
			refused[i] = true
			fmt.Fprintf(&b, "# not written: %s\n", why)
			continue
		}
		for _, ref := range g.RefersTo(i) {
			if refused[ref] {
				refused[i] = true
				fmt.Fprintf(&b, "# not written: %s %s refers to %s %s, which is not written\n", c.GetKind(), c.GetName(), g.Children[ref].GetKind(), g.Children[ref].GetName())
				break
			}
		}
	}
	n := 0
	for i, c := range g.Children {
		if refused[i] {
			continue
		}
		y, err := yaml.Marshal(c.Object)
		if err != nil {
			return "", err
		}
		if n > 0 {
			b.WriteString("---\n")
		}
		n++
		b.Write(y)
	}
	return b.String(), nil
}

// renderChain renders parent as one pass writes it from nothing: while
// children wait, it renders again with every child rendered so far taken
// as the live object, as a pass does with what the API server returns of
// each write. What only the server fills in (a uid, a Service's
// clusterIP, a status) is not known offline, so a child that reads it
// still waits. A render that fails with the children so far, which a
// parent without the server's defaults may, ends the chain there: stop
// says why.
func renderChain(rd desired.Renderer, parent *unstructured.Unstructured) (g desired.Graph, stop error, err error) {
	if g, err = rd.Render(parent, nil); err != nil {
		return g, nil, err
	}
	for len(g.Waiting) > 0 {
		live := make([]desired.Child, len(g.Children))
		for i, c := range g.Children {
			live[i] = desired.Child{Kind: c.GetKind(), Namespace: c.GetNamespace(), Name: c.GetName(), Object: c.DeepCopy().Object}
		}
		next, err := rd.Render(parent, live)
		if err != nil {
			return g, err, nil
		}
		done := len(next.Children) <= len(g.Children)
		g = next // what the waiting ones miss, said with what is known now
		if done {
			break // no child more: the rest wait for the server
		}
	}
	return g, nil, nil
}

// resourceOf finds the watched resource of parents of gvk: the one of its
// group and version, or, of several, the one whose resource is the kind's
// plural.
func resourceOf(cfg *config.Config, gvk schema.GroupVersionKind) (config.Resource, error) {
	var same []config.Resource
	for _, r := range cfg.Resources {
		if r.Group == gvk.Group && r.Version == gvk.Version {
			same = append(same, r)
		}
	}
	plural, _ := meta.UnsafeGuessKindToResource(gvk)
	var names []string
	for _, r := range same {
		if len(same) == 1 || r.Resource == plural.Resource {
			return r, nil
		}
		names = append(names, r.Name())
	}
	return config.Resource{}, fmt.Errorf("no watched resource of the configuration is of %s (watched: %s)", gvk.GroupVersion().WithKind(gvk.Kind), strings.Join(names, ", "))
}

// drawGraph prints the dependency graph of the graph file at path, loaded
// as validate loads it offline (typed by the parent's CRD when spec.schema
// declares it), so that a graph that does not load is not drawn.
func drawGraph(out io.Writer, path, format string) error {
	opts := graph.Options{}
	p, err := graph.ReadParentCRD(path, "")
	if err != nil {
		return exitWith(1, err)
	}
	if p != nil {
		if opts, err = p.Options("", opts); err != nil {
			return exitWith(1, err)
		}
	}
	r, err := graph.Load(path, opts)
	if err != nil {
		return exitWith(1, err)
	}
	pic := r.Picture()
	text := pic.Dot()
	if format == "mermaid" {
		text = pic.Mermaid()
	}
	_, err = io.WriteString(out, text)
	return err
}
