package replay

import (
	"errors"
	"fmt"
	"image/color"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
	"gonum.org/v1/plot/vg/vgsvg"
)

// ErrNothingToPlot is returned by [Report.Plot] and [Report.PlotAll] when
// no transcript has a request.
var ErrNothingToPlot = errors.New("no transcript has a request to draw")

// ErrPlotFormat is returned by [Report.Plot], [Report.PlotAll] and
// [PlotFormat] for a path whose extension is neither .svg nor .png.
var ErrPlotFormat = errors.New("want a .svg or .png file")

var (
	colorBefore     = color.RGBA{R: 0xb0, G: 0xb0, B: 0xb0, A: 0xff}
	colorAfter      = color.RGBA{R: 0x1f, G: 0x77, B: 0xb4, A: 0xff}
	colorCompaction = color.RGBA{R: 0xd6, G: 0x27, B: 0x28, A: 0xff}
	colorTrigger    = color.RGBA{R: 0x2c, G: 0xa0, B: 0x2c, A: 0xff}
)

// Sizes of a chart: one panel alone, a panel in a grid, the margin around
// each panel and the space between its title and its axes.
const (
	soloWidth, soloHeight = 9 * vg.Inch, 5 * vg.Inch
	gridWidth, gridHeight = 5 * vg.Inch, 3.2 * vg.Inch
	gridColumns           = 3
	margin                = 4 * vg.Millimeter
	titlePadding          = 2 * vg.Millimeter
	// headroom is the share of the data's range left free above the
	// highest point and beyond the last request.
	headroom = 0.05
)

// PlotFormat returns the image format a plot written to path takes from
// its extension, "svg" or "png" (in any case), or an error wrapping
// [ErrPlotFormat].
func PlotFormat(path string) (string, error) {
	switch ext := strings.ToLower(filepath.Ext(path)); ext {
	case ".svg", ".png":
		return ext[1:], nil
	}
	return "", fmt.Errorf("plot %s: %w", path, ErrPlotFormat)
}

// Plot writes to path a chart of the estimated prompt tokens per request
// of the transcript with the most requests: without abridge (the
// transcript prefix) and with it (what is sent), compactions marked with
// dots, and the token trigger drawn when a context window was configured.
// The path's extension chooses the format, SVG or PNG (see [PlotFormat]).
// It returns the plotted transcript's File; [Report.PlotAll] draws every
// transcript.
func (r *Report) Plot(path string) (string, error) {
	format, err := PlotFormat(path)
	if err != nil {
		return "", err
	}
	best := -1
	for i, x := range r.Results {
		if len(x.Series) > 0 && (best < 0 || len(x.Series) > len(r.Results[best].Series)) {
			best = i
		}
	}
	if best < 0 {
		return "", fmt.Errorf("plot %s: %w", path, ErrNothingToPlot)
	}
	x := r.Results[best]
	p, err := r.panel(x, true)
	if err != nil {
		return "", fmt.Errorf("plot %s: %w", path, err)
	}
	if err := writePlot(path, format, []*plot.Plot{p}); err != nil {
		return "", err
	}
	return x.File, nil
}

// PlotAll writes to path a chart with one panel per transcript that has
// requests, three panels a row, each drawn as [Report.Plot] draws one, in
// the format the path's extension chooses. It returns the plotted
// transcripts' Files, in the report's order.
func (r *Report) PlotAll(path string) ([]string, error) {
	format, err := PlotFormat(path)
	if err != nil {
		return nil, err
	}
	var panels []*plot.Plot
	var files []string
	for _, x := range r.Results {
		if len(x.Series) == 0 {
			continue
		}
		p, err := r.panel(x, len(panels) == 0)
		if err != nil {
			return nil, fmt.Errorf("plot %s: %w", path, err)
		}
		panels = append(panels, p)
		files = append(files, x.File)
	}
	if len(panels) == 0 {
		return nil, fmt.Errorf("plot %s: %w", path, ErrNothingToPlot)
	}
	if err := writePlot(path, format, panels); err != nil {
		return nil, err
	}
	return files, nil
}

// chartSize returns the size of a chart of n panels: one panel alone is
// drawn larger than the panels of a grid.
func chartSize(n int) (w, h vg.Length) {
	if n == 1 {
		return soloWidth, soloHeight
	}
	cols := min(gridColumns, n)
	rows := (n + gridColumns - 1) / gridColumns
	return vg.Length(cols) * gridWidth, vg.Length(rows) * gridHeight
}

// drawPanels draws the panels on c in a grid of at most three columns,
// each with a margin around it, on a white background.
func drawPanels(c draw.Canvas, panels []*plot.Plot) {
	c.SetColor(color.White)
	c.Fill(c.Rectangle.Path())
	for i, p := range panels {
		p.Draw(tile(c, len(panels), i))
	}
}

// tile returns the part of c that panel i of n is drawn in.
func tile(c draw.Canvas, n, i int) draw.Canvas {
	cols := min(gridColumns, n)
	rows := (n + cols - 1) / cols
	tiles := draw.Tiles{Rows: rows, Cols: cols, PadX: 2 * margin, PadY: 2 * margin,
		PadTop: margin, PadBottom: margin, PadLeft: margin, PadRight: margin}
	return tiles.At(c, i%cols, i/cols)
}

// writePlot draws the panels and writes them to path in format ("svg" or
// "png"). A file it could not finish is removed.
func writePlot(path, format string, panels []*plot.Plot) (err error) {
	w, h := chartSize(len(panels))
	var out io.WriterTo
	switch format {
	case "png":
		img := vgimg.NewWith(vgimg.UseWH(w, h), vgimg.UseDPI(96))
		drawPanels(draw.New(img), panels)
		out = vgimg.PngCanvas{Canvas: img}
	default:
		svg := vgsvg.New(w, h)
		drawPanels(draw.New(svg), panels)
		out = svg
	}
	f, err := os.Create(path)
	if err != nil {
		return plotError(path, err)
	}
	defer func() {
		if err != nil {
			os.Remove(path)
		}
	}()
	if _, err := out.WriteTo(f); err != nil {
		f.Close()
		return plotError(path, err)
	}
	if err := f.Close(); err != nil {
		return plotError(path, err)
	}
	return nil
}

// plotError names the path once: an *fs.PathError would repeat it.
func plotError(path string, err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		err = pe.Err
	}
	return fmt.Errorf("plot %s: %w", path, err)
}

// panel builds the chart of one transcript. Its axes start at 0 and leave
// some room above the highest point and after the last request, so that
// no compaction dot lies on the frame.
func (r *Report) panel(x Result, legend bool) (*plot.Plot, error) {
	p := plot.New()
	p.Title.Text = DisplayName(x.File)
	p.Title.Padding = titlePadding
	p.X.Label.Text = "request"
	p.Y.Label.Text = "prompt tokens (estimated)"
	p.X.Tick.Marker = integerTicks{}
	p.Y.Tick.Marker = integerTicks{}

	before := make(plotter.XYs, len(x.Series))
	after := make(plotter.XYs, len(x.Series))
	var marks plotter.XYs
	top, last := 1.0, 1.0
	for i, pt := range x.Series {
		before[i] = plotter.XY{X: float64(pt.Request), Y: float64(pt.TokensBefore)}
		after[i] = plotter.XY{X: float64(pt.Request), Y: float64(pt.TokensAfter)}
		if pt.Compaction {
			marks = append(marks, after[i])
		}
		top = max(top, before[i].Y, after[i].Y)
		last = max(last, before[i].X)
	}
	lb, err := plotter.NewLine(before)
	if err != nil {
		return nil, err
	}
	lb.Color = colorBefore
	lb.Width = vg.Points(1.5)
	la, err := plotter.NewLine(after)
	if err != nil {
		return nil, err
	}
	la.Color = colorAfter
	la.Width = vg.Points(1.5)
	p.Add(plotter.NewGrid(), lb, la)
	if legend {
		p.Legend.Add("without abridge", lb)
		p.Legend.Add("with abridge", la)
		p.Legend.Top = true
		p.Legend.Left = true
	}
	if len(marks) > 0 {
		sc, err := plotter.NewScatter(marks)
		if err != nil {
			return nil, err
		}
		sc.Color = colorCompaction
		sc.Shape = draw.CircleGlyph{}
		sc.Radius = vg.Points(2.5)
		p.Add(sc)
		if legend {
			p.Legend.Add("compaction", sc)
		}
	}
	if cw := r.Options.ContextWindow; cw > 0 {
		pct := r.Options.TriggerPercent
		if pct == 0 {
			pct = 70
		}
		limit := float64(cw) * float64(pct) / 100
		top = max(top, limit)
		fn := plotter.NewFunction(func(float64) float64 { return limit })
		fn.Color = colorTrigger
		fn.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
		p.Add(fn)
		if legend {
			p.Legend.Add(fmt.Sprintf("trigger (%d%% of %d)", pct, cw), fn)
		}
	}
	p.X.Min, p.X.Max = 0, last+max(1, math.Ceil(headroom*last))
	p.Y.Min, p.Y.Max = 0, top*(1+headroom)
	return p, nil
}

// integerTicks marks an axis of counts: three to six labelled ticks at
// round integers (1, 2 or 5 times a power of ten apart), labelled with
// their digits grouped by thousands, and an unlabelled tick between each
// two when they are further apart than 1.
type integerTicks struct{}

// Ticks returns the ticks between lo and hi.
func (integerTicks) Ticks(lo, hi float64) []plot.Tick {
	step := roundStep((hi - lo) / 5)
	var ticks []plot.Tick
	for k := math.Ceil(lo / step); k*step <= hi; k++ {
		v := k * step
		ticks = append(ticks, plot.Tick{Value: v, Label: groupDigits(int64(math.Round(v)))})
		if half := v + step/2; step > 1 && half <= hi {
			ticks = append(ticks, plot.Tick{Value: half})
		}
	}
	return ticks
}

// roundStep returns the least of 1, 2, 5, 10, 20, 50, ... not below rough.
func roundStep(rough float64) float64 {
	if rough <= 1 {
		return 1
	}
	mag := math.Pow(10, math.Floor(math.Log10(rough)))
	for _, m := range []float64{1, 2, 5} {
		if m*mag >= rough {
			return m * mag
		}
	}
	return 10 * mag
}

// groupDigits formats n with its digits grouped by thousands: 25,000.
func groupDigits(n int64) string {
	s := strconv.FormatInt(n, 10)
	sign := ""
	if n < 0 {
		sign, s = "-", s[1:]
	}
	var b strings.Builder
	for i, d := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(d)
	}
	return sign + b.String()
}
