#!/usr/bin/env bash
# Benchmark of `velaris deps-diff` on a real lockfile change, against the floor (sha256 + gunzip
# of the same bytes) and against `cargo vet diff --mode=local` over the same upgraded pairs.
# See benchmark/README.md. Re-runnable: everything scratch lives in benchmark/work/ (git-ignored);
# results go to benchmark/results/deps-diff-YYYY-MM-DD.{md,json,tsv}.
#
# Knobs (environment):
#   CRATE, OLD_VERSION, NEW_VERSION  the published binary crate whose two Cargo.lock files are
#                                    compared (default cargo-nextest 0.9.70 -> 0.9.74)
#   COLD_RUNS (3)  WARM_RUNS (5)     repetitions; each cold run starts from empty caches
#   CARGO_VET=auto|install|skip      auto: measure if installed; install: `cargo install` it
#                                    first when missing (minutes on 2 cores); skip: don't
#   PROFILE=auto|skip                auto: `perf record` one warm run when perf works
#   WAIT_QUIET (300)                 seconds to wait for other processes to leave the CPUs idle
#   NICE (-20 as root, else 0)       autogroup nice of the measurements (not of the builds)
#   VELARIS_REV                      benchmark this committed revision (built from `git archive`
#                                    under benchmark/work) instead of the work tree
set -euo pipefail
export LC_ALL=C

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BENCH=$ROOT/benchmark
WORK=$BENCH/work
RESULTS=$BENCH/results
CRATE=${CRATE:-cargo-nextest}
OLD_VERSION=${OLD_VERSION:-0.9.70}
NEW_VERSION=${NEW_VERSION:-0.9.74}
COLD_RUNS=${COLD_RUNS:-3}
WARM_RUNS=${WARM_RUNS:-5}
CARGO_VET=${CARGO_VET:-auto}
PROFILE=${PROFILE:-auto}
WAIT_QUIET=${WAIT_QUIET:-300}
NICE=${NICE:-$( ((EUID == 0)) && echo -20 || echo 0)}
INDEX=https://index.crates.io   # crates.io's sparse index; its config.json names the download host
DATE=$(date +%F)

log() { printf '==> %s\n' "$*" >&2; }
die() { printf 'error: %s\n' "$*" >&2; exit 1; }
# seconds between two $EPOCHREALTIME stamps
elapsed() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f", b - a }'; }
median() { printf '%s\n' "$@" | sort -g | awk '{ v[NR] = $1 } END { if (NR % 2) printf "%.3f", v[(NR + 1) / 2]; else printf "%.3f", (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "n/a" }'; }
mib() { awk -v b="$1" 'BEGIN { printf "%.1f", b / 1048576 }'; }
# share of all CPUs busy over one second (another process on the machine skews every figure)
cpu_busy() {
    local a b
    a=$(awk '/^cpu / { print $2 + $3 + $4 + $7 + $8, $2 + $3 + $4 + $5 + $6 + $7 + $8 }' /proc/stat)
    sleep 1
    b=$(awk '/^cpu / { print $2 + $3 + $4 + $7 + $8, $2 + $3 + $4 + $5 + $6 + $7 + $8 }' /proc/stat)
    awk -v a="$a" -v b="$b" 'BEGIN { split(a, x, " "); split(b, y, " "); printf "%.0f", 100 * (y[1] - x[1]) / (y[2] - x[2]) }'
}
rss_kb() { awk -F': ' '/Maximum resident set size/ { print $2 }' "$1"; }

# ---------------------------------------------------------------------------------------------
# Tools
need_apt=()
command -v jq >/dev/null || need_apt+=(jq)
[[ -x /usr/bin/time ]] || need_apt+=(time)
command -v curl >/dev/null || need_apt+=(curl)
if ((${#need_apt[@]})); then
    log "installing ${need_apt[*]} with apt-get"
    apt-get update -qq && apt-get install -y -qq "${need_apt[@]}" >/dev/null
fi
# EPOCHREALTIME needs bash 5
[[ -n ${EPOCHREALTIME:-} ]] || die "bash 5 or later is needed (EPOCHREALTIME)"

mkdir -p "$WORK" "$RESULTS"
VELARIS=$ROOT/target/release/velaris
FLOOR_TARGET=$WORK/floor-target
FLOOR=$FLOOR_TARGET/release/deps-diff-floor

if [[ -n ${VELARIS_REV:-} ]]; then
    # A committed revision, built from `git archive` in benchmark/work: the work tree may be mid-edit.
    velaris_rev=$(git -C "$ROOT" rev-parse --short "$VELARIS_REV^{commit}")
    velaris_src=$WORK/velaris-$velaris_rev
    if [[ ! -f $velaris_src/Cargo.toml ]]; then
        rm -rf "$velaris_src.part" && mkdir -p "$velaris_src.part"
        git -C "$ROOT" archive "$velaris_rev" | tar -x -C "$velaris_src.part"
        mv "$velaris_src.part" "$velaris_src"
    fi
    log "building velaris $velaris_rev from git archive (cargo build --release --locked)"
    CARGO_TARGET_DIR=$WORK/velaris-target cargo build --release --locked -q --manifest-path "$velaris_src/Cargo.toml"
    VELARIS=$WORK/velaris-target/release/velaris
    velaris_what="$velaris_rev (\`VELARIS_REV=$VELARIS_REV\`, built from \`git archive\` with \`cargo build --release\`)"
    velaris_dirty=0
else
    log "building velaris from the work tree (cargo build --release --locked)"
    (cd "$ROOT" && cargo build --release --locked -q)
    velaris_rev=$(git -C "$ROOT" rev-parse --short HEAD)
    velaris_dirty=$(git -C "$ROOT" status --porcelain --untracked-files=no -- src Cargo.toml Cargo.lock | wc -l)
    velaris_what="work tree at $velaris_rev"
    ((velaris_dirty == 0)) || velaris_what+=" plus $velaris_dirty uncommitted changed file(s) in src/ or Cargo.*"
    velaris_what+=" (\`cargo build --release\`)"
fi
log "building the floor program (benchmark/floor)"
CARGO_TARGET_DIR=$FLOOR_TARGET cargo build --release --locked -q --manifest-path "$BENCH/floor/Cargo.toml"

if [[ $CARGO_VET == install ]] && ! cargo vet --version >/dev/null 2>&1; then
    log "installing cargo-vet (cargo install cargo-vet --locked; takes minutes)"
    cargo install cargo-vet --locked -q
fi
have_vet=false
if [[ $CARGO_VET != skip ]] && cargo vet --version >/dev/null 2>&1; then have_vet=true; fi

# ---------------------------------------------------------------------------------------------
# The lockfile change: the Cargo.lock shipped inside two published versions of one binary crate.
index_path() { # crates.io sparse index path of a crate name
    local n=${1,,}
    case ${#n} in
        1) echo "1/$n" ;;
        2) echo "2/$n" ;;
        3) echo "3/${n:0:1}/$n" ;;
        *) echo "${n:0:2}/${n:2:2}/$n" ;;
    esac
}
DL=$(curl -sSf "$INDEX/config.json" | jq -r .dl)
[[ -n $DL && $DL != null ]] || die "no dl in $INDEX/config.json"
INDEX_ENTRY=$(curl -sSf "$INDEX/$(index_path "$CRATE")")
fetch_crate() { # NAME VERSION DEST: download once, check against the index checksum
    local name=$1 ver=$2 dest=$3 want url
    want=$(jq -r --arg v "$ver" 'select(.vers == $v) | .cksum' <<<"$INDEX_ENTRY")
    [[ -n $want ]] || die "$name $ver is not in the index"
    if [[ ! -f $dest ]] || [[ $(sha256sum "$dest" | cut -d' ' -f1) != "$want" ]]; then
        if [[ $DL == *"{"* ]]; then
            url=${DL//\{crate\}/$name}
            url=${url//\{version\}/$ver}
            url=${url//\{sha256-checksum\}/$want}
            [[ $url != *"{"* ]] || die "dl template with prefix markers is not handled: $DL"
        else
            url=$DL/$name/$ver/download
        fi
        curl -sSfL --retry 3 -o "$dest.part" "$url"
        mv "$dest.part" "$dest"
    fi
    [[ $(sha256sum "$dest" | cut -d' ' -f1) == "$want" ]] || die "$name $ver: checksum mismatch"
}
mkdir -p "$WORK/src"
for v in "$OLD_VERSION" "$NEW_VERSION"; do
    fetch_crate "$CRATE" "$v" "$WORK/src/$CRATE-$v.crate"
done
tar -xzOf "$WORK/src/$CRATE-$OLD_VERSION.crate" "$CRATE-$OLD_VERSION/Cargo.lock" >"$WORK/old.Cargo.lock"
tar -xzOf "$WORK/src/$CRATE-$NEW_VERSION.crate" "$CRATE-$NEW_VERSION/Cargo.lock" >"$WORK/new.Cargo.lock"
log "lockfiles: $CRATE $OLD_VERSION -> $NEW_VERSION"

# ---------------------------------------------------------------------------------------------
# On a shared machine, the measurements run in a session of their own whose scheduler autogroup
# gets nice $NICE: the kernel shares CPU time between autogroups first, so other sessions' builds
# take little of it (the caches and memory bandwidth stay shared). The builds above keep the
# normal priority; the script re-runs itself (they are up to date by then) for this part.
niced=0
if ((NICE != 0)) && [[ -z ${DEPS_DIFF_MEASURING:-} ]] && command -v setsid >/dev/null; then
    DEPS_DIFF_MEASURING=1 setsid -w bash "${BASH_SOURCE[0]}" "$@" &
    child=$!
    trap 'kill -TERM -- -"$child" 2>/dev/null || kill -TERM "$child"' INT TERM
    rc=0
    wait "$child" || rc=$?
    exit "$rc"
fi
if [[ -n ${DEPS_DIFF_MEASURING:-} ]]; then
    if { echo "$NICE" >/proc/self/autogroup; } 2>/dev/null && renice -n "$NICE" -p $$ >/dev/null 2>&1; then
        niced=$NICE
    else
        log "note: could not raise the priority (autogroup nice $NICE)"
    fi
fi

# ---------------------------------------------------------------------------------------------
# velaris runs. The working directory is benchmark/work/run (no .cargo/config.toml applies there)
# and CARGO_HOME is an empty directory, so neither cargo's download cache nor a user config helps.
RUN_DIR=$WORK/run
EMPTY_CARGO_HOME=$WORK/cargo-home-empty
rm -rf "$WORK/time" "$WORK/out" "$EMPTY_CARGO_HOME"
mkdir -p "$RUN_DIR" "$WORK/time" "$WORK/out" "$EMPTY_CARGO_HOME"
WALL=0 RSS=0
velaris_run() { # LABEL CACHE_DIR [ARGS...]; sets WALL (s) and RSS (KiB)
    local label=$1 cache=$2 t0 t1
    shift 2
    t0=$EPOCHREALTIME
    # Two lockfiles and --no-capabilities: fetch, verify, unpack and diff only, as before the
    # capability analysis existed (measured on its own below).
    if ! (cd "$RUN_DIR" && CARGO_HOME=$EMPTY_CARGO_HOME /usr/bin/time -v -o "$WORK/time/$label.txt" \
        "$VELARIS" --color never deps-diff --old "$WORK/old.Cargo.lock" --new "$WORK/new.Cargo.lock" \
        --no-capabilities --cache-dir "$cache" "$@" >"$WORK/out/$label.out" 2>"$WORK/out/$label.err"); then
        cat "$WORK/out/$label.err" >&2
        die "velaris failed ($label)"
    fi
    t1=$EPOCHREALTIME
    WALL=$(elapsed "$t0" "$t1")
    RSS=$(rss_kb "$WORK/time/$label.txt")
}
origins() { jq -r '[.packages[] | .old, .new | select(. != null) | .origin // "unverified"] | group_by(.) | map("\(.[0])=\(length)") | join(" ")' "$1"; }

busy_before=$(cpu_busy)
if ((busy_before >= 10 && WAIT_QUIET > 0 && niced == 0)); then
    log "the machine is ${busy_before}% busy; waiting up to ${WAIT_QUIET}s for it to quiet down"
    deadline=$((SECONDS + WAIT_QUIET))
    while ((busy_before >= 10 && SECONDS < deadline)); do
        sleep 4
        busy_before=$(cpu_busy)
    done
fi
if ((busy_before >= 10)); then
    if ((niced)); then log "note: other sessions keep the CPUs ${busy_before}% busy; the measurements have priority"
    else log "warning: the machine is ${busy_before}% busy before the runs; figures will be skewed"; fi
fi
cold_walls=() cold_rss=()
for i in $(seq 1 "$COLD_RUNS"); do
    CACHE=$WORK/cache
    rm -rf "$CACHE" "$EMPTY_CARGO_HOME"
    mkdir -p "$CACHE" "$EMPTY_CARGO_HOME"
    velaris_run "cold-$i" "$CACHE" --format json
    cold_walls+=("$WALL") cold_rss+=("$RSS")
    log "cold $i: ${WALL}s, ${RSS} KiB, origins: $(origins "$WORK/out/cold-$i.out")"
done
JSON=$WORK/out/cold-1.out
cp "$JSON" "$WORK/deps-diff.json"
only_origin() { jq -e --arg o "$2" '[.packages[] | .old, .new | select(. != null and .verified) | .origin] | all(. == $o)' "$1" >/dev/null; }
only_origin "$JSON" network || die "cold run was served from a cache: $(origins "$JSON")"
[[ -z $(ls -A "$EMPTY_CARGO_HOME") ]] || log "note: velaris wrote into CARGO_HOME: $(ls -A "$EMPTY_CARGO_HOME")"

warm_walls=() warm_rss=()
for i in $(seq 1 "$WARM_RUNS"); do
    velaris_run "warm-$i" "$CACHE" --format json
    warm_walls+=("$WALL") warm_rss+=("$RSS")
    log "warm $i: ${WALL}s, ${RSS} KiB"
done
only_origin "$WORK/out/warm-1.out" velaris-cache || die "warm run not served from velaris' cache: $(origins "$WORK/out/warm-1.out")"
cmp -s <(jq -S 'del(.packages[].old.origin, .packages[].new.origin)' "$JSON") \
    <(jq -S 'del(.packages[].old.origin, .packages[].new.origin)' "$WORK/out/warm-1.out") \
    || die "warm and cold reports differ"

# The same with unified diffs (what cargo vet diff prints), warm.
diff_walls=() diff_rss=()
for i in 1 2 3; do
    velaris_run "warm-diff-$i" "$CACHE" --diff
    diff_walls+=("$WALL") diff_rss+=("$RSS")
done
diff_bytes=$(wc -c <"$WORK/out/warm-diff-1.out")
log "warm --diff: $(median "${diff_walls[@]}")s median, $(mib "$diff_bytes") MiB of output"

# Counts
read -r n_packages n_added n_removed n_upgraded n_downgraded n_source n_unverifiable audit_lines < <(
    jq -r '.totals | "\(.packages) \(.added) \(.removed) \(.upgraded) \(.downgraded) \(.source_changed) \(.unverifiable) \(.audit_lines)"' "$JSON")
((n_upgraded >= 30)) || die "only $n_upgraded upgraded packages; pick another pair"
mapfile -t crate_files < <(find "$CACHE/crates/sha256" -name '*.crate' | sort)
n_crates=${#crate_files[@]}
compressed=$(cat "${crate_files[@]}" | wc -c)
log "$n_packages packages changed ($n_upgraded upgraded, $n_added added, $n_removed removed), $n_crates .crate files, $(mib "$compressed") MiB"

# ---------------------------------------------------------------------------------------------
# The floor: sha256 + gunzip of every cached .crate, nothing else (benchmark/floor).
NPROC=$(nproc)
floor_json() { "$FLOOR" --threads "$1" --repeat 5 "$CACHE/crates/sha256"; }
floor1=$(floor_json 1)
floorN=$(floor_json "$NPROC")
floor1_s=$(median $(jq -r .seconds <<<"$floor1"))
floorN_s=$(median $(jq -r .seconds <<<"$floorN"))
uncompressed=$(jq -r .uncompressed_bytes <<<"$floor1" | head -1)
[[ $(jq -r .files <<<"$floor1" | head -1) == "$n_crates" ]] || die "floor saw another file count"
log "floor: ${floor1_s}s on 1 thread, ${floorN_s}s on $NPROC threads ($(mib "$uncompressed") MiB unpacked)"

# Cross-check with coreutils: per file (two processes per file) and batched (two processes).
t0=$EPOCHREALTIME
for f in "${crate_files[@]}"; do sha256sum "$f" >/dev/null; zcat "$f" >/dev/null; done
t1=$EPOCHREALTIME
shell_perfile_s=$(elapsed "$t0" "$t1")
t0=$EPOCHREALTIME
sha256sum "${crate_files[@]}" >/dev/null
cat "${crate_files[@]}" | zcat >/dev/null
t1=$EPOCHREALTIME
shell_batch_s=$(elapsed "$t0" "$t1")
log "shell: ${shell_perfile_s}s per file, ${shell_batch_s}s batched"

# ---------------------------------------------------------------------------------------------
# Capability deltas. A scratch repository holds the two published versions of $CRATE (manifest,
# Cargo.lock, sources) as two commits, so `deps-diff HEAD~1..HEAD` has a workspace on each side:
# it resolves what is built for the target, fetches the graph's other packages, and runs the
# surface engine at base and at head. Its own cache dir starts as a copy of the warm cache (the
# changed packages are there), so the floor above keeps measuring the same files.
REPO=$WORK/repo
CAPS_CACHE=$WORK/caps-cache
TARGET=x86_64-unknown-linux-gnu
rm -rf "$REPO" "$CAPS_CACHE"
mkdir -p "$REPO"
cp -r "$CACHE" "$CAPS_CACHE"
rm -rf "$CAPS_CACHE/surface"
git_q() { git -C "$REPO" -c user.name=bench -c user.email=bench@example.com -c commit.gpgsign=false "$@"; }
git_q init -q -b main
for v in "$OLD_VERSION" "$NEW_VERSION"; do
    find "$REPO" -mindepth 1 -maxdepth 1 ! -name .git -exec rm -rf {} +
    tar -xzf "$WORK/src/$CRATE-$v.crate" -C "$REPO" --strip-components=1
    git_q add -A
    git_q commit -q -m "$CRATE $v"
done
caps_run() { # LABEL CACHE_DIR [ARGS...]; sets WALL (s) and RSS (KiB)
    local label=$1 cache=$2 t0 t1
    shift 2
    t0=$EPOCHREALTIME
    if ! (cd "$REPO" && CARGO_HOME=$EMPTY_CARGO_HOME /usr/bin/time -v -o "$WORK/time/$label.txt" \
        "$VELARIS" --color never deps-diff HEAD~1..HEAD --target "$TARGET" \
        --cache-dir "$cache" "$@" >"$WORK/out/$label.out" 2>"$WORK/out/$label.err"); then
        cat "$WORK/out/$label.err" >&2
        die "velaris failed ($label)"
    fi
    t1=$EPOCHREALTIME
    WALL=$(elapsed "$t0" "$t1")
    RSS=$(rss_kb "$WORK/time/$label.txt")
}
# First run: the graph's unchanged packages are downloaded, everything analysed.
caps_run caps-first "$CAPS_CACHE" --format json
caps_first_s=$WALL caps_first_rss=$RSS
log "capabilities, first run (downloads the rest of the graph): ${WALL}s, ${RSS} KiB"
caps_cold_walls=() caps_cold_rss=()
for i in $(seq 1 "$COLD_RUNS"); do
    rm -rf "$CAPS_CACHE/surface"
    caps_run "caps-cold-$i" "$CAPS_CACHE" --format json
    caps_cold_walls+=("$WALL") caps_cold_rss+=("$RSS")
    log "capabilities, cold analysis $i: ${WALL}s, ${RSS} KiB"
done
caps_warm_walls=() caps_warm_rss=()
for i in $(seq 1 "$WARM_RUNS"); do
    caps_run "caps-warm-$i" "$CAPS_CACHE" --format json
    caps_warm_walls+=("$WALL") caps_warm_rss+=("$RSS")
    log "capabilities, warm $i: ${WALL}s, ${RSS} KiB"
done
cmp -s "$WORK/out/caps-cold-1.out" "$WORK/out/caps-warm-1.out" || die "cold-analysis and warm capability reports differ"
graph_walls=() graph_rss=()
for i in 1 2 3; do
    caps_run "graph-warm-$i" "$CAPS_CACHE" --format json --no-capabilities
    graph_walls+=("$WALL") graph_rss+=("$RSS")
done
caps_human_lines=$( (cd "$REPO" && CARGO_HOME=$EMPTY_CARGO_HOME "$VELARIS" --color never deps-diff HEAD~1..HEAD --target "$TARGET" --cache-dir "$CAPS_CACHE") | wc -l)
caps_files_lines=$( (cd "$REPO" && CARGO_HOME=$EMPTY_CARGO_HOME "$VELARIS" --color never deps-diff HEAD~1..HEAD --target "$TARGET" --cache-dir "$CAPS_CACHE" --files) | wc -l)
CAPS_JSON=$WORK/out/caps-warm-1.out
read -r caps_built caps_not_built caps_in_scope caps_analysed caps_gain caps_flagged caps_audit caps_audit_nb < <(
    jq -r '"\([.packages[] | select(.built == true)] | length) \(.totals.not_built) \(.coverage.in_scope) \(.coverage.analysed) \(.totals.gain_capabilities) \(.totals.flagged) \(.totals.audit_lines) \(.totals.audit_lines_not_built)"' "$CAPS_JSON")
caps_graph_crates=$(find "$CAPS_CACHE/crates/sha256" -name '*.crate' | wc -l)
caps_results=$(find "$CAPS_CACHE/surface" -name '*.json' | wc -l)
log "capabilities: $caps_built built, $caps_not_built not built, $caps_analysed of $caps_in_scope analysed, $caps_gain gain, $caps_flagged flagged; warm $(median "${caps_warm_walls[@]}")s"

# ---------------------------------------------------------------------------------------------
# cargo vet diff --mode=local over every upgraded pair.
busy_vet="" vet_version="" vet_cold_s="" vet_warm_s="" vet_rss="" vet_pairs=0 vet_bytes="" vet_note=""
VET_CACHE=$WORK/vet-cache
if $have_vet; then
    vet_version=$(cargo vet --version)
    VET_PROJ=$WORK/vet-project
    rm -rf "$VET_PROJ" "$VET_CACHE" "$WORK/vet-out"
    mkdir -p "$WORK/vet-out" "$VET_CACHE/cache"
    (cd "$WORK" && CARGO_HOME=$EMPTY_CARGO_HOME cargo new --lib --vcs none -q vet-project)
    (cd "$VET_PROJ" && CARGO_HOME=$EMPTY_CARGO_HOME cargo generate-lockfile -q \
        && CARGO_HOME=$EMPTY_CARGO_HOME cargo vet init --cache-dir "$VET_CACHE" >/dev/null 2>&1)
    # cargo-vet downloads from the crates.io web API host, which does not resolve on every
    # machine; it reads its own cache first (VET_CACHE/cache/NAME-VERSION.crate), so that cache
    # is seeded with the very bytes velaris verified. Its first loop then unpacks every .crate
    # into VET_CACHE/src and diffs; the second finds them unpacked.
    jq -r '.packages[] | .name as $n | .old, .new | select(. != null and .checksum != null)
           | "\($n) \(.version) \(.checksum)"' "$JSON" | while read -r n v c; do
        cp "$CACHE/crates/sha256/${c:0:2}/$c.crate" "$VET_CACHE/cache/$n-$v.crate"
    done
    jq -r '.packages[] | select(.change == "upgraded" and .old.checksum != null and .new.checksum != null) | "\(.name) \(.old.version) \(.new.version)"' "$JSON" >"$WORK/vet-pairs.txt"
    vet_pairs=$(wc -l <"$WORK/vet-pairs.txt")
    vet_loop() { # PASS: runs every pair, sets VET_S and VET_MAXRSS
        local pass=$1 t0 t1 n v1 v2 r max=0
        t0=$EPOCHREALTIME
        while read -r n v1 v2; do
            if ! (cd "$VET_PROJ" && CARGO_HOME=$EMPTY_CARGO_HOME /usr/bin/time -v -o "$WORK/vet-out/$pass.time" \
                cargo vet diff "$n" "$v1" "$v2" --mode=local --locked --cache-dir "$VET_CACHE" \
                </dev/null >>"$WORK/vet-out/$pass.out" 2>>"$WORK/vet-out/$pass.err"); then
                tail -5 "$WORK/vet-out/$pass.err" >&2
                die "cargo vet diff $n $v1 $v2 failed"
            fi
            r=$(rss_kb "$WORK/vet-out/$pass.time")
            ((r > max)) && max=$r
        done <"$WORK/vet-pairs.txt"
        t1=$EPOCHREALTIME
        VET_S=$(elapsed "$t0" "$t1") VET_MAXRSS=$max
    }
    busy_vet=$(cpu_busy)
    vet_loop first
    vet_cold_s=$VET_S
    vet_loop second
    vet_warm_s=$VET_S vet_rss=$VET_MAXRSS
    vet_bytes=$(wc -c <"$WORK/vet-out/second.out")
    log "cargo vet diff over $vet_pairs pairs: first ${vet_cold_s}s, second ${vet_warm_s}s"
else
    vet_note="cargo-vet is not installed (rerun with CARGO_VET=install to build it: cargo install cargo-vet --locked)"
    [[ $CARGO_VET == skip ]] && vet_note="skipped (CARGO_VET=skip)"
    log "cargo-vet: $vet_note"
fi

# ---------------------------------------------------------------------------------------------
# Where a warm run spends its time: perf, when it works here.
profile_md=""
if [[ $PROFILE != skip ]] && command -v perf >/dev/null \
    && (cd "$RUN_DIR" && CARGO_HOME=$EMPTY_CARGO_HOME perf record -q -F 4999 -o "$WORK/perf.data" \
        "$VELARIS" deps-diff --old "$WORK/old.Cargo.lock" --new "$WORK/new.Cargo.lock" \
        --cache-dir "$CACHE" --format json >/dev/null 2>"$WORK/perf.err"); then
    perf report -i "$WORK/perf.data" --no-children --sort dso,symbol -g none --stdio 2>/dev/null \
        | grep -E '^ +[0-9.]+%' >"$WORK/perf.txt" || true
    profile_md=$(awk '
        { pct = $1; sub(/%/, "", pct); sym = $0
          if (sym ~ /miniz_oxide|crc32fast|flate2/) k = "gunzip (miniz_oxide, crc32)"
          else if (sym ~ /sha2::/) k = "sha256"
          else if (sym ~ /similar::|memchr|SplitInclusive|from_utf8|ContentHasher/) k = "diff (similar, line splitting, UTF-8 checks)"
          else if (sym ~ /tar::/) k = "tar parsing"
          else if (sym ~ /serde_json|report::/) k = "render"
          else if (sym ~ /lockfile|toml|cargo_lock/) k = "lockfile parsing"
          else if (sym ~ /memmove|memcpy|memset|memcmp/) k = "memcpy/memset/memcmp (buffers)"
          else if (sym ~ /malloc|_int_free|cfree|realloc|_int_/) k = "allocator"
          else if (sym ~ /\[kernel/) k = "kernel (page faults, reads, mmap)"
          else k = "other"
          s[k] += pct }
        END { for (k in s) printf "| %s | %.1f%% |\n", k, s[k] }' "$WORK/perf.txt" | sort -t'|' -k3 -g -r)
    log "profiled one warm run (perf)"
fi

# ---------------------------------------------------------------------------------------------
# Results
busy_after=$(cpu_busy)
cold_med=$(median "${cold_walls[@]}")
warm_med=$(median "${warm_walls[@]}")
diff_med=$(median "${diff_walls[@]}")
cold_rss_max=$(printf '%s\n' "${cold_rss[@]}" | sort -g | tail -1)
warm_rss_max=$(printf '%s\n' "${warm_rss[@]}" | sort -g | tail -1)
diff_rss_max=$(printf '%s\n' "${diff_rss[@]}" | sort -g | tail -1)
caps_cold_med=$(median "${caps_cold_walls[@]}")
caps_warm_med=$(median "${caps_warm_walls[@]}")
graph_med=$(median "${graph_walls[@]}")
caps_cold_rss_max=$(printf '%s\n' "${caps_cold_rss[@]}" | sort -g | tail -1)
caps_warm_rss_max=$(printf '%s\n' "${caps_warm_rss[@]}" | sort -g | tail -1)
graph_rss_max=$(printf '%s\n' "${graph_rss[@]}" | sort -g | tail -1)
r_caps_warm=$(ratio "$caps_warm_med" "$warm_med")
r_graph_warm=$(ratio "$graph_med" "$warm_med")
r_warm_floorN=$(ratio "$warm_med" "$floorN_s")
r_warm_floor1=$(ratio "$warm_med" "$floor1_s")
r_vet=""; r_vet_diff=""
r_vet_caps=""
if $have_vet; then
    r_vet=$(ratio "$vet_warm_s" "$warm_med")
    r_vet_diff=$(ratio "$vet_warm_s" "$diff_med")
    r_vet_caps=$(ratio "$vet_warm_s" "$caps_warm_med")
fi
cpu=$(lscpu | sed -n 's/^Model name: *//p' | head -1)
mem=$(awk '/MemTotal/ { printf "%.1f GiB", $2 / 1048576 }' /proc/meminfo)
kernel=$(uname -sr)
rustc_v=$(rustc -V)

base=$RESULTS/deps-diff-$DATE
jq -n \
    --arg date "$DATE" --arg crate "$CRATE" --arg old "$OLD_VERSION" --arg new "$NEW_VERSION" \
    --arg velaris "$velaris_rev" --argjson dirty "$velaris_dirty" --arg velaris_what "$velaris_what" --argjson nproc "$NPROC" --arg cpu "$cpu" \
    --arg mem "$mem" --arg kernel "$kernel" --arg rustc "$rustc_v" \
    --argjson busy_before "$busy_before" --argjson busy_after "$busy_after" --arg busy_vet "$busy_vet" --argjson niced "$niced" \
    --argjson packages "$n_packages" --argjson upgraded "$n_upgraded" --argjson added "$n_added" \
    --argjson removed "$n_removed" --argjson downgraded "$n_downgraded" --argjson source_changed "$n_source" \
    --argjson unverifiable "$n_unverifiable" --argjson audit_lines "$audit_lines" \
    --argjson crates "$n_crates" --argjson compressed "$compressed" --argjson uncompressed "$uncompressed" \
    --arg cold "${cold_walls[*]}" --arg cold_rss "${cold_rss[*]}" --arg warm "${warm_walls[*]}" \
    --arg warm_rss "${warm_rss[*]}" --arg wdiff "${diff_walls[*]}" --arg wdiff_rss "${diff_rss[*]}" \
    --argjson diff_bytes "$diff_bytes" \
    --argjson floor1 "$(jq -s . <<<"$floor1")" --argjson floorN "$(jq -s . <<<"$floorN")" \
    --argjson shell_perfile "$shell_perfile_s" --argjson shell_batch "$shell_batch_s" \
    --arg vet_version "$vet_version" --arg vet_first "$vet_cold_s" --arg vet_second "$vet_warm_s" \
    --arg vet_rss "$vet_rss" --argjson vet_pairs "$vet_pairs" --arg vet_bytes "$vet_bytes" --arg vet_note "$vet_note" \
    --arg caps_first "$caps_first_s" --arg caps_first_rss "$caps_first_rss" \
    --arg caps_cold "${caps_cold_walls[*]}" --arg caps_cold_rss "${caps_cold_rss[*]}" \
    --arg caps_warm "${caps_warm_walls[*]}" --arg caps_warm_rss "${caps_warm_rss[*]}" \
    --arg graph "${graph_walls[*]}" --arg graph_rss "${graph_rss[*]}" \
    --argjson caps_built "$caps_built" --argjson caps_not_built "$caps_not_built" \
    --argjson caps_in_scope "$caps_in_scope" --argjson caps_analysed "$caps_analysed" \
    --argjson caps_gain "$caps_gain" --argjson caps_flagged "$caps_flagged" \
    --argjson caps_audit "$caps_audit" --argjson caps_audit_nb "$caps_audit_nb" \
    --argjson caps_graph_crates "$caps_graph_crates" --argjson caps_results "$caps_results" \
    --argjson caps_human_lines "$caps_human_lines" --argjson caps_files_lines "$caps_files_lines" \
    'def nums: split(" ") | map(select(. != "") | tonumber);
     def num: if . == "" then null else tonumber end;
     { date: $date,
       machine: { nproc: $nproc, cpu: $cpu, memory: $mem, kernel: $kernel, rustc: $rustc,
                  cpu_busy_pct_before: $busy_before, cpu_busy_pct_before_cargo_vet: ($busy_vet | num),
                  cpu_busy_pct_after: $busy_after, nice: $niced },
       velaris: { commit: $velaris, dirty_files: $dirty, build: $velaris_what },
       pair: { crate: $crate, old: $old, new: $new },
       change: { packages: $packages, upgraded: $upgraded, added: $added, removed: $removed,
                 downgraded: $downgraded, source_changed: $source_changed,
                 unverifiable_sides: $unverifiable, audit_lines: $audit_lines },
       bytes: { crate_files: $crates, compressed: $compressed, uncompressed: $uncompressed },
       velaris_cold: { wall_s: ($cold | nums), peak_rss_kib: ($cold_rss | nums) },
       velaris_warm: { wall_s: ($warm | nums), peak_rss_kib: ($warm_rss | nums) },
       velaris_warm_diff: { wall_s: ($wdiff | nums), peak_rss_kib: ($wdiff_rss | nums), output_bytes: $diff_bytes },
       floor: { one_thread: $floor1, all_threads: $floorN,
                shell_per_file_s: $shell_perfile, shell_batched_s: $shell_batch },
       capabilities: { range: "HEAD~1..HEAD in a repository of the two published versions",
                       first_run: { wall_s: ($caps_first | num), peak_rss_kib: ($caps_first_rss | num) },
                       cold_analysis: { wall_s: ($caps_cold | nums), peak_rss_kib: ($caps_cold_rss | nums) },
                       warm: { wall_s: ($caps_warm | nums), peak_rss_kib: ($caps_warm_rss | nums) },
                       graph_only_warm: { wall_s: ($graph | nums), peak_rss_kib: ($graph_rss | nums) },
                       report: { built: $caps_built, not_built: $caps_not_built, in_scope: $caps_in_scope,
                                 analysed: $caps_analysed, gain_capabilities: $caps_gain, flagged: $caps_flagged,
                                 audit_lines: $caps_audit, audit_lines_not_built: $caps_audit_nb,
                                 human_lines: $caps_human_lines, human_files_lines: $caps_files_lines },
                       crate_files_in_cache: $caps_graph_crates, analysis_results_cached: $caps_results },
       cargo_vet: { version: $vet_version, pairs: $vet_pairs, first_pass_s: ($vet_first | num),
                    second_pass_s: ($vet_second | num), max_peak_rss_kib: ($vet_rss | num),
                    output_bytes: ($vet_bytes | num), note: $vet_note } }' >"$base.json"

{
    printf 'measure\tvalue\tunit\n'
    printf 'upgraded\t%s\tpackages\n' "$n_upgraded"
    printf 'changed\t%s\tpackages\n' "$n_packages"
    printf 'crate_files\t%s\tfiles\n' "$n_crates"
    printf 'compressed\t%s\tbytes\n' "$compressed"
    printf 'uncompressed\t%s\tbytes\n' "$uncompressed"
    printf 'velaris_cold_median\t%s\ts\n' "$cold_med"
    printf 'velaris_cold_peak_rss\t%s\tKiB\n' "$cold_rss_max"
    printf 'velaris_warm_median\t%s\ts\n' "$warm_med"
    printf 'velaris_warm_peak_rss\t%s\tKiB\n' "$warm_rss_max"
    printf 'velaris_warm_diff_median\t%s\ts\n' "$diff_med"
    printf 'floor_1_thread_median\t%s\ts\n' "$floor1_s"
    printf 'floor_%s_threads_median\t%s\ts\n' "$NPROC" "$floorN_s"
    printf 'shell_per_file\t%s\ts\n' "$shell_perfile_s"
    printf 'shell_batched\t%s\ts\n' "$shell_batch_s"
    printf 'ratio_warm_over_floor_%s_threads\t%s\tx\n' "$NPROC" "$r_warm_floorN"
    printf 'ratio_warm_over_floor_1_thread\t%s\tx\n' "$r_warm_floor1"
    printf 'caps_first_run\t%s\ts\n' "$caps_first_s"
    printf 'caps_cold_analysis_median\t%s\ts\n' "$caps_cold_med"
    printf 'caps_cold_analysis_peak_rss\t%s\tKiB\n' "$caps_cold_rss_max"
    printf 'caps_warm_median\t%s\ts\n' "$caps_warm_med"
    printf 'caps_warm_peak_rss\t%s\tKiB\n' "$caps_warm_rss_max"
    printf 'graph_only_warm_median\t%s\ts\n' "$graph_med"
    printf 'ratio_caps_warm_over_warm\t%s\tx\n' "$r_caps_warm"
    if $have_vet; then
        printf 'ratio_cargo_vet_over_caps_warm\t%s\tx\n' "$r_vet_caps"
        printf 'cargo_vet_first_pass\t%s\ts\n' "$vet_cold_s"
        printf 'cargo_vet_second_pass\t%s\ts\n' "$vet_warm_s"
        printf 'ratio_cargo_vet_over_velaris_warm\t%s\tx\n' "$r_vet"
        printf 'ratio_cargo_vet_over_velaris_warm_diff\t%s\tx\n' "$r_vet_diff"
    fi
} >"$base.tsv"

verdict_floor="met"
awk -v r="$r_warm_floorN" 'BEGIN { exit !(r <= 3) }' || verdict_floor="MISSED"
{
    echo "# velaris deps-diff benchmark, $DATE"
    echo
    echo "Produced by \`benchmark/deps_diff.sh\`; raw numbers in \`$(basename "$base").json\` and \`$(basename "$base").tsv\`."
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
    echo "| other load (CPU busy over 1 s before the runs / before cargo-vet / after) | ${busy_before}% / ${busy_vet:-n/a}% / ${busy_after}% |"
    echo "| velaris | $velaris_what |"
    echo
    echo "## The change"
    echo
    echo "The \`Cargo.lock\` shipped in the published \`$CRATE\` $OLD_VERSION and $NEW_VERSION \`.crate\` files."
    echo
    echo "| | |"
    echo "| --- | --- |"
    echo "| packages changed | $n_packages |"
    echo "| upgraded | $n_upgraded |"
    echo "| added / removed / downgraded / source-changed | $n_added / $n_removed / $n_downgraded / $n_source |"
    echo "| unverifiable sides (workspace members, read from the repository, are not counted) | $n_unverifiable |"
    echo "| \`.crate\` files fetched and verified | $n_crates |"
    echo "| compressed bytes | $compressed ($(mib "$compressed") MiB) |"
    echo "| unpacked bytes (gunzipped tar) | $uncompressed ($(mib "$uncompressed") MiB) |"
    echo "| audit lines reported | $audit_lines |"
    echo
    echo "## Times"
    echo
    echo "Wall time is the median of the runs (every run in the JSON); peak RSS is the largest."
    echo "Cold: empty \`--cache-dir\` and empty \`CARGO_HOME\`, so every \`.crate\` is downloaded"
    echo "(network time included). Warm: the same cache dir again, everything served from velaris'"
    echo "cache (files in the OS page cache)."
    echo
    echo "| run | runs | wall (median) | peak RSS |"
    echo "| --- | --- | --- | --- |"
    echo "| velaris cold, \`--format json\` | $COLD_RUNS | ${cold_med} s | $((cold_rss_max / 1024)) MiB |"
    echo "| velaris warm, \`--format json\` | $WARM_RUNS | **${warm_med} s** | $((warm_rss_max / 1024)) MiB |"
    echo "| velaris warm, \`--diff\` (human, $(mib "$diff_bytes") MiB of output) | 3 | ${diff_med} s | $((diff_rss_max / 1024)) MiB |"
    echo "| floor, 1 thread (sha256 + gunzip, benchmark/floor) | 5 | ${floor1_s} s | |"
    echo "| floor, $NPROC threads | 5 | **${floorN_s} s** | |"
    echo "| \`sha256sum\` + \`zcat\`, two processes per file | 1 | ${shell_perfile_s} s | |"
    echo "| \`sha256sum\` + \`zcat\`, batched | 1 | ${shell_batch_s} s | |"
    echo "| capability deltas: \`deps-diff HEAD~1..HEAD\`, first run (downloads the rest of the graph) | 1 | ${caps_first_s} s | $((caps_first_rss / 1024)) MiB |"
    echo "| capability deltas, cold analysis (crates cached, no analysis results) | $COLD_RUNS | ${caps_cold_med} s | $((caps_cold_rss_max / 1024)) MiB |"
    echo "| capability deltas, warm | $WARM_RUNS | **${caps_warm_med} s** | $((caps_warm_rss_max / 1024)) MiB |"
    echo "| the same range, \`--no-capabilities\` (what is built only), warm | 3 | ${graph_med} s | $((graph_rss_max / 1024)) MiB |"
    if $have_vet; then
        echo "| \`cargo vet diff --mode=local\`, $vet_pairs upgraded pairs, first pass (unpacks) | 1 | ${vet_cold_s} s | $((vet_rss / 1024)) MiB (largest call) |"
        echo "| \`cargo vet diff --mode=local\`, second pass | 1 | **${vet_warm_s} s** | |"
    fi
    echo
    echo "## Ratios"
    echo
    echo "| | ratio | target |"
    echo "| --- | --- | --- |"
    echo "| velaris warm / floor ($NPROC threads, as velaris uses) | **${r_warm_floorN}x** | at most 3x: $verdict_floor |"
    echo "| velaris warm / floor (1 thread) | ${r_warm_floor1}x | |"
    verdict_caps="met"
    awk -v r="$r_caps_warm" 'BEGIN { exit !(r <= 2) }' || verdict_caps="MISSED"
    echo "| capability deltas warm / velaris warm | **${r_caps_warm}x** | at most 2x: $verdict_caps |"
    echo "| the range with \`--no-capabilities\` warm / velaris warm | ${r_graph_warm}x | |"
    if $have_vet; then
        echo "| cargo vet second pass / capability deltas warm | **${r_vet_caps}x** | well above 1 |"
        echo "| cargo vet second pass / velaris warm | **${r_vet}x** | well above 1 |"
        echo "| cargo vet second pass / velaris warm \`--diff\` | ${r_vet_diff}x | |"
    fi
    echo
    echo "## Capability deltas"
    echo
    echo "The same two versions as two commits of a scratch repository (each version's published"
    echo "\`Cargo.toml\`, \`Cargo.lock\` and sources), reviewed with \`velaris deps-diff HEAD~1..HEAD"
    echo "--target $TARGET --format json\`: the workspace is read at both revisions, the graph resolved"
    echo "for the target (fetching only what it compiles), and the surface engine run at base and at head."
    echo "Its cache dir starts as a copy of the warm one; the first run downloads the graph's other"
    echo "packages ($caps_graph_crates \`.crate\` files in that cache afterwards, $caps_results analysis results)."
    echo "\"Cold analysis\" deletes the analysis results first; \"warm\" keeps them. \"velaris warm\" above"
    echo "(two lockfiles, \`--no-capabilities\`) is deps-diff without capability deltas."
    echo
    echo "| what the review says | |"
    echo "| --- | --- |"
    echo "| packages built for $TARGET / not built | $caps_built / $caps_not_built |"
    echo "| capabilities analysed | $caps_analysed of $caps_in_scope changed packages |"
    echo "| packages that gain capabilities / flagged | $caps_gain / $caps_flagged |"
    echo "| audit cost (built) / not built | $caps_audit / $caps_audit_nb lines |"
    echo "| default human output / with \`--files\` | $caps_human_lines / $caps_files_lines lines |"
    echo
    echo "## cargo-vet"
    echo
    if $have_vet; then
        echo "$vet_version, in a scratch project (\`cargo vet init\`), \`cargo vet diff NAME OLD NEW --mode=local --locked\`"
        echo "once per upgraded pair with a checksum on both sides ($vet_pairs calls; the added and removed packages"
        echo "velaris also reports are not asked of it), stdout to a file ($(mib "$vet_bytes") MiB of unified diff on the second pass)."
        echo "Its cache was \`--cache-dir benchmark/work/vet-cache\` (by default the user cache directory,"
        echo "\`~/.cache/cargo-vet\`): \`cache/NAME-VERSION.crate\` and the unpacked \`src/NAME-VERSION/\`."
        echo "cargo-vet downloads from the crates.io web API host, which this machine may not reach, and"
        echo "reads its own \`cache/\` first, so \`cache/\` was seeded with the bytes velaris had verified:"
        echo "its first pass includes unpacking every crate to disk but no network, its second finds them"
        echo "unpacked. It does not check the sha256 of what it reads. Each call also runs \`cargo metadata\`"
        echo "and one \`git diff --no-index\` per changed file."
    else
        echo "Not measured: $vet_note."
    fi
    if [[ -n $profile_md ]]; then
        echo
        echo "## Where a warm run spends its CPU time"
        echo
        echo "\`perf record\` of one warm \`--format json\` run, self time grouped by symbol:"
        echo
        echo "| phase | share of samples |"
        echo "| --- | --- |"
        echo "$profile_md"
        echo
        minflt=$(awk -F': ' '/Minor .*page faults/ { print $2 }' "$WORK/time/warm-1.txt")
        echo "A warm run takes $minflt minor page faults (\`/usr/bin/time -v\`, warm run 1): about"
        echo "$(mib $((minflt * 4096))) MiB of fresh pages the kernel maps and zeroes, against a peak RSS"
        echo "of $(($(rss_kb "$WORK/time/warm-1.txt") / 1024)) MiB and $(mib "$uncompressed") MiB unpacked in all."
        echo
        echo "Top symbols:"
        echo
        echo '```'
        head -12 "$WORK/perf.txt" | sed -E 's/[ -]+$//; s/  +/  /g'
        echo '```'
    fi
} >"$base.md"
log "wrote $base.md"
for b in "$busy_before" "${busy_vet:-0}" "$busy_after"; do
    if ((b >= 10)); then
        if ((niced)); then log "note: other processes were busy during the run (${busy_before}% / ${busy_vet:-n/a}% / ${busy_after}%), at lower priority"
        else log "warning: other processes used the CPUs during the run (${busy_before}% / ${busy_vet:-n/a}% / ${busy_after}%); rerun on a quiet machine"; fi
        break
    fi
done
cat "$base.tsv"
