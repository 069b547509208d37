//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/cdproto/fetch"
	"github.com/chromedp/cdproto/input"
	"github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"largo/internal/testenv"
)

// browser is a headless Chromium driven through the DevTools protocol,
// with one tab. Errors the page reports (exceptions, console errors,
// policy violations) are collected; checkPage fails the test on them.
type browser struct {
	t    *testing.T
	ctx  context.Context
	page *pageLog
}

// pageLog holds what a page reported as wrong.
type pageLog struct {
	mu       sync.Mutex
	problems []string
}

// with returns the same browser reporting to t, for a subtest.
func (b *browser) with(t *testing.T) *browser { return &browser{t: t, ctx: b.ctx, page: b.page} }

// newBrowser starts Debian's chromium with a fresh profile. The flags keep
// it from calling out to any network: this machine's only traffic is to
// loopback.
func newBrowser(t *testing.T) *browser {
	t.Helper()
	bin := findChromium(t)
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(bin),
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-features", "Translate,MediaRouter,OptimizationHints"),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1280, 900),
	)
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(actx)
	t.Cleanup(func() {
		cancel()
		cancelAlloc()
	})
	b := &browser{t: t, ctx: ctx, page: &pageLog{}}
	if err := chromedp.Do(ctx, chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
		_, err := cdp.Call(ctx, t, log.Enable, cdp.Empty{})
		return err
	})); err != nil {
		t.Fatalf("starting chromium: %v", err)
	}
	b.collect()
	return b
}

// findChromium returns Debian's chromium, or skips (fails, under
// LARGO_TEST_STRICT=1) when it is missing.
func findChromium(t *testing.T) string {
	t.Helper()
	return testenv.Program(t, "chromium", "chromium-browser")
}

// collect records what the page reports as wrong.
func (b *browser) collect() {
	exceptions := chromedp.Events(b.ctx, runtime.ExceptionThrown)
	entries := chromedp.Events(b.ctx, log.EntryAdded)
	console := chromedp.Events(b.ctx, runtime.ConsoleAPICalled)
	go func() {
		for ev, err := range exceptions {
			if err != nil {
				return
			}
			d := ev.ExceptionDetails
			msg := d.Text
			if d.Exception != nil && d.Exception.Description != "" {
				msg += " " + d.Exception.Description
			}
			b.problem("exception: " + msg)
		}
	}()
	go func() {
		for ev, err := range entries {
			if err != nil {
				return
			}
			e := ev.Entry
			// A 4xx answer the page asked for on purpose (a refused
			// sign-in) is logged as a network error: not a fault.
			if e.Level == log.EntryLevelError && e.Source != log.EntrySourceNetwork {
				b.problem(fmt.Sprintf("%s: %s %s", e.Source, e.Text, e.URL))
			}
		}
	}()
	go func() {
		for ev, err := range console {
			if err != nil {
				return
			}
			if ev.Type == runtime.ConsoleAPICalledTypeError || ev.Type == runtime.ConsoleAPICalledTypeWarning {
				var parts []string
				for _, a := range ev.Args {
					parts = append(parts, string(a.Value)+a.Description)
				}
				b.problem("console." + string(ev.Type) + ": " + strings.Join(parts, " "))
			}
		}
	}()
}

func (b *browser) problem(s string) {
	b.page.mu.Lock()
	defer b.page.mu.Unlock()
	b.page.problems = append(b.page.problems, s)
}

// checkPage fails the test if the page reported problems so far.
func (b *browser) checkPage() {
	b.t.Helper()
	for _, p := range b.takeProblems() {
		b.t.Errorf("page reported: %s", p)
	}
}

// takeProblems returns what the page reported as wrong so far, and
// forgets it: for a test that provoked it on purpose.
func (b *browser) takeProblems() []string {
	b.page.mu.Lock()
	defer b.page.mu.Unlock()
	p := b.page.problems
	b.page.problems = nil
	return p
}

// signInDialog answers the browser's own sign-in dialog, as a person
// would, for requests whose URL carries ?login=: the first challenge with
// a user name and a password, any further one (the credential was
// refused) by cancelling, which shows the 401 answer.
type signInDialog struct {
	b      *browser
	asked  atomic.Int32
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// answerSignIn starts answering the sign-in dialog with user and password.
func (b *browser) answerSignIn(user, password string) *signInDialog {
	b.t.Helper()
	ctx, cancel := context.WithCancel(b.ctx)
	d := &signInDialog{b: b, cancel: cancel}
	paused := chromedp.Events(ctx, fetch.RequestPaused)
	challenges := chromedp.Events(ctx, fetch.AuthRequired)
	asked, wg := &d.asked, &d.wg
	wg.Add(2)
	go func() {
		defer wg.Done()
		for ev, err := range paused {
			if err != nil {
				return
			}
			chromedp.Call(ctx, fetch.ContinueRequest, fetch.ContinueRequestParams{RequestID: ev.RequestID})
		}
	}()
	go func() {
		defer wg.Done()
		for ev, err := range challenges {
			if err != nil {
				return
			}
			answer := &fetch.AuthChallengeResponse{Response: fetch.AuthChallengeResponseResponseCancelAuth}
			if asked.Add(1) == 1 {
				answer = &fetch.AuthChallengeResponse{Response: fetch.AuthChallengeResponseResponseProvideCredentials, Username: user, Password: password}
			}
			chromedp.Call(ctx, fetch.ContinueWithAuth, fetch.ContinueWithAuthParams{RequestID: ev.RequestID, AuthChallengeResponse: answer})
		}
	}()
	b.call(func(ctx context.Context, t *chromedp.Target) error {
		_, err := cdp.Call(ctx, t, fetch.Enable, fetch.EnableParams{
			Patterns:           []*fetch.RequestPattern{{URLPattern: "*?login=*"}},
			HandleAuthRequests: new(true),
		})
		return err
	})
	return d
}

// challenges reports how many challenges came so far.
func (d *signInDialog) challenges() int { return int(d.asked.Load()) }

// stop stops answering, and lets requests through untouched again.
func (d *signInDialog) stop() {
	d.b.t.Helper()
	d.b.call(func(ctx context.Context, t *chromedp.Target) error {
		_, err := cdp.Call(ctx, t, fetch.Disable, cdp.Empty{})
		return err
	})
	d.cancel()
	d.wg.Wait()
}

// signIn follows the open page's "Sign in" link, answers the browser's
// dialog with user and password, and waits to be back on the same page,
// which now says who is signed in: as, the policy's name for the user (or
// the name given with the server's one token, which is no user's). From then
// on the browser sends the credential with every request to the server
// by itself.
func (b *browser) signIn(user, password, as string) {
	b.t.Helper()
	back := eval[string](b, "location.pathname")
	defer b.answerSignIn(user, password).stop()
	b.do(chromedp.Click(chromedp.CSS(".who a")))
	b.waitJS("signed in as "+as, `location.pathname === `+jsQuote(back)+` && document.querySelector(".who strong")?.textContent === `+jsQuote(as), 15*time.Second)
}

// do runs actions, failing the test on an error.
func (b *browser) do(actions ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 60*time.Second)
	defer cancel()
	if err := chromedp.Do(ctx, actions...); err != nil {
		b.t.Fatalf("browser: %v", err)
	}
}

// open navigates to url and waits for the page's script to have run.
func (b *browser) open(url string) {
	b.t.Helper()
	b.do(chromedp.Navigate(url), chromedp.WaitReady(chromedp.CSS("body")))
}

// eval evaluates a JavaScript expression and decodes its value into T.
func eval[T any](b *browser, expr string) T {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 30*time.Second)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr, chromedp.EvalAwaitPromise))
	if err != nil {
		b.t.Fatalf("evaluating %s: %v", expr, err)
	}
	return v
}

// waitJS waits until a JavaScript expression is truthy. Evaluation errors
// (a page being replaced by a navigation) count as false.
func (b *browser) waitJS(what, expr string, timeout time.Duration) {
	b.t.Helper()
	deadline := time.Now().Add(timeout)
	var last error
	for {
		ctx, cancel := context.WithTimeout(b.ctx, 5*time.Second)
		ok, err := chromedp.Run(ctx, chromedp.Evaluate[bool]("!!("+expr+")"))
		cancel()
		if err == nil && ok {
			return
		}
		if err != nil {
			last = err
		}
		if time.Now().After(deadline) {
			b.t.Fatalf("waiting for %s (%s): not true after %s (last error: %v)", what, expr, timeout, last)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// key presses one key (a name from the kb package, such as kb.ArrowDown,
// or a character) in the focused element, as a keyboard does: a key that
// types goes as one key-down carrying its text, so that a page that
// cancels the key-down gets no keypress, and the key's default (typing,
// a space scrolling the page) does not happen. chromedp's KeyEvent sends
// the text as an event of its own, which the browser dispatches whatever
// the page did with the key-down.
func (b *browser) key(k string) {
	b.t.Helper()
	b.call(func(ctx context.Context, t *chromedp.Target) error {
		var down *input.DispatchKeyEventParams
		for _, r := range k {
			for _, ev := range kb.Encode(r) {
				switch ev.Type {
				case input.DispatchKeyEventTypeKeyDown:
					down = ev
					continue // sent with its text, or alone
				case input.DispatchKeyEventTypeChar:
					down.Text, down.UnmodifiedText = ev.Text, ev.UnmodifiedText
					continue
				case input.DispatchKeyEventTypeKeyUp:
					if _, err := cdp.Call(ctx, t, input.DispatchKeyEvent, *down); err != nil {
						return err
					}
				}
				if _, err := cdp.Call(ctx, t, input.DispatchKeyEvent, *ev); err != nil {
					return err
				}
			}
		}
		return nil
	})
}

// setColorScheme emulates prefers-color-scheme: "light" or "dark".
func (b *browser) setColorScheme(scheme string) {
	b.t.Helper()
	b.call(func(ctx context.Context, t *chromedp.Target) error {
		_, err := cdp.Call(ctx, t, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{
			Features: []*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: scheme}},
		})
		return err
	})
	// The page is read once it matches the scheme and no transition runs.
	b.waitJS("the "+scheme+" scheme to apply", `matchMedia("(prefers-color-scheme: `+scheme+`)").matches && document.getAnimations().length === 0`, 10*time.Second)
}

// setScripts turns the page's JavaScript on or off.
func (b *browser) setScripts(on bool) {
	b.t.Helper()
	b.call(func(ctx context.Context, t *chromedp.Target) error {
		_, err := cdp.Call(ctx, t, emulation.SetScriptExecutionDisabled, emulation.SetScriptExecutionDisabledParams{Value: !on})
		return err
	})
}

func (b *browser) call(f func(ctx context.Context, t *chromedp.Target) error) {
	b.t.Helper()
	b.do(chromedp.Func(f))
}

// screenshot saves a PNG of the viewport as NAME.png in the folder named by
// LARGO_SCREENSHOTS, or in the test's temporary folder, and returns its
// path.
func (b *browser) screenshot(name string) string {
	b.t.Helper()
	buf, err := chromedp.Run(b.ctx, chromedp.CaptureScreenshot())
	if err != nil {
		b.t.Fatalf("screenshot: %v", err)
	}
	dir := os.Getenv("LARGO_SCREENSHOTS")
	if dir == "" {
		dir = b.t.TempDir()
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		b.t.Fatal(err)
	}
	p := filepath.Join(dir, name+".png")
	if err := os.WriteFile(p, buf, 0o644); err != nil {
		b.t.Fatal(err)
	}
	b.t.Logf("screenshot: %s", p)
	return p
}

// axeViolation is one rule an accessibility check found broken.
type axeViolation struct {
	ID     string `json:"id"`
	Impact string `json:"impact"`
	Help   string `json:"help"`
	Nodes  []struct {
		Target  []any  `json:"target"`
		Summary string `json:"failureSummary"`
	} `json:"nodes"`
}

// axeScript is axe-core's script, installed by scripts/test-deps.
const axeScript = "node/node_modules/axe-core/axe.min.js"

// needAxe skips t (fails it, under LARGO_TEST_STRICT=1) when axe-core is
// not installed. A test that checks accessibility in the middle of
// something it must finish calls it first.
func needAxe(t testing.TB) {
	t.Helper()
	testenv.File(t, axeScript, "axe-core")
}

// checkAccessibility runs axe-core (from the npm package pinned in
// e2e/node) in the page against the WCAG 2.1 A and AA rules, labels and
// contrast among them, and fails the test on each violation.
func (b *browser) checkAccessibility(page string) {
	b.t.Helper()
	needAxe(b.t)
	src, err := os.ReadFile(axeScript)
	if err != nil {
		b.t.Fatal(err)
	}
	if !eval[bool](b, `typeof window.axe === "object"`) {
		// Evaluated through the DevTools protocol, so the page's policy,
		// which forbids eval, does not apply.
		eval[chromedp.Void](b, string(src)+";0")
	}
	raw := eval[[]byte](b, `axe.run(document, {
		runOnly: {type: "tag", values: ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa"]},
		resultTypes: ["violations"],
	}).then(r => r.violations)`)
	var vs []axeViolation
	if err := json.Unmarshal(raw, &vs); err != nil {
		b.t.Fatalf("axe result: %v", err)
	}
	for _, v := range vs {
		var where []string
		for _, n := range v.Nodes {
			where = append(where, fmt.Sprint(n.Target)+": "+n.Summary)
		}
		b.t.Errorf("%s: accessibility: %s (%s): %s\n  %s", page, v.ID, v.Impact, v.Help, strings.Join(where, "\n  "))
	}
}
