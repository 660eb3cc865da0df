package config

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"

	"github.com/go-viper/mapstructure/v2"
	"github.com/spf13/viper"
	"go.yaml.in/yaml/v3"
)

// EnvPrefix starts the environment variables that override keys:
// apply.concurrency is RESYNCD_APPLY_CONCURRENCY.
const EnvPrefix = "RESYNCD"

// Options are the sources merged over the file, and what a resource may name.
type Options struct {
	// LookupEnv reads environment variables; nil reads none.
	LookupEnv func(key string) (string, bool)
	// Overrides set key paths (for example "log.level") from the command
	// line; they win over the file and the environment.
	Overrides map[string]string
	// Renderers are the renderer names a resource may use.
	Renderers []string
	// CheckGraph, when set, checks the graph file of each resource that
	// names one (and its crd file), and returns the parent kind they
	// declare, nil when they declare none; each line of the error it
	// returns is reported as a problem. The kind fills in the resource's
	// group, version and resource left out, and must agree with those set.
	CheckGraph func(r Resource, cel CEL) (*ParentKind, error)
	// CheckKubeconfigs reads the kubeconfig file of every cluster that
	// names one and reports what would keep the cluster from connecting.
	// The daemon leaves this to each cluster, which is then down with the
	// reason while the others run; validate asks for it.
	CheckKubeconfigs bool
}

// ParentKind is the parent kind that a resource's graph file declares in
// its spec.schema, or that its crd file defines.
type ParentKind struct {
	// Group, Version and Resource are those of the parents: the version
	// the resource names, else the storage version.
	Group, Version, Resource string
	// Versions are the versions served, when the CRD file has several.
	Versions []string
	// Where names the source in messages: FILE:LINE of spec.schema, or
	// the CRD file.
	Where string
	// FromSchema: declared by the graph's spec.schema, not a crd file.
	FromSchema bool
}

// EnvVar returns the environment variable that overrides a key path.
func EnvVar(key string) string {
	return EnvPrefix + "_" + strings.ToUpper(strings.ReplaceAll(key, ".", "_"))
}

// Load reads the configuration file at path, merges the environment and the
// overrides over it and the defaults under it, and validates the result. The
// error, an *Error, lists every problem found, each with the file (or the
// variable or flag) and the key path.
func Load(path string, opts Options) (*Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read configuration: %w", err)
	}
	ps := &problems{source: path, lines: map[string]int{}, reported: map[string]bool{}}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if len(doc.Content) > 0 {
		checkNode(ps, doc.Content[0], reflect.TypeFor[Config](), "")
	}
	keys := map[string]reflect.Value{}
	scalarKeys(reflect.ValueOf(Default()), "", keys)
	env := checkOverrides(keys, opts)
	ps.list = append(ps.list, env...)
	for _, p := range env {
		ps.reported[p.Key] = true
	}

	// The problems found so far are out of the document and the sources:
	// decode and validate the rest, so that every problem is reported.
	var file map[string]any
	if len(doc.Content) > 0 {
		if err := doc.Decode(&file); err != nil {
			if perr := ps.err(); perr != nil {
				return nil, perr
			}
			return nil, fmt.Errorf("%s: %w", path, err)
		}
	}
	cfg, err := decode(path, file, keys, withoutProblems(opts, env))
	if err != nil {
		if perr := ps.err(); perr != nil {
			return nil, perr
		}
		return nil, err
	}
	for i := range cfg.Resources {
		cfg.Resources[i].graphPath = relativeTo(path, cfg.Resources[i].Graph)
		cfg.Resources[i].crdPath = relativeTo(path, cfg.Resources[i].CRD)
		cfg.Resources[i].index = i
	}
	for i := range cfg.Clusters {
		cfg.Clusters[i].kubeconfigPath = relativeTo(path, cfg.Clusters[i].Kubeconfig)
	}
	// The graphs first: the parent kinds they declare are the resources'
	// that leave theirs out, which validate checks. Their own problems
	// name their files, and are listed after the configuration's.
	graphs := checkGraphs(cfg, ps, opts.CheckGraph)
	validate(cfg, ps, opts.Renderers)
	ps.list = append(ps.list, graphs...)
	if opts.CheckKubeconfigs {
		checkKubeconfigs(cfg, ps)
	}
	cfg.listed = len(cfg.Clusters) > 0 || len(cfg.ClusterSecrets) > 0
	if !cfg.listed {
		cfg.Clusters = []Cluster{{Name: LocalCluster, Apply: cfg.Apply}}
	}
	if err := ps.err(); err != nil {
		return nil, err
	}
	cfg.file, cfg.lines = path, ps.lines
	return cfg, nil
}

// checkOverrides checks the values of the environment variables and
// overrides that are set, each against the type of its key.
func checkOverrides(keys map[string]reflect.Value, opts Options) []Problem {
	var out []Problem
	for _, key := range sortedKeys(keys) {
		if opts.LookupEnv != nil {
			if v, ok := opts.LookupEnv(EnvVar(key)); ok {
				if msg := checkScalar(v, "", keys[key].Type()); msg != "" {
					out = append(out, Problem{Source: "$" + EnvVar(key), Key: key, Message: msg})
				}
			}
		}
	}
	for _, key := range sortedKeys(opts.Overrides) {
		def, ok := keys[key]
		if !ok {
			out = append(out, Problem{Source: "command line", Key: key, Message: "unknown key"})
			continue
		}
		if msg := checkScalar(opts.Overrides[key], "", def.Type()); msg != "" {
			out = append(out, Problem{Source: "command line", Key: key, Message: msg})
		}
	}
	return out
}

// withoutProblems is opts without the environment variables and
// overrides that problems name.
func withoutProblems(opts Options, problems []Problem) Options {
	bad := map[string]bool{}
	for _, p := range problems {
		bad[p.Key] = true
	}
	out := opts
	if opts.LookupEnv != nil {
		out.LookupEnv = func(key string) (string, bool) {
			for k := range bad {
				if EnvVar(k) == key {
					return "", false
				}
			}
			return opts.LookupEnv(key)
		}
	}
	out.Overrides = map[string]string{}
	for k, v := range opts.Overrides {
		if !bad[k] {
			out.Overrides[k] = v
		}
	}
	return out
}

// decode merges defaults, the file's values, environment and overrides
// with viper, and decodes them into a Config in one pass.
func decode(path string, file map[string]any, keys map[string]reflect.Value, opts Options) (*Config, error) {
	// viper knows no defaults inside lists: each item is decoded over its
	// own, made before the decode that fills them in.
	cfg := Default()
	cfg.Resources = make([]Resource, len(items(file, "resources")))
	for i := range cfg.Resources {
		cfg.Resources[i] = DefaultResource()
	}
	clusters := items(file, "clusters")
	cfg.Clusters = make([]Cluster, len(clusters))
	// Read before viper lower-cases the keys of the map it is given.
	inherited := applyLeftOut(clusters)

	v := viper.New()
	if err := v.MergeConfigMap(file); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	for key, def := range keys {
		v.SetDefault(key, def.Interface())
		if opts.LookupEnv != nil {
			if val, ok := opts.LookupEnv(EnvVar(key)); ok {
				v.Set(key, val)
			}
		}
	}
	for key, val := range opts.Overrides {
		v.Set(key, val)
	}
	hook := viper.DecodeHook(mapstructure.StringToTimeDurationHookFunc())
	if err := v.Unmarshal(&cfg, hook); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	// A cluster's apply keys left out are the top-level apply's, as the
	// environment and the overrides leave it.
	top := reflect.ValueOf(cfg.Apply)
	for i, fields := range inherited {
		apply := reflect.ValueOf(&cfg.Clusters[i].Apply).Elem()
		for _, f := range fields {
			apply.FieldByIndex(f.Index).Set(top.FieldByIndex(f.Index))
		}
	}
	return &cfg, nil
}

// items is the list the file holds at key, nil when it holds none.
func items(file map[string]any, key string) []any {
	list, _ := file[key].([]any)
	return list
}

// applyLeftOut returns, for each cluster item, the fields of Apply its
// apply leaves out.
func applyLeftOut(clusters []any) [][]reflect.StructField {
	fields := fieldsOf(reflect.TypeFor[Apply]())
	out := make([][]reflect.StructField, len(clusters))
	for i, item := range clusters {
		cluster, _ := item.(map[string]any)
		set, _ := cluster["apply"].(map[string]any)
		for name, f := range fields {
			if _, ok := set[name]; !ok {
				out[i] = append(out[i], f)
			}
		}
	}
	return out
}

// relativeTo is file, when relative, joined to the directory of the
// configuration file at path.
func relativeTo(path, file string) string {
	if file == "" || filepath.IsAbs(file) {
		return file
	}
	return filepath.Join(filepath.Dir(path), file)
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
