package main

import (
	"bytes"
	"context"
	"fmt"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"k8s.io/client-go/rest"
)

// benchResources are the collections the contenders read and write: the
// parents, the children, and of the kro figure its WebApp kinds, their
// ConfigMaps and kro's own objects; the API server's own traffic (leases,
// endpoints, its discovery) is left out.
var benchResources = map[string]bool{"httpservices": true, "deployments": true, "services": true, "horizontalpodautoscalers": true,
	"configmaps": true, kroFlat.gvr.Resource: true, kroChain.gvr.Resource: true, "resourcegraphdefinitions": true, "graphrevisions": true, "customresourcedefinitions": true}

// parentResources are the bench's parent kinds, whose status writes are
// counted apart; childResources the kinds of their children.
var (
	parentResources = map[string]bool{"httpservices": true, kroFlat.gvr.Resource: true, kroChain.gvr.Resource: true}
	childResources  = map[string]bool{"deployments": true, "services": true, "horizontalpodautoscalers": true, "configmaps": true}
)

// Traffic is what the API server counted for the bench collections, from
// its own apiserver_request_total and apiserver_response_sizes.
type Traffic struct {
	Requests     float64 `json:"requests"`
	Lists        float64 `json:"lists"`
	Gets         float64 `json:"gets"`
	Watches      float64 `json:"watches"`
	ChildWrites  float64 `json:"childWrites"`
	StatusWrites float64 `json:"statusWrites"`
	OtherWrites  float64 `json:"otherWrites"`
	DryRuns      float64 `json:"dryRuns"`
	// Bytes is what the API server sent: the sizes of GET and LIST
	// responses (it records no size for writes) and of watch events.
	Bytes float64 `json:"bytes"`
	// ListSeconds is the API server's own time serving the LISTs, from
	// receiving each request to the end of its response
	// (apiserver_request_duration_seconds): the floor of a client's pass.
	ListSeconds float64 `json:"listSeconds"`
}

// Writes is every write that was not a dry run.
func (t Traffic) Writes() float64 { return t.ChildWrites + t.StatusWrites + t.OtherWrites }

func (t Traffic) sub(o Traffic) Traffic { return t.plus(o, -1) }

func (t Traffic) add(o Traffic) Traffic { return t.plus(o, 1) }

// plus is t + k×o, field by field.
func (t Traffic) plus(o Traffic, k float64) Traffic {
	return Traffic{
		Requests: t.Requests + k*o.Requests, Lists: t.Lists + k*o.Lists, Gets: t.Gets + k*o.Gets, Watches: t.Watches + k*o.Watches,
		ChildWrites: t.ChildWrites + k*o.ChildWrites, StatusWrites: t.StatusWrites + k*o.StatusWrites,
		OtherWrites: t.OtherWrites + k*o.OtherWrites, DryRuns: t.DryRuns + k*o.DryRuns, Bytes: t.Bytes + k*o.Bytes,
		ListSeconds: t.ListSeconds + k*o.ListSeconds,
	}
}

// metricsText reads the API server's /metrics in Prometheus's text
// format, whatever content types rc asks for otherwise.
func metricsText(ctx context.Context, rc rest.Interface) ([]byte, error) {
	raw, err := rc.Get().AbsPath("/metrics").SetHeader("Accept", "text/plain").DoRaw(ctx)
	if err != nil {
		return nil, fmt.Errorf("API server metrics: %w", err)
	}
	return raw, nil
}

// scrapeTraffic reads the API server's /metrics.
func scrapeTraffic(ctx context.Context, rc rest.Interface) (Traffic, error) {
	raw, err := metricsText(ctx, rc)
	if err != nil {
		return Traffic{}, err
	}
	return parseTraffic(raw)
}

func parseTraffic(raw []byte) (Traffic, error) {
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(bytes.NewReader(raw))
	if err != nil {
		return Traffic{}, fmt.Errorf("API server metrics: %w", err)
	}
	var t Traffic
	for _, m := range fams["apiserver_request_total"].GetMetric() {
		l := labelMap(m)
		if !benchResources[l["resource"]] {
			continue
		}
		v := m.GetCounter().GetValue()
		t.Requests += v
		switch l["verb"] {
		case "LIST":
			t.Lists += v
		case "GET":
			t.Gets += v
		case "WATCH":
			t.Watches += v
		case "POST", "PUT", "PATCH", "APPLY", "DELETE", "DELETECOLLECTION":
			switch {
			case l["dry_run"] != "":
				t.DryRuns += v
			case parentResources[l["resource"]] && l["subresource"] == "status":
				t.StatusWrites += v
			case !childResources[l["resource"]]:
				t.OtherWrites += v // the parents themselves, RGDs, CRDs
			default:
				t.ChildWrites += v
			}
		}
	}
	for _, m := range fams["apiserver_request_duration_seconds"].GetMetric() {
		if l := labelMap(m); benchResources[l["resource"]] && l["verb"] == "LIST" {
			t.ListSeconds += m.GetHistogram().GetSampleSum()
		}
	}
	for _, name := range []string{"apiserver_response_sizes", "apiserver_watch_events_sizes"} {
		for _, m := range fams[name].GetMetric() {
			if benchResources[labelMap(m)["resource"]] {
				t.Bytes += m.GetHistogram().GetSampleSum()
			}
		}
	}
	return t, nil
}

// scrapeBytes reads from the API server's /metrics what it sent for each
// bench collection (as in Traffic.Bytes), by collection.
func scrapeBytes(ctx context.Context, rc rest.Interface) (map[string]float64, error) {
	raw, err := metricsText(ctx, rc)
	if err != nil {
		return nil, err
	}
	return parseBytes(raw)
}

// parseBytes is apiserver_response_sizes and apiserver_watch_events_sizes
// of the bench collections, by collection.
func parseBytes(raw []byte) (map[string]float64, error) {
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(bytes.NewReader(raw))
	if err != nil {
		return nil, fmt.Errorf("API server metrics: %w", err)
	}
	out := map[string]float64{}
	for _, name := range []string{"apiserver_response_sizes", "apiserver_watch_events_sizes"} {
		for _, m := range fams[name].GetMetric() {
			if r := labelMap(m)["resource"]; benchResources[r] {
				out[r] += m.GetHistogram().GetSampleSum()
			}
		}
	}
	return out, nil
}

func labelMap(m *dto.Metric) map[string]string {
	l := map[string]string{}
	for _, p := range m.GetLabel() {
		l[p.GetName()] = p.GetValue()
	}
	return l
}
