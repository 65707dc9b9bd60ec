// Package chart draws small line charts as inline SVG for abridge's HTML
// pages (the operator's page of abridge serve, the replay's report): one
// value a step for each series, vertical marks at chosen steps, a legend,
// and axes labelled with the largest value and the number of steps. It
// needs no script, font or file: the SVG is text of the page.
package chart

import (
	"fmt"
	"html"
	"html/template"
	"strconv"
	"strings"
)

// Series is one line of a chart.
type Series struct {
	// Name is shown in the legend.
	Name string
	// Values holds one value a step, from step 1.
	Values []float64
	// Color is an SVG color, such as "#1f77b4".
	Color string
	// Dashed draws the line dashed.
	Dashed bool
}

// Chart is a line chart. The zero size means 720 × 240.
type Chart struct {
	// Title names the chart for screen readers (the SVG's title).
	Title string
	// Series are the lines, drawn in order.
	Series []Series
	// Marks are steps (from 1) marked by a vertical line, with MarkName
	// in the legend.
	Marks    []int
	MarkName string
	// XLabel and YLabel name the axes.
	XLabel, YLabel string
	// Width and Height are the SVG's size in pixels.
	Width, Height int
}

// Layout of a chart, in pixels.
const (
	marginLeft   = 64
	marginRight  = 16
	marginTop    = 28
	marginBottom = 36
)

// SVG returns the chart as an inline SVG element. Every text in it is
// escaped; a chart with no value draws its axes only.
func (c Chart) SVG() template.HTML {
	w, h := c.Width, c.Height
	if w <= 0 || h <= 0 {
		w, h = 720, 240
	}
	steps, top := 0, 0.0
	for _, s := range c.Series {
		steps = max(steps, len(s.Values))
		for _, v := range s.Values {
			top = max(top, v)
		}
	}
	if top <= 0 {
		top = 1
	}
	plotW, plotH := float64(w-marginLeft-marginRight), float64(h-marginTop-marginBottom)
	x := func(step int) float64 { // step from 1
		if steps <= 1 {
			return marginLeft + plotW/2
		}
		return marginLeft + plotW*float64(step-1)/float64(steps-1)
	}
	y := func(v float64) float64 { return marginTop + plotH*(1-v/top) }

	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" class="chart" width="%d" height="%d" viewBox="0 0 %d %d" role="img" aria-label="%s">`,
		w, h, w, h, html.EscapeString(c.Title))
	fmt.Fprintf(&b, `<title>%s</title>`, html.EscapeString(c.Title))
	// Axes, the largest value and the last step.
	fmt.Fprintf(&b, `<path d="M%d %d V%d H%d" fill="none" stroke="#888" stroke-width="1"/>`, marginLeft, marginTop, h-marginBottom, w-marginRight)
	fmt.Fprintf(&b, `<text x="%d" y="%d" font-size="11" text-anchor="end" fill="#444">%s</text>`, marginLeft-4, marginTop+4, GroupDigits(int64(top)))
	fmt.Fprintf(&b, `<text x="%d" y="%d" font-size="11" text-anchor="end" fill="#444">0</text>`, marginLeft-4, h-marginBottom+4)
	if steps > 0 {
		fmt.Fprintf(&b, `<text x="%.1f" y="%d" font-size="11" text-anchor="middle" fill="#444">%d</text>`, x(steps), h-marginBottom+14, steps)
		fmt.Fprintf(&b, `<text x="%.1f" y="%d" font-size="11" text-anchor="middle" fill="#444">1</text>`, x(1), h-marginBottom+14)
	}
	fmt.Fprintf(&b, `<text x="%d" y="%d" font-size="11" text-anchor="middle" fill="#444">%s</text>`,
		marginLeft+int(plotW)/2, h-6, html.EscapeString(c.XLabel))
	fmt.Fprintf(&b, `<text x="12" y="%d" font-size="11" text-anchor="middle" fill="#444" transform="rotate(-90 12 %d)">%s</text>`,
		marginTop+int(plotH)/2, marginTop+int(plotH)/2, html.EscapeString(c.YLabel))
	for _, m := range c.Marks {
		if m >= 1 && m <= steps {
			fmt.Fprintf(&b, `<line class="mark" x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#d62728" stroke-width="1" stroke-dasharray="2 3"/>`,
				x(m), marginTop, x(m), h-marginBottom)
		}
	}
	for _, s := range c.Series {
		if len(s.Values) == 0 {
			continue
		}
		var pts strings.Builder
		for i, v := range s.Values {
			if i > 0 {
				pts.WriteByte(' ')
			}
			fmt.Fprintf(&pts, "%.1f,%.1f", x(i+1), y(v))
		}
		dash := ""
		if s.Dashed {
			dash = ` stroke-dasharray="6 4"`
		}
		fmt.Fprintf(&b, `<polyline class="series" fill="none" stroke="%s" stroke-width="2"%s points="%s"/>`, html.EscapeString(s.Color), dash, pts.String())
		if len(s.Values) == 1 {
			fmt.Fprintf(&b, `<circle cx="%.1f" cy="%.1f" r="3" fill="%s"/>`, x(1), y(s.Values[0]), html.EscapeString(s.Color))
		}
	}
	// The legend, along the top.
	lx := marginLeft
	legend := func(color, name string, dashed bool) {
		dash := ""
		if dashed {
			dash = ` stroke-dasharray="6 4"`
		}
		fmt.Fprintf(&b, `<line x1="%d" y1="12" x2="%d" y2="12" stroke="%s" stroke-width="2"%s/>`, lx, lx+18, html.EscapeString(color), dash)
		fmt.Fprintf(&b, `<text x="%d" y="16" font-size="11" fill="#222">%s</text>`, lx+22, html.EscapeString(name))
		lx += 30 + 6*len([]rune(name))
	}
	for _, s := range c.Series {
		legend(s.Color, s.Name, s.Dashed)
	}
	if len(c.Marks) > 0 && c.MarkName != "" {
		legend("#d62728", c.MarkName, true)
	}
	b.WriteString(`</svg>`)
	return template.HTML(b.String()) // every text above is escaped
}

// GroupDigits writes n with its digits grouped by thousands: 12,345.
func GroupDigits(n int64) string {
	s := strconv.FormatInt(n, 10)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, r := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(r)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}
