package model_test

import (
	"context"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/abridge-go/abridge/model"
	"github.com/abridge-go/abridge/processor"
)

func TestObserve(t *testing.T) {
	boom := errors.New("boom")
	usage := processor.Usage{InputTokens: 120, CachedInputTokens: 20, OutputTokens: 30}
	reported := usage
	reported.PromptMessages = 2 // the model notes how many messages it was sent
	tests := []struct {
		name  string
		reply model.Reply
		want  model.Observation
	}{
		{"answered", model.Respond(processor.NewResponse(processor.Text{Content: "hi"}).WithMeta(processor.Meta{Usage: usage})),
			model.Observation{Messages: 2, Usage: reported}},
		{"failed", model.Fail(boom), model.Observation{Messages: 2, Err: boom}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []model.Observation
			m := model.Observe(model.NewRecorder(tt.reply), func(_ context.Context, o model.Observation) {
				o.Duration = 0
				got = append(got, o)
			})
			_, err := m.Request(context.Background(), []processor.Message{processor.SystemMessage("s"), processor.UserMessage("u")}, model.Settings{})
			if !errors.Is(err, tt.want.Err) {
				t.Fatalf("error %v, want %v", err, tt.want.Err)
			}
			if diff := cmp.Diff([]model.Observation{tt.want}, got, cmp.Comparer(func(a, b error) bool { return errors.Is(a, b) })); diff != "" {
				t.Errorf("observations (-want +got):\n%s", diff)
			}
		})
	}
	r := model.NewRecorder()
	if model.Observe(r, nil) != model.Model(r) {
		t.Error("Observe with a nil fn does not return the model itself")
	}
}
