package replay

import (
	"encoding/xml"
	"errors"
	"image/png"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/recorder"

	"github.com/abridge-go/abridge/processors/window"
	"github.com/abridge-go/abridge/testkit/transcripts"
)

// plotReport replays the shipped transcripts with a token trigger, so that
// the charts draw its line as well as compactions.
func plotReport(t *testing.T) *Report {
	t.Helper()
	rep, err := Run(t.Context(), transcripts.Shipped(t), Options{Window: window.Options{ContextWindow: 32_000}})
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

// TestPlot writes the charts in each format, and checks the errors: an
// extension that names no supported format, a directory that does not
// exist, each named once in one message.
func TestPlot(t *testing.T) {
	rep := plotReport(t)
	var largest string
	var all []string
	most := 0
	for _, x := range rep.Results {
		if len(x.Series) > most {
			largest, most = x.File, len(x.Series)
		}
		if len(x.Series) > 0 {
			all = append(all, x.File)
		}
	}
	tests := []struct {
		name    string
		file    string
		all     bool
		format  string // of the file written
		wantErr error
	}{
		{"largest as SVG", "prompt.svg", false, "svg", nil},
		{"largest as PNG", "prompt.png", false, "png", nil},
		{"all as SVG", "all.svg", true, "svg", nil},
		{"all as PNG, extension in capitals", "all.PNG", true, "png", nil},
		{"JPEG", "prompt.jpg", false, "", ErrPlotFormat},
		{"no extension", "prompt", true, "", ErrPlotFormat},
		{"missing directory", filepath.Join("missing", "prompt.svg"), true, "", fs.ErrNotExist},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), tt.file)
			var got []string
			var err error
			if tt.all {
				got, err = rep.PlotAll(path)
			} else {
				var one string
				if one, err = rep.Plot(path); err == nil {
					got = []string{one}
				}
			}
			if tt.wantErr != nil {
				checkPlotError(t, path, err, tt.wantErr)
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			want := []string{largest}
			if tt.all {
				want = all
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("plotted transcripts (-want +got):\n%s", diff)
			}
			w, h := chartSize(len(got))
			switch tt.format {
			case "svg":
				checkSVG(t, path)
			case "png":
				checkPNG(t, path, float64(w/h))
			}
		})
	}
	t.Run("nothing", func(t *testing.T) {
		empty := NewReport(Options{}, []Result{{File: "empty.json"}})
		path := filepath.Join(t.TempDir(), "x.svg")
		_, err := empty.Plot(path)
		checkPlotError(t, path, err, ErrNothingToPlot)
		_, err = empty.PlotAll(path)
		checkPlotError(t, path, err, ErrNothingToPlot)
	})
}

// checkPlotError checks that err wraps want, says "plot PATH: " once and
// nothing else twice, and that no file was left at path.
func checkPlotError(t *testing.T, path string, err, want error) {
	t.Helper()
	if !errors.Is(err, want) {
		t.Fatalf("error %v, want one wrapping %v", err, want)
	}
	msg := err.Error()
	if !strings.HasPrefix(msg, "plot "+path+": ") || strings.Count(msg, path) != 1 || strings.Count(msg, "plot") != 1+strings.Count(path, "plot") {
		t.Errorf("error %q: want one message starting \"plot %s: \" that names the path once", msg, path)
	}
	if _, err := os.Stat(path); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a failed plot left %s behind (%v)", path, err)
	}
}

// checkPNG checks that path holds a PNG image of the given aspect ratio.
func checkPNG(t *testing.T, path string, ratio float64) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	cfg, err := png.DecodeConfig(f)
	if err != nil {
		t.Fatalf("%s is not a PNG image: %v", path, err)
	}
	if got := float64(cfg.Width) / float64(cfg.Height); math.Abs(got-ratio) > 0.01*ratio {
		t.Errorf("%s is %d×%d pixels, want width/height %.3f", path, cfg.Width, cfg.Height, ratio)
	}
}

// checkSVG checks that path holds well-formed XML whose root is an svg
// element with at least one path drawn.
func checkSVG(t *testing.T, path string) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	dec := xml.NewDecoder(f)
	root, paths := "", 0
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("%s is not well-formed XML: %v", path, err)
		}
		if se, ok := tok.(xml.StartElement); ok {
			if root == "" {
				root = se.Name.Local
			}
			if se.Name.Local == "path" {
				paths++
			}
		}
	}
	if root != "svg" || paths == 0 {
		t.Errorf("%s: root element %q with %d paths, want svg with paths", path, root, paths)
	}
}

// TestPlotLayout draws one panel alone and all of them in a grid, and
// checks that the titles keep clear of the image's edge and that every
// compaction dot lies inside its panel's axes, none on the frame.
func TestPlotLayout(t *testing.T) {
	rep := plotReport(t)
	var panels []*plot.Plot
	var results []Result
	for _, x := range rep.Results {
		if len(x.Series) == 0 {
			continue
		}
		p, err := rep.panel(x, len(panels) == 0)
		if err != nil {
			t.Fatal(err)
		}
		panels, results = append(panels, p), append(results, x)
	}
	for _, n := range []int{1, len(panels)} {
		t.Run(strconv.Itoa(n)+" panels", func(t *testing.T) {
			w, h := chartSize(n)
			var rec recorder.Canvas
			c := draw.Canvas{Canvas: &rec, Rectangle: vg.Rectangle{Max: vg.Point{X: w, Y: h}}}
			drawPanels(c, panels[:n])
			titles := 0
			for _, a := range rec.Actions {
				fs, ok := a.(*recorder.FillString)
				if !ok || !isTitle(fs.String, panels[:n]) {
					continue
				}
				titles++
				ext := panels[0].Title.TextStyle.FontExtents()
				if top := fs.Point.Y + ext.Ascent; top > h-margin/2 {
					t.Errorf("title %q reaches %.1fpt of the image's %.1fpt height: too close to its edge", fs.String, top, h)
				}
			}
			if titles != n {
				t.Errorf("found %d titles drawn, want %d", titles, n)
			}
			for i, p := range panels[:n] {
				dc := p.DataCanvas(tile(c, n, i))
				trX, trY := p.Transforms(&dc)
				r := vg.Points(2.5) // the dots' radius
				for _, pt := range results[i].Series {
					if !pt.Compaction {
						continue
					}
					x, y := trX(float64(pt.Request)), trY(float64(pt.TokensAfter))
					if x-r < dc.Min.X || x+r > dc.Max.X || y-r < dc.Min.Y || y+r > dc.Max.Y {
						t.Errorf("%s: the dot of request %d at (%.1f, %.1f) is not inside the axes %v",
							p.Title.Text, pt.Request, x, y, dc.Rectangle)
					}
				}
			}
		})
	}
}

func isTitle(s string, panels []*plot.Plot) bool {
	for _, p := range panels {
		if p.Title.Text == s {
			return true
		}
	}
	return false
}

// TestIntegerTicks checks the axes' ticks over ranges of a few requests
// to many tokens: three to six labels, at integers inside the range,
// written as integers with grouped digits.
func TestIntegerTicks(t *testing.T) {
	tests := []struct{ lo, hi float64 }{
		{0, 1.05}, {0, 4.2}, {0, 49}, {0, 98.7}, {0, 26_000}, {0, 28_683.9}, {0, 158_268.6}, {0, 2_500_000}, {3, 17},
	}
	for _, tt := range tests {
		t.Run(strconv.FormatFloat(tt.hi, 'f', -1, 64), func(t *testing.T) {
			var labels []string
			for _, tick := range (integerTicks{}).Ticks(tt.lo, tt.hi) {
				if tick.Value < tt.lo || tick.Value > tt.hi {
					t.Errorf("tick at %v outside [%v, %v]", tick.Value, tt.lo, tt.hi)
				}
				if tick.IsMinor() {
					continue
				}
				labels = append(labels, tick.Label)
				n, err := strconv.ParseInt(strings.ReplaceAll(tick.Label, ",", ""), 10, 64)
				if err != nil || float64(n) != tick.Value || tick.Label != groupDigits(n) {
					t.Errorf("tick at %v labelled %q, want its integer value with grouped digits", tick.Value, tick.Label)
				}
			}
			if len(labels) < 2 || len(labels) > 6 {
				t.Errorf("labels %q: want 2 to 6", labels)
			}
		})
	}
}

func TestGroupDigits(t *testing.T) {
	tests := []struct {
		n    int64
		want string
	}{
		{0, "0"}, {7, "7"}, {999, "999"}, {1000, "1,000"}, {25_000, "25,000"}, {150_732, "150,732"},
		{1_234_567, "1,234,567"}, {-1500, "-1,500"}, {-999, "-999"},
	}
	for _, tt := range tests {
		if got := groupDigits(tt.n); got != tt.want {
			t.Errorf("groupDigits(%d) = %q, want %q", tt.n, got, tt.want)
		}
	}
}

// TestPlotSVGTicks checks the tick labels of a written chart: every
// number drawn is an integer.
func TestPlotSVGTicks(t *testing.T) {
	rep := plotReport(t)
	path := filepath.Join(t.TempDir(), "prompt.svg")
	if _, err := rep.PlotAll(path); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	dec := xml.NewDecoder(f)
	numbers := 0
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		text, ok := tok.(xml.CharData)
		if !ok {
			continue
		}
		s := strings.TrimSpace(string(text))
		if _, err := strconv.ParseFloat(strings.ReplaceAll(s, ",", ""), 64); err != nil {
			continue
		}
		numbers++
		if strings.ContainsAny(s, ".eE") {
			t.Errorf("tick label %q is not an integer", s)
		}
	}
	if numbers == 0 {
		t.Errorf("%s shows no number", path)
	}
}
