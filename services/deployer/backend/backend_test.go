package backend

import (
	"errors"
	"testing"
)

func TestRefusedKeepsTheTextAndTheCause(t *testing.T) {
	cause := errors.New("invalid kubernetes name: too long")
	err := Refused(cause)
	if err.Error() != cause.Error() || !errors.Is(err, ErrRefused) || !errors.Is(err, cause) {
		t.Errorf("Refused(%v) = %q; Is ErrRefused %v, Is cause %v", cause, err, errors.Is(err, ErrRefused), errors.Is(err, cause))
	}
	if errors.Is(cause, ErrRefused) {
		t.Error("an unmarked error is not refused")
	}
}
