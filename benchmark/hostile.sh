#!/usr/bin/env bash
# Worst cases of hostile and huge input, measured: baseline size, nesting depth, huge sources,
# oversized downloads, macro expansion, parsing, diffs of pathological files.
# Writes benchmark/results/hostile-DATE.{md,json}. See benchmark/README.md.
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/.." && pwd)"
work="$here/work"
target="$work/target"
date="$(date +%Y-%m-%d)"
out_md="$here/results/hostile-$date.md"
out_json="$here/results/hostile-$date.json"
BASELINE_SIZES="${BASELINE_SIZES:-1000 4000 16000 100000}"
NESTING_DEPTH="${NESTING_DEPTH:-2000}"
VELARIS_BEFORE_REV="${VELARIS_BEFORE_REV:-}"   # e.g. a commit before the hardening, to compare
DOWNLOADS="${DOWNLOADS:-12}"
SECTIONS="${SECTIONS:-baseline nesting sources downloads macros parsing diffs}"
# The binary from VELARIS_BEFORE_REV may run away on the hostile shapes: it is stopped at this
# much address space and this many seconds.
BEFORE_AS="${BEFORE_AS:-9000000000}"
BEFORE_TIMEOUT="${BEFORE_TIMEOUT:-300}"
mkdir -p "$work" "$here/results"
want() { [[ " $SECTIONS " == *" $1 "* ]]; }

command -v /usr/bin/time >/dev/null || { apt-get install -y time >/dev/null; }
command -v python3 >/dev/null || { echo "python3 is needed for the download server" >&2; exit 1; }

log() { printf '%s\n' "$*" >&2; }

# --- build ---------------------------------------------------------------------------------
log "building velaris (release) and the measurement program (release and debug)"
(cd "$repo" && cargo build --release --locked -q)
cp "$repo/target/release/velaris" "$work/velaris"
if want baseline || want nesting; then
  (cd "$here/hostile" && CARGO_TARGET_DIR="$target" cargo build --release -q && CARGO_TARGET_DIR="$target" cargo build -q)
fi
bench_rel="$target/release/velaris-hostile-bench"
bench_dbg="$target/debug/velaris-hostile-bench"
before=""
if [ -n "$VELARIS_BEFORE_REV" ]; then
  log "building velaris at $VELARIS_BEFORE_REV for comparison"
  rm -rf "$work/before" && mkdir -p "$work/before"
  git -C "$repo" archive "$VELARIS_BEFORE_REV" | tar -x -C "$work/before"
  (cd "$work/before" && CARGO_TARGET_DIR="$target" cargo build --release --locked -q)
  cp "$target/release/velaris" "$work/velaris-before"
  before="$work/velaris-before"
fi

peak_kib() { # command... -> prints "exit peak_kib seconds"
  local t="$work/time.txt" rc=0
  /usr/bin/time -f '%M %e' -o "$t" "$@" >/dev/null 2>"$work/stderr.txt" || rc=$?
  printf '%s %s\n' "$rc" "$(cat "$t" | tail -1)"
}

# measure NAME BINARY ARGS...: one run, stdout kept in $work/out.txt; appends a JSON row
# {"case", "binary", "exit", "peak_kib", "seconds", "user_seconds", "load"} to $rows. The
# earlier revision runs under BEFORE_AS and BEFORE_TIMEOUT.
rows=""
measure() {
  local name="$1" bin="$2"; shift 2
  local t="$work/time.txt" rc=0 limit=()
  if [ "$(basename "$bin")" = velaris-before ]; then limit=(timeout "$BEFORE_TIMEOUT" prlimit --as="$BEFORE_AS"); fi
  rm -f "$t"
  "${limit[@]}" /usr/bin/time -f '%M %e %U' -o "$t" "$bin" "$@" >"$work/out.txt" 2>"$work/stderr.txt" || rc=$?
  local kib=0 secs=0 user=0
  if [ -s "$t" ]; then read -r kib secs user < <(grep -E '^[0-9]+ ' "$t" | tail -1) || true; fi
  local load; load="$(cut -d' ' -f1 /proc/loadavg)"
  rows+="{\"case\": \"$name\", \"binary\": \"$(basename "$bin")\", \"exit\": $rc, \"peak_kib\": ${kib:-0}, \"seconds\": ${secs:-0}, \"user_seconds\": ${user:-0}, \"load\": $load"
  log "  $name, $(basename "$bin"): exit $rc, peak $(( ${kib:-0} / 1024 )) MiB, ${secs}s (${user}s user), load $load"
}

# What a surface report says of the hostile crates: the capabilities found and each distinct
# reason `unanalyzed`, with its count (JSON), from $work/out.txt.
surface_summary() {
  python3 - "$work/out.txt" <<'PY'
import json, sys, collections
try:
    doc = json.load(open(sys.argv[1]))
except Exception:
    print('{"capabilities": [], "unanalyzed": {}}'); sys.exit()
caps, why = set(), collections.Counter()
# velaris/surface/v2: each crate's details once, at the top level.
for c in doc.get("crates", []):
        for f in c.get("findings", []):
            caps.add(f["capability"])
            if f["capability"] == "unanalyzed":
                path = f["path"]
                # One line per budget or reason, not per macro name.
                why[path.split(": ", 1)[-1] if "not expanded" in path else path] += 1
print(json.dumps({"capabilities": sorted(caps), "unanalyzed": dict(sorted(why.items()))}))
PY
}

# --- 1. baseline size ----------------------------------------------------------------------
baseline_json="[]"; nest_dbg=""; nest_rel=""; source_json="[]"; dl_json="[]"; macros_json="[]"; parsing_json="[]"; diffs_json="[]"
if want baseline; then
log "baseline: parse, check, fmt, bless at $BASELINE_SIZES entries"
baseline_json="["
for n in $BASELINE_SIZES; do
  r="$("$bench_rel" baseline "$n")"
  baseline_json+="$r,"
  log "  $r"
done
baseline_json="${baseline_json%,}]"
fi

# --- 2. nesting: stack per level, against the guard's estimate -----------------------------
if want nesting; then
log "nesting: least stack per shape at depth $NESTING_DEPTH (debug build, then release)"
nest_dbg="$("$bench_dbg" nesting-table "$NESTING_DEPTH" | paste -sd, -)"
nest_rel="$("$bench_rel" nesting-table "$NESTING_DEPTH" | paste -sd, -)"
fi

# --- 3. huge source files --------------------------------------------------------------------
if want sources; then
log "huge sources: peak memory of velaris surface"
make_ws() { # dir, then sizes of one-line source files, one member crate each
  local dir="$1"; shift
  rm -rf "$dir" && mkdir -p "$dir"
  local members="" lock="version = 3\n" i=0
  for size in "$@"; do
    i=$((i + 1))
    members+="\"m$i\","
    mkdir -p "$dir/m$i/src"
    printf '[package]\nname = "m%s"\nversion = "0.1.0"\nedition = "2021"\n' "$i" >"$dir/m$i/Cargo.toml"
    printf 'mod big;\nfn main() { big::f0(0); }\n' >"$dir/m$i/src/main.rs"
    python3 - "$dir/m$i/src/big.rs" "$size" <<'PY'
import sys
path, size = sys.argv[1], int(sys.argv[2])
parts, n, i = [], 0, 0
while n < size:
    s = f"pub fn f{i}(x: u32) -> u32 {{ let y = x.wrapping_add({i}); if y > 3 {{ std::fs::read(\"a\").ok(); }} y * 2 + {i} }} "
    parts.append(s); n += len(s); i += 1
open(path, "w").write("".join(parts)[:size].rsplit("pub fn", 1)[0] + "\n")
PY
    lock+="\n[[package]]\nname = \"m$i\"\nversion = \"0.1.0\"\n"
  done
  printf '[workspace]\nmembers = [%s]\nresolver = "2"\n' "${members%,}" >"$dir/Cargo.toml"
  printf "$lock" >"$dir/Cargo.lock"
}
source_rows=""
for case in "one 3.9 MB file:4000000" "one 10 MB file:10000000" "two 3.9 MB files:4000000 4000000" "four 3 MB files:3000000 3000000 3000000 3000000"; do
  name="${case%%:*}"; sizes="${case#*:}"
  make_ws "$work/huge" $sizes
  for bin in "$work/velaris" $before; do
    r="$(peak_kib "$bin" surface --workspace "$work/huge" --offline --cache-dir "$work/huge-cache" --format json)"
    un="$(grep -c 'larger than the' "$work/stderr.txt" || true)"
    source_rows+="{\"case\": \"$name\", \"binary\": \"$(basename "$bin")\", \"exit_peak_kib_seconds\": \"$r\"},"
    log "  $name, $(basename "$bin"): exit, peak KiB, seconds = $r"
  done
done
source_json="[${source_rows%,}]"
fi

# --- 4. oversized downloads ------------------------------------------------------------------
if want downloads; then
log "downloads: $DOWNLOADS packages whose bodies run past the 256 MiB limit, --jobs $DOWNLOADS"
port_file="$work/port"
rm -f "$port_file"
python3 - "$port_file" <<'PY' &
import http.server, socketserver, sys
CHUNK = b"\0" * (1 << 20)
class H(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def log_message(self, *a): pass
    def do_GET(self):
        if self.path.endswith("config.json"):
            body = b'{"dl": "http://127.0.0.1:%d/dl"}' % self.server.server_address[1]
            self.send_response(200); self.send_header("Content-Length", str(len(body))); self.end_headers()
            self.wfile.write(body); return
        # No Content-Length: the client only learns the size by reading. 300 MiB.
        self.send_response(200); self.send_header("Transfer-Encoding", "chunked"); self.end_headers()
        try:
            for _ in range(300):
                self.wfile.write(b"%x\r\n" % len(CHUNK) + CHUNK + b"\r\n")
            self.wfile.write(b"0\r\n\r\n")
        except (BrokenPipeError, ConnectionResetError):
            pass
class S(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
s = S(("127.0.0.1", 0), H)
open(sys.argv[1], "w").write(str(s.server_address[1]))
s.serve_forever()
PY
server=$!
trap 'kill $server 2>/dev/null || true' EXIT
while [ ! -s "$port_file" ]; do sleep 0.1; done
port="$(cat "$port_file")"
home="$work/dl-home"; rm -rf "$home" && mkdir -p "$home"
printf '[source.crates-io]\nreplace-with = "big"\n[source.big]\nregistry = "sparse+http://127.0.0.1:%s/index/"\n' "$port" >"$home/config.toml"
printf 'version = 3\n' >"$work/dl-old.lock"
{
  printf 'version = 3\n'
  for i in $(seq 1 "$DOWNLOADS"); do
    printf '\n[[package]]\nname = "big%s"\nversion = "1.0.0"\nsource = "registry+https://github.com/rust-lang/crates.io-index"\nchecksum = "%064x"\n' "$i" "$i"
  done
} >"$work/dl-new.lock"
dl_rows=""
for bin in "$work/velaris" $before; do
  rm -rf "$work/dl-cache"
  r="$(cd "$work" && CARGO_HOME="$home" peak_kib "$bin" deps-diff --old dl-old.lock --new dl-new.lock --cache-dir "$work/dl-cache" --jobs "$DOWNLOADS")"
  dl_rows+="{\"binary\": \"$(basename "$bin")\", \"exit_peak_kib_seconds\": \"$r\"},"
  log "  $(basename "$bin"): exit, peak KiB, seconds = $r"
done
dl_json="[${dl_rows%,}]"
kill $server 2>/dev/null || true
fi

# --- 5. macro expansion ----------------------------------------------------------------------
# Each shape of benchmark/hostile/shapes.py, `velaris surface --offline` with an empty cache.
if want macros || want parsing; then
  python3 "$here/hostile/shapes.py" surface "$work/shapes"
fi
surface_case() { # json-var-name case workspace [extra args]
  local var="$1" name="$2" ws="$3"; shift 3
  local bin
  for bin in "$work/velaris" $before; do
    rm -rf "$work/shape-cache"
    measure "$name" "$bin" surface --workspace "$ws" --offline --cache-dir "$work/shape-cache" --format json "$@"
    rows+=", \"found\": $(surface_summary)},"
  done
}
if want macros; then
  log "macro expansion: hostile shapes"
  rows=""
  for shape in doubling-18-statements doubling-18-expressions doubling-18-items doubling-30-statements \
               doubling-30-expressions doubling-30-items two-doubling-30 many-arms-860kb fragment-arms; do
    surface_case macros "$shape" "$work/shapes/$shape"
  done
  # Two exponential crates, one at a time: the run's memory account at its smallest.
  rm -rf "$work/shape-cache"
  measure "two-doubling-30, --analysis-memory 64MiB" "$work/velaris" surface --workspace "$work/shapes/two-doubling-30" --offline --cache-dir "$work/shape-cache" --format json --analysis-memory 64MiB
  rows+=", \"found\": $(surface_summary)},"
  # The same output from a warm cache.
  cp "$work/out.txt" "$work/cold.json"
  measure "two-doubling-30, warm" "$work/velaris" surface --workspace "$work/shapes/two-doubling-30" --offline --cache-dir "$work/shape-cache" --format json
  same=false; cmp -s "$work/out.txt" "$work/cold.json" && same=true
  rows+=", \"same_as_cold\": $same, \"found\": $(surface_summary)},"
  macros_json="[${rows%,}]"
fi

# --- 6. parsing --------------------------------------------------------------------------------
if want parsing; then
  log "parsing: nesting, #[path] to itself, a symlink loop"
  rows=""
  for shape in parens-200000 blocks-100000 inline-modules-20000 path-to-itself symlink-loop; do
    surface_case parsing "$shape" "$work/shapes/$shape"
  done
  parsing_json="[${rows%,}]"
fi

# --- 7. diffs of pathological files ------------------------------------------------------------
if want diffs; then
  log "diffs: velaris deps-diff --no-capabilities on pathological packages"
  python3 "$here/hostile/shapes.py" deps "$work/deps"
  mkdir -p "$work/deps-home"
  export CARGO_HOME="$work/deps-home"
  rows=""
  for shape in one-line-50mb files-100000 lines-1000000 lines-200000-shuffled files-20-shuffled-100000; do
    d="$work/deps/$shape"
    for bin in "$work/velaris" $before; do
      measure "$shape" "$bin" deps-diff --old "$d/old.lock" --new "$d/new.lock" --offline --cache-dir "$d/cache" --no-capabilities --format json
      rows+=", \"review\": $(python3 - "$work/out.txt" <<'PY'
import json, sys
try:
    p = json.load(open(sys.argv[1]))["packages"][0]
except Exception:
    print("null"); sys.exit()
big = [f for f in p["file_changes"] if "too_large" in f]
print(json.dumps({"files": sum(p["files"][k] for k in ("added", "removed", "modified")), "lines": p["lines"],
                  "too_large": len(big), "reasons": sorted({f["too_large"]["reason"] for f in big})}))
PY
)},"
    done
  done
  diffs_json="[${rows%,}]"
fi

# --- report --------------------------------------------------------------------------------
cpu="$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')"
mem="$(awk '/MemTotal/ {printf "%.1f GiB", $2/1048576}' /proc/meminfo)"
commit="$(git -C "$repo" rev-parse --short HEAD)$(git -C "$repo" diff --quiet || echo '+dirty')"
cat >"$out_json" <<EOF
{"date": "$date", "commit": "$commit", "before": "${VELARIS_BEFORE_REV}", "sections": "$SECTIONS", "machine": {"cpu": "$cpu", "nproc": $(nproc), "memory": "$mem", "kernel": "$(uname -r)", "rustc": "$(rustc -V)"},
 "baseline": $baseline_json,
 "nesting_debug": [$nest_dbg],
 "nesting_release": [$nest_rel],
 "huge_sources": $source_json,
 "downloads": $dl_json,
 "macros": $macros_json,
 "parsing": $parsing_json,
 "diffs": $diffs_json}
EOF
python3 - "$out_json" "$out_md" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
m = d["machine"]
L = []
L.append(f"# Hostile and huge input, {d['date']}")
L.append("")
L.append(f"velaris {d['commit']}" + (f", compared with {d['before']}" if d["before"] else "") + f"; {m['cpu']}, {m['nproc']} CPUs, {m['memory']}, Linux {m['kernel']}, {m['rustc']}. Produced by `benchmark/hostile.sh` (sections: {d.get('sections', 'all')}); raw numbers in the JSON file of the same name. Other builds shared the CPUs, so wall times are upper bounds; CPU (user) time and the 1-minute load average at the end of each run are given where measured.")
L.append("")
if d["baseline"]:
    L.append("## Baseline size (library, seconds)")
    L.append("")
    L.append("| entries | bytes | parse | check | fmt (canonical) | fmt (messy) | bless (messy) |")
    L.append("| ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for b in d["baseline"]:
        L.append(f"| {b['entries']:,} | {b['bytes']:,} | {b['parse_s']:.3f} | {b['check_s']:.3f} | {b['fmt_canonical_s']:.3f} | {b['fmt_messy_s']:.3f} | {b['bless_messy_s']:.3f} |")
    L.append("")
for key, title in [("nesting_debug", "debug build (as `cargo test`)"), ("nesting_release", "release build")]:
    if not d[key]:
        continue
    L.append(f"## Nesting: least stack per level, {title}")
    L.append("")
    L.append("| shape | depth | stack (KiB) | bytes per level | guard's estimate (KiB) | estimate / stack |")
    L.append("| --- | ---: | ---: | ---: | ---: | ---: |")
    for r in d[key]:
        if "error" in r:
            L.append(f"| {r['shape']} | {r['depth']} | {r['error']} | | | |")
            continue
        L.append(f"| {r['shape']} | {r['depth']} | {r['stack_bytes']//1024:,} | {r['bytes_per_level']:,} | {r['estimate_bytes']//1024:,} | {r['estimate_over_stack']:.2f} |")
    L.append("")
if d["huge_sources"]:
    L.append("## Huge sources: `velaris surface --offline`")
    L.append("")
    L.append("| case | binary | exit | peak RSS (MiB) | seconds |")
    L.append("| --- | --- | ---: | ---: | ---: |")
    for r in d["huge_sources"]:
        rc, kib, secs = r["exit_peak_kib_seconds"].split()
        L.append(f"| {r['case']} | {r['binary']} | {rc} | {int(kib)/1024:.0f} | {secs} |")
    L.append("")
if d["downloads"]:
    L.append("## Oversized downloads: `velaris deps-diff --jobs N`, 300 MiB chunked bodies")
    L.append("")
    L.append("| binary | exit | peak RSS (MiB) | seconds |")
    L.append("| --- | ---: | ---: | ---: |")
    for r in d["downloads"]:
        rc, kib, secs = r["exit_peak_kib_seconds"].split()
        L.append(f"| {r['binary']} | {rc} | {int(kib)/1024:.0f} | {secs} |")
    L.append("")

def run_cells(r):
    killed = " (stopped)" if r["exit"] in (124, 134, 137) else ""
    return f"{r['exit']}{killed} | {r['peak_kib']/1024:,.0f} | {r['seconds']:.2f} | {r['user_seconds']:.2f} | {r['load']}"

def found(r):
    f = r.get("found") or {}
    why = "; ".join(f"{n} × {w}" for w, n in f.get("unanalyzed", {}).items())
    return f"{', '.join(c for c in f.get('capabilities', []) if c != 'unanalyzed')} | {why}"

for key, title, note in [
    ("macros", "Macro expansion: `velaris surface --offline`, empty cache",
     "Budgets: every shape at most 512 MiB and 10 s on 2 cores; two exponential crates in one graph at most 1 GiB. `doubling-N-P`: each macro invokes the one before it twice, N levels deep, invoked once in position P; `two-doubling-30`: two such crates in one graph; `many-arms-860kb`: one macro of 1,000 arms of about 140 tokens, invoked 400 times with the last arm's input; `fragment-arms`: 1,000 arms each taking an expression, invoked once with an 8,000-token expression and the last arm's marker. Found: the capabilities of the report besides `unanalyzed` (`process.spawn` is the code outside the macros, `fs.read` the code inside them), then each reason `unanalyzed` with its count."),
    ("parsing", "Parsing: `velaris surface --offline`, empty cache",
     "Each shape must stay fast, `unanalyzed` at its place, the rest of the crate analysed."),
]:
    if not d[key]:
        continue
    L.append(f"## {title}")
    L.append("")
    L.append(note)
    L.append("")
    L.append("| shape | binary | exit | peak RSS (MiB) | seconds | CPU seconds | load | found | unanalyzed |")
    L.append("| --- | --- | ---: | ---: | ---: | ---: | ---: | --- | --- |")
    for r in d[key]:
        extra = "" if "same_as_cold" not in r else (" (output identical to the cold run)" if r["same_as_cold"] else " (output DIFFERS from the cold run)")
        L.append(f"| {r['case']}{extra} | {r['binary']} | {run_cells(r)} | {found(r)} |")
    L.append("")
if d["diffs"]:
    L.append("## Diffs of pathological files: `velaris deps-diff --no-capabilities --offline`")
    L.append("")
    L.append("`one-line-50mb`: one line of 50 MB changed in one byte; `files-100000`: 99,991 small files, each changed; `lines-1000000`: a file of 1,000,000 lines (7.9 MB), every line changed; `lines-200000-shuffled`: 200,000 lines in another order; `files-20-shuffled-100000`: twenty files of 100,000 lines in another order.")
    L.append("")
    L.append("| shape | binary | exit | peak RSS (MiB) | seconds | CPU seconds | load | files | lines +/− | too large to diff |")
    L.append("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |")
    for r in d["diffs"]:
        v = r.get("review") or {}
        lines = v.get("lines") or {}
        big = f"{v.get('too_large', '')}" + (": " + "; ".join(v.get("reasons", [])) if v.get("reasons") else "")
        L.append(f"| {r['case']} | {r['binary']} | {run_cells(r)} | {v.get('files', '')} | +{lines.get('added', '')} −{lines.get('removed', '')} | {big} |")
    L.append("")
open(sys.argv[2], "w").write("\n".join(L))
PY
log "wrote $out_json and $out_md"
