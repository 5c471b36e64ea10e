#!/usr/bin/env bash
# Regenerates the command reference, docs/commands.md, from the binary itself:
#   <!-- help: CMD --> ... <!-- /help -->      the output of `layout-gate CMD --help`;
#   <!-- example[: head=N] --> ... <!-- /example -->
#                                             each `$ layout-gate ...` line in the block is run
#                                             from the repository root and its output (stdout and
#                                             stderr, at most N lines per command) put under it.
# `probe` examples run against scripts/local-envoy.sh on 127.0.0.1:10447, started here and
# stopped at the end. The e2e trials cli::readme::* check the synopses and that every command
# shown still runs (in README.md's abridged example too, which is written by hand: its marker,
# `<!-- example: abridged -->`, is left alone here); run this after changing a flag, then
# review the diff.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
cargo build --quiet --bin layout-gate
export PATH="$root/target/debug:$PATH"
envoy_log="$(mktemp)"
scripts/local-envoy.sh 10447 >"$envoy_log" 2>&1 &
envoy_pid=$!
trap 'kill -TERM "$envoy_pid" 2>/dev/null; wait "$envoy_pid" 2>/dev/null; rm -f "$envoy_log"' EXIT
for _ in $(seq 100); do grep -q '^probe it' "$envoy_log" && break; sleep 0.1; done
grep -q '^probe it' "$envoy_log" || { cat "$envoy_log" >&2; exit 1; }

python3 - <<'PY'
import re, subprocess
path = "docs/commands.md"
text = open(path).read()

def helped(m):
    cmd = m.group(1)
    out = subprocess.run(["layout-gate", *cmd.split(), "--help"], capture_output=True, text=True, check=True).stdout
    return (f"<!-- help: {cmd} -->\n<details><summary><code>layout-gate {cmd} --help</code></summary>\n\n"
            f"```text\n{out.rstrip()}\n```\n\n</details>\n<!-- /help -->")

def example(m):
    head = int(m.group(1)) if m.group(1) else None
    cmds = [l[2:] for l in m.group(2).splitlines() if l.startswith("$ ")]
    body = []
    for c in cmds:
        r = subprocess.run(["bash", "-c", c + " 2>&1"], capture_output=True, text=True)
        lines = r.stdout.rstrip("\n").splitlines()
        if head is not None and len(lines) > head:
            lines = lines[:head] + ["..."]
        body.append("$ " + c)
        body.extend(lines)
        body.append("")
    opts = f": head={head}" if head is not None else ""
    return f"<!-- example{opts} -->\n```\n" + "\n".join(body).rstrip() + "\n```\n<!-- /example -->"

text = re.sub(r"<!-- help: ([a-z ]+) -->\n.*?<!-- /help -->", helped, text, flags=re.S)
text = re.sub(r"<!-- example(?:: head=(\d+))? -->\n(.*?)<!-- /example -->", example, text, flags=re.S)
open(path, "w").write(text)
PY
echo "docs/commands.md regenerated; review with: git diff docs/commands.md"
