package main

import (
	"bufio"
	"encoding/xml"
	"fmt"
	"io"
	"math"
	"strings"
)

// chart is a line chart of hit rate (0..1) against capacity.
type chart struct {
	Title, XLabel, YLabel string
	X                     []int // capacities, one per point
	Series                []series
}

type series struct {
	Name string
	Y    []float64 // one per X, in 0..1
	// Dashed draws a reference line (the offline bound), not a policy.
	Dashed bool
}

// Chart geometry in SVG user units.
const (
	svgW, svgH                     = 760, 460
	plotL, plotR, plotT, plotB     = 70, 600, 50, 390 // plot area edges
	legendX, legendY, legendStride = 620, 70, 22
)

var palette = []string{"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf"}

// esc escapes text for XML character data and attribute values.
func esc(s string) string {
	var b strings.Builder
	_ = xml.EscapeText(&b, []byte(s))
	return b.String()
}

// short renders a capacity compactly: 250k, 1M, 1.5M.
func short(n int) string {
	switch {
	case n >= 1_000_000 && n%100_000 == 0:
		return strings.TrimSuffix(fmt.Sprintf("%.1f", float64(n)/1e6), ".0") + "M"
	case n >= 1000 && n%100 == 0:
		return strings.TrimSuffix(fmt.Sprintf("%.1f", float64(n)/1e3), ".0") + "k"
	}
	return fmt.Sprint(n)
}

// writeSVG draws the chart: a logarithmic x axis when the capacities span
// more than a factor of 10 (linear otherwise) with a tick at every
// capacity, a y axis from 0 to 100% with ticks every 10%, one polyline
// with point markers per series, and a legend.
func (c *chart) writeSVG(w io.Writer) error {
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, x := range c.X {
		lo, hi = min(lo, float64(x)), max(hi, float64(x))
	}
	logX := hi/lo > 10
	tx := func(x float64) float64 { return x }
	if logX {
		tx = math.Log
	}
	xpos := func(x int) float64 {
		if hi == lo {
			return (plotL + plotR) / 2
		}
		return plotL + (tx(float64(x))-tx(lo))/(tx(hi)-tx(lo))*(plotR-plotL)
	}
	ypos := func(y float64) float64 { return plotB - y*(plotB-plotT) }

	bw := bufio.NewWriter(w)
	p := func(format string, a ...any) { fmt.Fprintf(bw, format+"\n", a...) }
	p(`<?xml version="1.0" encoding="UTF-8"?>`)
	p(`<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="12">`, svgW, svgH, svgW, svgH)
	p(`<rect width="100%%" height="100%%" fill="white"/>`)
	p(`<text x="%d" y="28" font-size="15" text-anchor="middle">%s</text>`, (plotL+plotR)/2, esc(c.Title))

	// Grid and y ticks.
	for i := 0; i <= 10; i++ {
		y := ypos(float64(i) / 10)
		p(`<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#e5e5e5"/>`, plotL, y, plotR, y)
		p(`<text x="%d" y="%.1f" text-anchor="end" dominant-baseline="middle">%d%%</text>`, plotL-6, y, i*10)
	}
	// x ticks.
	for _, x := range c.X {
		xp := xpos(x)
		p(`<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="black"/>`, xp, plotB, xp, plotB+5)
		p(`<text x="%.1f" y="%d" text-anchor="middle">%s</text>`, xp, plotB+18, esc(short(x)))
	}
	// Axes and labels.
	p(`<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="black"/>`, plotL, plotB, plotR, plotB)
	p(`<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="black"/>`, plotL, plotT, plotL, plotB)
	xl := c.XLabel
	if logX {
		xl += ", log scale"
	}
	p(`<text x="%d" y="%d" text-anchor="middle">%s</text>`, (plotL+plotR)/2, plotB+40, esc(xl))
	p(`<text x="18" y="%d" text-anchor="middle" transform="rotate(-90 18 %d)">%s</text>`, (plotT+plotB)/2, (plotT+plotB)/2, esc(c.YLabel))

	// Series and legend.
	for i, s := range c.Series {
		col := palette[i%len(palette)]
		var pts []string
		for j, y := range s.Y {
			pts = append(pts, fmt.Sprintf("%.1f,%.1f", xpos(c.X[j]), ypos(y)))
		}
		dash := ""
		if s.Dashed {
			col = "#555555"
			dash = ` stroke-dasharray="6 4"`
		}
		p(`<g class="series" data-policy="%s">`, esc(s.Name))
		p(`<polyline fill="none" stroke="%s" stroke-width="2"%s points="%s"/>`, col, dash, strings.Join(pts, " "))
		for j, y := range s.Y {
			p(`<circle cx="%.1f" cy="%.1f" r="3" fill="%s"><title>%s, %s tokens: %.2f%%</title></circle>`, xpos(c.X[j]), ypos(y), col, esc(s.Name), count(c.X[j]), 100*y)
		}
		p(`</g>`)
		ly := legendY + i*legendStride
		p(`<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="%s" stroke-width="2"%s/>`, legendX, ly, legendX+24, ly, col, dash)
		p(`<text x="%d" y="%d" dominant-baseline="middle">%s</text>`, legendX+30, ly, esc(s.Name))
	}
	p(`</svg>`)
	return bw.Flush()
}
