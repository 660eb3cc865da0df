package daemon

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"go.uber.org/zap"
	extv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"sigs.k8s.io/yaml"

	"github.com/resyncd/resyncd/config"
	"github.com/resyncd/resyncd/desired/graph"
)

// establishWait bounds how long a start waits for a CRD it applied to be
// served.
const establishWait = 30 * time.Second

// errCRDRefused marks a CRD that resyncd does not apply: the change would
// break the objects stored, or another field manager owns what it would
// change. The resource is then down while the others run.
var errCRDRefused = errors.New("CRD not applied")

// installCRDs applies, at start, the parent kind's CRD of every resource
// of t that sets installCRD, before anything is asked of those kinds, and
// returns, by the index of the resource in t.Resources, why the CRD of
// each that is down was refused. Any other error (the server does not
// answer, resyncd may not write CRDs) is returned.
func installCRDs(ctx context.Context, cfg *config.Config, t *target) (map[int]string, error) {
	var dyn dynamic.Interface
	down := map[int]string{}
	for i, r := range t.Resources {
		if !r.InstallCRD {
			continue
		}
		if dyn == nil {
			var err error
			if dyn, err = dynamic.NewForConfig(t.Clients.REST); err != nil {
				return nil, err
			}
		}
		err := installCRD(ctx, dyn, cfg.FieldManager, r, t.Log)
		switch {
		case errors.Is(err, errCRDRefused):
			why := fmt.Sprintf("%s: %s: %v", cfg.Where(r.Key()), r.Key(), err)
			t.Log.Warn("Resource down", zap.String("resource", r.Name()), zap.String("reason", why))
			down[i] = why
		case err != nil:
			return nil, fmt.Errorf("%s: %s: %w", cfg.Where(r.Key()), r.Key(), err)
		}
	}
	return down, nil
}

// installCRD applies the parent kind's CRD of r with server-side apply,
// unforced: a field another manager owns is not taken from it. A CRD
// stored already is first compared with it, and a change that would break
// the objects stored is refused. It never deletes a CRD.
func installCRD(ctx context.Context, dyn dynamic.Interface, fieldManager string, r config.Resource, log *zap.Logger) error {
	p, err := graph.ReadParentCRD(r.GraphPath(), r.CRDPath())
	if err != nil {
		return err
	}
	if p == nil {
		return errors.New("the graph declares no parent kind and the resource names no crd file")
	}
	return applyCRD(ctx, dyn, fieldManager, p, log)
}

// applyCRD applies the parent kind's CRD p as installCRD does.
func applyCRD(ctx context.Context, dyn dynamic.Interface, fieldManager string, p *graph.ParentCRD, log *zap.Logger) error {
	want := p.CRD
	crds := dyn.Resource(extv1.SchemeGroupVersion.WithResource("customresourcedefinitions"))
	before := ""
	live, err := crds.Get(ctx, want.Name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
	case err != nil:
		return fmt.Errorf("get CustomResourceDefinition %s: %w", want.Name, err)
	default:
		var stored extv1.CustomResourceDefinition
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(live.Object, &stored); err != nil {
			return fmt.Errorf("CustomResourceDefinition %s: %w", want.Name, err)
		}
		if changes := graph.BreakingChanges(&stored, want); len(changes) > 0 {
			return fmt.Errorf("%w: %s would change in a way that breaks the objects stored (%s): %s; "+
				"make the change compatible, or migrate the objects and apply the CRD yourself",
				errCRDRefused, want.Name, p.Where, strings.Join(changes, "; "))
		}
		before = live.GetResourceVersion()
	}
	manifest, err := graph.CRDManifest(want)
	if err != nil {
		return err
	}
	body, err := yaml.YAMLToJSON(manifest)
	if err != nil {
		return err
	}
	force := false
	applied, err := crds.Patch(ctx, want.Name, types.ApplyPatchType, body, metav1.PatchOptions{FieldManager: fieldManager, Force: &force})
	switch {
	case apierrors.IsConflict(err):
		return fmt.Errorf("%w: %s: fields resyncd would change are another field manager's, and resyncd does not take them: %w", errCRDRefused, want.Name, err)
	case apierrors.IsInvalid(err):
		return fmt.Errorf("%w: %s: %w", errCRDRefused, want.Name, err)
	case err != nil:
		return fmt.Errorf("apply CustomResourceDefinition %s: %w", want.Name, err)
	}
	if applied.GetResourceVersion() == before {
		return nil
	}
	log.Info("CRD applied", zap.String("crd", want.Name), zap.Bool("created", before == ""))
	return awaitEstablished(ctx, dyn, want.Name)
}

// awaitEstablished waits, up to establishWait, for the CRD named to be
// served; one whose names another CRD holds is refused.
func awaitEstablished(ctx context.Context, dyn dynamic.Interface, name string) error {
	crds := dyn.Resource(extv1.SchemeGroupVersion.WithResource("customresourcedefinitions"))
	deadline := time.Now().Add(establishWait)
	for {
		u, err := crds.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return fmt.Errorf("get CustomResourceDefinition %s: %w", name, err)
		}
		var crd extv1.CustomResourceDefinition
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &crd); err != nil {
			return err
		}
		for _, c := range crd.Status.Conditions {
			switch {
			case c.Type == extv1.Established && c.Status == extv1.ConditionTrue:
				return nil
			case c.Type == extv1.NamesAccepted && c.Status == extv1.ConditionFalse:
				return fmt.Errorf("%w: %s: %s", errCRDRefused, name, c.Message)
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("CustomResourceDefinition %s is not established after %s", name, establishWait)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}
