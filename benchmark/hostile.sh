#!/usr/bin/env bash
# Worst cases of hostile and huge input, measured: baseline size, nesting depth, huge sources,
# oversized downloads. Writes benchmark/results/hostile-DATE.{md,json}. See benchmark/README.md.
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
mkdir -p "$work" "$here/results"

command -v /usr/bin/time >/dev/null || { apt-get install -y time >/dev/null; }
command -v python3 >/dev/null || { echo "python3 is needed for the download server" >&2; exit 1; }

log() { printf '%s\n' "$*" >&2; }

# --- build ---------------------------------------------------------------------------------
log "building velaris (release) and the measurement program (release and debug)"
(cd "$repo" && cargo build --release --locked -q)
cp "$repo/target/release/velaris" "$work/velaris"
(cd "$here/hostile" && CARGO_TARGET_DIR="$target" cargo build --release -q && CARGO_TARGET_DIR="$target" cargo build -q)
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

# --- 1. baseline size ----------------------------------------------------------------------
log "baseline: parse, check, fmt, bless at $BASELINE_SIZES entries"
baseline_json="["
for n in $BASELINE_SIZES; do
  r="$("$bench_rel" baseline "$n")"
  baseline_json+="$r,"
  log "  $r"
done
baseline_json="${baseline_json%,}]"

# --- 2. nesting: stack per level, against the guard's estimate -----------------------------
log "nesting: least stack per shape at depth $NESTING_DEPTH (debug build, then release)"
nest_dbg="$("$bench_dbg" nesting-table "$NESTING_DEPTH" | paste -sd, -)"
nest_rel="$("$bench_rel" nesting-table "$NESTING_DEPTH" | paste -sd, -)"

# --- 3. huge source files --------------------------------------------------------------------
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

# --- 4. oversized downloads ------------------------------------------------------------------
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

# --- report --------------------------------------------------------------------------------
cpu="$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')"
mem="$(awk '/MemTotal/ {printf "%.1f GiB", $2/1048576}' /proc/meminfo)"
commit="$(git -C "$repo" rev-parse --short HEAD)$(git -C "$repo" diff --quiet || echo '+dirty')"
cat >"$out_json" <<EOF
{"date": "$date", "commit": "$commit", "before": "${VELARIS_BEFORE_REV}", "machine": {"cpu": "$cpu", "nproc": $(nproc), "memory": "$mem", "kernel": "$(uname -r)", "rustc": "$(rustc -V)"},
 "baseline": $baseline_json,
 "nesting_debug": [$nest_dbg],
 "nesting_release": [$nest_rel],
 "huge_sources": $source_json,
 "downloads": $dl_json}
EOF
python3 - "$out_json" "$out_md" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
m = d["machine"]
L = []
L.append(f"# Hostile and huge input, {d['date']}")
L.append("")
L.append(f"velaris {d['commit']}" + (f", compared with {d['before']}" if d["before"] else "") + f"; {m['cpu']}, {m['nproc']} CPUs, {m['memory']}, Linux {m['kernel']}, {m['rustc']}. Produced by `benchmark/hostile.sh`; raw numbers in the JSON file of the same name. Other builds shared the CPUs, so times are upper bounds.")
L.append("")
L.append("## Baseline size (library, seconds)")
L.append("")
L.append("| entries | bytes | parse | check | fmt (canonical) | fmt (messy) | bless (messy) |")
L.append("| ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
for b in d["baseline"]:
    L.append(f"| {b['entries']:,} | {b['bytes']:,} | {b['parse_s']:.3f} | {b['check_s']:.3f} | {b['fmt_canonical_s']:.3f} | {b['fmt_messy_s']:.3f} | {b['bless_messy_s']:.3f} |")
L.append("")
for key, title in [("nesting_debug", "debug build (as `cargo test`)"), ("nesting_release", "release build")]:
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
L.append("## Huge sources: `velaris surface --offline`")
L.append("")
L.append("| case | binary | exit | peak RSS (MiB) | seconds |")
L.append("| --- | --- | ---: | ---: | ---: |")
for r in d["huge_sources"]:
    rc, kib, secs = r["exit_peak_kib_seconds"].split()
    L.append(f"| {r['case']} | {r['binary']} | {rc} | {int(kib)/1024:.0f} | {secs} |")
L.append("")
L.append("## Oversized downloads: `velaris deps-diff --jobs N`, 300 MiB chunked bodies")
L.append("")
L.append("| binary | exit | peak RSS (MiB) | seconds |")
L.append("| --- | ---: | ---: | ---: |")
for r in d["downloads"]:
    rc, kib, secs = r["exit_peak_kib_seconds"].split()
    L.append(f"| {r['binary']} | {rc} | {int(kib)/1024:.0f} | {secs} |")
L.append("")
open(sys.argv[2], "w").write("\n".join(L))
PY
log "wrote $out_json and $out_md"
