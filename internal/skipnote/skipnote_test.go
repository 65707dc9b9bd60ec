package skipnote

import "testing"

func TestSayOnce(t *testing.T) {
	Say("skipnote: a line said once")
	Say("skipnote: a line said once")
	mu.Lock()
	defer mu.Unlock()
	if len(said) != 1 || !said["skipnote: a line said once"] {
		t.Errorf("said = %v, want the one line", said)
	}
}
