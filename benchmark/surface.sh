#!/usr/bin/env bash
# Benchmark of `velaris surface` on a real project of 300+ registry packages, against the parse
# floor (sha256 + gunzip + untar + syn::parse_file of every .rs file of the same .crate files).
# See benchmark/README.md. Re-runnable: everything scratch lives in benchmark/work/ (git-ignored);
# results go to benchmark/results/surface-YYYY-MM-DD.{md,json,tsv}.
#
# Knobs (environment):
#   RESOLVE=1                   resolve benchmark/surface-project/Cargo.toml again
#                               (`cargo generate-lockfile`) and rewrite its committed Cargo.lock;
#                               default: use the committed Cargo.lock as it is
#   COLD_RUNS (2)               cold runs: empty --cache-dir and empty CARGO_HOME (downloads)
#   COLD_ANALYSIS_RUNS (3)      .crate files in velaris' cache, result cache (surface/) deleted
#   WARM_RUNS (5)               everything cached
#   FLOOR_RUNS (3)              repetitions of the parse floor (each variant)
#   PROBE=auto|skip             auto: count velaris' syn::parse_file calls and bytes with a perf
#                               uprobe (needs perf and tracefs; mounts tracefs as root if needed)
#   PROFILE=auto|skip           auto: `perf record --call-graph dwarf` one cold-analysis run and
#                               one warm run
#   BUILD_TRIES (5)             the work tree may be mid-edit: retry a failed build every 60 s
#   VELARIS_REV                 benchmark this committed revision (built from `git archive` under
#                               benchmark/work) instead of the work tree
#   WAIT_QUIET (300)            seconds to wait for other processes to leave the CPUs idle
#   NICE (-20 as root, else 0)  autogroup nice of the measurements (not of the builds)
set -Eeuo pipefail
trap 'printf "error: line %s: %s failed\n" "$LINENO" "$BASH_COMMAND" >&2' ERR
export LC_ALL=C

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BENCH=$ROOT/benchmark
WORK=$BENCH/work
RESULTS=$BENCH/results
PROJ_SRC=$BENCH/surface-project
RESOLVE=${RESOLVE:-0}
COLD_RUNS=${COLD_RUNS:-2}
COLD_ANALYSIS_RUNS=${COLD_ANALYSIS_RUNS:-3}
WARM_RUNS=${WARM_RUNS:-5}
FLOOR_RUNS=${FLOOR_RUNS:-3}
PROBE=${PROBE:-auto}
PROFILE=${PROFILE:-auto}
BUILD_TRIES=${BUILD_TRIES:-5}
WAIT_QUIET=${WAIT_QUIET:-300}
NICE=${NICE:-$( ((EUID == 0)) && echo -20 || echo 0)}
MIN_PACKAGES=300
DATE=$(date +%F)

log() { printf '==> %s\n' "$*" >&2; }
die() { printf 'error: %s\n' "$*" >&2; exit 1; }
elapsed() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f", b - a }'; }
median() { printf '%s\n' "$@" | sort -g | awk '{ v[NR] = $1 } END { if (NR % 2) printf "%.3f", v[(NR + 1) / 2]; else printf "%.3f", (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
maxof() { printf '%s\n' "$@" | sort -g | tail -1; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "n/a" }'; }
mib() { awk -v b="$1" 'BEGIN { printf "%.1f", b / 1048576 }'; }
le() { awk -v a="$1" -v b="$2" 'BEGIN { exit !(a <= b) }'; }
cpu_busy() {
    local a b
    a=$(awk '/^cpu / { print $2 + $3 + $4 + $7 + $8, $2 + $3 + $4 + $5 + $6 + $7 + $8 }' /proc/stat)
    sleep 1
    b=$(awk '/^cpu / { print $2 + $3 + $4 + $7 + $8, $2 + $3 + $4 + $5 + $6 + $7 + $8 }' /proc/stat)
    awk -v a="$a" -v b="$b" 'BEGIN { split(a, x, " "); split(b, y, " "); printf "%.0f", 100 * (y[1] - x[1]) / (y[2] - x[2]) }'
}
rss_kb() { awk -F': ' '/Maximum resident set size/ { print $2 }' "$1"; }
# user + system CPU seconds of a /usr/bin/time -v report
cpu_s() { awk -F': ' '/User time/ { u = $2 } /System time/ { s = $2 } END { printf "%.2f", u + s }' "$1"; }

# ---------------------------------------------------------------------------------------------
# Tools
need_apt=()
command -v jq >/dev/null || need_apt+=(jq)
[[ -x /usr/bin/time ]] || need_apt+=(time)
if ((${#need_apt[@]})); then
    log "installing ${need_apt[*]} with apt-get"
    apt-get update -qq && apt-get install -y -qq "${need_apt[@]}" >/dev/null
fi
[[ -n ${EPOCHREALTIME:-} ]] || die "bash 5 or later is needed (EPOCHREALTIME)"
mkdir -p "$WORK" "$RESULTS"
# One run at a time: two runs would delete each other's caches and mix their figures. The re-run
# with raised priority below inherits the lock.
if [[ -z ${SURFACE_MEASURING:-} ]] && command -v flock >/dev/null; then
    exec 9>"$WORK/surface.lock"
    flock -n 9 || die "another benchmark/surface.sh is running (it holds $WORK/surface.lock)"
fi

# ---------------------------------------------------------------------------------------------
# Builds (skipped by the re-run with raised priority below: done by then)
VELARIS=$WORK/velaris-surface-bin   # a copy: a rebuild of the work tree during the run changes nothing
FLOOR_TARGET=$WORK/parse-floor-target
FLOOR_SPAN_TARGET=$WORK/parse-floor-span-target
FLOOR=$FLOOR_TARGET/release/surface-parse-floor
FLOOR_SPAN=$FLOOR_SPAN_TARGET/release/surface-parse-floor
if [[ -z ${SURFACE_MEASURING:-} ]]; then
    build_retrying() { # DESCRIPTION COMMAND...: the work tree may be mid-edit by someone else
        local what=$1 try
        shift
        for ((try = 1; try <= BUILD_TRIES; try++)); do
            if "$@"; then return 0; fi
            ((try < BUILD_TRIES)) && { log "$what failed (try $try of $BUILD_TRIES); retrying in 60 s"; sleep 60; }
        done
        die "$what failed $BUILD_TRIES times"
    }
    if [[ -n ${VELARIS_REV:-} ]]; then
        velaris_rev=$(git -C "$ROOT" rev-parse --short "$VELARIS_REV^{commit}")
        velaris_src=$WORK/velaris-$velaris_rev
        if [[ ! -f $velaris_src/Cargo.toml ]]; then
            rm -rf "$velaris_src.part" && mkdir -p "$velaris_src.part"
            git -C "$ROOT" archive "$velaris_rev" | tar -x -C "$velaris_src.part"
            mv "$velaris_src.part" "$velaris_src"
        fi
        log "building velaris $velaris_rev from git archive (cargo build --release --locked)"
        CARGO_TARGET_DIR=$WORK/velaris-target cargo build --release --locked -q --manifest-path "$velaris_src/Cargo.toml" \
            || die "building $velaris_rev failed"
        cp "$WORK/velaris-target/release/velaris" "$VELARIS.part"
        velaris_what="$velaris_rev (\`VELARIS_REV=$VELARIS_REV\`, built from \`git archive\` with \`cargo build --release\`)"
    else
        log "building velaris from the work tree (cargo build --release)"
        build_retrying "cargo build --release" bash -c "cd '$ROOT' && cargo build --release -q"
        cp "$ROOT/target/release/velaris" "$VELARIS.part"
        velaris_rev=$(git -C "$ROOT" rev-parse --short HEAD)
        velaris_dirty=$(git -C "$ROOT" status --porcelain -- src Cargo.toml Cargo.lock | wc -l)
        velaris_what="work tree at $velaris_rev"
        ((velaris_dirty == 0)) || velaris_what+=" plus $velaris_dirty uncommitted changed or new file(s) in src/ or Cargo.*"
        velaris_what+=" (\`cargo build --release\`)"
    fi
    mv "$VELARIS.part" "$VELARIS"
    printf '%s\n' "$velaris_what" >"$WORK/velaris-surface-bin.what"
    "$VELARIS" surface --help >/dev/null || die "this velaris has no \`surface\` command"
    log "building the parse floor (benchmark/parse_floor), plain and with proc-macro2 span-locations"
    CARGO_TARGET_DIR=$FLOOR_TARGET cargo build --release --locked -q --manifest-path "$BENCH/parse_floor/Cargo.toml"
    CARGO_TARGET_DIR=$FLOOR_SPAN_TARGET cargo build --release --locked -q --features span-locations \
        --manifest-path "$BENCH/parse_floor/Cargo.toml"
fi
velaris_what=$(cat "$WORK/velaris-surface-bin.what")

# ---------------------------------------------------------------------------------------------
# The project: benchmark/surface-project, copied to work/ (velaris reads it; cargo never builds it).
PROJ=$WORK/surface-project
if [[ -z ${SURFACE_MEASURING:-} ]]; then
    rm -rf "$PROJ"
    mkdir -p "$PROJ"
    cp -r "$PROJ_SRC/Cargo.toml" "$PROJ_SRC/src" "$PROJ/"
    if [[ $RESOLVE == 1 || ! -f $PROJ_SRC/Cargo.lock ]]; then
        log "resolving benchmark/surface-project (cargo generate-lockfile; nothing is built)"
        (cd "$PROJ" && cargo generate-lockfile -q)
        n=$(grep -c '^\[\[package\]\]' "$PROJ/Cargo.lock" || true)
        ((n >= MIN_PACKAGES)) || die "the resolution has $n packages, fewer than $MIN_PACKAGES: add dependencies to $PROJ_SRC/Cargo.toml"
        cp "$PROJ/Cargo.lock" "$PROJ_SRC/Cargo.lock"
        log "wrote benchmark/surface-project/Cargo.lock ($n packages)"
    else
        cp "$PROJ_SRC/Cargo.lock" "$PROJ/Cargo.lock"
    fi
fi
n_lock=$(grep -c '^\[\[package\]\]' "$PROJ/Cargo.lock" || true)
n_registry=$(grep -c '^checksum = ' "$PROJ/Cargo.lock" || true)
((n_lock >= MIN_PACKAGES)) || die "Cargo.lock has $n_lock packages, fewer than $MIN_PACKAGES"
deps_list=$(awk '/^\[dependencies\]/ { on = 1; next } /^\[/ { on = 0 } on && /^[a-z]/ { print }' "$PROJ/Cargo.toml")
log "project: $n_lock packages in Cargo.lock, $n_registry from the registry"

# ---------------------------------------------------------------------------------------------
# Raised priority: the measurements run in a session of their own whose scheduler autogroup gets
# nice $NICE (benchmark/README.md); the script re-runs itself for this part.
niced=0
if ((NICE != 0)) && [[ -z ${SURFACE_MEASURING:-} ]] && command -v setsid >/dev/null; then
    SURFACE_MEASURING=1 setsid -w bash "${BASH_SOURCE[0]}" "$@" &
    child=$!
    trap 'kill -TERM -- -"$child" 2>/dev/null || kill -TERM "$child"' INT TERM
    rc=0
    wait "$child" || rc=$?
    exit "$rc"
fi
if [[ -n ${SURFACE_MEASURING:-} ]]; then
    if { echo "$NICE" >/proc/self/autogroup; } 2>/dev/null && renice -n "$NICE" -p $$ >/dev/null 2>&1; then
        niced=$NICE
    else
        log "note: could not raise the priority (autogroup nice $NICE)"
    fi
fi

# ---------------------------------------------------------------------------------------------
# velaris runs: from work/run (no .cargo/config.toml applies), CARGO_HOME an empty directory (so
# cargo's download cache cannot help), RUST_BACKTRACE unset (this machine sets it to 1, and every
# analyzer panic would then print a symbolized backtrace: not what a user's run pays).
RUN_DIR=$WORK/run
EMPTY_HOME=$WORK/empty-home
CACHE=$WORK/surface-cache
OUT=$WORK/surface-out
TIMES=$WORK/surface-time
rm -rf "$OUT" "$TIMES"
mkdir -p "$RUN_DIR" "$OUT" "$TIMES"
WALL=0 RSS=0 CPU=0
velaris_run() { # LABEL FORMAT: sets WALL (s), RSS (KiB), CPU (user+sys s)
    local label=$1 format=$2 t0 t1
    t0=$EPOCHREALTIME
    if ! (cd "$RUN_DIR" && env -u RUST_BACKTRACE CARGO_HOME="$EMPTY_HOME" /usr/bin/time -v -o "$TIMES/$label.txt" \
        "$VELARIS" --color never surface --workspace "$PROJ" --cache-dir "$CACHE" --format "$format" \
        >"$OUT/$label.out" 2>"$OUT/$label.err"); then
        tail -20 "$OUT/$label.err" >&2
        die "velaris failed ($label)"
    fi
    t1=$EPOCHREALTIME
    WALL=$(elapsed "$t0" "$t1")
    RSS=$(rss_kb "$TIMES/$label.txt")
    CPU=$(cpu_s "$TIMES/$label.txt")
}
n_cached_crates() { find "$CACHE/crates" -name '*.crate' 2>/dev/null | wc -l; }

busy_before=$(cpu_busy)
if ((busy_before >= 10 && WAIT_QUIET > 0 && niced == 0)); then
    log "the machine is ${busy_before}% busy; waiting up to ${WAIT_QUIET}s for it to quiet down"
    deadline=$((SECONDS + WAIT_QUIET))
    while ((busy_before >= 10 && SECONDS < deadline)); do
        sleep 4
        busy_before=$(cpu_busy)
    done
fi
((busy_before < 10)) || log "note: the CPUs are ${busy_before}% busy before the runs"

# 1. Cold: nothing cached anywhere; every .crate is downloaded.
cold_walls=() cold_rss=() cold_cpu=()
for i in $(seq 1 "$COLD_RUNS"); do
    rm -rf "$CACHE" "$EMPTY_HOME"
    mkdir -p "$CACHE" "$EMPTY_HOME"
    velaris_run "cold-$i" json
    cold_walls+=("$WALL") cold_rss+=("$RSS") cold_cpu+=("$CPU")
    log "cold $i (download + analysis): ${WALL}s, $((RSS / 1024)) MiB, ${CPU} CPU s"
done
JSON=$OUT/cold-1.out
n_crates=$(n_cached_crates)
((n_crates == n_registry)) || log "warning: $n_crates .crate files cached for $n_registry registry packages"
[[ -z $(ls -A "$EMPTY_HOME") ]] || log "note: velaris wrote into CARGO_HOME: $(ls -A "$EMPTY_HOME")"
n_results=$(find "$CACHE/surface" -name '*.json' | wc -l)

# 2. Cold analysis: the .crate files in velaris' cache, the result cache gone.
an_walls=() an_rss=() an_cpu=()
for i in $(seq 1 "$COLD_ANALYSIS_RUNS"); do
    rm -rf "$CACHE/surface"
    velaris_run "cold-analysis-$i" json
    an_walls+=("$WALL") an_rss+=("$RSS") an_cpu+=("$CPU")
    log "cold analysis $i: ${WALL}s, $((RSS / 1024)) MiB, ${CPU} CPU s"
done

# 3. Warm: the same cache again, results cached.
warm_walls=() warm_rss=() warm_cpu=()
for i in $(seq 1 "$WARM_RUNS"); do
    velaris_run "warm-$i" json
    warm_walls+=("$WALL") warm_rss+=("$RSS") warm_cpu+=("$CPU")
    log "warm $i: ${WALL}s, $((RSS / 1024)) MiB, ${CPU} CPU s"
done
velaris_run human human
human_wall=$WALL
cp "$JSON" "$WORK/surface.json"

# The reports must not depend on what was cached.
same_reports=yes
for f in "$OUT"/cold-*.out "$OUT"/warm-*.out; do
    cmp -s "$JSON" "$f" || { same_reports="no: $(basename "$f") differs from cold-1"; log "warning: $same_reports"; break; }
done

# What the output says.
n_programs=$(jq '.programs | length' "$JSON")
n_with_findings=$(jq '[.programs[].crates[] | "\(.name) \(.version)"] | unique | length' "$JSON")
n_unanalyzed=$(jq '[.programs[].crates[] | select(.capabilities | index("unanalyzed")) | "\(.name) \(.version)"] | unique | length' "$JSON")
n_panicked=$(jq '[.programs[].crates[] | select(any(.findings[]; .capability == "unanalyzed" and (.path | startswith("analyzer failure")))) | "\(.name) \(.version)"] | unique | length' "$JSON")
programs_md=$(jq -r '.programs[] | "| `\(.name)` (package `\(.package)`) | \(.crates | length) | \(.capabilities | join(", ")) |"' "$JSON")
caps_md=$(jq -r '[.programs[].crates[] | {k: "\(.name) \(.version)", c: .capabilities[]}] | unique | group_by(.c)
    | map({c: .[0].c, n: length}) | sort_by(-.n) | .[] | "| \(.c) | \(.n) |"' "$JSON")
unanalyzed_md=$(jq -r '[.programs[].crates[] | "\(.name) \(.version)" as $k | .findings[] | select(.capability == "unanalyzed")
    | {k: $k, why: (.path | if test("^parse error in cfg_if") then "parse error in a cfg_if! branch"
                            elif test("^parse error") then "parse error"
                            elif test("^module file of") then "module file not found"
                            else . end)}] | unique
    | group_by(.why) | map({why: .[0].why, n: length, eg: ([.[].k] | unique | .[:4] | join(", "))}) | sort_by(-.n)
    | .[] | "| \(.why) | \(.n) | \(.eg) |"' "$JSON")
an_err=$OUT/cold-analysis-1.err
n_panics=$(grep -c 'panicked at' "$an_err" || true)
panic_kinds=$({ grep -A1 'panicked at' "$an_err" || true; } | { grep -v -e 'panicked at' -e '^--$' || true; } | sort | uniq -c | sort -rn | awk 'NR <= 5' \
    | awk '{ n = $1; $1 = ""; sub(/^ /, ""); printf "%s× `%s`; ", n, $0 }' | sed 's/; $//')
panic_where=$({ grep -o 'panicked at [^ ]*' "$an_err" || true; } | sort | uniq -c | sort -rn | awk 'NR <= 3' | awk '{ printf "%s× %s; ", $1, $4 }' | sed 's/; $//')
warm_err_lines=$(cat "$OUT"/warm-*.err | wc -l)
log "$n_programs program(s), $n_with_findings crates with findings, $n_unanalyzed with unanalyzed; $n_panics panics on stderr (cold analysis)"

# ---------------------------------------------------------------------------------------------
# The parse floor, on the .crate files velaris verified and cached.
CRATES_DIR=$CACHE/crates/sha256
NPROC=$(nproc)
floor_run() { # LABEL BIN ARGS...: JSON lines to $OUT/floor-LABEL.json, RSS to FLOOR_RSS
    local label=$1 bin=$2
    shift 2
    /usr/bin/time -v -o "$TIMES/floor-$label.txt" "$bin" "$@" "$CRATES_DIR" >"$OUT/floor-$label.json"
    FLOOR_RSS=$(rss_kb "$TIMES/floor-$label.txt")
}
fmed() { median $(jq -r ".$2" "$OUT/floor-$1.json"); }
floor_run parse "$FLOOR" --threads "$NPROC" --repeat "$FLOOR_RUNS" --per-crate "$OUT/floor-per-crate.tsv"
floor_rss=$FLOOR_RSS
floor_s=$(fmed parse seconds)
floor_run span "$FLOOR_SPAN" --threads "$NPROC" --repeat "$FLOOR_RUNS"
floor_span_rss=$FLOOR_RSS
floor_span_s=$(fmed span seconds)
floor_run one "$FLOOR" --threads 1 --repeat 1
floor1_s=$(fmed one seconds)
floor_run unpack "$FLOOR" --threads "$NPROC" --repeat 5 --no-parse
floor_unpack_s=$(fmed unpack seconds)
read -r f_crates f_compressed f_unpacked f_rs_files f_rs_bytes f_errors f_not_utf8 f_parse_cpu < <(
    head -1 "$OUT/floor-parse.json" | jq -r '"\(.crates) \(.compressed_bytes) \(.unpacked_bytes) \(.rs_files) \(.rs_bytes) \(.parse_errors) \(.not_utf8) \(.parse_thread_seconds)"')
((f_crates == n_crates)) || die "the floor saw $f_crates .crate files, velaris cached $n_crates"
log "floor: ${floor_s}s on $NPROC threads (${floor_span_s}s with span-locations, ${floor1_s}s on 1 thread, unpack only ${floor_unpack_s}s): $f_rs_files .rs files, $(mib "$f_rs_bytes") MiB"
# The packages with the most .rs bytes (names from Cargo.lock's checksums).
awk '/^name = / { n = $3 } /^version = / { v = $3 } /^checksum = / { c = $3; gsub(/"/, "", n); gsub(/"/, "", v); gsub(/"/, "", c); print c, n, v }' \
    "$PROJ/Cargo.lock" >"$WORK/surface-checksums.txt"
top_md=$(awk -F'\t' 'NR == FNR { split($0, a, " "); nv[a[1]] = a[2] " " a[3]; next }
    FNR > 1 { c = $1; sub(/\.crate$/, "", c); printf "%s\t%s\t%s\t%s\n", $5, nv[c], $4, $8 }' \
    "$WORK/surface-checksums.txt" "$OUT/floor-per-crate.tsv" | sort -t$'\t' -k1,1 -g -r | awk 'NR <= 8' \
    | awk -F'\t' '{ printf "| %s | %d | %.1f MiB | %.2f s |\n", $2, $3, $1 / 1048576, $4 }')
win_bytes=$(awk -F'\t' 'NR == FNR { split($0, a, " "); nv[a[1]] = a[2]; next }
    FNR > 1 { c = $1; sub(/\.crate$/, "", c); if (nv[c] ~ /^(windows|web-sys|js-sys|wasm-bindgen)/) s += $5 } END { print s + 0 }' \
    "$WORK/surface-checksums.txt" "$OUT/floor-per-crate.tsv")

# ---------------------------------------------------------------------------------------------
# What velaris parses: a perf uprobe on syn::parse_file in one cold-analysis run counts the calls
# and adds up the length of the text (`&str` length argument).
pf_calls="" pf_bytes="" pf_note=""
if [[ $PROBE != skip ]] && command -v perf >/dev/null; then
    if [[ ! -e /sys/kernel/tracing/uprobe_events ]] && ((EUID == 0)); then
        mount -t tracefs nodev /sys/kernel/tracing 2>/dev/null && log "mounted tracefs on /sys/kernel/tracing (for the uprobe)"
    fi
    sym_vaddr=$(nm "$VELARIS" 2>/dev/null | awk '$2 ~ /^[Tt]$/ && $3 ~ /^_ZN3syn10parse_file17h[0-9a-f]+E$/ && !seen++ { print $1 }')
    sym_off=""
    if [[ -n $sym_vaddr ]]; then
        a=$((16#$sym_vaddr))
        while read -r _ off vaddr _ fsz _; do
            if ((a >= vaddr && a < vaddr + fsz)); then sym_off=$(printf '0x%x' $((a - vaddr + off))); break; fi
        done < <(readelf -lW "$VELARIS" | awk '$1 == "LOAD"')
    fi
    if [[ -z $sym_off ]]; then
        pf_note="syn::parse_file not found in the velaris binary"
    elif perf probe -q -d 'vsurface:*' >/dev/null 2>&1; perf probe -q -x "$VELARIS" -a "vsurface:parse_file=$sym_off a=%di:u64 b=%si:u64 c=%dx:u64" >/dev/null 2>"$OUT/probe.err"; then
        trap 'perf probe -q -d "vsurface:*" >/dev/null 2>&1 || true' EXIT
        rm -rf "$CACHE/surface"
        (cd "$RUN_DIR" && env -u RUST_BACKTRACE CARGO_HOME="$EMPTY_HOME" perf record -q -e vsurface:parse_file -o "$WORK/probe.data" \
            "$VELARIS" surface --workspace "$PROJ" --cache-dir "$CACHE" --format json >"$OUT/probe.out" 2>>"$OUT/probe.err")
        perf probe -q -d 'vsurface:*' >/dev/null 2>&1 || true
        # Result<File> is returned through a hidden pointer (rdi), so the &str is (rsi, rdx); check.
        read -r pf_calls pf_bytes pf_ok < <(perf script -i "$WORK/probe.data" 2>/dev/null | awk '
            { for (i = 1; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] }
              n++; if (v["a"] + 0 < 4294967296 || v["b"] + 0 < 4294967296 || v["c"] + 0 > 134217728) bad++; s += v["c"] }
            END { printf "%d %d %s\n", n, s, (n > 0 && bad == 0) ? "ok" : "bad" }')
        if [[ $pf_ok != ok ]] || ((pf_bytes > 2 * f_rs_bytes)); then
            pf_note="the uprobe's arguments did not look like (sret, ptr, len); not reported"
            pf_calls="" pf_bytes=""
        else
            log "velaris called syn::parse_file $pf_calls times on $(mib "$pf_bytes") MiB"
        fi
    else
        pf_note="perf probe failed: $(head -1 "$OUT/probe.err")"
    fi
else
    pf_note="skipped"
fi
[[ -z $pf_note ]] || log "parse_file probe: $pf_note"

# ---------------------------------------------------------------------------------------------
# Where the time goes: perf with DWARF call graphs, one cold-analysis run and one warm run.
profile=false
prof_phases() { # PERF_DATA: "phase|percent" lines. Each sample goes to one phase: parsing if
    # syn::parse_file is on its stack, else dropping syntax trees, else the innermost velaris phase.
    perf script -i "$1" --no-inline -F tid,ip,sym 2>/dev/null | awk '
        BEGIN { np = split("parse (syn::parse_file)|drop syntax trees|load modules, strip cfg (loader, not parsing)|name resolution (scope::Resolver)|visit and match rules (Analyzer)|other, in analyze_unit|result cache (serde_json, tempfile)|read and sha256-check .crate (registry)|unpack .crate (gunzip + untar)|workspace and unit graph|render|other (start-up, exit, kernel)", order, "|") }
        function classify(   i, s) {
            for (i = 1; i <= n; i++) if (st[i] ~ /^syn::parse_file$/) return order[1]
            for (i = 1; i <= n; i++) if (st[i] ~ /drop_in_place<velaris::surface::analyze::loader::(Loaded|Module)>/) return order[2]
            for (i = 1; i <= n; i++) { s = st[i]
                if (s ~ /velaris::surface::analyze::loader::/) return order[3]
                if (s ~ /velaris::surface::analyze::scope::/) return order[4]
                if (s ~ /velaris::surface::analyze::visit::/) return order[5]
                if (s ~ /tempfile::|ResultCache|serde_json|serde_core::(ser|de)/) return order[7]
                if (s ~ /velaris::surface::engine::analyze_unit/) return order[6]
                if (s ~ /velaris::registry::/) return order[8]
                if (s ~ /velaris::package::unpack_crate/) return order[9]
                if (s ~ /velaris::workspace::/) return order[10]
                if (s ~ /velaris::surface::render::/) return order[11]
            }
            return order[12]
        }
        function flush() {
            if (n) { cnt[classify()]++; tot++; if (tid == pid) mainc++
                if (st[1] ~ /^(malloc|_int_malloc|_int_free|cfree|realloc|malloc_consolidate|unlink_chunk|_int_realloc|__libc_free|__libc_malloc)/) al++ }
            n = 0
        }
        /^ *[0-9]+ *$/ { flush(); tid = $1 + 0; if (!pid) pid = tid; next }
        NF == 0 { flush(); next }
        { $1 = ""; s = $0; sub(/^ +/, "", s); st[++n] = s }
        END { flush(); if (!tot) tot = 1
              for (i = 1; i <= np; i++) printf "%s|%.1f\n", order[i], 100 * cnt[order[i]] / tot
              printf "(all phases: samples on the main thread)|%.1f\n", 100 * mainc / tot
              printf "(all phases: self time in malloc/free)|%.1f\n", 100 * al / tot }'
}
prof_top() { # PERF_DATA: top self-time symbols
    perf report -i "$1" --no-children --sort symbol -g none --stdio 2>/dev/null | grep -E '^ +[0-9.]+%' \
        | sed -E 's/ +- +- *$//; s/  +/ /g; s/^ //' | awk -v n="$2" 'NR <= n' | cut -c1-150
}
prof_cores() { # PERF_DATA FREQ: CPUs busy per second of the run (samples / frequency)
    perf script -i "$1" -F tid,time 2>/dev/null | awk -v f="$2" '
        { t = $2; sub(/:$/, "", t); if (s == "") s = t; b = int(t - s); c[b]++; if (b > mx) mx = b }
        END { for (i = 0; i <= mx; i++) printf "%s%.1f", (i ? " " : ""), c[i] / f }'
}
if [[ $PROFILE != skip ]] && command -v perf >/dev/null; then
    rm -rf "$CACHE/surface"
    if (cd "$RUN_DIR" && env -u RUST_BACKTRACE CARGO_HOME="$EMPTY_HOME" perf record -q -F 499 --call-graph dwarf,32768 \
            -o "$WORK/perf-cold-analysis.data" "$VELARIS" surface --workspace "$PROJ" --cache-dir "$CACHE" --format json \
            >/dev/null 2>"$OUT/perf-cold.err") \
        && (cd "$RUN_DIR" && env -u RUST_BACKTRACE CARGO_HOME="$EMPTY_HOME" perf record -q -F 1999 --call-graph dwarf,32768 \
            -o "$WORK/perf-warm.data" "$VELARIS" surface --workspace "$PROJ" --cache-dir "$CACHE" --format json \
            >/dev/null 2>"$OUT/perf-warm.err"); then
        profile=true
        prof_phases "$WORK/perf-cold-analysis.data" >"$WORK/perf-cold-analysis.phases"
        prof_phases "$WORK/perf-warm.data" >"$WORK/perf-warm.phases"
        prof_top "$WORK/perf-cold-analysis.data" 15 >"$WORK/perf-cold-analysis.top"
        prof_top "$WORK/perf-warm.data" 12 >"$WORK/perf-warm.top"
        cores_timeline=$(prof_cores "$WORK/perf-cold-analysis.data" 499)
        log "profiled one cold-analysis run and one warm run (perf)"
    else
        log "perf record failed; no profile"
    fi
fi

# ---------------------------------------------------------------------------------------------
# Results
busy_after=$(cpu_busy)
cold_med=$(median "${cold_walls[@]}")
an_med=$(median "${an_walls[@]}")
warm_med=$(median "${warm_walls[@]}")
download_s=$(awk -v a="$cold_med" -v b="$an_med" 'BEGIN { printf "%.3f", a - b }')
cold_rss_max=$(maxof "${cold_rss[@]}")
an_rss_max=$(maxof "${an_rss[@]}")
warm_rss_max=$(maxof "${warm_rss[@]}")
an_cpu_med=$(median "${an_cpu[@]}")
an_cores=$(ratio "$an_cpu_med" "$an_med")
r_an_floor=$(ratio "$an_med" "$floor_s")
r_an_span=$(ratio "$an_med" "$floor_span_s")
r_warm_unpack=$(ratio "$warm_med" "$floor_unpack_s")
tight_floor="" r_an_tight=""
if [[ -n $pf_bytes ]]; then
    tight_floor=$(awk -v s="$floor_span_s" -v a="$pf_bytes" -v b="$f_rs_bytes" 'BEGIN { printf "%.3f", s * a / b }')
    r_an_tight=$(ratio "$an_med" "$tight_floor")
fi
peak_rss_all=$(maxof "$cold_rss_max" "$an_rss_max" "$warm_rss_max")
goal_an="met"; le "$r_an_floor" 2 || goal_an="MISSED"
goal_warm="met"; le "$warm_med" 1 || goal_warm="MISSED"
goal_rss="met"; ((peak_rss_all <= 500 * 1024)) || goal_rss="MISSED"
cpu=$(lscpu | sed -n 's/^Model name: *//p' | awk 'NR == 1')
mem=$(awk '/MemTotal/ { printf "%.1f GiB", $2 / 1048576 }' /proc/meminfo)
kernel=$(uname -sr)
rustc_v=$(rustc -V)
base=$RESULTS/surface-$DATE

jq -n \
    --arg date "$DATE" --arg velaris "$velaris_what" --argjson nproc "$NPROC" --arg cpu "$cpu" --arg mem "$mem" \
    --arg kernel "$kernel" --arg rustc "$rustc_v" --argjson busy_before "$busy_before" --argjson busy_after "$busy_after" \
    --argjson niced "$niced" --argjson lock "$n_lock" --argjson registry "$n_registry" --arg deps "$deps_list" \
    --argjson programs "$n_programs" --argjson with_findings "$n_with_findings" --argjson unanalyzed "$n_unanalyzed" \
    --argjson analyzer_failures "$n_panicked" --argjson panics "$n_panics" --arg same "$same_reports" \
    --argjson crates "$n_crates" --argjson results "$n_results" \
    --arg cold "${cold_walls[*]}" --arg cold_rss "${cold_rss[*]}" --arg cold_cpu "${cold_cpu[*]}" \
    --arg an "${an_walls[*]}" --arg an_rss "${an_rss[*]}" --arg an_cpu "${an_cpu[*]}" \
    --arg warm "${warm_walls[*]}" --arg warm_rss "${warm_rss[*]}" --arg warm_cpu "${warm_cpu[*]}" \
    --argjson floor "$(jq -s . "$OUT/floor-parse.json")" --argjson floor_span "$(jq -s . "$OUT/floor-span.json")" \
    --argjson floor_one "$(jq -s . "$OUT/floor-one.json")" --argjson floor_unpack "$(jq -s . "$OUT/floor-unpack.json")" \
    --argjson floor_rss "$floor_rss" --argjson floor_span_rss "$floor_span_rss" \
    --arg pf_calls "$pf_calls" --arg pf_bytes "$pf_bytes" --arg pf_note "$pf_note" \
    'def nums: split(" ") | map(select(. != "") | tonumber);
     def num: if . == "" then null else tonumber end;
     { date: $date,
       machine: { nproc: $nproc, cpu: $cpu, memory: $mem, kernel: $kernel, rustc: $rustc,
                  cpu_busy_pct_before: $busy_before, cpu_busy_pct_after: $busy_after, nice: $niced },
       velaris: $velaris,
       project: { lockfile_packages: $lock, registry_packages: $registry, dependencies: ($deps | split("\n")) },
       output: { programs: $programs, crates_with_findings: $with_findings, crates_unanalyzed: $unanalyzed,
                 crates_with_analyzer_failure: $analyzer_failures, panics_on_stderr: $panics,
                 reports_identical: $same, crate_files_cached: $crates, results_cached: $results },
       cold: { wall_s: ($cold | nums), peak_rss_kib: ($cold_rss | nums), cpu_s: ($cold_cpu | nums) },
       cold_analysis: { wall_s: ($an | nums), peak_rss_kib: ($an_rss | nums), cpu_s: ($an_cpu | nums) },
       warm: { wall_s: ($warm | nums), peak_rss_kib: ($warm_rss | nums), cpu_s: ($warm_cpu | nums) },
       floor: { parse: $floor, parse_span_locations: $floor_span, parse_one_thread: $floor_one, unpack_only: $floor_unpack,
                peak_rss_kib: $floor_rss, span_locations_peak_rss_kib: $floor_span_rss },
       velaris_parse_file: { calls: ($pf_calls | num), bytes: ($pf_bytes | num), note: $pf_note } }' >"$base.json"

{
    printf 'measure\tvalue\tunit\n'
    printf 'lockfile_packages\t%s\tpackages\n' "$n_lock"
    printf 'registry_packages\t%s\tpackages\n' "$n_registry"
    printf 'programs\t%s\tprograms\n' "$n_programs"
    printf 'crates_with_findings\t%s\tcrates\n' "$n_with_findings"
    printf 'crates_unanalyzed\t%s\tcrates\n' "$n_unanalyzed"
    printf 'panics_on_stderr\t%s\tpanics\n' "$n_panics"
    printf 'cold_median\t%s\ts\n' "$cold_med"
    printf 'cold_peak_rss\t%s\tKiB\n' "$cold_rss_max"
    printf 'cold_download_estimate\t%s\ts\n' "$download_s"
    printf 'cold_analysis_median\t%s\ts\n' "$an_med"
    printf 'cold_analysis_cpu_median\t%s\ts\n' "$an_cpu_med"
    printf 'cold_analysis_peak_rss\t%s\tKiB\n' "$an_rss_max"
    printf 'warm_median\t%s\ts\n' "$warm_med"
    printf 'warm_peak_rss\t%s\tKiB\n' "$warm_rss_max"
    printf 'floor_parse_%s_threads_median\t%s\ts\n' "$NPROC" "$floor_s"
    printf 'floor_parse_span_locations_%s_threads_median\t%s\ts\n' "$NPROC" "$floor_span_s"
    printf 'floor_parse_1_thread\t%s\ts\n' "$floor1_s"
    printf 'floor_unpack_only_%s_threads_median\t%s\ts\n' "$NPROC" "$floor_unpack_s"
    printf 'floor_peak_rss\t%s\tKiB\n' "$floor_rss"
    printf 'floor_rs_files\t%s\tfiles\n' "$f_rs_files"
    printf 'floor_rs_bytes\t%s\tbytes\n' "$f_rs_bytes"
    [[ -z $pf_calls ]] || printf 'velaris_parse_file_calls\t%s\tcalls\n' "$pf_calls"
    [[ -z $pf_bytes ]] || printf 'velaris_parse_file_bytes\t%s\tbytes\n' "$pf_bytes"
    printf 'ratio_cold_analysis_over_floor\t%s\tx\n' "$r_an_floor"
    printf 'ratio_cold_analysis_over_floor_span_locations\t%s\tx\n' "$r_an_span"
    [[ -z $r_an_tight ]] || printf 'ratio_cold_analysis_over_floor_scaled_to_velaris_bytes\t%s\tx\n' "$r_an_tight"
    printf 'ratio_warm_over_unpack_floor\t%s\tx\n' "$r_warm_unpack"
} >"$base.tsv"

{
    echo "# velaris surface benchmark, $DATE"
    echo
    echo "Produced by \`benchmark/surface.sh\`; raw numbers in \`$(basename "$base").json\` and \`$(basename "$base").tsv\`."
    echo
    echo "## Machine"
    echo
    echo "| | |"
    echo "| --- | --- |"
    echo "| CPUs (\`nproc\`) | $NPROC |"
    echo "| CPU | $cpu |"
    echo "| memory | $mem |"
    echo "| kernel | $kernel |"
    echo "| rustc | $rustc_v |"
    echo "| priority of the measurements (own session, autogroup nice) | $niced |"
    echo "| other load (CPU busy over 1 s before / after the runs) | ${busy_before}% / ${busy_after}% |"
    echo "| velaris | $velaris_what |"
    echo
    echo "## The project"
    echo
    echo "\`benchmark/surface-project\`: one binary (never built), its \`Cargo.lock\` resolved from the"
    echo "public registry with \`cargo generate-lockfile\` and committed. Dependencies:"
    echo
    echo '```toml'
    echo "$deps_list"
    echo '```'
    echo
    echo "| | |"
    echo "| --- | --- |"
    echo "| packages in \`Cargo.lock\` | **$n_lock** |"
    echo "| from the registry (with a checksum): \`.crate\` files fetched and verified | $n_registry |"
    echo "| compressed / unpacked bytes of those \`.crate\` files | $(mib "$f_compressed") MiB / $(mib "$f_unpacked") MiB |"
    echo "| \`.rs\` files in them / bytes | $f_rs_files / $(mib "$f_rs_bytes") MiB |"
    if [[ -n $pf_calls ]]; then
        echo "| \`syn::parse_file\` calls in a velaris cold-analysis run / bytes parsed | $pf_calls / $(mib "$pf_bytes") MiB ($(awk -v a="$pf_bytes" -v b="$f_rs_bytes" 'BEGIN { printf "%.0f", 100 * a / b }')% of the \`.rs\` bytes) |"
    fi
    echo "| \`.rs\` bytes in \`windows*\`, \`web-sys\`, \`js-sys\`, \`wasm-bindgen*\` (not compiled for Linux) | $(mib "$win_bytes") MiB |"
    echo "| analysis results cached (\`surface/*.json\`) | $n_results |"
    echo
    echo "## The output"
    echo
    echo "| program | crates with findings | capabilities |"
    echo "| --- | --- | --- |"
    echo "$programs_md"
    echo
    echo "Crates with findings, all programs: **$n_with_findings**; with \`unanalyzed\`: **$n_unanalyzed**"
    echo "($n_panicked of them because the analyzer panicked on them: \`analyzer failure: …\`)."
    echo "Reports identical across cold, cold-analysis and warm runs: $same_reports."
    echo
    echo "| capability | crates |"
    echo "| --- | --- |"
    echo "$caps_md"
    echo
    echo "Why crates are \`unanalyzed\` (distinct crate × reason):"
    echo
    echo "| reason | crates | e.g. |"
    echo "| --- | --- | --- |"
    echo "$unanalyzed_md"
    echo
    if ((n_panics > 0)); then
        echo "stderr of a cold-analysis run: $n_panics panic messages ($panic_kinds; at $panic_where)."
        echo "The panics are caught per crate and reported as \`unanalyzed\`, and that result is cached: warm"
        echo "runs print nothing about them ($warm_err_lines lines of stderr over $WARM_RUNS runs) and report the same."
    else
        echo "stderr: no panics in the cold-analysis run; $warm_err_lines lines over the $WARM_RUNS warm runs."
    fi
    echo
    echo "## Times"
    echo
    echo "Wall time is the median of the runs (every run in the JSON); peak RSS is the largest; CPU is"
    echo "user + system time (median). Every velaris run: \`--format json\`, \`CARGO_HOME\` an empty"
    echo "directory, \`RUST_BACKTRACE\` unset."
    echo
    echo "| run | runs | wall (median) | CPU | peak RSS |"
    echo "| --- | --- | --- | --- | --- |"
    echo "| velaris cold: empty \`--cache-dir\`, download + analysis | $COLD_RUNS | ${cold_med} s | $(median "${cold_cpu[@]}") s | $((cold_rss_max / 1024)) MiB |"
    echo "| (download and verify, the difference) | | ${download_s} s | | |"
    echo "| velaris cold analysis: \`.crate\` files cached, \`surface/\` deleted | $COLD_ANALYSIS_RUNS | **${an_med} s** | ${an_cpu_med} s (${an_cores} CPUs busy on average) | **$((an_rss_max / 1024)) MiB** |"
    echo "| velaris warm: results cached | $WARM_RUNS | **${warm_med} s** | $(median "${warm_cpu[@]}") s | $((warm_rss_max / 1024)) MiB |"
    echo "| velaris warm, human format | 1 | ${human_wall} s | | |"
    echo "| parse floor, $NPROC threads: sha256 + gunzip + untar + \`syn::parse_file\` of every \`.rs\` | $FLOOR_RUNS | **${floor_s} s** | $(printf '%.1f' "$f_parse_cpu") s in parse_file | $((floor_rss / 1024)) MiB |"
    echo "| parse floor, $NPROC threads, proc-macro2 \`span-locations\` (as velaris builds it) | $FLOOR_RUNS | ${floor_span_s} s | | $((floor_span_rss / 1024)) MiB |"
    echo "| parse floor, 1 thread | 1 | ${floor1_s} s | | |"
    echo "| unpack floor, $NPROC threads: sha256 + gunzip + untar only | 5 | ${floor_unpack_s} s | | |"
    echo
    echo "## Ratios and goals"
    echo
    echo "| | value | goal |"
    echo "| --- | --- | --- |"
    echo "| velaris cold analysis / parse floor ($NPROC threads) | **${r_an_floor}x** | within 2x: $goal_an |"
    echo "| velaris cold analysis / parse floor with span-locations | ${r_an_span}x | |"
    if [[ -n $r_an_tight ]]; then
        echo "| velaris cold analysis / floor scaled to the bytes velaris parses (span-locations floor × $(mib "$pf_bytes") / $(mib "$f_rs_bytes"), an estimate: ${tight_floor} s) | ${r_an_tight}x | |"
    fi
    echo "| velaris warm | ${warm_med} s | under 1 s: $goal_warm |"
    echo "| velaris warm / unpack floor | ${r_warm_unpack}x | |"
    echo "| peak RSS, largest of all velaris runs | $((peak_rss_all / 1024)) MiB | under 500 MiB: $goal_rss |"
    echo
    echo "velaris keeps dependency sources compressed and unpacks a package only while one of its units"
    echo "is analyzed ($(mib "$f_unpacked") MiB unpacked in all here); a warm run peaks at $((warm_rss_max / 1024)) MiB. A cold"
    echo "analysis peaks with the syntax trees (and proc-macro2 span maps) of the largest crates being"
    echo "analyzed at once; the span-locations floor alone peaks at $((floor_span_rss / 1024)) MiB."
    echo
    echo "The parse floor parses every \`.rs\` file in every \`.crate\`, including tests, examples, benches and"
    echo "the Windows and wasm crates that are not compiled for Linux; velaris parses only the modules"
    echo "compiled for its target, so the floor is an upper bound on the parsing velaris has to do and"
    echo "the ratio flatters velaris. Largest parse costs in the floor (1 of $NPROC threads):"
    echo
    echo "| package | .rs files | .rs bytes | parse time |"
    echo "| --- | --- | --- | --- |"
    echo "$top_md"
    echo
    echo "Floor parse errors: $f_errors of $f_rs_files files (not UTF-8: $f_not_utf8)."
    if $profile; then
        echo
        echo "## Where the time goes"
        echo
        echo "\`perf record --call-graph dwarf\` of one cold-analysis run and one warm run. Every sample (any"
        echo "thread) counts in one phase: parsing when \`syn::parse_file\` is on its stack, else dropping"
        echo "syntax trees, else the innermost velaris phase on the stack (allocator time goes to its caller)."
        echo
        echo "| phase | cold analysis | warm |"
        echo "| --- | --- | --- |"
        paste -d'|' "$WORK/perf-cold-analysis.phases" <(cut -d'|' -f2 "$WORK/perf-warm.phases") \
            | awk -F'|' '{ printf "| %s | %s%% | %s%% |\n", $1, $2, $3 }'
        echo
        echo "CPUs busy in each second of the cold-analysis run (samples / frequency; $NPROC is all):"
        echo "\`$cores_timeline\`"
        echo
        echo "Top self-time symbols, cold analysis:"
        echo
        echo '```'
        cat "$WORK/perf-cold-analysis.top"
        echo '```'
        echo
        echo "Top self-time symbols, warm:"
        echo
        echo '```'
        cat "$WORK/perf-warm.top"
        echo '```'
    fi
    echo
    echo "## Sample output"
    echo
    echo "\`velaris surface --workspace benchmark/work/surface-project\` (human format), first 40 lines:"
    echo
    echo '```'
    head -40 "$OUT/human.out"
    echo '```'
} >"$base.md"
log "wrote $base.md"
if ((busy_before >= 10 || busy_after >= 10)); then
    log "note: other processes used the CPUs during the run (${busy_before}% / ${busy_after}%)"
fi
cat "$base.tsv"
