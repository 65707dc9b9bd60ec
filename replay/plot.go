package replay

import (
	"errors"
	"fmt"
	"image/color"
	"io"
	"os"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgsvg"
)

// ErrNothingToPlot is returned by [Report.Plot] and [Report.PlotAll] when
// no transcript has a request.
var ErrNothingToPlot = errors.New("replay: no request to plot")

var (
	colorBefore     = color.RGBA{R: 0xb0, G: 0xb0, B: 0xb0, A: 0xff}
	colorAfter      = color.RGBA{R: 0x1f, G: 0x77, B: 0xb4, A: 0xff}
	colorCompaction = color.RGBA{R: 0xd6, G: 0x27, B: 0x28, A: 0xff}
	colorTrigger    = color.RGBA{R: 0x2c, G: 0xa0, B: 0x2c, A: 0xff}
)

// Plot writes an SVG chart to path of the estimated prompt tokens per
// request, without abridge (the transcript prefix) and with it (what is
// sent), compactions marked with dots, and the token trigger drawn when a
// context window was configured. When the report holds several
// transcripts it plots the one with the most requests; [Report.PlotAll]
// draws one panel per transcript.
func (r *Report) Plot(path string) error {
	best := -1
	for i, x := range r.Results {
		if len(x.Series) > 0 && (best < 0 || len(x.Series) > len(r.Results[best].Series)) {
			best = i
		}
	}
	if best < 0 {
		return ErrNothingToPlot
	}
	p, err := r.panel(r.Results[best], true)
	if err != nil {
		return err
	}
	wt, err := p.WriterTo(9*vg.Inch, 5*vg.Inch, "svg")
	if err != nil {
		return fmt.Errorf("plot: %w", err)
	}
	return writeFile(path, wt.WriteTo)
}

// PlotAll writes an SVG to path with one panel per transcript that has
// requests, three panels a row, drawn as [Report.Plot] draws one.
func (r *Report) PlotAll(path string) error {
	var panels []*plot.Plot
	for i, x := range r.Results {
		if len(x.Series) == 0 {
			continue
		}
		p, err := r.panel(x, i == 0)
		if err != nil {
			return err
		}
		panels = append(panels, p)
	}
	if len(panels) == 0 {
		return ErrNothingToPlot
	}
	const cols = 3
	rows := (len(panels) + cols - 1) / cols
	ncols := min(cols, len(panels))
	w, h := vg.Length(ncols)*5*vg.Inch, vg.Length(rows)*3.2*vg.Inch
	canvas := vgsvg.New(w, h)
	dc := draw.New(canvas)
	tiles := draw.Tiles{Rows: rows, Cols: ncols, PadX: vg.Millimeter * 4, PadY: vg.Millimeter * 4,
		PadTop: vg.Millimeter * 2, PadBottom: vg.Millimeter * 2, PadLeft: vg.Millimeter * 2, PadRight: vg.Millimeter * 2}
	for i, p := range panels {
		p.Draw(tiles.At(dc, i%ncols, i/ncols))
	}
	return writeFile(path, canvas.WriteTo)
}

// panel builds the chart of one transcript.
func (r *Report) panel(x Result, legend bool) (*plot.Plot, error) {
	p := plot.New()
	p.Title.Text = DisplayName(x.File)
	p.X.Label.Text = "request"
	p.Y.Label.Text = "prompt tokens (estimated)"
	p.Y.Min = 0

	before := make(plotter.XYs, len(x.Series))
	after := make(plotter.XYs, len(x.Series))
	var marks plotter.XYs
	for i, pt := range x.Series {
		before[i] = plotter.XY{X: float64(pt.Request), Y: float64(pt.TokensBefore)}
		after[i] = plotter.XY{X: float64(pt.Request), Y: float64(pt.TokensAfter)}
		if pt.Compaction {
			marks = append(marks, after[i])
		}
	}
	lb, err := plotter.NewLine(before)
	if err != nil {
		return nil, fmt.Errorf("plot: %w", err)
	}
	lb.Color = colorBefore
	lb.Width = vg.Points(1.5)
	la, err := plotter.NewLine(after)
	if err != nil {
		return nil, fmt.Errorf("plot: %w", err)
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
			return nil, fmt.Errorf("plot: %w", err)
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
		fn := plotter.NewFunction(func(float64) float64 { return limit })
		fn.Color = colorTrigger
		fn.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
		p.Add(fn)
		if legend {
			p.Legend.Add(fmt.Sprintf("trigger (%d%% of %d)", pct, cw), fn)
		}
	}
	return p, nil
}

func writeFile(path string, write func(w io.Writer) (int64, error)) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("plot: %w", err)
	}
	if _, err := write(f); err != nil {
		f.Close()
		return fmt.Errorf("plot %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("plot %s: %w", path, err)
	}
	return nil
}
