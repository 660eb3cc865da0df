package main

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"
	"go.uber.org/zap"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/resyncd/resyncd/actual"
)

type globalFlags struct {
	kubeconfig string
	context    string
	interval   time.Duration
}

func run(ctx context.Context, args []string) error {
	var g globalFlags
	root := &cobra.Command{
		Use:           "resyncd",
		Short:         "Level-triggered resync daemon for Kubernetes",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.PersistentFlags().StringVar(&g.kubeconfig, "kubeconfig", "", "path to a kubeconfig; default: $KUBECONFIG, ~/.kube/config, or in-cluster")
	root.PersistentFlags().StringVar(&g.context, "context", "", "kubeconfig context to use")

	runCmd := &cobra.Command{
		Use:   "run",
		Short: "Run passes on an interval until SIGINT or SIGTERM",
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runDaemon(cmd.Context(), g)
		},
	}
	runCmd.Flags().DurationVar(&g.interval, "interval", 30*time.Second, "time between passes")
	versionCmd := &cobra.Command{
		Use:   "version",
		Short: "Print the version",
		Run: func(cmd *cobra.Command, _ []string) {
			fmt.Fprintln(cmd.OutOrStdout(), version)
		},
	}
	root.AddCommand(runCmd, versionCmd)
	root.SetArgs(args)
	return root.ExecuteContext(ctx)
}

var httpServices = schema.GroupVersionResource{Group: "resyncd.io", Version: "v1alpha1", Resource: "httpservices"}

// runDaemon lists the HttpServices on each interval and logs what it found.
func runDaemon(ctx context.Context, g globalFlags) error {
	log, err := zap.NewProduction()
	if err != nil {
		return err
	}
	defer func() { _ = log.Sync() }()

	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = g.kubeconfig
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules,
		&clientcmd.ConfigOverrides{CurrentContext: g.context}).ClientConfig()
	if err != nil {
		return fmt.Errorf("load kubeconfig: %w", err)
	}
	client, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return err
	}
	log.Info("Starting", zap.String("version", version), zap.String("server", cfg.Host), zap.Duration("interval", g.interval))
	t := time.NewTicker(g.interval)
	defer t.Stop()
	for {
		perNamespace := map[string]int{}
		start := time.Now()
		err := actual.Each(ctx, client, httpServices, "", metav1.ListOptions{}, 500, func(u *unstructured.Unstructured) error {
			perNamespace[u.GetNamespace()]++
			log.Debug("Found", zap.String("namespace", u.GetNamespace()), zap.String("name", u.GetName()))
			return nil
		})
		if err != nil {
			log.Error("Pass failed", zap.Error(err))
		} else {
			log.Info("Pass finished", zap.Any("httpServicesPerNamespace", perNamespace), zap.Duration("duration", time.Since(start)))
		}
		select {
		case <-ctx.Done():
			log.Info("Stopping")
			return nil
		case <-t.C:
		}
	}
}
