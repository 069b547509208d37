package ui

import (
	"encoding/json"
	"math/rand/v2"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"largo"

	"largo/internal/testenv"
)

// TestScriptMatchesServer runs the page's format.js in Node.js and checks
// that it writes sizes and orders names exactly as the server does, so a
// table sorted or re-rendered in the browser reads like the server's.
func TestScriptMatchesServer(t *testing.T) {
	node := testenv.Program(t, "node")
	sizes := []int64{0, 1, 1023, 1024, 1025, 1280, 1331, 1536, 10239, 10240, 1048575, 1048576, 1<<20 + 1<<19, 5 << 30, 1<<40 + 1<<38, 1 << 60, 9_000_000_000_000_000_000, -1, -2048}
	r := rand.New(rand.NewPCG(1, 2))
	for range 200 {
		sizes = append(sizes, r.Int64N(1<<uint(r.IntN(62)+1)))
	}
	words := []string{"file2", "file10", "File2", "file02", "a", "B", "b", "Ärger", "arger", "é", "E", "z9", "z10a", "0", "00", "x1y2", "x1y10", "日本", "😀", "\uffff", "İ", "i", "", "<b>", "a b", "a-b", "a_b"}
	var pairs [][2]string
	for _, a := range words {
		for _, b := range words {
			pairs = append(pairs, [2]string{a, b})
		}
	}
	in, _ := json.Marshal(map[string]any{"sizes": sizes, "pairs": pairs})
	script := `
import { formatSize, compareNames } from ` + jsString(filepath.Join(mustAbs(t, "assets"), "format.js")) + `;
let data = "";
for await (const chunk of process.stdin) data += chunk;
const { sizes, pairs } = JSON.parse(data);
process.stdout.write(JSON.stringify({
	sizes: sizes.map(formatSize),
	pairs: pairs.map(([a, b]) => compareNames(a, b)),
}));
`
	cmd := exec.Command(node, "--input-type=module", "-e", script)
	cmd.Stdin = strings.NewReader(string(in))
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("node: %v\n%s", err, out)
	}
	var got struct {
		Sizes []string `json:"sizes"`
		Pairs []int    `json:"pairs"`
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("node output: %v\n%s", err, out)
	}
	for i, n := range sizes {
		if want := largo.FormatSize(n); got.Sizes[i] != want {
			t.Errorf("formatSize(%d) = %q in the page, %q on the server", n, got.Sizes[i], want)
		}
	}
	for i, p := range pairs {
		if want := CompareNames(p[0], p[1]); got.Pairs[i] != want {
			t.Errorf("compareNames(%q, %q) = %d in the page, %d on the server", p[0], p[1], got.Pairs[i], want)
		}
	}
}

func mustAbs(t *testing.T, p string) string {
	t.Helper()
	a, err := filepath.Abs(p)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func jsString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}
