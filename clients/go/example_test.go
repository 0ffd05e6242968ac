package snowflaked

import (
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
)

// The example as its README says to run it, in each mode.
func TestTheExamplePrintsIDsInEachMode(t *testing.T) {
	cl := cluster(t, "plain")
	seen := map[uint64]bool{}
	for _, mode := range []string{"remote", "buffered", "leased"} {
		cmd := exec.Command("examples/ids.sh", "--mode", mode, "--count", "25")
		cmd.Env = append(os.Environ(), "SNOWFLAKED_SERVERS="+strings.Join(cl.Servers, ","))
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("%s: %v", mode, err)
		}
		lines := strings.Fields(string(out))
		if len(lines) != 25 {
			t.Fatalf("%s: %d lines", mode, len(lines))
		}
		for _, l := range lines {
			id, err := strconv.ParseUint(l, 10, 64)
			if err != nil || seen[id] {
				t.Fatalf("%s: %q", mode, l)
			}
			seen[id] = true
		}
	}
}

func TestTheExampleFailsWithTheErrorOnStderr(t *testing.T) {
	cmd := exec.Command("examples/ids.sh", "--count", "1")
	cmd.Env = append(os.Environ(), "SNOWFLAKED_SERVERS=http://127.0.0.1:1")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if exit, ok := err.(*exec.ExitError); !ok || exit.ExitCode() != 1 || len(out) != 0 ||
		!strings.Contains(stderr.String(), "connection refused") {
		t.Fatalf("%v, %q, %q", err, out, stderr.String())
	}
}

// The module's version is the server's (CMakeLists.txt).
func TestTheVersionIsTheServers(t *testing.T) {
	text, err := os.ReadFile("../../CMakeLists.txt")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(text), "project(snowflaked VERSION "+Version+" ") {
		t.Fatalf("Version %s is not CMakeLists.txt's", Version)
	}
}
