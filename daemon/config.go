package daemon

import (
	"os"

	"github.com/resyncd/resyncd/config"
	"github.com/resyncd/resyncd/desired"
)

// LoadConfig reads the configuration file at path with the environment
// and overrides (key path → value, the command line's), knowing the
// built-in renderers and checking every graph file offline.
// checkKubeconfigs also reads the clusters' kubeconfig files and reports
// their problems; without it, each cluster finds its own when it
// connects, and is down with the reason while the others run.
func LoadConfig(path string, overrides map[string]string, checkKubeconfigs bool) (*config.Config, error) {
	return config.Load(path, config.Options{
		LookupEnv:        os.LookupEnv,
		Overrides:        overrides,
		Renderers:        desired.DefaultRegistry().Names(),
		CheckGraph:       CheckGraph,
		CheckKubeconfigs: checkKubeconfigs,
	})
}
