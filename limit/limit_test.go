package limit

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"largo/internal/testenv"
)

func listen(t *testing.T, cfg Config) (*Listener, string) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	l := Wrap(ln, cfg)
	t.Cleanup(func() { l.Close() })
	return l, ln.Addr().String()
}

func TestTotalCap(t *testing.T) {
	var refused atomic.Int32
	l, addr := listen(t, Config{Max: 2, Answer503: true, Refused: func(net.Addr) { refused.Add(1) }})
	accepted := make(chan net.Conn, 10)
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			accepted <- c
		}
	}()
	var held []net.Conn
	for range 2 {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		held = append(held, <-accepted)
	}
	// The third gets a 503 with Retry-After.
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	io.WriteString(c, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
	c.SetDeadline(time.Now().Add(5 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != 503 || resp.Header.Get("Retry-After") == "" {
		t.Fatalf("got %d, Retry-After %q", resp.StatusCode, resp.Header.Get("Retry-After"))
	}
	if l.Open() != 2 || refused.Load() != 1 {
		t.Fatalf("open %d, refused %d", l.Open(), refused.Load())
	}
	// Closing one frees a place, once, however often it is closed.
	held[0].Close()
	held[0].Close()
	if l.Open() != 1 {
		t.Fatalf("open %d after close", l.Open())
	}
	c2, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	select {
	case <-accepted:
	case <-time.After(5 * time.Second):
		t.Fatal("freed place not reused")
	}
}

func TestPerIPCap(t *testing.T) {
	l, addr := listen(t, Config{PerIP: 1})
	go func() {
		for {
			if _, err := l.Accept(); err != nil {
				return
			}
		}
	}()
	a, _ := net.Dial("tcp", addr)
	defer a.Close()
	b, _ := net.Dial("tcp", addr)
	defer b.Close()
	b.SetReadDeadline(time.Now().Add(5 * time.Second))
	// Without Answer503 the second is closed at once.
	n, err := b.Read(make([]byte, 1))
	if n != 0 || err == nil || strings.Contains(err.Error(), "timeout") {
		t.Fatalf("second connection from one address: read %d, %v; want closed", n, err)
	}
}

// TestReaderFromKept checks that the wrapper keeps the TCP connection's
// ReadFrom, which net/http needs for sendfile.
func TestReaderFromKept(t *testing.T) {
	l, addr := listen(t, Config{Max: 10})
	go net.Dial("tcp", addr)
	c, err := l.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, ok := c.(io.ReaderFrom); !ok {
		t.Fatal("accepted connection lost io.ReaderFrom")
	}
}

// TestOutOfDescriptors: with every descriptor of the process taken, a new
// client is still answered, 503, instead of waiting unanswered; once
// descriptors are free again, clients are served.
func TestOutOfDescriptors(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	l := Wrap(ln, Config{Answer503: true})
	defer l.Close()
	accepted := make(chan net.Conn, 4)
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				if outOfFiles(err) {
					time.Sleep(5 * time.Millisecond) // as net/http backs off
					continue
				}
				return
			}
			accepted <- c
		}
	}()

	var old syscall.Rlimit
	syscall.Getrlimit(syscall.RLIMIT_NOFILE, &old)
	var held []*os.File
	func() {
		defer syscall.Setrlimit(syscall.RLIMIT_NOFILE, &old)
		lim := syscall.Rlimit{Cur: 256, Max: old.Max}
		if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
			testenv.Missing(t, "cannot lower the descriptor limit (%v): the test runs out of descriptors that way", err)
		}
		for {
			f, err := os.Open(os.DevNull)
			if err != nil {
				break
			}
			held = append(held, f)
		}
		// One descriptor for the client's side; the server has none.
		held[len(held)-1].Close()
		held = held[:len(held)-1]
		late, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer late.Close()
		fmt.Fprintf(late, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
		late.SetReadDeadline(time.Now().Add(5 * time.Second))
		line, err := bufio.NewReader(late).ReadString('\n')
		if err != nil || !strings.HasPrefix(line, "HTTP/1.1 503") {
			t.Errorf("a client with no descriptor left: %q, %v; want 503", line, err)
		}
	}()
	for _, f := range held {
		f.Close()
	}
	// Descriptors are free again: clients are served (the first may still
	// meet the reserve being taken back).
	for deadline := time.Now().Add(5 * time.Second); ; {
		again, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		select {
		case c := <-accepted:
			c.Close()
			again.Close()
			return
		case <-time.After(200 * time.Millisecond):
		}
		again.Close()
		if time.Now().After(deadline) {
			t.Fatal("no client accepted once descriptors were free")
		}
	}
}

func TestBudget(t *testing.T) {
	b := NewBudget(100, 100)
	if !b.TryTake(60) || b.TryTake(41) || !b.TryTake(40) || b.TryTake(1) {
		t.Fatal("budget not kept")
	}
	b.Give(60)
	if b.InUse() != 40 || !b.TryTake(60) {
		t.Fatalf("in use %d after giving back", b.InUse())
	}
	b.Give(100)
	if !b.TryGrow(75) || b.TryGrow(1) || !b.TryTake(25) {
		t.Fatalf("growing past three quarters, or starting in the last: in use %d", b.InUse())
	}
	b.Give(100)
	var none *Budget
	if !none.TryTake(1<<62, "a") || !none.TryGrow(1<<62, "a") || none.InUse() != 0 || none.Held("a") != 0 {
		t.Fatal("a nil budget caps")
	}
	none.Give(1, "a")
	if NewBudget(0, 0) != nil {
		t.Fatal("a zero budget is not nil")
	}
}

// TestBudgetShare: one key holds at most its share, whatever it runs,
// and the rest stays for the others; a take counted for several keys
// (an address and a user) counts against each.
func TestBudgetShare(t *testing.T) {
	b := NewBudget(100, 0)
	if b.Share() != 25 {
		t.Fatalf("default share %d; want a quarter", b.Share())
	}
	for range 25 {
		if !b.TryTake(1, "203.0.113.7") {
			t.Fatal("a key refused within its share")
		}
	}
	if b.TryTake(1, "203.0.113.7") || b.TryGrow(1, "203.0.113.7") {
		t.Fatal("a key took past its share")
	}
	if !b.TryTake(25, "2001:db8::/64") || !b.TryTake(10, "203.0.113.8", "user:alice") {
		t.Fatal("other keys refused while one holds its share")
	}
	if b.TryTake(20, "203.0.113.9", "user:alice") {
		t.Fatal("a user took past its share from a second address")
	}
	if got := b.Held("user:alice"); got != 10 {
		t.Fatalf("alice holds %d; want 10", got)
	}
	b.Give(10, "203.0.113.8", "user:alice")
	if b.Held("user:alice") != 0 || b.Held("203.0.113.8") != 0 {
		t.Fatal("a key still holds what it gave back")
	}
	b.Give(25, "203.0.113.7")
	if !b.TryTake(1, "203.0.113.7") {
		t.Fatal("a key refused after giving back")
	}
	if NewBudget(100, 40).Share() != 40 || NewBudget(100, 200).Share() != 25 {
		t.Fatal("a share given is not kept, or one past the total is")
	}
}
