package metricsload

import (
	"bytes"
	"context"
	"io"
	"net"
	"testing"
	"time"
)

// A carbon flush that fails part way counts as sent the lines the peer
// took whole, and only those: the peer of a net.Pipe reads a line and a
// half, then hangs up.
func TestCarbonPartialWriteCountsWholeLines(t *testing.T) {
	client, server := net.Pipe()
	defer client.Close()
	w := &carbonWriter{conn: client, paths: []string{"p.a1.m1", "p.a1.m2", "p.a1.m3"}, ends: make([]int, 3)}
	line := len("p.a1.m1 7 1700000000\n")
	got := make(chan []byte, 1)
	go func() {
		buf := make([]byte, line+line/2)
		n, _ := io.ReadFull(server, buf)
		_ = server.Close()
		got <- buf[:n]
	}()
	n, err := w.write(context.Background(), time.Unix(1700000000, 0), 7)
	if err == nil {
		t.Fatal("write to a peer that hung up: no error")
	}
	read := <-got
	if !bytes.Equal(read[:line], []byte("p.a1.m1 7 1700000000\n")) {
		t.Fatalf("peer read %q", read)
	}
	if n != 1 {
		t.Fatalf("delivered %d points, want 1 (one whole line of %d bytes in %d read)", n, line, len(read))
	}
}

func TestWholeLines(t *testing.T) {
	ends := []int{10, 20, 30}
	for n, want := range map[int]int{0: 0, 9: 0, 10: 1, 19: 1, 20: 2, 29: 2, 30: 3} {
		if got := wholeLines(ends, n); got != want {
			t.Errorf("wholeLines(%v, %d) = %d, want %d", ends, n, got, want)
		}
	}
}
