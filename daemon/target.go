package daemon

import (
	"github.com/resyncd/resyncd/cluster"
	"github.com/resyncd/resyncd/config"
	"github.com/resyncd/resyncd/desired"
	"github.com/resyncd/resyncd/engine"
)

// target is one cluster and what making it ready found.
type target struct {
	*cluster.Target
	// renderers are set once the cluster answered: it serves every
	// watched resource, and the graphs are type-checked against its
	// schemas.
	renderers desired.Registry
	// down are the resources, by index in Resources, whose CRD resyncd
	// refused to apply, and why: they have no pass while the others run.
	down map[int]string
	// checking is closed when the last check of the cluster's readiness
	// has returned; one left behind when the passes stopped still uses
	// the target. Set and awaited by the goroutine of the passes.
	checking <-chan struct{}
}

// settle waits for a check of t's readiness left behind to return.
func (t *target) settle() {
	if t.checking != nil {
		<-t.checking
	}
}

func (t *target) ready() bool { return t.renderers != nil }

// up are the resources of t that are not down.
func (t *target) up() []config.Resource {
	var out []config.Resource
	for i, r := range t.Resources {
		if _, down := t.down[i]; !down {
			out = append(out, r)
		}
	}
	return out
}

// settings is what the engine of t runs: the resources that are not down;
// index maps the engine's resource to its index in t.Resources.
func (t *target) settings(cfg *config.Config) (s engine.Settings, index []int) {
	s = engine.SettingsFor(cfg, t.Config)
	s.Resources = t.up()
	for i := range t.Resources {
		if _, down := t.down[i]; !down {
			index = append(index, i)
		}
	}
	return s, index
}

// disconnect drops the cluster's clients, to be made again, and what it
// was made ready with.
func (t *target) disconnect() {
	t.Disconnect()
	t.renderers, t.down = nil, nil
}
