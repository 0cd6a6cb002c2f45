// html.go writes a report as one self-contained HTML page: the predicted
// speedup per policy against workers and the source's commit group sizes as
// inline SVG charts, then the text report and the advice.
//
// Invariant: everything taken from the binlog (names, statements) goes
// through html/template's escaping; only the SVG built here is trusted.
package analyze

import (
	"bytes"
	"fmt"
	"html/template"
	"io"
	"math"
	"strings"
)

var pageTemplate = template.Must(template.New("page").Parse(`<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>gapless analyze</title>
<style>
body { font-family: system-ui, sans-serif; margin: 2em; color: #222; max-width: 1100px; }
h1 { font-size: 1.4em; } h2 { font-size: 1.15em; margin-top: 1.6em; }
.charts { display: flex; flex-wrap: wrap; gap: 2em; }
figure { margin: 0; } figcaption { font-size: .9em; color: #555; }
pre { background: #f6f6f6; padding: 1em; overflow-x: auto; font-size: .85em; }
li { margin: .3em 0; }
svg text { font-size: 11px; fill: #333; }
</style></head><body>
<h1>gapless analyze</h1>
<p>{{.Report.Input}} &mdash; {{.Report.Transactions}} transactions.</p>
<h2>Advice</h2>
<ul>{{range .Report.Advice}}<li>{{.}}</li>{{end}}</ul>
<div class="charts">
<figure>{{.Speedup}}<figcaption>Predicted speedup over serial apply, per policy, against workers (strict commit order; dashed: ideal).</figcaption></figure>
<figure>{{.Groups}}<figcaption>Source commit groups (by {{.Report.GroupCommit.By}}): transactions per group size.</figcaption></figure>
</div>
<h2>Report</h2>
<pre>{{.Text}}</pre>
</body></html>
`))

// WriteHTML writes the report as an HTML page with charts.
func (r *Report) WriteHTML(w io.Writer) error {
	var text bytes.Buffer
	if err := r.WriteText(&text); err != nil {
		return err
	}
	return pageTemplate.Execute(w, struct {
		Report  *Report
		Speedup template.HTML
		Groups  template.HTML
		Text    string
	}{r, template.HTML(speedupChart(r)), template.HTML(groupChart(r)), text.String()})
}

var chartColors = []string{"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b"}

const (
	chartW, chartH                    = 520, 320
	marginL, marginR, marginT         = 50, 110, 15
	marginB                           = 40
	plotW, plotH                      = chartW - marginL - marginR, chartH - marginT - marginB
	barChartW                         = 460
	barPlotW                          = barChartW - marginL - 20
	maxTicks                          = 8
	speedupFloor              float64 = 1
)

// speedupChart plots speedup against workers on log-log axes.
func speedupChart(r *Report) string {
	if len(r.Workers) == 0 {
		return ""
	}
	maxW := float64(r.Workers[len(r.Workers)-1])
	top := math.Max(maxW, speedupFloor)
	logX := func(w float64) float64 {
		if maxW <= 1 {
			return marginL
		}
		return marginL + plotW*math.Log2(w)/math.Log2(maxW)
	}
	logY := func(v float64) float64 {
		v = math.Max(v, 1)
		if top <= 1 {
			return marginT + plotH
		}
		return marginT + plotH - plotH*math.Log2(v)/math.Log2(top)
	}
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" role="img" aria-label="predicted speedup">`, chartW, chartH)
	fmt.Fprintf(&b, `<rect x="%d" y="%d" width="%d" height="%d" fill="none" stroke="#999"/>`, marginL, marginT, plotW, plotH)
	for _, w := range r.Workers {
		x := logX(float64(w))
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#eee"/>`, x, marginT, x, marginT+plotH)
		fmt.Fprintf(&b, `<text x="%.1f" y="%d" text-anchor="middle">%d</text>`, x, marginT+plotH+15, w)
	}
	for v := 1.0; v <= top; v *= 2 {
		y := logY(v)
		fmt.Fprintf(&b, `<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#eee"/>`, marginL, y, marginL+plotW, y)
		fmt.Fprintf(&b, `<text x="%d" y="%.1f" text-anchor="end">%gx</text>`, marginL-5, y+4, v)
	}
	fmt.Fprintf(&b, `<text x="%d" y="%d" text-anchor="middle">workers</text>`, marginL+plotW/2, chartH-5)
	fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#aaa" stroke-dasharray="4 3"/>`, logX(1), logY(1), logX(maxW), logY(maxW))
	for i, p := range r.Policies {
		color := chartColors[i%len(chartColors)]
		var pts []string
		for _, w := range r.Workers {
			pts = append(pts, fmt.Sprintf("%.1f,%.1f", logX(float64(w)), logY(p.Speedup[workersKey(w)])))
		}
		fmt.Fprintf(&b, `<polyline fill="none" stroke="%s" stroke-width="2" points="%s"/>`, color, strings.Join(pts, " "))
		for _, w := range r.Workers {
			v := p.Speedup[workersKey(w)]
			fmt.Fprintf(&b, `<circle cx="%.1f" cy="%.1f" r="3" fill="%s"><title>%s, %d workers: %.2fx</title></circle>`, logX(float64(w)), logY(v), color, template.HTMLEscapeString(p.Name), w, v)
		}
		last := p.Speedup[workersKey(r.Workers[len(r.Workers)-1])]
		fmt.Fprintf(&b, `<text x="%d" y="%d" fill="%s">%s %.1fx</text>`, marginL+plotW+8, marginT+14+16*i, color, template.HTMLEscapeString(p.Name), last)
		fmt.Fprintf(&b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="%s" stroke-width="2"/>`, marginL+plotW+2, marginT+10+16*i, marginL+plotW+6, marginT+10+16*i, color)
	}
	b.WriteString(`</svg>`)
	return b.String()
}

// groupChart is a bar chart of transactions per commit group size.
func groupChart(r *Report) string {
	buckets := r.GroupCommit.Histogram
	most := 0
	for _, g := range buckets {
		most = max(most, g.Transactions)
	}
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" role="img" aria-label="commit group sizes">`, barChartW, chartH)
	fmt.Fprintf(&b, `<rect x="%d" y="%d" width="%d" height="%d" fill="none" stroke="#999"/>`, marginL, marginT, barPlotW, plotH)
	if most == 0 || len(buckets) == 0 {
		b.WriteString(`</svg>`)
		return b.String()
	}
	slot := float64(barPlotW) / float64(len(buckets))
	for i, g := range buckets {
		h := float64(plotH) * float64(g.Transactions) / float64(most)
		x := float64(marginL) + slot*float64(i)
		fmt.Fprintf(&b, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s"><title>%s: %d groups, %d transactions</title></rect>`,
			x+slot*0.15, float64(marginT+plotH)-h, slot*0.7, h, chartColors[0], bucketLabel(g), g.Groups, g.Transactions)
		fmt.Fprintf(&b, `<text x="%.1f" y="%d" text-anchor="middle">%s</text>`, x+slot/2, marginT+plotH+15, bucketLabel(g))
	}
	for i := 0; i <= 4; i++ {
		v := most * i / 4
		y := float64(marginT+plotH) - float64(plotH)*float64(i)/4
		fmt.Fprintf(&b, `<text x="%d" y="%.1f" text-anchor="end">%d</text>`, marginL-5, y+4, v)
	}
	fmt.Fprintf(&b, `<text x="%d" y="%d" text-anchor="middle">transactions per group</text>`, marginL+barPlotW/2, chartH-5)
	b.WriteString(`</svg>`)
	return b.String()
}
