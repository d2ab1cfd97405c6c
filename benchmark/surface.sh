#!/usr/bin/env bash
# Benchmark of `velaris surface` on benchmark/surface-project (349 packages) and, with APP, on a
# real application's workspace (its manifests and Cargo.lock), against the parse floor: sha256 +
# gunzip + untar + syn::parse_file of the files velaris analyses (the `files` lists of its JSON),
# from the same verified .crate files. See benchmark/README.md. Re-runnable: everything scratch
# lives in benchmark/work/ (git-ignored); results go to
# benchmark/results/surface-YYYY-MM-DD.{md,json,tsv}.
#
# Knobs (environment):
#   APP                         a real application to measure too: a git repository (bare or
#                               not) or a plain directory with its workspace Cargo.toml and
#                               Cargo.lock at the top. Only its manifests and Cargo.lock are
#                               copied (benchmark/work/app/), its .rs files as empty files
#                               (README). Unset: only surface-project is measured.
#   APP_REV (HEAD)              the revision of APP (a git repository) to read
#   APP_NAME, APP_URL           how the report names the application (default: its directory's
#                               name; no URL)
#   RESOLVE=1                   resolve benchmark/surface-project/Cargo.toml again
#                               (`cargo generate-lockfile`) and rewrite its committed Cargo.lock
#   COLD_RUNS (3)               cold runs: empty --cache-dir and empty CARGO_HOME (downloads)
#   COLD_ANALYSIS_RUNS (5)      .crate files cached, result cache (surface/) deleted; each is
#                               paired with a run of the compiled-files floor
#   WARM_RUNS (5)               everything cached
#   FLOOR_RUNS (3)              runs of each other floor variant
#   PER_CRATE=auto|skip         auto: one cold analysis on one CPU, its time split per crate
#                               (from the result cache's write times) and set against the floor
#   PROBE=auto|skip             auto: count velaris' syn::parse_file calls with a perf uprobe
#   PROFILE=auto|skip           auto: `perf record --call-graph dwarf` one cold-analysis run and
#                               one warm run of surface-project
#   VELARIS_BEFORE_REV          also measure cold analysis and warm runs of this revision (built
#                               from `git archive`), paired with the current ones
#   REPORT_ONLY=1               build and measure nothing: write results/ again from what the last
#                               run left in benchmark/work/ (same APP and VELARIS_BEFORE_REV)
#   BUILD_TRIES (5)             the work tree may be mid-edit: retry a failed build every 60 s
#   VELARIS_REV                 benchmark this committed revision (built from `git archive`
#                               under benchmark/work) instead of the work tree
#   WAIT_QUIET (300)            seconds to wait, before each project's runs, for the CPUs to be
#                               less than 10% busy (also at raised priority: caches and memory
#                               bandwidth are shared); 0: do not wait
#   NICE (-20 as root, else 0)  autogroup nice of the measurements (not of the builds)
# The jq programs are in single quotes on purpose (backticks in them are Markdown):
# shellcheck disable=SC2016
set -Eeuo pipefail
trap 'printf "error: line %s: %s failed\n" "$LINENO" "$BASH_COMMAND" >&2' ERR
export LC_ALL=C

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BENCH=$ROOT/benchmark
WORK=$BENCH/work
RESULTS=$BENCH/results
PROJ_SRC=$BENCH/surface-project
APP=${APP:-}
APP_REV=${APP_REV:-HEAD}
RESOLVE=${RESOLVE:-0}
COLD_RUNS=${COLD_RUNS:-3}
COLD_ANALYSIS_RUNS=${COLD_ANALYSIS_RUNS:-5}
WARM_RUNS=${WARM_RUNS:-5}
FLOOR_RUNS=${FLOOR_RUNS:-3}
PER_CRATE=${PER_CRATE:-auto}
PROBE=${PROBE:-auto}
PROFILE=${PROFILE:-auto}
BUILD_TRIES=${BUILD_TRIES:-5}
REPORT_ONLY=${REPORT_ONLY:-0}
WAIT_QUIET=${WAIT_QUIET:-300}
NICE=${NICE:-$( ((EUID == 0)) && echo -20 || echo 0)}
MIN_PACKAGES=300
MIN_APP_PACKAGES=1000
DATE=$(date +%F)

log() { printf '==> %s\n' "$*" >&2; }
die() { printf 'error: %s\n' "$*" >&2; exit 1; }
elapsed() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f", b - a }'; }
cpu_busy() {
    local a b
    a=$(awk '/^cpu / { print $2 + $3 + $4 + $7 + $8, $2 + $3 + $4 + $5 + $6 + $7 + $8 }' /proc/stat)
    sleep 1
    b=$(awk '/^cpu / { print $2 + $3 + $4 + $7 + $8, $2 + $3 + $4 + $5 + $6 + $7 + $8 }' /proc/stat)
    awk -v a="$a" -v b="$b" 'BEGIN { split(a, x, " "); split(b, y, " "); printf "%.0f", 100 * (y[1] - x[1]) / (y[2] - x[2]) }'
}
loadavg() { cut -d' ' -f1-3 /proc/loadavg; }
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

# REPORT_ONLY: the builds, the projects' setup and the measurements are skipped (as in the re-run
# with raised priority below), and the results are written from benchmark/work/.
if [[ $REPORT_ONLY == 1 ]]; then
    [[ -f $WORK/project/runs.jsonl && -f $WORK/surface-niced ]] || die "REPORT_ONLY=1: no earlier run in $WORK"
    SURFACE_MEASURING=1
fi

# ---------------------------------------------------------------------------------------------
# Builds (skipped by the re-run with raised priority below: done by then)
VELARIS=$WORK/velaris-surface-bin   # a copy: a rebuild of the work tree during the run changes nothing
VELARIS_BEFORE=$WORK/velaris-surface-before-bin
FLOOR_TARGET=$WORK/parse-floor-target
FLOOR_SPAN_TARGET=$WORK/parse-floor-span-target
FLOOR=$FLOOR_TARGET/release/surface-parse-floor
FLOOR_SPAN=$FLOOR_SPAN_TARGET/release/surface-parse-floor
build_rev() { # REV DEST: velaris at REV from `git archive`, copied to DEST
    local rev src
    rev=$(git -C "$ROOT" rev-parse --short "$1^{commit}")
    src=$WORK/velaris-$rev
    if [[ ! -f $src/Cargo.toml ]]; then
        rm -rf "$src.part" && mkdir -p "$src.part"
        git -C "$ROOT" archive "$rev" | tar -x -C "$src.part"
        mv "$src.part" "$src"
    fi
    log "building velaris $rev from git archive (cargo build --release --locked)"
    CARGO_TARGET_DIR=$WORK/velaris-target cargo build --release --locked -q --manifest-path "$src/Cargo.toml" \
        || die "building $rev failed"
    cp "$WORK/velaris-target/release/velaris" "$2.part"
    mv "$2.part" "$2"
}
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
        build_rev "$VELARIS_REV" "$VELARIS"
        velaris_what="$(git -C "$ROOT" rev-parse --short "$VELARIS_REV^{commit}") (\`VELARIS_REV=$VELARIS_REV\`, built from \`git archive\` with \`cargo build --release\`)"
    else
        log "building velaris from the work tree (cargo build --release)"
        build_retrying "cargo build --release" bash -c "cd '$ROOT' && cargo build --release -q"
        cp "$ROOT/target/release/velaris" "$VELARIS.part"
        mv "$VELARIS.part" "$VELARIS"
        velaris_rev=$(git -C "$ROOT" rev-parse --short HEAD)
        velaris_dirty=$(git -C "$ROOT" status --porcelain -- src Cargo.toml Cargo.lock | wc -l)
        velaris_what="work tree at $velaris_rev"
        ((velaris_dirty == 0)) || velaris_what+=" plus $velaris_dirty uncommitted changed or new file(s) in src/ or Cargo.*"
        velaris_what+=" (\`cargo build --release\`)"
    fi
    printf '%s\n' "$velaris_what" >"$WORK/velaris-surface-bin.what"
    "$VELARIS" surface --help >/dev/null || die "this velaris has no \`surface\` command"
    rm -f "$WORK/velaris-surface-before-bin.what"
    if [[ -n ${VELARIS_BEFORE_REV:-} ]]; then
        build_rev "$VELARIS_BEFORE_REV" "$VELARIS_BEFORE"
        printf '%s\n' "$(git -C "$ROOT" rev-parse --short "$VELARIS_BEFORE_REV^{commit}") (\`VELARIS_BEFORE_REV=$VELARIS_BEFORE_REV\`)" \
            >"$WORK/velaris-surface-before-bin.what"
    fi
    log "building the parse floor (benchmark/parse_floor), plain and with proc-macro2 span-locations"
    CARGO_TARGET_DIR=$FLOOR_TARGET cargo build --release --locked -q --manifest-path "$BENCH/parse_floor/Cargo.toml"
    CARGO_TARGET_DIR=$FLOOR_SPAN_TARGET cargo build --release --locked -q --features span-locations \
        --manifest-path "$BENCH/parse_floor/Cargo.toml"
fi
velaris_what=$(cat "$WORK/velaris-surface-bin.what")
before_what=""
[[ ! -f $WORK/velaris-surface-before-bin.what ]] || before_what=$(cat "$WORK/velaris-surface-before-bin.what")

# ---------------------------------------------------------------------------------------------
# The projects. surface-project: copied to work/ with its committed Cargo.lock. The application:
# its manifests and Cargo.lock copied to work/app/ws, every .rs file of its tree as an empty file
# (so that target discovery finds the same programs, libraries and build scripts, while the
# application's own code is not analysed). Cargo never builds either.
PROJ_DIR=$WORK/surface-project
APP_DIR=$WORK/app/ws
if [[ -z ${SURFACE_MEASURING:-} ]]; then
    rm -rf "$PROJ_DIR"
    mkdir -p "$PROJ_DIR"
    cp -r "$PROJ_SRC/Cargo.toml" "$PROJ_SRC/src" "$PROJ_DIR/"
    if [[ $RESOLVE == 1 || ! -f $PROJ_SRC/Cargo.lock ]]; then
        log "resolving benchmark/surface-project (cargo generate-lockfile; nothing is built)"
        (cd "$PROJ_DIR" && cargo generate-lockfile -q)
        n=$(grep -c '^\[\[package\]\]' "$PROJ_DIR/Cargo.lock" || true)
        ((n >= MIN_PACKAGES)) || die "the resolution has $n packages, fewer than $MIN_PACKAGES: add dependencies to $PROJ_SRC/Cargo.toml"
        cp "$PROJ_DIR/Cargo.lock" "$PROJ_SRC/Cargo.lock"
        log "wrote benchmark/surface-project/Cargo.lock ($n packages)"
    else
        cp "$PROJ_SRC/Cargo.lock" "$PROJ_DIR/Cargo.lock"
    fi
    rm -rf "$WORK/app"
    if [[ -n $APP ]]; then
        [[ -d $APP ]] || die "APP=$APP is not a directory"
        mkdir -p "$APP_DIR"
        app_name=${APP_NAME:-}
        if [[ -z $app_name ]]; then
            app_name=$(basename "$(cd "$APP" && pwd)")
            [[ $app_name != repo && $app_name != .git ]] || app_name=$(basename "$(cd "$APP/.." && pwd)")
            app_name=${app_name%.git}
        fi
        app_commit="" app_date=""
        if git -C "$APP" rev-parse --git-dir >/dev/null 2>&1; then
            app_commit=$(git -C "$APP" rev-parse "$APP_REV^{commit}")
            app_date=$(git -C "$APP" show -s --format=%cs "$app_commit")
            git -C "$APP" ls-tree -r --name-only "$app_commit" >"$WORK/app/tree.txt"
            grep -E '(^|/)Cargo\.(toml|lock)$' "$WORK/app/tree.txt" | while IFS= read -r f; do
                mkdir -p "$APP_DIR/$(dirname "$f")"
                git -C "$APP" show "$app_commit:$f" >"$APP_DIR/$f"
            done
        else
            (cd "$APP" && find . \( -name target -o -name .git \) -prune -o -type f -print | sed 's|^\./||') >"$WORK/app/tree.txt"
            grep -E '(^|/)Cargo\.(toml|lock)$' "$WORK/app/tree.txt" | while IFS= read -r f; do
                mkdir -p "$APP_DIR/$(dirname "$f")"
                cp "$APP/$f" "$APP_DIR/$f"
            done
        fi
        grep -E '\.rs$' "$WORK/app/tree.txt" | while IFS= read -r f; do
            mkdir -p "$APP_DIR/$(dirname "$f")"
            : >"$APP_DIR/$f"
        done
        [[ -f $APP_DIR/Cargo.lock ]] || die "APP has no Cargo.lock at its top"
        n=$(grep -c '^\[\[package\]\]' "$APP_DIR/Cargo.lock" || true)
        ((n >= MIN_APP_PACKAGES)) || log "warning: the application's Cargo.lock has $n packages, fewer than $MIN_APP_PACKAGES"
        jq -n --arg name "$app_name" --arg url "${APP_URL:-}" --arg commit "$app_commit" --arg date "$app_date" \
            --argjson manifests "$(grep -cE '(^|/)Cargo\.toml$' "$WORK/app/tree.txt")" \
            --argjson rs "$(grep -cE '\.rs$' "$WORK/app/tree.txt")" \
            '{name: $name, url: $url, commit: $commit, commit_date: $date, manifests_copied: $manifests, rs_files_emptied: $rs}' \
            >"$WORK/app/meta.json"
        log "application $app_name ${app_commit:0:12}: $n packages in Cargo.lock"
    fi
fi

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
if [[ $REPORT_ONLY == 1 ]]; then
    niced=$(cat "$WORK/surface-niced")
elif [[ -n ${SURFACE_MEASURING:-} ]]; then
    if { echo "$NICE" >/proc/self/autogroup; } 2>/dev/null && renice -n "$NICE" -p $$ >/dev/null 2>&1; then
        niced=$NICE
    else
        log "note: could not raise the priority (autogroup nice $NICE)"
    fi
fi

# ---------------------------------------------------------------------------------------------
# Measuring one project. velaris runs from work/run (no .cargo/config.toml applies), CARGO_HOME
# an empty directory (so cargo's download cache cannot help), RUST_BACKTRACE unset (this
# machine sets it to 1, and every caught analyzer panic would then print a symbolized
# backtrace: not what a user's run pays). Every run is one line of $RUNS.
RUN_DIR=$WORK/run
NPROC=$(nproc)
mkdir -p "$RUN_DIR"
record() { # KIND RUN WALL CPU RSS [FLOOR_JSON]: one line of $RUNS, with the 1-minute load average at its end
    jq -nc --arg p "$PKEY" --arg k "$1" --argjson r "$2" --argjson w "$3" --argjson c "$4" --argjson m "$5" \
        --argjson f "${6:-null}" --argjson l "$(cut -d' ' -f1 /proc/loadavg)" \
        '{project: $p, kind: $k, run: $r, wall_s: $w, cpu_s: $c, peak_rss_kib: $m, loadavg_1m: $l} + (if $f then {floor: $f} else {} end)' >>"$RUNS"
}
WALL=0
vrun() { # BIN CACHE KIND RUN FORMAT [WRAPPER...]: output in $OUT/KIND-RUN.out
    local bin=$1 cache=$2 kind=$3 run=$4 format=$5 label=$3-$4 t0 t1 rss cpu
    shift 5
    t0=$EPOCHREALTIME
    if ! (cd "$RUN_DIR" && env -u RUST_BACKTRACE CARGO_HOME="$EMPTY_HOME" "$@" /usr/bin/time -v -o "$TIMES/$label.txt" \
        "$bin" --color never surface --workspace "$PROJ" --cache-dir "$cache" --format "$format" \
        >"$OUT/$label.out" 2>"$OUT/$label.err"); then
        tail -20 "$OUT/$label.err" >&2
        die "velaris failed ($PKEY $label)"
    fi
    t1=$EPOCHREALTIME
    WALL=$(elapsed "$t0" "$t1")
    rss=$(rss_kb "$TIMES/$label.txt")
    cpu=$(cpu_s "$TIMES/$label.txt")
    record "$kind" "$run" "$WALL" "$cpu" "$rss"
    log "$PKEY $label: ${WALL}s, $((rss / 1024)) MiB, ${cpu} CPU s"
}
frun() { # KIND RUN BIN ARGS...: one floor process; its JSON line in $OUT/KIND-RUN.json
    local kind=$1 run=$2 bin=$3 label=$1-$2 t0 t1 rss cpu wall
    shift 3
    t0=$EPOCHREALTIME
    if ! /usr/bin/time -v -o "$TIMES/$label.txt" "$bin" "$@" >"$OUT/$label.json" 2>"$OUT/$label.err"; then
        tail -20 "$OUT/$label.err" >&2
        die "the floor failed ($PKEY $label)"
    fi
    t1=$EPOCHREALTIME
    wall=$(elapsed "$t0" "$t1")
    rss=$(rss_kb "$TIMES/$label.txt")
    cpu=$(cpu_s "$TIMES/$label.txt")
    record "$kind" "$run" "$wall" "$cpu" "$rss" "$(cat "$OUT/$label.json")"
    log "$PKEY $label: $(jq -r .seconds "$OUT/$label.json")s inside, ${wall}s process, $((rss / 1024)) MiB, ${cpu} CPU s"
}

# Where the time goes (perf with DWARF call graphs). Each sample goes to one phase: parsing if
# syn::parse_file is on its stack (or the lexer and syn::parse2 under the loader: large files),
# else dropping syntax trees, else the innermost velaris phase.
prof_phases() { # PERF_DATA: "phase|percent" lines
    perf script -i "$1" --no-inline -F tid,ip,sym 2>/dev/null | awk '
        BEGIN { np = split("parse (syn::parse_file)|parse, large files (lexer, tables emptied, syn::parse2)|drop syntax trees|macro expansion (macros, mbe)|load modules, strip cfg (loader, not parsing)|name resolution (scope::Resolver)|visit and match rules (Analyzer)|per-function summaries (summary)|other, in analyze_unit|result cache (serde_json, tempfile)|read and sha256-check .crate (registry)|unpack .crate (gunzip + untar)|workspace and unit graph|render|other (start-up, exit, kernel)", order, "|") }
        function classify(   i, s, lex) {
            for (i = 1; i <= n; i++) if (st[i] ~ /^syn::parse_file$/) return order[1]
            lex = 0
            for (i = 1; i <= n; i++) { s = st[i]
                if (s ~ /^velaris::/) { if (lex && s ~ /velaris::surface::analyze::loader::/) return order[2]; break }
                if (s ~ /proc_macro2::.*(FromStr|from_str|token_stream)|syn::parse2|Parser.*parse2|syn::file::/) lex = 1
            }
            for (i = 1; i <= n; i++) if (st[i] ~ /drop_in_place<(velaris::surface::analyze::loader::(Loaded|Module)|syn::file::File)>/) return order[3]
            for (i = 1; i <= n; i++) { s = st[i]
                if (s ~ /velaris::surface::analyze::(macros|mbe)::/) return order[4]
                if (s ~ /velaris::surface::analyze::(loader|recover)::/) return order[5]
                if (s ~ /velaris::surface::analyze::scope::/) return order[6]
                if (s ~ /velaris::surface::analyze::(visit|attrs|paths)::/) return order[7]
                if (s ~ /velaris::surface::analyze::summary::/) return order[8]
                if (s ~ /tempfile::|ResultCache|serde_json|serde_core::(ser|de)/) return order[10]
                if (s ~ /velaris::surface::engine::analyze_unit/) return order[9]
                if (s ~ /velaris::registry::/) return order[11]
                if (s ~ /velaris::package::unpack_crate/) return order[12]
                if (s ~ /velaris::workspace::/) return order[13]
                if (s ~ /velaris::surface::render::/) return order[14]
            }
            return order[15]
        }
        function flush() {
            if (n) { cnt[classify()]++; tot++; if (tid == pid) mainc++
                if (st[1] ~ /^(malloc|_int_malloc|_int_free|cfree|realloc|malloc_consolidate|unlink_chunk|_int_realloc|__libc_free|__libc_malloc|mi_|_mi_)/) al++ }
            n = 0
        }
        /^ *[0-9]+ *$/ { flush(); tid = $1 + 0; if (!pid) pid = tid; next }
        NF == 0 { flush(); next }
        { $1 = ""; s = $0; sub(/^ +/, "", s); st[++n] = s }
        END { flush(); if (!tot) tot = 1
              for (i = 1; i <= np; i++) printf "%s|%.1f\n", order[i], 100 * cnt[order[i]] / tot
              printf "(all phases: samples on the main thread)|%.1f\n", 100 * mainc / tot
              printf "(all phases: self time in the allocator)|%.1f\n", 100 * al / tot }'
}
prof_top() { # PERF_DATA N: top self-time symbols
    perf report -i "$1" --no-children --sort symbol -g none --stdio 2>/dev/null | grep -E '^ +[0-9.]+%' \
        | sed -E 's/ +- +- *$//; s/  +/ /g; s/^ //' | awk -v n="$2" 'NR <= n' | cut -c1-150
}
prof_cores() { # PERF_DATA FREQ: CPUs busy per second of the run (samples / frequency)
    perf script -i "$1" -F tid,time 2>/dev/null | awk -v f="$2" '
        { t = $2; sub(/:$/, "", t); if (s == "") s = t; b = int(t - s); c[b]++; if (b > mx) mx = b }
        END { for (i = 0; i <= mx; i++) printf "%s%.1f", (i ? " " : ""), c[i] / f }'
}

# The parse_file uprobe: calls and bytes of syn::parse_file in one run of BIN.
probe_parse_file() { # sets PF_CALLS PF_BYTES PF_NOTE
    PF_CALLS="" PF_BYTES="" PF_NOTE=""
    if [[ $PROBE == skip ]] || ! command -v perf >/dev/null; then PF_NOTE="skipped"; return; fi
    if [[ ! -e /sys/kernel/tracing/uprobe_events ]] && ((EUID == 0)); then
        mount -t tracefs nodev /sys/kernel/tracing 2>/dev/null && log "mounted tracefs on /sys/kernel/tracing (for the uprobe)"
    fi
    local sym_vaddr sym_off="" a ok
    sym_vaddr=$(nm "$VELARIS" 2>/dev/null | awk '$2 ~ /^[Tt]$/ && $3 ~ /^_ZN3syn10parse_file17h[0-9a-f]+E$/ && !seen++ { print $1 }')
    if [[ -n $sym_vaddr ]]; then
        a=$((16#$sym_vaddr))
        while read -r _ off vaddr _ fsz _; do
            if ((a >= vaddr && a < vaddr + fsz)); then sym_off=$(printf '0x%x' $((a - vaddr + off))); break; fi
        done < <(readelf -lW "$VELARIS" | awk '$1 == "LOAD"')
    fi
    if [[ -z $sym_off ]]; then PF_NOTE="syn::parse_file not found in the velaris binary"; return; fi
    perf probe -q -d 'vsurface:*' >/dev/null 2>&1 || true
    if ! perf probe -q -x "$VELARIS" -a "vsurface:parse_file=$sym_off a=%di:u64 b=%si:u64 c=%dx:u64" >/dev/null 2>"$OUT/probe.err"; then
        PF_NOTE="perf probe failed: $(head -1 "$OUT/probe.err")"
        return
    fi
    rm -rf "$CACHE/surface"
    (cd "$RUN_DIR" && env -u RUST_BACKTRACE CARGO_HOME="$EMPTY_HOME" perf record -q -e vsurface:parse_file -o "$WORK/probe.data" \
        "$VELARIS" --color never surface --workspace "$PROJ" --cache-dir "$CACHE" --format json >"$OUT/probe.out" 2>>"$OUT/probe.err") || true
    perf probe -q -d 'vsurface:*' >/dev/null 2>&1 || true
    # Result<File> is returned through a hidden pointer (rdi), so the &str is (rsi, rdx); check
    # (an empty &str, as of the application's emptied files, may point at 1).
    read -r PF_CALLS PF_BYTES ok < <(perf script -i "$WORK/probe.data" 2>/dev/null | awk '
        { for (i = 1; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] }
          n++; if (v["a"] + 0 < 4294967296 || (v["c"] + 0 > 0 && v["b"] + 0 < 4294967296) || v["c"] + 0 > 134217728) bad++; s += v["c"] }
        END { printf "%d %d %s\n", n, s, (n > 0 && bad == 0) ? "ok" : "bad" }')
    rm -f "$WORK/probe.data"
    if [[ $ok != ok ]]; then
        PF_NOTE="the uprobe's arguments did not look like (sret, ptr, len); not reported"
        PF_CALLS="" PF_BYTES=""
    fi
}

# Per crate: one cold analysis on one CPU (velaris then analyzes one unit after the other), each
# result-cache entry's write time minus the previous one is that unit's time; units are matched
# to crates by their crate name and files (a build script or a crate name shared by two versions
# whose files do not tell them apart stays unattributed). Writes $P/per-crate.json.
per_crate() {
    local cpu0
    cpu0=$(taskset -pc $$ 2>/dev/null | sed 's/.*: *//; s/[,-].*//')
    [[ -n $cpu0 ]] || cpu0=0
    rm -rf "$CACHE/surface"
    vrun "$VELARIS" "$CACHE" one_cpu 1 json taskset -c "$cpu0"
    cmp -s "$JSON" "$OUT/one_cpu-1.out" || log "warning: the one-CPU report differs from cold-1"
    find "$CACHE/surface" -maxdepth 1 -name '*.json' -printf '%T@ %p\n' | sort -g | while read -r t f; do
        tail -n +2 "$f" | jq -c --argjson t "$t" '{t: $t, c: .exports.crate_name, f: .files}'
    done >"$P/units.jsonl"
    jq -n --slurpfile units "$P/units.jsonl" --slurpfile surface "$JSON" --rawfile floor "$OUT/floor_one-per-crate.tsv" '
        ($floor | split("\n") | .[1:] | map(select(. != "") | split("\t"))
            | map({key: .[1], value: {s: ((.[8] | tonumber) + (.[9] | tonumber)), files: (.[5] | tonumber), bytes: (.[6] | tonumber)}}) | from_entries) as $fl
        | [$surface[0].programs[].crates[] | {k: "\(.name) \(.version)", lib: (.name | gsub("-"; "_")), files}]
          | group_by(.k) | map({k: .[0].k, lib: .[0].lib, files: ([.[].files[]] | unique)})
          | map(select($fl[.k])) as $crates
        | [$units | to_entries[] | .value + {d: (if .key == 0 then null else .value.t - $units[.key - 1].t end)}] as $u
        | [$u[] | . as $e | select(.d != null and (.f | length) > 0)
            | ([$crates[] | select(.lib == $e.c and (($e.f - .files) | length) == 0)]) as $byname
            | (if ($byname | length) > 0 then $byname else [$crates[] | select((($e.f - .files) | length) == 0)] end) as $c
            | {d, k: (if ($c | length) == 1 then $c[0].k else null end)}] as $m
        | ($m | map(select(.k)) | group_by(.k) | map({k: .[0].k, units: length, s: (map(.d) | add)})
           | map(. + {floor_s: $fl[.k].s, files: $fl[.k].files, bytes: $fl[.k].bytes}
                 | . + {ratio: (if .floor_s > 0 then .s / .floor_s else null end), excess_s: (.s - .floor_s)})) as $per
        | { units: ($u | length),
            span_s: (if ($u | length) > 1 then $u[-1].t - $u[0].t else 0 end),
            attributed_s: ($per | map(.s) | add // 0),
            unattributed_s: ($m | map(select(.k == null) | .d) | add // 0),
            unattributed_units: ($m | map(select(.k == null)) | length),
            floor_one_thread_s: ([$fl[] | .s] | add // 0),
            floor_of_attributed_s: ($per | map(.floor_s) | add // 0),
            crates: ($per | sort_by(-.excess_s)) }' >"$P/per-crate.json"
    rm -f "$P/units.jsonl"
}

measure_project() { # KEY DIR
    PKEY=$1 PROJ=$2
    P=$WORK/$PKEY
    CACHE=$P/cache OUT=$P/out TIMES=$P/time EMPTY_HOME=$P/empty-home RUNS=$P/runs.jsonl
    local bcache=$P/cache-before i
    rm -rf "$OUT" "$TIMES" "$RUNS" "$P/facts.json" "$P/per-crate.json"
    mkdir -p "$OUT" "$TIMES"
    local busy_before load_before busy_after load_after deadline
    busy_before=$(cpu_busy)
    if ((busy_before >= 10 && WAIT_QUIET > 0)); then
        log "the machine is ${busy_before}% busy; waiting up to ${WAIT_QUIET}s for it to quiet down"
        deadline=$((SECONDS + WAIT_QUIET))
        while ((busy_before >= 10 && SECONDS < deadline)); do
            sleep 4
            busy_before=$(cpu_busy)
        done
    fi
    load_before=$(loadavg)
    ((busy_before < 10)) || log "note: the CPUs are ${busy_before}% busy before the $PKEY runs (load $load_before)"

    # 1. Cold: nothing cached anywhere; every .crate is downloaded.
    for i in $(seq 1 "$COLD_RUNS"); do
        rm -rf "$CACHE" "$EMPTY_HOME"
        mkdir -p "$CACHE" "$EMPTY_HOME"
        vrun "$VELARIS" "$CACHE" cold "$i" json
    done
    JSON=$OUT/cold-1.out
    cp "$JSON" "$P/surface.json"
    [[ -z $(ls -A "$EMPTY_HOME") ]] || log "note: velaris wrote into CARGO_HOME: $(ls -A "$EMPTY_HOME")"
    if [[ -n $before_what ]]; then
        rm -rf "$bcache" && mkdir -p "$bcache" && cp -al "$CACHE/crates" "$bcache/crates"
    fi

    # 2. Cold analysis (.crate files cached, surface/ deleted), each run paired with a run of the
    #    compiled-files floor on the same .crate files (and with the earlier revision's).
    for i in $(seq 1 "$COLD_ANALYSIS_RUNS"); do
        rm -rf "$CACHE/surface"
        vrun "$VELARIS" "$CACHE" cold_analysis "$i" json
        frun floor_compiled "$i" "$FLOOR" --threads "$NPROC" --compiled "$JSON" --lock "$PROJ/Cargo.lock" \
            --per-crate "$OUT/floor_compiled-per-crate.tsv" "$CACHE"
        if [[ -n $before_what ]]; then
            rm -rf "$bcache/surface"
            vrun "$VELARIS_BEFORE" "$bcache" before_cold_analysis "$i" json
        fi
    done

    # 3. Warm: everything cached.
    for i in $(seq 1 "$WARM_RUNS"); do
        vrun "$VELARIS" "$CACHE" warm "$i" json
        [[ -z $before_what ]] || vrun "$VELARIS_BEFORE" "$bcache" before_warm "$i" json
    done
    vrun "$VELARIS" "$CACHE" human 1 human

    # 4. The other floors: compiled files with span-locations (as velaris builds proc-macro2) and
    #    on one thread; every .rs file of every .crate (the earlier reference); unpack only.
    for i in $(seq 1 "$FLOOR_RUNS"); do
        frun floor_compiled_span "$i" "$FLOOR_SPAN" --threads "$NPROC" --compiled "$JSON" --lock "$PROJ/Cargo.lock" "$CACHE"
    done
    for i in $(seq 1 "$FLOOR_RUNS"); do
        frun floor_all "$i" "$FLOOR" --threads "$NPROC" --lock "$PROJ/Cargo.lock" --per-crate "$OUT/floor_all-per-crate.tsv" "$CACHE/crates/sha256"
    done
    frun floor_one 1 "$FLOOR" --threads 1 --compiled "$JSON" --lock "$PROJ/Cargo.lock" --per-crate "$OUT/floor_one-per-crate.tsv" "$CACHE"
    for i in 1 2 3 4 5; do
        frun floor_unpack "$i" "$FLOOR" --threads "$NPROC" --no-parse "$CACHE/crates/sha256"
    done

    # 5. syn::parse_file calls; per crate on one CPU; the profile (surface-project only).
    probe_parse_file
    [[ -z $PF_CALLS ]] || log "$PKEY: velaris called syn::parse_file $PF_CALLS times on $PF_BYTES bytes"
    [[ -z $PF_NOTE ]] || log "$PKEY: parse_file probe: $PF_NOTE"
    if [[ $PER_CRATE != skip ]] && command -v taskset >/dev/null; then
        per_crate
    fi
    local profile=false cores_timeline=""
    if [[ $PKEY == project && $PROFILE != skip ]] && command -v perf >/dev/null; then
        rm -rf "$CACHE/surface"
        if (cd "$RUN_DIR" && env -u RUST_BACKTRACE CARGO_HOME="$EMPTY_HOME" perf record -q -F 499 --call-graph dwarf,32768 \
                -o "$WORK/perf-cold-analysis.data" "$VELARIS" surface --workspace "$PROJ" --cache-dir "$CACHE" --format json \
                >/dev/null 2>"$OUT/perf-cold.err") \
            && (cd "$RUN_DIR" && env -u RUST_BACKTRACE CARGO_HOME="$EMPTY_HOME" perf record -q -F 1999 --call-graph dwarf,32768 \
                -o "$WORK/perf-warm.data" "$VELARIS" surface --workspace "$PROJ" --cache-dir "$CACHE" --format json \
                >/dev/null 2>"$OUT/perf-warm.err"); then
            profile=true
            prof_phases "$WORK/perf-cold-analysis.data" >"$P/perf-cold-analysis.phases"
            prof_phases "$WORK/perf-warm.data" >"$P/perf-warm.phases"
            prof_top "$WORK/perf-cold-analysis.data" 15 >"$P/perf-cold-analysis.top"
            prof_top "$WORK/perf-warm.data" 12 >"$P/perf-warm.top"
            cores_timeline=$(prof_cores "$WORK/perf-cold-analysis.data" 499)
            rm -f "$WORK/perf-cold-analysis.data" "$WORK/perf-warm.data"
            log "profiled one cold-analysis run and one warm run (perf)"
        else
            log "perf record failed; no profile"
        fi
    fi
    busy_after=$(cpu_busy)
    load_after=$(loadavg)

    # The reports must not depend on what was cached (nor on the number of CPUs).
    local same=yes f
    for f in "$OUT"/cold-*.out "$OUT"/cold_analysis-*.out "$OUT"/warm-*.out "$OUT"/one_cpu-*.out; do
        [[ -f $f ]] || continue
        cmp -s "$JSON" "$f" || { same="no: $(basename "$f") differs from cold-1"; log "warning: $PKEY $same"; break; }
    done
    local n_panics
    n_panics=$(grep -c 'panicked at' "$OUT/cold_analysis-1.err" || true)
    jq -n --arg key "$PKEY" --arg same "$same" --argjson n_lock "$(grep -c '^\[\[package\]\]' "$PROJ/Cargo.lock")" \
        --argjson n_registry "$(grep -c '^checksum = ' "$PROJ/Cargo.lock")" \
        --argjson crate_files "$(find "$CACHE/crates" -name '*.crate' | wc -l)" \
        --argjson results "$(find "$CACHE/surface" -name '*.json' 2>/dev/null | wc -l)" \
        --argjson panics "$n_panics" --argjson warm_err "$(cat "$OUT"/warm-*.err | wc -l)" \
        --arg busy_before "$busy_before" --arg busy_after "$busy_after" --arg load_before "$load_before" --arg load_after "$load_after" \
        --arg pf_calls "$PF_CALLS" --arg pf_bytes "$PF_BYTES" --arg pf_note "$PF_NOTE" \
        --argjson profile "$profile" --arg cores "$cores_timeline" \
        '{ key: $key, reports_identical: $same, lockfile_packages: $n_lock, registry_packages: $n_registry,
           crate_files_cached: $crate_files, results_cached: $results, panics_on_stderr: $panics, warm_stderr_lines: $warm_err,
           load: { cpu_busy_pct_before: ($busy_before | tonumber), cpu_busy_pct_after: ($busy_after | tonumber),
                   loadavg_before: $load_before, loadavg_after: $load_after },
           parse_file_probe: { calls: (if $pf_calls == "" then null else ($pf_calls | tonumber) end),
                               bytes: (if $pf_bytes == "" then null else ($pf_bytes | tonumber) end), note: $pf_note },
           profile: $profile, cores_timeline: $cores }' >"$P/facts.json"
    rm -rf "$bcache"
}

projects=(project)
[[ -z $APP ]] || projects+=(app)
if [[ $REPORT_ONLY != 1 ]]; then
    echo "$niced" >"$WORK/surface-niced"
    measure_project project "$PROJ_DIR"
    [[ -z $APP ]] || measure_project app "$APP_DIR"
fi

# ---------------------------------------------------------------------------------------------
# Results: one JSON document (every run), then the TSV and the report from it.
cpu=$(lscpu | sed -n 's/^Model name: *//p' | awk 'NR == 1')
mem=$(awk '/MemTotal/ { printf "%.1f GiB", $2 / 1048576 }' /proc/meminfo)
kernel=$(uname -sr)
rustc_v=$(rustc -V)
base=$RESULTS/surface-$DATE
# The previous results: the latest earlier surface-*.json, for "how much more is analysed".
previous=""
for f in "$RESULTS"/surface-*.json; do # the glob is sorted (LC_ALL=C): the last one is the latest
    [[ ! -e $f || $(basename "$f") == "surface-$DATE.json" ]] || previous=$f
done
prev_json=null
[[ -z $previous ]] || prev_json=$(jq -c --arg f "$(basename "$previous")" '{file: $f} + (
    if .projects then { files: .projects.project.analysed.files, bytes: .projects.project.analysed.bytes, how: "files lists of the JSON" }
    else { files: .velaris_parse_file.calls, bytes: .velaris_parse_file.bytes, how: "syn::parse_file calls (uprobe)" } end)' "$previous")

summarize() { # KEY: the project's summary object
    local P=$WORK/$1
    jq -n --slurpfile runs "$P/runs.jsonl" --slurpfile facts "$P/facts.json" --slurpfile surface "$P/surface.json" \
        --slurpfile per_crate "$( [[ -f $P/per-crate.json ]] && echo "$P/per-crate.json" || echo /dev/null)" \
        --argjson app "$( [[ $1 == app ]] && cat "$WORK/app/meta.json" || echo null)" '
        def median: sort | if length == 0 then null elif length % 2 == 1 then .[length / 2 | floor]
                     else (.[length / 2 - 1] + .[length / 2]) / 2 end;
        def r3: if . == null then null else (. * 1000 | round) / 1000 end;
        def runs($k): [$runs[] | select(.kind == $k)];
        def stat($k): runs($k) as $r | if ($r | length) == 0 then null else
            { runs: ($r | length), wall_s: ([$r[].wall_s] | median | r3), cpu_s: ([$r[].cpu_s] | median | r3),
              peak_rss_kib: ([$r[].peak_rss_kib] | max) } end;
        def fstat($k): runs($k) as $r | if ($r | length) == 0 then null else
            stat($k) + { seconds: ([$r[].floor.seconds] | median | r3), first: ($r[0].floor | del(.seconds, .missing)),
                         missing: $r[0].floor.missing } end;
        def pairs($a; $b; f): [runs($a) as $x | runs($b) as $y | range(0; [($x | length), ($y | length)] | min)
                               | ($x[.] | f) / ($y[.] | f)] | median | if . == null then null else (. * 100 | round) / 100 end;
        $facts[0] as $fa | $surface[0] as $s
        | ([$s.programs[].crates[] | {k: "\(.name) \(.version)", files, caps: .capabilities, findings}] | group_by(.k)
           | map({k: .[0].k, files: ([.[].files[]] | unique), caps: ([.[].caps[]] | unique),
                  un: ([.[].findings[] | select(.capability == "unanalyzed") | .path] | unique)})) as $crates
        | fstat("floor_compiled") as $fc
        | { application: $app,
            lockfile_packages: $fa.lockfile_packages, registry_packages: $fa.registry_packages,
            crate_files_cached: $fa.crate_files_cached, results_cached: $fa.results_cached,
            load: $fa.load,
            output: { programs: ($s.programs | length), crates: ($crates | length),
                      crates_with_capabilities: ($crates | map(select(.caps | length > 0)) | length),
                      crates_unanalyzed: ($crates | map(select(.caps | index("unanalyzed"))) | length),
                      reports_identical: $fa.reports_identical, panics_on_stderr: $fa.panics_on_stderr,
                      warm_stderr_lines: $fa.warm_stderr_lines,
                      capabilities: ([$crates[] | .k as $k | .caps[] | {c: ., k: $k}] | group_by(.c) | map({key: .[0].c, value: length}) | from_entries),
                      unanalyzed_reasons: ([$crates[] | .k as $k | .un[] | {k: $k, why: (if test("^parse error") then "parse error"
                                              elif test("^module file of") then "module file not found"
                                              elif test("^analyzer failure") then "analyzer failure"
                                              else . end)}] | unique | group_by(.why)
                                          | map({why: .[0].why, crates: length, e_g: ([.[].k] | unique | .[:4])}) | sort_by(-.crates)) },
            analysed: { files: $fc.first.files, bytes: $fc.first.bytes, crates: $fc.first.crates,
                        files_listed: $fc.first.files_listed, files_missing: $fc.first.files_missing, missing: $fc.missing,
                        large_files: $fc.first.large_files, large_bytes: $fc.first.large_bytes,
                        parse_file_probe: $fa.parse_file_probe },
            velaris: { cold: stat("cold"), cold_analysis: stat("cold_analysis"), warm: stat("warm"), human: stat("human"),
                       one_cpu_cold_analysis: stat("one_cpu"),
                       before_cold_analysis: stat("before_cold_analysis"), before_warm: stat("before_warm"),
                       peak_rss_kib: ([runs("cold", "cold_analysis", "warm")[]?.peak_rss_kib] | max),
                       peak_rss_analysis_kib: ([runs("cold_analysis", "warm")[]?.peak_rss_kib] | max),
                       before_peak_rss_kib: ([runs("before_cold_analysis", "before_warm")[]?.peak_rss_kib] | max) },
            floor: { compiled: $fc, compiled_span_locations: fstat("floor_compiled_span"), compiled_one_thread: fstat("floor_one"),
                     all_rs: fstat("floor_all"), unpack_only: fstat("floor_unpack") },
            ratios: { cold_analysis_over_compiled_floor: pairs("cold_analysis"; "floor_compiled"; .wall_s),
                      cold_analysis_over_compiled_floor_inside: pairs("cold_analysis"; "floor_compiled"; if .floor then .floor.seconds else .wall_s end),
                      cold_analysis_cpu_over_compiled_floor_cpu: pairs("cold_analysis"; "floor_compiled"; .cpu_s),
                      before_cold_analysis_over_now: pairs("before_cold_analysis"; "cold_analysis"; .wall_s),
                      now_over_before_cold_analysis: pairs("cold_analysis"; "before_cold_analysis"; .wall_s),
                      now_over_before_cold_analysis_cpu: pairs("cold_analysis"; "before_cold_analysis"; .cpu_s),
                      now_over_before_warm: pairs("warm"; "before_warm"; .wall_s),
                      now_over_before_warm_cpu: pairs("warm"; "before_warm"; .cpu_s),
                      now_over_before_peak_rss: (([runs("cold_analysis", "warm")[]?.peak_rss_kib] | max) as $a
                          | ([runs("before_cold_analysis", "before_warm")[]?.peak_rss_kib] | max) as $b
                          | if $a and $b then ($a / $b * 100 | round) / 100 else null end) },
            per_crate: ($per_crate[0] // null),
            profile: $fa.profile, cores_timeline: $fa.cores_timeline }'
}
{
    for k in "${projects[@]}"; do
        printf '%s\t' "$k"
        summarize "$k" | jq -c .
    done
} >"$WORK/summaries.tsv"

jq -n --arg date "$DATE" --arg velaris "$velaris_what" --arg before "$before_what" --argjson nproc "$NPROC" --arg cpu "$cpu" \
    --arg mem "$mem" --arg kernel "$kernel" --arg rustc "$rustc_v" --argjson niced "$niced" --argjson previous "$prev_json" \
    --rawfile summaries "$WORK/summaries.tsv" --slurpfile runs_project "$WORK/project/runs.jsonl" \
    --slurpfile runs_app "$( [[ -n $APP ]] && echo "$WORK/app/runs.jsonl" || echo /dev/null)" \
    '($summaries | split("\n") | map(select(. != "") | split("\t") | {key: .[0], value: (.[1] | fromjson)}) | from_entries) as $p
     | { date: $date,
         machine: { nproc: $nproc, cpu: $cpu, memory: $mem, kernel: $kernel, rustc: $rustc, nice: $niced },
         velaris: $velaris, velaris_before: (if $before == "" then null else $before end),
         floor_allocator: "mimalloc (as velaris)",
         previous: $previous,
         projects: $p,
         runs: ($runs_project + $runs_app) }' >"$base.json"

# ---------------------------------------------------------------------------------------------
# TSV: one measure a line.
jq -r '
    def row($k; $v; $u): "\($k)\t\($v)\t\($u)";
    "project\tmeasure\tvalue\tunit",
    (.projects | to_entries[] | .key as $p | .value as $v | [
        row("lockfile_packages"; $v.lockfile_packages; "packages"),
        row("registry_packages"; $v.registry_packages; "packages"),
        row("crates_compiled"; $v.output.crates; "crates"),
        row("crates_with_capabilities"; $v.output.crates_with_capabilities; "crates"),
        row("crates_unanalyzed"; $v.output.crates_unanalyzed; "crates"),
        row("files_analysed"; $v.analysed.files; "files"),
        row("bytes_analysed"; $v.analysed.bytes; "bytes"),
        row("cold_wall_median"; $v.velaris.cold.wall_s; "s"),
        row("cold_cpu_median"; $v.velaris.cold.cpu_s; "s"),
        row("cold_peak_rss"; $v.velaris.cold.peak_rss_kib; "KiB"),
        row("cold_analysis_wall_median"; $v.velaris.cold_analysis.wall_s; "s"),
        row("cold_analysis_cpu_median"; $v.velaris.cold_analysis.cpu_s; "s"),
        row("cold_analysis_peak_rss"; $v.velaris.cold_analysis.peak_rss_kib; "KiB"),
        row("warm_wall_median"; $v.velaris.warm.wall_s; "s"),
        row("warm_cpu_median"; $v.velaris.warm.cpu_s; "s"),
        row("warm_peak_rss"; $v.velaris.warm.peak_rss_kib; "KiB"),
        row("peak_rss_all_runs"; $v.velaris.peak_rss_kib; "KiB"),
        row("floor_compiled_median"; $v.floor.compiled.seconds; "s"),
        row("floor_compiled_cpu_median"; $v.floor.compiled.cpu_s; "s"),
        row("floor_compiled_peak_rss"; $v.floor.compiled.peak_rss_kib; "KiB"),
        row("floor_compiled_span_locations_median"; $v.floor.compiled_span_locations.seconds; "s"),
        row("floor_compiled_one_thread"; $v.floor.compiled_one_thread.seconds; "s"),
        row("floor_all_rs_median"; $v.floor.all_rs.seconds; "s"),
        row("floor_all_rs_files"; $v.floor.all_rs.first.files; "files"),
        row("floor_all_rs_bytes"; $v.floor.all_rs.first.bytes; "bytes"),
        row("floor_unpack_median"; $v.floor.unpack_only.seconds; "s"),
        row("ratio_cold_analysis_over_compiled_floor"; $v.ratios.cold_analysis_over_compiled_floor; "x"),
        row("ratio_cold_analysis_cpu_over_compiled_floor_cpu"; $v.ratios.cold_analysis_cpu_over_compiled_floor_cpu; "x"),
        (if $v.ratios.now_over_before_cold_analysis then row("ratio_cold_analysis_now_over_before"; $v.ratios.now_over_before_cold_analysis; "x") else empty end),
        (if $v.velaris.before_cold_analysis then
            row("before_cold_analysis_wall_median"; $v.velaris.before_cold_analysis.wall_s; "s"),
            row("before_cold_analysis_cpu_median"; $v.velaris.before_cold_analysis.cpu_s; "s"),
            row("before_warm_wall_median"; $v.velaris.before_warm.wall_s; "s"),
            row("before_warm_cpu_median"; $v.velaris.before_warm.cpu_s; "s"),
            row("before_peak_rss"; $v.velaris.before_peak_rss_kib; "KiB"),
            row("peak_rss_cold_analysis_and_warm"; $v.velaris.peak_rss_analysis_kib; "KiB"),
            row("ratio_cold_analysis_cpu_now_over_before"; $v.ratios.now_over_before_cold_analysis_cpu; "x"),
            row("ratio_warm_now_over_before"; $v.ratios.now_over_before_warm; "x"),
            row("ratio_warm_cpu_now_over_before"; $v.ratios.now_over_before_warm_cpu; "x"),
            row("ratio_peak_rss_now_over_before"; $v.ratios.now_over_before_peak_rss; "x")
         else empty end)
      ][] | "\($p)\t\(.)")' "$base.json" >"$base.tsv"

# ---------------------------------------------------------------------------------------------
# The report.
J=$base.json
q() { jq -r "$@" "$J"; }
render_project() { # KEY TITLE
    local k=$1 v=".projects.$1"
    echo "## $2"
    echo
    if [[ $k == app ]]; then
        q "$v.application | \"[\(.name)](\(.url)) at commit \`\(.commit)\` (\(.commit_date)): its \`Cargo.toml\` files (\(.manifests_copied)) and \`Cargo.lock\` copied, its \(.rs_files_emptied) \`.rs\` files created empty so that velaris finds the same programs, libraries and build scripts; the application's own code is not analysed, only what it compiles from the registry.\"" \
            | sed 's/\[\(.*\)\]()/\1/'
    else
        echo "\`benchmark/surface-project\`: one binary (never built), its \`Cargo.lock\` resolved from the"
        echo "public registry with \`cargo generate-lockfile\` and committed. Dependencies:"
        echo
        echo '```toml'
        awk '/^\[dependencies\]/ { on = 1; next } /^\[/ { on = 0 } on && /^[a-z]/ { print }' "$PROJ_DIR/Cargo.toml"
        echo '```'
    fi
    echo
    echo "| | |"
    echo "| --- | --- |"
    q "$v | \"| packages in \`Cargo.lock\` / with a checksum (registry) | **\(.lockfile_packages)** / \(.registry_packages) |\""
    q "$v | \"| programs / crates compiled into them for x86_64-unknown-linux-gnu (distinct name and version) | \(.output.programs) / \(.output.crates) |\""
    q "$v | \"| \`.crate\` files fetched and verified / analysis results cached (units) | \(.crate_files_cached) / \(.results_cached) |\""
    q "$v | \"| **analysed**: files in the JSON \`files\` lists of registry crates, and their bytes | **\(.analysed.files)** files, **\(.analysed.bytes / 1048576 * 10 | round / 10) MiB** (\(.analysed.large_files) files of 128 KiB or more: \(.analysed.large_bytes / 1048576 * 10 | round / 10) MiB) |\""
    q "$v | \"| listed files not in the \`.crate\` | \(.analysed.files_missing)\(if .analysed.files_missing > 0 then \": \" + (.analysed.missing | join(\", \")) else \"\" end) |\""
    q "$v | \"| every \`.rs\` file of every \`.crate\` fetched (the all-files floor) | \(.floor.all_rs.first.files) files, \(.floor.all_rs.first.bytes / 1048576 * 10 | round / 10) MiB |\""
    q "$v | if .analysed.parse_file_probe.calls then \"| \`syn::parse_file\` calls in one cold analysis (uprobe; files of 128 KiB or more are lexed and parsed with \`syn::parse2\` instead, unless that fails) | \(.analysed.parse_file_probe.calls) calls, \(.analysed.parse_file_probe.bytes / 1048576 * 10 | round / 10) MiB\(if (.analysed.parse_file_probe.note // \"\") != \"\" then \" (\" + .analysed.parse_file_probe.note + \")\" else \"\" end) |\" else \"| \`syn::parse_file\` probe | \(.analysed.parse_file_probe.note) |\" end"
    q "$v | \"| load: CPUs busy over 1 s / load average, before and after this project's runs | \(.load.cpu_busy_pct_before)% (\(.load.loadavg_before)) / \(.load.cpu_busy_pct_after)% (\(.load.loadavg_after)) |\""
    echo
    q "$v | \"Crates with capabilities: **\(.output.crates_with_capabilities)**; with \`unanalyzed\`: **\(.output.crates_unanalyzed)**. Reports byte-identical across every run (cold, cold analysis, warm, one CPU): \(.output.reports_identical). Panics on stderr (cold analysis): \(.output.panics_on_stderr); stderr lines over the warm runs: \(.output.warm_stderr_lines).\""
    echo
    echo "| capability | crates |"
    echo "| --- | --- |"
    q "$v.output.capabilities | to_entries | sort_by(-.value) | .[] | \"| \(.key) | \(.value) |\""
    echo
    echo "Why crates are \`unanalyzed\` (distinct crate × reason):"
    echo
    echo "| reason | crates | e.g. |"
    echo "| --- | --- | --- |"
    q "$v.output.unanalyzed_reasons[] | \"| \(.why) | \(.crates) | \(.e_g | join(\", \")) |\""
    echo
    echo "### Times"
    echo
    echo "Wall and CPU (user + system) time are medians over the runs, peak RSS the largest (GNU \`time\`);"
    echo "every run is in the JSON. For the floors, *wall* is the floor's own clock around the work (the"
    echo "process start, reading the surface JSON and the exit are left out: the strictest floor) and CPU"
    echo "and RSS are the whole process's. $NPROC threads unless said."
    echo
    echo "| run | runs | wall (median) | CPU (median) | peak RSS |"
    echo "| --- | --- | --- | --- | --- |"
    q "$v.velaris | \"| velaris cold: empty \`--cache-dir\` and \`CARGO_HOME\`, download + analysis | \(.cold.runs) | \(.cold.wall_s) s | \(.cold.cpu_s) s | \(.cold.peak_rss_kib / 1024 | round) MiB |\""
    q "$v.velaris | \"| velaris cold analysis: \`.crate\` files cached, results deleted | \(.cold_analysis.runs) | **\(.cold_analysis.wall_s) s** | \(.cold_analysis.cpu_s) s | **\(.cold_analysis.peak_rss_kib / 1024 | round) MiB** |\""
    q "$v.velaris | \"| velaris warm: results cached | \(.warm.runs) | **\(.warm.wall_s) s** | \(.warm.cpu_s) s | \(.warm.peak_rss_kib / 1024 | round) MiB |\""
    q "$v.velaris | if .one_cpu_cold_analysis then \"| velaris cold analysis on one CPU (\`taskset\`) | 1 | \(.one_cpu_cold_analysis.wall_s) s | \(.one_cpu_cold_analysis.cpu_s) s | \(.one_cpu_cold_analysis.peak_rss_kib / 1024 | round) MiB |\" else empty end"
    q "$v.floor | \"| **compiled-files floor**: sha256 + gunzip + untar + \`syn::parse_file\` of the listed files (paired with the cold analyses) | \(.compiled.runs) | **\(.compiled.seconds) s** | \(.compiled.cpu_s) s | \(.compiled.peak_rss_kib / 1024 | round) MiB |\""
    q "$v.floor | \"| compiled-files floor, proc-macro2 \`span-locations\` (as velaris builds it) | \(.compiled_span_locations.runs) | \(.compiled_span_locations.seconds) s | \(.compiled_span_locations.cpu_s) s | \(.compiled_span_locations.peak_rss_kib / 1024 | round) MiB |\""
    q "$v.floor | \"| compiled-files floor, 1 thread | 1 | \(.compiled_one_thread.seconds) s | \(.compiled_one_thread.cpu_s) s | \(.compiled_one_thread.peak_rss_kib / 1024 | round) MiB |\""
    q "$v.floor | \"| all-files floor: every \`.rs\` of every \`.crate\` (the earlier reference) | \(.all_rs.runs) | \(.all_rs.seconds) s | \(.all_rs.cpu_s) s | \(.all_rs.peak_rss_kib / 1024 | round) MiB |\""
    q "$v.floor | \"| unpack floor: sha256 + gunzip + untar of every \`.crate\` | \(.unpack_only.runs) | \(.unpack_only.seconds) s | \(.unpack_only.cpu_s) s | \(.unpack_only.peak_rss_kib / 1024 | round) MiB |\""
    q "$v.velaris | if .before_cold_analysis then \"| velaris $before_what cold analysis (paired with the current) | \(.before_cold_analysis.runs) | \(.before_cold_analysis.wall_s) s | \(.before_cold_analysis.cpu_s) s | \(.before_cold_analysis.peak_rss_kib / 1024 | round) MiB |\", \"| velaris $before_what warm | \(.before_warm.runs) | \(.before_warm.wall_s) s | \(.before_warm.cpu_s) s | \(.before_warm.peak_rss_kib / 1024 | round) MiB |\" else empty end"
    echo
    q "$v.floor.compiled.first | \"In the compiled-files floor, parsing took \(.parse_thread_seconds) s of thread time (\(.large_parse_thread_seconds) s of it on the \(.large_files) files of 128 KiB or more, which velaris lexes and empties of literal tables before parsing), reading, hashing and unpacking \(.unpack_thread_seconds) s. Files that did not parse: \(.parse_errors) (velaris recovers those item by item); not UTF-8: \(.not_utf8).\""
    echo
}
render_goals() { # KEY: rows of the goals table
    local v=".projects.$1" name=$2 warm_goal=$3
    q "$v | \"| $name | cold analysis / compiled-files floor (median of \(.velaris.cold_analysis.runs) pairs) | **\(.ratios.cold_analysis_over_compiled_floor)x** | within 2x: \(if .ratios.cold_analysis_over_compiled_floor <= 2 then \"met\" else \"**missed**\" end) |\""
    q "$v | \"| $name | the same, CPU time over the floor's CPU time | \(.ratios.cold_analysis_cpu_over_compiled_floor_cpu)x | |\""
    q "$v | \"| $name | cold analysis / compiled-files floor with span-locations (medians) | \((.velaris.cold_analysis.wall_s / .floor.compiled_span_locations.seconds * 100 | round) / 100)x | |\""
    q "$v | \"| $name | cold analysis / all-files floor (medians; the earlier reference) | \((.velaris.cold_analysis.wall_s / .floor.all_rs.seconds * 100 | round) / 100)x | |\""
    if [[ $warm_goal == yes ]]; then
        q "$v | \"| $name | warm | **\(.velaris.warm.wall_s) s** | under 1 s: \(if .velaris.warm.wall_s < 1 then \"met\" else \"**missed**\" end) |\""
    else
        q "$v | \"| $name | warm | \(.velaris.warm.wall_s) s | |\""
    fi
    q "$v | \"| $name | warm / unpack floor (medians) | \((.velaris.warm.wall_s / .floor.unpack_only.seconds * 100 | round) / 100)x | |\""
    q "$v | \"| $name | peak RSS, largest of every cold, cold-analysis and warm run | **\(.velaris.peak_rss_kib / 1024 | round) MiB** | under 500 MiB: \(if .velaris.peak_rss_kib <= 512000 then \"met\" else \"**missed**\" end) |\""
    if [[ -n $before_what ]]; then
        q "$v | \"| $name | cold analysis now / before (\(.velaris.cold_analysis.runs) interleaved pairs, median of the ratios) | **\(.ratios.now_over_before_cold_analysis)x** (CPU \(.ratios.now_over_before_cold_analysis_cpu)x) | within 1.3x: \(if .ratios.now_over_before_cold_analysis <= 1.3 then \"met\" else \"**missed**\" end) |\""
        q "$v | \"| $name | warm now / before (\(.velaris.warm.runs) interleaved pairs) | **\(.ratios.now_over_before_warm)x** (CPU \(.ratios.now_over_before_warm_cpu)x) | unchanged, within 1.1x: \(if .ratios.now_over_before_warm <= 1.1 then \"met\" else \"**missed**\" end) |\""
        q "$v | \"| $name | peak RSS now / before, largest of the cold-analysis and warm runs | \(.velaris.peak_rss_analysis_kib / 1024 | round) / \(.velaris.before_peak_rss_kib / 1024 | round) MiB (\(.ratios.now_over_before_peak_rss)x, \((.velaris.peak_rss_analysis_kib - .velaris.before_peak_rss_kib) / 1024 | round) MiB) | now under 500 MiB: \(if .velaris.peak_rss_analysis_kib <= 512000 then \"met\" else \"**missed**\" end) |\""
    fi
}
render_per_crate() { # KEY TITLE
    local v=".projects.$1.per_crate"
    [[ $(q "$v != null") == true ]] || return 0
    echo "### Per crate: $2"
    echo
    q "$v | \"One cold analysis on one CPU analyzes one unit after another; each unit's time is the write time of its result-cache entry minus the previous entry's. \(.units) units over \(.span_s * 100 | round / 100) s; \(.attributed_s * 100 | round / 100) s matched to a crate by crate name and files, \(.unattributed_s * 100 | round / 100) s (\(.unattributed_units) units: build scripts and crate names that the files do not tell apart) not. Those crates' floor on one thread: \(.floor_of_attributed_s * 100 | round / 100) s (the whole one-thread floor: \(.floor_one_thread_s * 100 | round / 100) s).\""
    echo
    echo "Largest excess over the floor (velaris units' time minus the one-thread compiled-files floor of the crate):"
    echo
    echo "| crate | units | files | bytes | velaris | floor | ratio | excess |"
    echo "| --- | --- | --- | --- | --- | --- | --- | --- |"
    q "$v.crates[:12][] | \"| \(.k) | \(.units) | \(.files) | \(.bytes / 1024 | round) KiB | \(.s * 100 | round / 100) s | \(.floor_s * 100 | round / 100) s | \(if .ratio then (.ratio * 10 | round / 10 | tostring) + \"x\" else \"n/a\" end) | \(.excess_s * 100 | round / 100) s |\""
    echo
    echo "Highest ratio among crates with a floor of 20 ms or more:"
    echo
    echo "| crate | units | files | bytes | velaris | floor | ratio |"
    echo "| --- | --- | --- | --- | --- | --- | --- |"
    q "[$v.crates[] | select(.floor_s >= 0.02)] | sort_by(-.ratio) | .[:8][] | \"| \(.k) | \(.units) | \(.files) | \(.bytes / 1024 | round) KiB | \(.s * 100 | round / 100) s | \(.floor_s * 100 | round / 100) s | \(.ratio * 10 | round / 10)x |\""
    echo
}

{
    echo "# velaris surface benchmark, $DATE"
    echo
    echo "Produced by \`benchmark/surface.sh\`; raw numbers (every run) in \`$(basename "$base").json\`, one measure a"
    echo "line in \`$(basename "$base").tsv\`."
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
    echo "| velaris | $velaris_what |"
    [[ -z $before_what ]] || echo "| also measured | velaris $before_what |"
    echo "| floor program | \`benchmark/parse_floor\`: syn 2, proc-macro2, flate2 (miniz_oxide), tar and sha2 at velaris' versions, **mimalloc as the global allocator, as velaris** |"
    echo
    q '[.runs[].loadavg_1m | select(. != null)] as $l | if ($l | length) > 0 then "1-minute load average at the end of each run: \($l | min) to \($l | max), median \($l | sort | .[length / 2 | floor]) (every run in the JSON); the CPUs busy over one second before and after the runs of each project are in its section. A build by another process on the same \(.machine.nproc) CPUs takes CPU time, caches and memory bandwidth from the measurements; raised priority (above) keeps most of the CPU time for them, not the rest. The figures against the earlier revision come from interleaved pairs (current, then earlier, run after run), so a change of load during the run moves both sides of each ratio alike." else empty end'
    echo
    echo "## Goals"
    echo
    echo "| project | measure | value | goal |"
    echo "| --- | --- | --- | --- |"
    render_goals project "surface-project" yes
    [[ -z $APP ]] || render_goals app "$(q .projects.app.application.name)" no
    echo
    if [[ -n $before_what ]]; then
        echo "*Before* is velaris $before_what, built the same way and run on a copy of the same \`.crate\`"
        echo "files; its result cache is its own."
        echo
    fi
    echo "## How much more code is analysed"
    echo
    echo "| | files | bytes |"
    echo "| --- | --- | --- |"
    if [[ $prev_json != null ]]; then
        q '.previous | "| surface-project, \(.file) (\(.how)) | \(.files) | \(.bytes / 1048576 * 10 | round / 10) MiB |"'
    fi
    q '.projects.project.analysed | "| surface-project now: the `files` lists of the JSON (every unit of each registry crate, each file once) | **\(.files)** | **\(.bytes / 1048576 * 10 | round / 10) MiB** |"'
    q '.projects.project.analysed | if .parse_file_probe.calls then "| surface-project now: `syn::parse_file` calls (uprobe; a file parsed in two units counts twice; files of 128 KiB or more mostly not, see above) | \(.parse_file_probe.calls) | \(.parse_file_probe.bytes / 1048576 * 10 | round / 10) MiB |" else empty end'
    q '.projects.project.floor.all_rs.first | "| surface-project: every `.rs` of every `.crate` | \(.files) | \(.bytes / 1048576 * 10 | round / 10) MiB |"'
    [[ -z $APP ]] || q '.projects.app | "| \(.application.name) now: the `files` lists | \(.analysed.files) | \(.analysed.bytes / 1048576 * 10 | round / 10) MiB |"'
    echo
    if [[ $prev_json != null ]]; then
        q '"On surface-project, \((.projects.project.analysed.files / .previous.files * 100 | round) / 100)x the files and \((.projects.project.analysed.bytes / .previous.bytes * 100 | round) / 100)x the bytes of \(.previous.file). The earlier figure counted `syn::parse_file` calls (a file parsed in two units counted twice), this one each listed file once: the ratio is if anything an underestimate."'
        q 'if .previous.how == "syn::parse_file calls (uprobe)" and .projects.project.analysed.parse_file_probe.calls then "Like for like, `syn::parse_file` calls: \(.projects.project.analysed.parse_file_probe.calls) against \(.previous.files) (\((.projects.project.analysed.parse_file_probe.calls / .previous.files * 100 | round) / 100)x), on \((.projects.project.analysed.parse_file_probe.bytes / .previous.bytes * 100 | round) / 100)x the bytes (files of 128 KiB or more now go to the lexer and `syn::parse2` instead, see above)." else empty end'
        echo
    fi
    render_project project "surface-project (the benchmark's project)"
    [[ -z $APP ]] || render_project app "$(q .projects.app.application.name) (a real application)"
    render_per_crate project "surface-project"
    [[ -z $APP ]] || render_per_crate app "$(q .projects.app.application.name)"
    if [[ $(q .projects.project.profile) == true ]]; then
        P=$WORK/project
        echo "## Where the time goes (surface-project)"
        echo
        echo "\`perf record --call-graph dwarf\` of one cold-analysis run and one warm run. Every sample (any"
        echo "thread) counts in one phase: parsing when \`syn::parse_file\` is on its stack (or the lexer and"
        echo "\`syn::parse2\` under the loader: large files), else dropping syntax trees, else the innermost"
        echo "velaris phase on the stack (allocator time goes to its caller)."
        echo
        echo "| phase | cold analysis | warm |"
        echo "| --- | --- | --- |"
        paste -d'|' "$P/perf-cold-analysis.phases" <(cut -d'|' -f2 "$P/perf-warm.phases") \
            | awk -F'|' '{ printf "| %s | %s%% | %s%% |\n", $1, $2, $3 }'
        echo
        echo "CPUs busy in each second of the cold-analysis run (samples / frequency; $NPROC is all):"
        echo "\`$(q .projects.project.cores_timeline)\`"
        echo
        echo "Top self-time symbols, cold analysis:"
        echo
        echo '```'
        cat "$P/perf-cold-analysis.top"
        echo '```'
        echo
        echo "Top self-time symbols, warm:"
        echo
        echo '```'
        cat "$P/perf-warm.top"
        echo '```'
        echo
    fi
    echo "## Sample output"
    echo
    echo "\`velaris surface --workspace benchmark/work/surface-project\` (human format), first 30 lines:"
    echo
    echo '```'
    head -30 "$WORK/project/out/human-1.out"
    echo '```'
} >"$base.md"
log "wrote $base.md, $base.json, $base.tsv"
cat "$base.tsv"
