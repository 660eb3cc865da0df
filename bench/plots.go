package main

import (
	"bytes"
	"errors"
	"fmt"
	"image/color"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgsvg"
)

// A figure is one plot of the report: the file it is written to beside
// the report, what the report calls it, and the plot; nil when the run
// measured nothing it draws.
type figure struct {
	name, caption string
	plot          *plot.Plot
}

// figures draws the report's plots from the samples alone, so that
// -from draws the same.
func (sum *summary) figures() []figure {
	return []figure{
		{"rss", "Peak RSS a parent, in sync, against N", linePlot("Peak RSS a parent, in sync", "N (parents)", "KiB a parent", true, true, sum.rssSeries())},
		{"bytes", "Bytes the API server sends an hour a parent, everything in sync, against N",
			linePlot("Bytes sent an hour a parent, everything in sync", "N (parents)", "KiB an hour a parent", true, false, sum.bytesSeries())},
		{"latency", "How long drift lives against resyncd's interval; the watching controllers as lines",
			linePlot("How long drift lives", "resyncd's interval, s", "seconds", true, true, sum.latencySeries())},
		{"cpu", "kube-apiserver CPU an hour, quiet and under churn", sum.cpuPlot()},
	}
}

// writeReport writes the Markdown report to doc and its plots beside it
// (doc's name, a suffix, .svg), removing a plot of an earlier run that
// this one has no figures for.
func (sum *summary) writeReport(doc, jsonPath string) error {
	stem := strings.TrimSuffix(doc, filepath.Ext(doc))
	var shown []figure
	for _, f := range sum.figures() {
		path := stem + "-" + f.name + ".svg"
		if f.plot == nil {
			if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
				return err
			}
			continue
		}
		svg, err := render(f.plot)
		if err != nil {
			return fmt.Errorf("plot %s: %w", f.name, err)
		}
		if err := os.WriteFile(path, svg, 0o644); err != nil {
			return err
		}
		f.name = filepath.Base(path)
		shown = append(shown, f)
	}
	return os.WriteFile(doc, []byte(sum.markdown(jsonPath, shown)), 0o644)
}

// render draws p as SVG, its legend in a column right of the data, where
// it hides no point.
func render(p *plot.Plot) ([]byte, error) {
	const w, h = 9 * vg.Inch, 4 * vg.Inch
	c := vgsvg.New(w, h)
	dc := draw.New(c)
	legend := p.Legend
	p.Legend = plot.NewLegend()
	legend.Top, legend.Left, legend.XOffs, legend.YOffs = true, true, vg.Points(8), -vg.Points(24)
	r := legend.Rectangle(dc)
	// A third more than the font's own metrics: a viewer without
	// Liberation Serif draws the labels in a wider face.
	lw := (r.Max.X-r.Min.X)*4/3 + vg.Points(16)
	p.Draw(draw.Crop(dc, 0, -lw, 0, 0))
	legend.Draw(draw.Crop(dc, w-lw, 0, 0, 0))
	var buf bytes.Buffer
	if _, err := c.WriteTo(&buf); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// logTicks marks a log axis at 1, 2 and 5 times each power of ten, and
// between them unlabelled, so that a range within a decade has labels.
type logTicks struct{}

func (logTicks) Ticks(lo, hi float64) []plot.Tick {
	var ticks []plot.Tick
	for k := math.Floor(math.Log10(lo)); math.Pow(10, k) <= hi; k++ {
		for m := 1.0; m < 10; m++ {
			v := m * math.Pow(10, k)
			if v < lo*(1-1e-9) || v > hi*(1+1e-9) {
				continue
			}
			t := plot.Tick{Value: v}
			if m == 1 || m == 2 || m == 5 {
				t.Label = strconv.FormatFloat(v, 'f', -1, 64)
			}
			ticks = append(ticks, t)
		}
	}
	return ticks
}

// plotsSection is the report's section of plots, each a link to its file.
func plotsSection(shown []figure) string {
	if len(shown) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString("### Plots\n\nDrawn by the bench from the samples below (`-from` draws them again).\n\n")
	for _, f := range shown {
		fmt.Fprintf(&b, "![%s](%s)\n\n", f.caption, f.name)
	}
	return b.String()
}

// palette gives each contender the same colour in every plot.
var palette = map[string]color.Color{
	resyncdName:   color.RGBA{R: 0x1f, G: 0x77, B: 0xb4, A: 0xff},
	crName:        color.RGBA{R: 0xd6, G: 0x27, B: 0x28, A: 0xff},
	cr8Name:       color.RGBA{R: 0xff, G: 0x7f, B: 0x0e, A: 0xff},
	floorName:     color.RGBA{R: 0x7f, G: 0x7f, B: 0x7f, A: 0xff},
	listName:      color.RGBA{R: 0xbc, G: 0xbd, B: 0x22, A: 0xff},
	kroName:       color.RGBA{R: 0x94, G: 0x67, B: 0xbd, A: 0xff},
	kroTunedName:  color.RGBA{R: 0xe3, G: 0x77, B: 0xc2, A: 0xff},
	"resyncd-rgd": color.RGBA{R: 0x17, G: 0xbe, B: 0xcf, A: 0xff},
	"idle":        color.RGBA{R: 0x2c, G: 0x2c, B: 0x2c, A: 0xff},
}

// colourOf is c's colour: resyncd at any interval resyncd's, serving an
// RGD its own.
func colourOf(c string) color.Color {
	switch {
	case strings.HasPrefix(c, kroResyncdPrefix):
		return palette["resyncd-rgd"]
	case strings.HasPrefix(c, resyncdName):
		return palette[resyncdName]
	case palette[c] != nil:
		return palette[c]
	}
	return color.Black
}

// A series is one contender's points, in the order of x.
type series struct {
	// colour is the contender colourOf colours it by.
	colour, label string
	xy            plotter.XYs
	dashed        bool
}

func (s *series) add(x, y float64) {
	if math.IsNaN(x) || math.IsNaN(y) {
		return
	}
	i, _ := slices.BinarySearchFunc(s.xy, x, func(p plotter.XY, x float64) int {
		return cmpFloat(p.X, x)
	})
	s.xy = slices.Insert(s.xy, i, plotter.XY{X: x, Y: y})
}

func cmpFloat(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// seriesSet keeps series in the order they were first added.
type seriesSet struct {
	order []string
	by    map[string]*series
}

func (ss *seriesSet) get(key, colour, label string) *series {
	if ss.by == nil {
		ss.by = map[string]*series{}
	}
	if s := ss.by[key]; s != nil {
		return s
	}
	s := &series{colour: colour, label: label}
	ss.by[key] = s
	ss.order = append(ss.order, key)
	return s
}

// positive are the series with at least one point, without the points a
// log axis cannot show.
func (ss *seriesSet) positive(logX, logY bool) []*series {
	var out []*series
	for _, k := range ss.order {
		s := ss.by[k]
		s.xy = slices.DeleteFunc(s.xy, func(p plotter.XY) bool { return (logX && p.X <= 0) || (logY && p.Y <= 0) })
		if len(s.xy) > 0 {
			out = append(out, s)
		}
	}
	return out
}

// linePlot draws the series as lines with points, nil if none has one.
func linePlot(title, x, y string, logX, logY bool, ss *seriesSet) *plot.Plot {
	shown := ss.positive(logX, logY)
	if len(shown) == 0 {
		return nil
	}
	p := plot.New()
	p.Title.Text, p.X.Label.Text, p.Y.Label.Text = title, x, y
	if logX {
		p.X.Scale, p.X.Tick.Marker = plot.LogScale{}, logTicks{}
	}
	if logY {
		p.Y.Scale, p.Y.Tick.Marker = plot.LogScale{}, logTicks{}
	}
	p.Add(plotter.NewGrid())
	for i, s := range shown {
		l, pts, err := plotter.NewLinePoints(s.xy)
		if err != nil {
			continue
		}
		l.Color, pts.Color = colourOf(s.colour), colourOf(s.colour)
		pts.Shape = shapes[i%len(shapes)]
		pts.Radius = vg.Points(3)
		if s.dashed {
			l.Dashes = []vg.Length{vg.Points(5), vg.Points(3)}
		}
		p.Add(l, pts)
		p.Legend.Add(s.label, l, pts)
	}
	p.Legend.TextStyle.Font.Size = vg.Points(9)
	return p
}

var shapes = []draw.GlyphDrawer{draw.CircleGlyph{}, draw.BoxGlyph{}, draw.TriangleGlyph{}, draw.PyramidGlyph{}, draw.CrossGlyph{}, draw.PlusGlyph{}, draw.RingGlyph{}}

// plotted are the contenders of the per-parent plots, HttpService's.
var plotted = []string{resyncdName, crName, cr8Name, floorName, listName}

// rssSeries: each contender's peak RSS in sync over N, at each N measured
// (the fixed part's handful too); kro's figure's contenders over their
// instances, their peak over the figure.
func (sum *summary) rssSeries() *seriesSet {
	var ss seriesSet
	zs := slices.Clone(sum.sizes)
	if sum.fixed != nil {
		zs = append(zs, *sum.fixed)
	}
	for _, c := range plotted {
		for _, z := range zs {
			if st := z.SyncRSS[c]; st.Count > 0 {
				ss.get(c, c, labels[c]+" (HttpService)").add(float64(z.N), st.Median/float64(z.N)/1024)
			}
		}
	}
	if kr := sum.res.Kro; kr != nil {
		for _, at := range kr.At {
			f := kroFigsOf(kr, at)
			for _, c := range []string{kroName, kroTunedName, f.fast} {
				if v := f.rss[c]; v > 0 {
					ss.get("rgd/"+c, c, tradeOffLabel(c, kr.Intervals[c])+" (WebApp RGD)").add(float64(at.N), v/float64(at.N)/1024)
				}
			}
		}
	}
	return &ss
}

// bytesSeries: the bytes the API server sent an hour, over N, in the
// windows with everything in sync: the trade-off's (HttpService) and the
// kro figure's (WebApp RGD).
func (sum *summary) bytesSeries() *seriesSet {
	var ss seriesSet
	perParent := func(key, colour, label string, w WindowSample, n int) {
		if w.Error == "" && w.Seconds > 0 {
			ss.get(key, colour, label).add(float64(n), hourly(w.Traffic.Bytes, w.Seconds)/float64(n)/1024)
		}
	}
	if to := sum.res.TradeOff; to != nil {
		for _, w := range to.Windows {
			if w.Contender != "idle" {
				perParent("ho/"+w.Contender, w.Contender, tradeOffLabel(w.Contender, w.Interval)+" (HttpService)", *w, to.N)
			}
		}
	}
	if kr := sum.res.Kro; kr != nil {
		for _, at := range kr.At {
			for _, w := range at.Quiet {
				perParent("rgd/"+w.Contender, w.Contender, tradeOffLabel(w.Contender, kr.Intervals[w.Contender])+" (WebApp RGD)", w.WindowSample, at.N)
			}
		}
	}
	return &ss
}

// latencySeries: drift latency's p50 and p99 against resyncd's interval,
// everything else quiet (the churn's tables give it under churn); each watching controller's as a flat line
// across the intervals, since it has none.
func (sum *summary) latencySeries() *seriesSet {
	type group struct {
		what string
		ls   []*LatencySample
		kro  *KroRun
	}
	var groups []group
	if to := sum.res.TradeOff; to != nil {
		groups = append(groups, group{"HttpService", to.Latency, nil})
	}
	if kr := sum.res.Kro; kr != nil {
		for _, at := range kr.At {
			what := "WebApp RGD"
			if len(kr.At) > 1 {
				what += fmt.Sprintf(", N = %d", at.N)
			}
			groups = append(groups, group{what, at.Latency, kr})
		}
	}
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, g := range groups {
		for _, l := range g.ls {
			if l.Interval > 0 && l.Error == "" && len(l.Seconds) > 0 {
				lo, hi = math.Min(lo, l.Interval), math.Max(hi, l.Interval)
			}
		}
	}
	if math.IsInf(lo, 1) {
		return &seriesSet{}
	}
	lo, hi = lo/2, hi*2
	var ss seriesSet
	for _, g := range groups {
		for _, l := range g.ls {
			if l.Error != "" || len(l.Seconds) == 0 {
				continue
			}
			name := labels[l.Contender]
			key := l.Contender
			if l.Interval > 0 {
				name, key = "resyncd", resyncdName
				if g.kro != nil {
					key = kroResyncdPrefix
				}
			}
			for _, q := range []struct {
				name string
				q    float64
			}{{"p50", 0.5}, {"p99", 0.99}} {
				s := ss.get(g.what+"/"+key+"/"+q.name, key, fmt.Sprintf("%s %s (%s)", name, q.name, g.what))
				s.dashed = q.name == "p99"
				v := quantile(l.Seconds, q.q)
				if l.Interval > 0 {
					s.add(l.Interval, v)
				} else {
					s.add(lo, v)
					s.add(hi, v)
				}
			}
		}
	}
	return &ss
}

// cpuPlot: the API server's CPU an hour of every plane, quiet and under
// churn side by side; a plane not measured under churn has one bar.
func (sum *summary) cpuPlot() *plot.Plot {
	type bar struct {
		label        string
		quiet, churn float64
	}
	var bars []*bar
	byName := map[string]*bar{}
	at := func(key, label string) *bar {
		if b := byName[key]; b != nil {
			return b
		}
		b := &bar{label: label, quiet: math.NaN(), churn: math.NaN()}
		byName[key] = b
		bars = append(bars, b)
		return b
	}
	cpu := func(w WindowSample) float64 {
		if w.Error != "" || w.Seconds <= 0 {
			return math.NaN()
		}
		return hourly(w.APIServerCPU, w.Seconds)
	}
	short := func(c string, interval float64) string {
		if interval > 0 {
			return "resyncd " + shortDuration(secondsDuration(interval))
		}
		return map[string]string{crName: "controller-runtime", cr8Name: "c-r, 8 workers", kroName: "kro", kroTunedName: "kro, tuned", "idle": "idle"}[c]
	}
	if to := sum.res.TradeOff; to != nil {
		for _, w := range to.Windows {
			at("ho/"+w.Contender, short(w.Contender, w.Interval)).quiet = cpu(*w)
		}
		if to.Churn != nil {
			for _, w := range to.Churn.Windows {
				at("ho/"+w.Contender, short(w.Contender, w.Interval)).churn = cpu(w.WindowSample)
			}
		}
	}
	if kr := sum.res.Kro; kr != nil {
		for _, a := range kr.At {
			suffix := " (RGD)"
			if len(kr.At) > 1 {
				suffix = fmt.Sprintf(" (RGD, %d)", a.N)
			}
			key := fmt.Sprintf("rgd%d/", a.N)
			for _, w := range a.Quiet {
				at(key+w.Contender, short(w.Contender, kr.Intervals[w.Contender])+suffix).quiet = cpu(w.WindowSample)
			}
			if a.Churn != nil {
				for _, w := range a.Churn.Windows {
					at(key+w.Contender, short(w.Contender, kr.Intervals[w.Contender])+suffix).churn = cpu(w.WindowSample)
				}
			}
		}
	}
	if len(bars) == 0 {
		return nil
	}
	p := plot.New()
	p.Title.Text, p.Y.Label.Text = "kube-apiserver CPU an hour", "CPU seconds an hour"
	p.Add(plotter.NewGrid())
	width := vg.Points(14)
	for i, kind := range []struct {
		name   string
		v      func(*bar) float64
		colour color.Color
	}{
		{"quiet", func(b *bar) float64 { return b.quiet }, color.RGBA{R: 0x1f, G: 0x77, B: 0xb4, A: 0xff}},
		{"under churn", func(b *bar) float64 { return b.churn }, color.RGBA{R: 0xd6, G: 0x27, B: 0x28, A: 0xff}},
	} {
		var legend *plotter.BarChart
		for x, b := range bars {
			v := kind.v(b)
			if math.IsNaN(v) {
				continue
			}
			bc, err := plotter.NewBarChart(plotter.Values{v}, width)
			if err != nil {
				continue
			}
			bc.XMin, bc.Offset = float64(x), width*vg.Length(2*i-1)/2
			bc.Color, bc.LineStyle.Width = kind.colour, 0
			p.Add(bc)
			legend = bc
		}
		if legend != nil {
			p.Legend.Add(kind.name, legend)
		}
	}
	names := make([]string, len(bars))
	for i, b := range bars {
		names[i] = b.label
	}
	p.NominalX(names...)
	p.X.Tick.Label.Rotation = math.Pi / 6
	p.X.Tick.Label.XAlign, p.X.Tick.Label.YAlign = draw.XRight, draw.YCenter
	p.Legend.TextStyle.Font.Size = vg.Points(9)
	return p
}
