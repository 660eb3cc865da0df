package drills

import (
	"fmt"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/resyncd/resyncd/config"
	"github.com/resyncd/resyncd/internal/fixture"
)

// TestInvalidInputAtScale: 100 invalid among 1,000 parents. Every valid one
// converges; every invalid one is Stalled with one Event; nothing crashes;
// an invalid one costs at most one failed write per pass.
func TestInvalidInputAtScale(t *testing.T) {
	t.Parallel()
	d := newBulkDrill(t, "scale", func(c *config.Config) {
		c.Apply.QPS, c.Apply.Burst, c.Apply.MaxWritesPerPass = 1000, 1000, 10000
	})
	const total = 1000
	invalid := map[string]string{} // name → the Stalled reason it must show
	for i := range total {
		name := fmt.Sprintf("app-%04d", i)
		spec := map[string]any{"image": "nginx:1.27", "port": int64(8080)}
		switch i % 20 {
		case 0: // 50 that only the Deployment's own validation rejects
			spec["resources"] = map[string]any{"requests": map[string]any{"cpu": "2"}, "limits": map[string]any{"cpu": "1"}}
			invalid[name] = "Invalid"
		case 10: // 50 whose name cannot name a Service
			name = fmt.Sprintf("app.%04d", i)
			invalid[name] = "InvalidSpec"
		}
		d.createParent(name, spec)
	}

	var failed []int
	for pass := range 3 {
		rep := d.pass()
		if rep.Stalled != 100 {
			t.Errorf("pass %d: %d stalled, want 100", pass+1, rep.Stalled)
		}
		failed = append(failed, rep.Failed)
		if pass == 0 && rep.Created != 2*(total-100) {
			t.Errorf("first pass created %d children, want %d", rep.Created, 2*(total-100))
		}
		// Statuses may still change while the Deployments roll out.
		if pass > 0 && rep.Created+rep.Updated+rep.Deleted != 0 {
			t.Errorf("pass %d changed children: created %d, updated %d, deleted %d", pass+1, rep.Created, rep.Updated, rep.Deleted)
		}
	}
	for i, f := range failed {
		if f > 50 {
			t.Errorf("pass %d: %d failed writes, want at most one per invalid parent the server rejects (50)", i+1, f)
		}
	}

	list, err := d.dyn.Resource(httpServices).Namespace("scale").List(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range list.Items {
		want, bad := invalid[p.GetName()]
		got := conditionOf(&p, "Stalled")
		switch {
		case bad && got != "True/"+want:
			t.Errorf("%s: Stalled %s, want True/%s", p.GetName(), got, want)
		case !bad && got != "False/NoError":
			t.Errorf("%s: Stalled %s, want False/NoError", p.GetName(), got)
		}
	}
	deps, err := d.cs.AppsV1().Deployments("scale").List(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(deps.Items) != total-100 {
		t.Errorf("%d Deployments, want %d", len(deps.Items), total-100)
	}

	// One Warning Event per invalid parent, not one per pass.
	want := map[string]int{}
	for name, reason := range invalid {
		want[name+"/"+reason] = 1
	}
	got := fixture.WarningEvents(t, d.cs, "scale", "HttpService", want)
	perParent := map[string]int{}
	for key, n := range got {
		name, _, _ := strings.Cut(key, "/")
		perParent[name] += n
	}
	var wrong []string
	for name := range invalid {
		if perParent[name] != 1 {
			wrong = append(wrong, fmt.Sprintf("%s:%d", name, perParent[name]))
		}
	}
	if len(wrong) > 0 || len(perParent) != 100 {
		t.Errorf("Warning Events per parent: %d parents have some; wrong counts: %s", len(perParent), strings.Join(wrong, " "))
	}
}
