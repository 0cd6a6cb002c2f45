// This file owns the PNG chart, drawn with gonum/plot: one panel per
// workload, a horizontal bar per contender of its median seconds to apply
// the workload (lower is better), whiskers from the fastest to the slowest
// counted run, and a dashed mark at the time of MariaDB's best mode on
// targets configured the same way. A contender with no counted run has no
// bar, only the word error or diverged.
package main

import (
	"fmt"
	"image"
	"image/color"
	"image/png"
	"math"
	"os"
	"strconv"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/text"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

var (
	chartFailure = color.RGBA{200, 30, 30, 255}
	chartMuted   = color.RGBA{90, 90, 90, 255}
	kindColor    = map[string]color.RGBA{
		"mariadb":        {31, 119, 180, 255},
		"gapless":        {255, 127, 14, 255},
		"mariadb-binlog": {150, 150, 150, 255},
	}
	kindName = map[string]string{
		"mariadb":        "MariaDB replica",
		"gapless":        "gapless",
		"mariadb-binlog": "mariadb-binlog | mariadb",
	}
	// bestMark is the dashed line at MariaDB's best mode.
	bestMark = draw.LineStyle{Color: color.Black, Width: vg.Points(1.2), Dashes: []vg.Length{vg.Points(3), vg.Points(2)}}
)

const (
	chartDPI    = 96
	chartWidth  = 1200 * vg.Inch / chartDPI // 1200 pixels
	chartHeader = 76                        // points: title, subtitle, legend
	panelFrame  = 66                        // points per panel beside its rows: title, axis, gap
	panelRow    = 17                        // points per contender
)

func writeChart(path string, rp *report) error {
	img, err := drawChart(rp)
	if err != nil {
		return err
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := png.Encode(f, img); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// drawChart renders the whole chart: a header, then the panels top to bottom.
func drawChart(rp *report) (image.Image, error) {
	plot.DefaultFont = font.Font{Typeface: "Liberation", Variant: "Sans"}
	plotter.DefaultFont = plot.DefaultFont
	height := vg.Length(chartHeader)
	for _, wr := range rp.Workloads {
		height += panelHeight(wr)
	}
	canvas := vgimg.NewWith(vgimg.UseWH(chartWidth, height), vgimg.UseDPI(chartDPI), vgimg.UseBackgroundColor(color.White))
	dc := draw.New(canvas)
	top := height
	if err := drawHeader(draw.Crop(dc, 0, 0, top-chartHeader, 0), rp); err != nil {
		return nil, err
	}
	top -= chartHeader
	for _, wr := range rp.Workloads {
		h := panelHeight(wr)
		p, err := workloadPanel(wr, rp.Runs)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", wr.Rec.Workload.ID, err)
		}
		// A gap of 10 points above each panel, 6 below for its axis label's descent.
		p.Draw(draw.Crop(dc, vg.Points(4), -vg.Points(8), top-h+vg.Points(6), top-height-vg.Points(10)))
		top -= h
	}
	return canvas.Image(), nil
}

func panelHeight(wr *workloadResult) vg.Length {
	return vg.Length(panelFrame + panelRow*len(wr.Results))
}

// drawHeader writes the title and what the chart shows, and the legend.
func drawHeader(c draw.Canvas, rp *report) error {
	title := textStyle(15, color.Black)
	sub := textStyle(10, chartMuted)
	target := "durable targets"
	if !rp.Durable {
		target = "non-durable targets"
	}
	left := c.Min.X + vg.Points(12)
	c.FillText(title, vg.Point{X: left, Y: c.Max.Y - vg.Points(22)}, "Seconds to apply each workload, per contender (lower is better)")
	lines := []string{
		fmt.Sprintf("bar: median of %d run(s); whiskers: fastest to slowest run; only runs verified equal to the primary count", rp.Runs),
		fmt.Sprintf("%s, %s, %d cores, N = %d; a shared, noisy machine", rp.Began.Format("2006-01-02"), target, rp.Machine.Cores, rp.Workers),
	}
	for i, l := range lines {
		c.FillText(sub, vg.Point{X: left, Y: c.Max.Y - vg.Points(42+14*float64(i))}, l)
	}
	legend := plot.NewLegend()
	legend.TextStyle = textStyle(10, color.Black)
	for _, kind := range []string{"mariadb", "gapless", "mariadb-binlog"} {
		bar, err := plotter.NewBarChart(plotter.Values{1}, vg.Points(8))
		if err != nil {
			return err
		}
		bar.Color, bar.LineStyle.Width = kindColor[kind], 0
		legend.Add(kindName[kind], bar)
	}
	mark, err := plotter.NewLine(plotter.XYs{{X: 0, Y: 0}, {X: 1, Y: 0}})
	if err != nil {
		return err
	}
	mark.LineStyle = bestMark
	legend.Add("MariaDB's best mode (targets alike)", mark)
	legend.Top, legend.Padding = true, vg.Points(3)
	legend.Draw(draw.Crop(c, 0, -vg.Points(16), 0, -vg.Points(8)))
	return nil
}

// workloadPanel is one workload's plot: contenders from top to bottom in the
// report's order.
func workloadPanel(wr *workloadResult, runs int) (*plot.Plot, error) {
	w := wr.Rec.Workload
	p := plot.New()
	p.Title.Text = fmt.Sprintf("%s: %s (%s transactions)", w.ID, w.Short, groupThousands(wr.Rec.Transactions))
	p.Title.TextStyle.Font.Size = vg.Points(11)
	p.X.Label.Text = "seconds"
	p.X.Label.TextStyle.Font.Size = vg.Points(9)
	p.X.Tick.Label.Font.Size = vg.Points(9)
	p.Y.Tick.Label.Font.Size = vg.Points(10)
	p.X.Min = 0

	n := len(wr.Results)
	position := func(i int) float64 { return float64(n - 1 - i) }
	names := make([]string, n)
	longest := 0.0
	var failures plotter.XYLabels
	var values plotter.XYLabels
	for i, r := range wr.Results {
		names[n-1-i] = r.Contender.Label
		s := r.stats()
		if s.Counted == 0 {
			failures.XYs = append(failures.XYs, plotter.XY{X: 0, Y: position(i)})
			failures.Labels = append(failures.Labels, failureWord(s))
			continue
		}
		bar, err := plotter.NewBarChart(plotter.Values{s.Median}, vg.Points(panelRow*0.7))
		if err != nil {
			return nil, err
		}
		bar.Horizontal, bar.XMin = true, position(i)
		bar.Color, bar.LineStyle.Width = kindColor[r.Contender.Kind], 0
		p.Add(bar)
		if s.Counted > 1 {
			whisker, err := plotter.NewXErrorBars(minMax{x: s.Median, y: position(i), low: s.Median - s.Min, high: s.Max - s.Median})
			if err != nil {
				return nil, err
			}
			whisker.CapWidth = vg.Points(panelRow * 0.4)
			p.Add(whisker)
		}
		label := fmt.Sprintf("%.1f s", s.Median)
		if s.Failed+s.Diverged > 0 {
			label += fmt.Sprintf(" (%d of %d runs not counted: %s)", s.Failed+s.Diverged, s.Runs, failureWords(s))
		}
		values.XYs = append(values.XYs, plotter.XY{X: s.Max, Y: position(i)})
		values.Labels = append(values.Labels, label)
		longest = max(longest, s.Max)
		if best, _ := wr.bestMariaDB(r.Contender.Variant()); best > 0 {
			mark, err := plotter.NewLine(plotter.XYs{{X: best, Y: position(i) - 0.45}, {X: best, Y: position(i) + 0.45}})
			if err != nil {
				return nil, err
			}
			mark.LineStyle = bestMark
			p.Add(mark)
		}
	}
	// Room right of the longest whisker for its value.
	p.X.Max = math.Max(longest*1.18, 1)
	p.NominalY(names...)
	for _, l := range []struct {
		labels plotter.XYLabels
		color  color.Color
	}{{values, color.Black}, {failures, chartFailure}} {
		if len(l.labels.XYs) == 0 {
			continue
		}
		labels, err := plotter.NewLabels(l.labels)
		if err != nil {
			return nil, err
		}
		for i := range labels.TextStyle {
			labels.TextStyle[i].Color = l.color
			labels.TextStyle[i].Font.Size = vg.Points(9)
			labels.TextStyle[i].YAlign = draw.YCenter
		}
		labels.Offset = vg.Point{X: vg.Points(7)}
		p.Add(labels)
	}
	return p, nil
}

// groupThousands writes n with a space between groups of three digits.
func groupThousands(n int64) string {
	s := strconv.FormatInt(n, 10)
	for i := len(s) - 3; i > 0 && s[i-1] != '-'; i -= 3 {
		s = s[:i] + " " + s[i:]
	}
	return s
}

// minMax is one bar's whisker: from low below x to high above it.
type minMax struct{ x, y, low, high float64 }

func (m minMax) Len() int                      { return 1 }
func (m minMax) XY(int) (float64, float64)     { return m.x, m.y }
func (m minMax) XError(int) (float64, float64) { return m.low, m.high }
func textStyle(size float64, c color.Color) text.Style {
	return text.Style{Color: c, Font: font.From(plot.DefaultFont, vg.Points(size)), Handler: plot.DefaultTextHandler}
}

func failureWord(s stats) string {
	if s.Diverged > 0 {
		return "diverged"
	}
	return "error"
}

func failureWords(s stats) string {
	switch {
	case s.Diverged > 0 && s.Failed > 0:
		return "errors, divergences"
	case s.Diverged > 0:
		return "diverged"
	}
	return "errors"
}
