package main

import (
	"fmt"
	"image/color"
	"path/filepath"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
)

// chartFloor is the bottom of the charts' log scale: a bin with fewer
// deliveries (an outage) is drawn there.
const chartFloor = 100

// drawCharts draws, for each scenario marked Chart, delivered events/s over
// time (first round of each contender, binWidth bins, log scale), with the
// outages shaded, and returns the files written.
func drawCharts(dir string, res *Results) []string {
	var out []string
	for _, sc := range res.Scenarios {
		if !sc.Chart {
			continue
		}
		path := filepath.Join(dir, sc.Name+".png")
		if err := drawChart(path, &sc, res); err != nil {
			res.Errors = append(res.Errors, fmt.Sprintf("chart %s: %v", sc.Name, err))
			continue
		}
		out = append(out, path)
	}
	return out
}

func drawChart(path string, sc *scenario, res *Results) error {
	p := plot.New()
	p.Title.Text = fmt.Sprintf("%s: %s", sc.Name, sc.Description)
	p.X.Label.Text = "seconds since the producer started"
	p.Y.Label.Text = "delivered events/s (log scale)"
	p.Y.Scale, p.Y.Tick.Marker = plot.LogScale{}, plot.LogTicks{Prec: -1}
	p.Legend.Top, p.Legend.Left = true, false
	ymax, shaded := float64(chartFloor*10), false
	for _, f := range res.Figures {
		if f.Scenario == sc.Name && len(f.Rounds) > 0 {
			for _, v := range f.Rounds[0].Series {
				ymax = max(ymax, v)
			}
		}
	}
	i := 0
	for _, f := range res.Figures {
		if f.Scenario != sc.Name || len(f.Rounds) == 0 {
			continue
		}
		r := f.Rounds[0]
		if !shaded {
			shadeOutages(p, r, ymax*2)
			shaded = true
		}
		if err := addSeries(p, f.Contender, r.Series, i); err != nil {
			return err
		}
		i++
	}
	p.Y.Min, p.Y.Max = chartFloor, ymax*2
	return p.Save(11*vg.Inch, 5.5*vg.Inch, path)
}

func addSeries(p *plot.Plot, name string, series []float64, i int) error {
	pts := make(plotter.XYs, len(series))
	for k, v := range series {
		pts[k].X = (float64(k) + 0.5) * binWidth.Seconds()
		pts[k].Y = max(v, chartFloor)
	}
	l, err := plotter.NewLine(pts)
	if err != nil {
		return err
	}
	l.Color = plotutil.Color(i)
	l.Width = vg.Points(1.3)
	l.Dashes = plotutil.Dashes(i / 7)
	p.Add(l)
	p.Legend.Add(name, l)
	return nil
}

// shadeOutages draws the run's outages as grey bands.
func shadeOutages(p *plot.Plot, r *runResult, top float64) {
	for _, o := range r.Outages {
		x0, x1 := float64(o.From-r.T0)/1e9, float64(o.To-r.T0)/1e9
		poly, err := plotter.NewPolygon(plotter.XYs{{X: x0, Y: chartFloor}, {X: x1, Y: chartFloor}, {X: x1, Y: top}, {X: x0, Y: top}})
		if err != nil {
			continue
		}
		poly.Color = color.RGBA{R: 210, G: 210, B: 210, A: 255}
		poly.LineStyle.Width = 0
		p.Add(poly)
	}
}
