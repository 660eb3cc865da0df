package desired

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
)

// httpServiceStatus is the part of HttpService's status its renderer
// owns; the engine adds observedGeneration and the conditions.
type httpServiceStatus struct {
	Replicas        int32        `json:"replicas"`
	ReadyReplicas   int32        `json:"readyReplicas"`
	URL             string       `json:"url,omitempty"`
	LastAppliedTime *metav1.Time `json:"lastAppliedTime,omitempty"`
}

// deploymentStatus is the part of a Deployment's status readiness needs.
type deploymentStatus struct {
	ObservedGeneration  int64 `json:"observedGeneration"`
	Replicas            int32 `json:"replicas"`
	UpdatedReplicas     int32 `json:"updatedReplicas"`
	ReadyReplicas       int32 `json:"readyReplicas"`
	AvailableReplicas   int32 `json:"availableReplicas"`
	UnavailableReplicas int32 `json:"unavailableReplicas"`
}

// Status implements Renderer: the replica counts and the URL, the last
// time a child was changed, and readiness from the Deployment's status.
func (HTTPService) Status(parent *unstructured.Unstructured, obs Observation) (Status, error) {
	var old httpServiceStatus
	if raw, ok := parent.Object["status"].(map[string]any); ok {
		// A status that does not decode is replaced, not fatal.
		_ = runtime.DefaultUnstructuredConverter.FromUnstructured(raw, &old)
	}
	st := httpServiceStatus{LastAppliedTime: old.LastAppliedTime}
	if obs.Applied {
		t := metav1.NewTime(obs.Now.UTC().Truncate(1e9))
		st.LastAppliedTime = &t
	}
	spec, specErr := parseHTTPService(parent)
	if specErr == nil {
		st.URL = serviceURL(parent, spec)
	}
	dep, hasDep := findChild(obs.Children, "Deployment", parent.GetName())
	var ds deploymentStatus
	if hasDep {
		_ = runtime.DefaultUnstructuredConverter.FromUnstructured(dep.Status, &ds)
		st.Replicas, st.ReadyReplicas = ds.Replicas, ds.ReadyReplicas
	}
	fields, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&st)
	if err != nil {
		return Status{}, fmt.Errorf("%s/%s: status: %w", parent.GetNamespace(), parent.GetName(), err)
	}
	return Status{Fields: fields, Readiness: readiness(parent, spec, dep, hasDep, ds)}, nil
}

// readiness is Ready when the Deployment's controller has seen its
// generation and reports every desired replica updated, ready and
// available.
func readiness(parent *unstructured.Unstructured, spec *httpServiceSpec, dep Child, hasDep bool, ds deploymentStatus) Readiness {
	if !hasDep {
		return Readiness{Reason: "DeploymentMissing", Message: fmt.Sprintf("Deployment %s/%s does not exist yet", parent.GetNamespace(), parent.GetName())}
	}
	if ds.ObservedGeneration < dep.Generation {
		return Readiness{Reason: "WaitingForController", Message: fmt.Sprintf(
			"The deployment controller has not processed Deployment %s/%s generation %d yet (status.observedGeneration %d); "+
				"if this lasts, check that kube-controller-manager is running", parent.GetNamespace(), parent.GetName(), dep.Generation, ds.ObservedGeneration)}
	}
	want := ds.Replicas // autoscaled: whatever the autoscaler asked for
	if spec != nil && spec.Autoscaling == nil {
		want = 1
		if spec.Replicas != nil {
			want = *spec.Replicas
		}
	}
	if ds.UpdatedReplicas < want || ds.Replicas > ds.UpdatedReplicas || ds.AvailableReplicas < want || ds.ReadyReplicas < want {
		return Readiness{Reason: "RollingOut", Message: fmt.Sprintf("Deployment %s/%s is rolling out: %d of %d replicas updated, %d ready, %d available",
			parent.GetNamespace(), parent.GetName(), ds.UpdatedReplicas, want, ds.ReadyReplicas, ds.AvailableReplicas)}
	}
	return Readiness{Ready: true, Reason: "Available", Message: fmt.Sprintf("%d of %d replicas ready", ds.ReadyReplicas, want)}
}

func findChild(children []Child, kind, name string) (Child, bool) {
	for _, c := range children {
		if c.Kind == kind && c.Name == name {
			return c, true
		}
	}
	return Child{}, false
}
