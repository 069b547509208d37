//go:build e2e

package e2e

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"largo/hooks"
)

// waitMetrics waits until the metrics of s hold every line of want, and
// fails t if they do not within timeout.
func waitMetrics(t *testing.T, s *server, timeout time.Duration, want ...string) {
	t.Helper()
	var lacking []string
	for deadline := time.Now().Add(timeout); ; time.Sleep(100 * time.Millisecond) {
		m := s.metrics()
		text, _ := io.ReadAll(m.Body)
		m.Body.Close()
		lacking = lacking[:0]
		for _, w := range want {
			if !strings.Contains(string(text), w+"\n") {
				lacking = append(lacking, w)
			}
		}
		if len(lacking) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Errorf("after %s, metrics lack %q", timeout, lacking)
			return
		}
	}
}

// deadLetters runs largo hooks dead --json on the target.
func deadLetters(t *testing.T, g *target) []hooks.DeadLetter {
	t.Helper()
	var out []hooks.DeadLetter
	text := largoIn(t, g, "hooks", "dead", "--json")
	if err := json.Unmarshal([]byte(text), &out); err != nil {
		t.Fatalf("largo hooks dead --json: %v\n%s", err, text)
	}
	return out
}

// TestHooksDeadLetters: a notification the receiver refuses for ever
// (400) does not stop the next ones: they are delivered, in order; it is
// parked after 5 tries, counted, listed by largo hooks dead, and sent
// again, once the receiver takes it, by largo hooks retry. The requests
// carry the Standard Webhooks fields, which the receiver verifies.
func TestHooksDeadLetters(t *testing.T) { forEachTarget(t, hooksDeadLetters) }

func hooksDeadLetters(t *testing.T, g *target) {
	rc := newHookReceiver(t)
	s := g.serve(t, "--hook-notify", rc.URL("/notify"), "--hook-secret-file", hookSecretFile(t), "--hook-retry-max", "1s")
	names := []string{"a.txt", "poison-1.txt", "b.txt", "c.txt"}
	for _, name := range names {
		if code, body := hookSend(t, "PUT", s.URL+name, strings.NewReader("bytes of "+name)); code != http.StatusCreated {
			t.Fatalf("PUT %s: %d %q", name, code, body)
		}
	}
	evs := rc.waitEvents(t, 60*time.Second, "the events after the poison one", func(evs []hookEvent) bool { return len(evs) >= 3 })
	var got []string
	for _, e := range evs {
		got = append(got, e.Name)
	}
	if strings.Join(got, ",") != "a.txt,b.txt,c.txt" {
		t.Errorf("received %v; want a.txt, b.txt, c.txt, in order", got)
	}
	waitMetrics(t, s, 10*time.Second, `largo_hook_events_total{stage="parked"} 1`, `largo_hook_dead_letters 1`)
	rc.mu.Lock()
	refused := rc.refused["poison-1.txt"]
	rc.mu.Unlock()
	if refused != hooks.DefaultMaxRefusals {
		t.Errorf("the poison event was refused %d times; want %d", refused, hooks.DefaultMaxRefusals)
	}

	dead := deadLetters(t, g)
	if len(dead) != 1 || dead[0].Name != "poison-1.txt" || dead[0].Type != "committed" || dead[0].Status != http.StatusBadRequest || dead[0].Tries != hooks.DefaultMaxRefusals {
		t.Fatalf("largo hooks dead lists %+v; want the poison event, refused with 400, 5 tries", dead)
	}
	table := largoIn(t, g, "hooks", "dead")
	if !strings.Contains(table, dead[0].ID) || !strings.Contains(table, "poison-1.txt") {
		t.Errorf("largo hooks dead prints\n%s\nwithout the dead letter's id and name", table)
	}

	rc.mu.Lock()
	rc.poisonOK = true // the receiver was fixed
	rc.mu.Unlock()
	if out := largoIn(t, g, "hooks", "retry", "--id", dead[0].ID); !strings.Contains(out, "1 dead letters put back") {
		t.Errorf("largo hooks retry: %q", out)
	}
	evs = rc.waitEvents(t, 30*time.Second, "the retried event", func(evs []hookEvent) bool { return len(evs) >= 4 })
	if e := evs[3]; e.Name != "poison-1.txt" || e.ID != dead[0].ID {
		t.Errorf("after the retry, received %+v; want the dead letter, with its id", e)
	}
	if left := deadLetters(t, g); len(left) != 0 {
		t.Errorf("dead letters after the retry: %+v", left)
	}
	if p := rc.problems(); len(p) > 0 {
		t.Errorf("requests with problems: %q", p)
	}
}

// TestHooksOutboxBound: with the receiver down, a server whose outbox
// holds 5 events takes 20 uploads: every upload succeeds, at most 5
// events are kept and the rest dropped and counted; once the receiver is
// back, the events kept are delivered, in order.
func TestHooksOutboxBound(t *testing.T) { forEachTarget(t, hooksOutboxBound) }

func hooksOutboxBound(t *testing.T, g *target) {
	const uploads, bound = 20, 5
	rc := newHookReceiver(t)
	rc.down()
	s := g.serve(t, "--hook-notify", rc.URL("/notify"), "--hook-secret-file", hookSecretFile(t), "--hook-retry-max", "1s", "--hook-outbox-max-events", fmt.Sprint(bound))
	for i := range uploads {
		name := fmt.Sprintf("bound/%02d.txt", i)
		if code, body := hookSend(t, "PUT", s.URL+name, strings.NewReader(name)); code != http.StatusCreated {
			t.Fatalf("PUT %s: %d %q; want the upload taken whatever the outbox holds", name, code, body)
		}
	}
	m := s.metrics()
	text, _ := io.ReadAll(m.Body)
	m.Body.Close()
	var queued, dropped int
	for _, line := range strings.Split(string(text), "\n") {
		fmt.Sscanf(line, `largo_hook_events_total{stage="queued"} %d`, &queued)
		fmt.Sscanf(line, `largo_hook_events_total{stage="dropped"} %d`, &dropped)
	}
	if queued == 0 || queued > bound || queued+dropped != uploads {
		t.Errorf("%d events queued and %d dropped of %d; want at most %d queued, the rest dropped", queued, dropped, uploads, bound)
	}
	rc.up()
	evs := rc.waitEvents(t, 30*time.Second, "the events kept", func(evs []hookEvent) bool { return len(evs) >= queued })
	var got []string
	for _, e := range evs {
		got = append(got, e.Name)
	}
	if len(got) != queued || !slices.IsSorted(got) || got[0] != "bound/00.txt" {
		t.Errorf("received %v; want the %d events kept, from the first, in order", got, queued)
	}
}
