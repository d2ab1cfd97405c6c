#!/usr/bin/env bash
# Peak memory and time of `velaris surface` on real applications' own workspaces (their
# Cargo.toml and Cargo.lock), cold (empty result cache, .crate files already fetched) and warm,
# for one or two velaris binaries. See benchmark/README.md ("Applications").
#
# Usage: CRATES=DIR bash benchmark/apps.sh BIN [BEFORE_BIN] -- APP_DIR...
#   CRATES      a directory of verified .crate files as velaris caches them (`<cache>/crates`);
#               every cold run gets a fresh cache dir whose `crates` links to it, and --offline
#   WARM_RUNS   warm runs after each cold one (default 1)
#   OUT         where the table goes (default: stdout)
# Each run: /usr/bin/time -v (wall time, peak RSS). The cold and warm JSON reports of a binary
# must be byte-identical, and with two binaries, the two binaries' reports too (the script says
# when they are not).
set -Eeuo pipefail
export LC_ALL=C
unset RUST_BACKTRACE
BIN=$1; shift
BEFORE=
if [[ ${1:-} != -- ]]; then BEFORE=$1; shift; fi
[[ ${1:-} == -- ]] && shift
: "${CRATES:?CRATES: the directory of cached .crate files}"
WARM_RUNS=${WARM_RUNS:-1}
SCRATCH=$(mktemp -d)
trap 'rm -rf "$SCRATCH"' EXIT

run() { # run NAME BIN APP MODE -> "wall_s peak_mib"
    local name=$1 bin=$2 app=$3 mode=$4 cache=$SCRATCH/cache-$1 t
    if [[ $mode == cold ]]; then rm -rf "$cache"; mkdir -p "$cache"; ln -s "$CRATES" "$cache/crates"; fi
    t=$SCRATCH/time
    /usr/bin/time -v "$bin" surface --workspace "$app" --offline -q --cache-dir "$cache" --format json >"$SCRATCH/$name-$mode.json" 2>"$t" || { echo "error: $bin on $app failed: $(tail -3 "$t")" >&2; exit 1; }
    awk -F': ' '/Elapsed/ { n = split($2, p, ":"); s = 0; for (i = 1; i <= n; i++) s = s * 60 + p[i]; w = s } /Maximum resident/ { m = $2 / 1024 } END { printf "%.2f %.0f\n", w, m }' "$t"
}

{
    printf '| application | packages | binary | cold s | cold peak MiB | warm s | warm peak MiB |\n| --- | --- | --- | --- | --- | --- | --- |\n'
    for app in "$@"; do
        name=$(basename "$app")
        pkgs=$(grep -c '^\[\[package\]\]' "$app/Cargo.lock")
        for which in now before; do
            bin=$BIN; [[ $which == before ]] && bin=$BEFORE
            [[ -z $bin ]] && continue
            read -r cs cm < <(run "$name-$which" "$bin" "$app" cold)
            ws=; wm=
            for _ in $(seq "$WARM_RUNS"); do
                read -r s m < <(run "$name-$which" "$bin" "$app" warm)
                ws+="${ws:+ / }$s"; wm+="${wm:+ / }$m"
                cmp -s "$SCRATCH/$name-$which-cold.json" "$SCRATCH/$name-$which-warm.json" || echo "warning: $name $which: warm report differs from cold" >&2
            done
            printf '| %s | %s | %s | %s | %s | %s | %s |\n' "$name" "$pkgs" "$which" "$cs" "$cm" "$ws" "$wm"
        done
        if [[ -n $BEFORE ]] && ! cmp -s "$SCRATCH/$name-now-cold.json" "$SCRATCH/$name-before-cold.json"; then
            echo "warning: $name: the two binaries' reports differ" >&2
        fi
    done
} | if [[ -n ${OUT:-} ]]; then tee "$OUT"; else cat; fi
