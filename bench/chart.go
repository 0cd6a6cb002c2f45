// This file owns the PNG chart: one panel per workload, a horizontal bar of
// transactions/s per contender, coloured by kind, with a line at MariaDB's
// best mode, drawn with the standard library alone.
package main

import (
	"fmt"
	"image"
	"image/color"
	"image/png"
	"os"
	"strings"
)

var (
	chartBackground = color.RGBA{255, 255, 255, 255}
	chartInk        = color.RGBA{30, 30, 30, 255}
	chartMuted      = color.RGBA{110, 110, 110, 255}
	chartFailure    = color.RGBA{200, 30, 30, 255}
	chartGuide      = color.RGBA{30, 30, 30, 255}
	kindColor       = map[string]color.RGBA{
		"mariadb":        {31, 119, 180, 255},
		"gapless":        {255, 127, 14, 255},
		"mariadb-binlog": {140, 140, 140, 255},
	}
)

const (
	chartWidth   = 1200
	chartMargin  = 16
	chartScale   = 2
	chartRow     = 20
	chartBar     = 14
	labelColumns = 46
	valueSpace   = 200
)

func writeChart(path string, rp *report) error {
	img := drawChart(rp)
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

func drawChart(rp *report) *image.RGBA {
	height := chartMargin + 24 + 24 + 24 + 8
	for _, wr := range rp.Workloads {
		height += 30 + len(wr.Results)*chartRow + 12
	}
	height += chartMargin
	img := image.NewRGBA(image.Rect(0, 0, chartWidth, height))
	fill(img, img.Bounds(), chartBackground)

	maxChars := (chartWidth - 2*chartMargin) / (glyphAdvance * chartScale)
	y := chartMargin
	drawText(img, chartMargin, y, clip("Transactions/s applied, per contender (higher is better)", maxChars), chartScale, chartInk)
	y += 24
	target := "durable targets"
	if !rp.Durable {
		target = "non-durable targets"
	}
	sub := fmt.Sprintf("%s, %d cores, %s, N=%d, median of %d run(s), shared noisy machine",
		rp.Began.Format("2006-01-02"), rp.Machine.Cores, target, rp.Workers, rp.Runs)
	drawText(img, chartMargin, y, clip(sub, maxChars), chartScale, chartMuted)
	y += 24
	x := chartMargin
	for _, key := range []struct{ kind, label string }{{"mariadb", "MariaDB replica"}, {"gapless", "gapless"}, {"mariadb-binlog", "mariadb-binlog | mariadb"}} {
		fill(img, image.Rect(x, y, x+chartBar, y+chartBar), kindColor[key.kind])
		x += chartBar + 6
		drawText(img, x, y, key.label, chartScale, chartInk)
		x += textWidth(key.label, chartScale) + 24
	}
	for xx := x; xx < x+24; xx += 4 {
		fill(img, image.Rect(xx, y+6, xx+2, y+7), chartGuide)
	}
	drawText(img, x+30, y, "MariaDB's best mode", chartScale, chartInk)
	y += 24 + 8

	labelRight := chartMargin + labelColumns*glyphAdvance*chartScale
	barX := labelRight + 12
	barMax := chartWidth - chartMargin - valueSpace - barX
	for _, wr := range rp.Workloads {
		w := wr.Rec.Workload
		drawText(img, chartMargin, y+6, clip(w.ID+": "+w.Short, maxChars), chartScale, chartInk)
		y += 30
		top := 0.0
		for _, r := range wr.Results {
			top = max(top, wr.perSecond(r))
		}
		best, _ := wr.bestMariaDB("")
		if best > 0 && top > 0 {
			x := barX + int(float64(wr.Rec.Transactions)/best/top*float64(barMax))
			for yy := y; yy < y+len(wr.Results)*chartRow; yy += 4 {
				fill(img, image.Rect(x, yy, x+1, yy+2), chartGuide)
			}
		}
		for _, r := range wr.Results {
			label := clip(r.Contender.Label, labelColumns)
			drawText(img, labelRight-textWidth(label, chartScale), y+(chartRow-glyphHeight*chartScale)/2, label, chartScale, chartInk)
			tps := wr.perSecond(r)
			textY := y + (chartRow-glyphHeight*chartScale)/2
			if tps == 0 {
				drawText(img, barX, textY, failureWord(r.stats()), chartScale, chartFailure)
				y += chartRow
				continue
			}
			length := max(1, int(tps/top*float64(barMax)))
			barTop := y + (chartRow-chartBar)/2
			fill(img, image.Rect(barX, barTop, barX+length, barTop+chartBar), kindColor[r.Contender.Kind])
			value, ink := fmt.Sprintf("%.0f", tps), chartInk
			if s := r.stats(); s.Failed+s.Diverged > 0 {
				value, ink = value+" "+failureWord(s), chartFailure
			}
			fill(img, image.Rect(barX+length+4, textY-2, barX+length+12+textWidth(value, chartScale), textY+glyphHeight*chartScale+2), chartBackground)
			drawText(img, barX+length+8, textY, value, chartScale, ink)
			y += chartRow
		}
		y += 12
	}
	return img
}

func failureWord(s stats) string {
	if s.Diverged > 0 {
		return "diverged"
	}
	return "error"
}

func clip(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return strings.TrimSpace(string(r[:n-2])) + ".."
}

func fill(img *image.RGBA, r image.Rectangle, c color.RGBA) {
	for y := r.Min.Y; y < r.Max.Y; y++ {
		for x := r.Min.X; x < r.Max.X; x++ {
			img.SetRGBA(x, y, c)
		}
	}
}
