#!/usr/bin/env bash
# Release ages read from crates.io's real sparse index for a real lockfile change, and what the
# publication checks cost on a warm `velaris deps-diff` of that change. See README.md beside
# this script.
#
# Usage: bash benchmark/publication/run.sh BIN
#   FD_REPO   a git directory of sharkdp/fd (default /work/.mirror/sharkdp+fd/repo)
#   BASE, HEAD  the commits compared (default dda13cc and 0b10bf2: five dependabot bumps,
#               July to August 2026); ages are measured against HEAD's committer date
#   CRATES    a directory of verified .crate files (`<cache>/crates`), linked into a scratch
#             cache so every run is warm for downloads
#   RUNS (5)  warm runs per variant
# The index is asked for real (online); crates.io's API is pointed at 127.0.0.1:1 so that a
# cache miss fails at once and shows as a request. The API cache is seeded with the versions'
# index facts and a placeholder publisher (crates.io's API does not resolve from the machines
# this ran on): the cost measured is reading and using cached answers, as on a warm run.
set -euo pipefail
export LC_ALL=C
BIN=${1:?usage: run.sh BIN}
FD_REPO=${FD_REPO:-/work/.mirror/sharkdp+fd/repo}
BASE=${BASE:-dda13cc}
HEAD=${HEAD:-0b10bf2}
CRATES=${CRATES:-/work/cache/crates}
RUNS=${RUNS:-5}
OUT=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/results
mkdir -p "$OUT"
S=$(mktemp -d)
trap 'rm -rf "$S"' EXIT
git --git-dir="$FD_REPO" show "$BASE:Cargo.lock" >"$S/old.lock"
git --git-dir="$FD_REPO" show "$HEAD:Cargo.lock" >"$S/new.lock"
AS_OF=$(TZ=UTC git --git-dir="$FD_REPO" show -s --date=format-local:%Y-%m-%dT%H:%M:%SZ --format=%cd "$HEAD")
mkdir -p "$S/cache"; ln -s "$CRATES" "$S/cache/crates"
export VELARIS_CRATES_IO_API=http://127.0.0.1:1/api/v1/
run() { "$BIN" deps-diff --old "$S/old.lock" --new "$S/new.lock" --as-of "$AS_OF" --cache-dir "$S/cache" --format json "$@"; }

# 1. Real data: what the index says of each new version.
run --no-publisher >"$S/ages.json"
python3 - "$S/ages.json" "$BASE" "$HEAD" "$AS_OF" >"$OUT/fd-release-ages.md" <<'PY'
import json, sys
doc, base, head, as_of = json.load(open(sys.argv[1])), *sys.argv[2:]
print(f"# Release ages: sharkdp/fd {base}..{head}\n")
print(f"Read from crates.io's sparse index (`pubtime`), measured against {head}'s committer date ({as_of}); cooldown {doc['publication']['cooldown_days']} days.\n")
print("| package | change | published (index `pubtime`) | age at the head commit | fresh |\n| --- | --- | --- | ---: | --- |")
for p in sorted(doc["packages"], key=lambda p: p["name"]):
    pb = p["publication"] or {}
    r = pb.get("released")
    old, new = (p["old"] or {}).get("version"), (p["new"] or {}).get("version")
    age = f"{r['age_seconds'] / 86400:.1f} days" if r else "unknown"
    print(f"| {p['name']} | {old} -> {new} | {r['time'] if r else 'none'} | {age} | {'yes' if pb.get('fresh') else 'no'} |")
PY

# 2. Seed the API cache: each new and old version with its index time, a placeholder user.
python3 - "$S/ages.json" "$S/cache" <<'PY'
import json, os, sys
doc, cache = json.load(open(sys.argv[1])), sys.argv[2]
os.makedirs(f"{cache}/api/crates-io", exist_ok=True)
for p in doc["packages"]:
    versions = []
    for side, t in (("old", "2025-01-01T00:00:00Z"), ("new", ((p["publication"] or {}).get("released") or {}).get("time", "2026-01-01T00:00:00Z"))):
        if p[side]:
            versions.append({"num": p[side]["version"], "created_at": t, "published_by": "placeholder", "trustpub": None})
    json.dump({"format": 1, "facts": {"name": p["name"], "trustpub_only": False, "versions": versions}}, open(f"{cache}/api/crates-io/{p['name']}.json", "w"))
PY

# 3. Warm runs: publishers not asked, then asked (answers cached); capabilities on and off.
time_of() { local s e; s=$EPOCHREALTIME; run "$@" >"$S/run.json"; e=$EPOCHREALTIME; awk -v a="$s" -v b="$e" 'BEGIN { printf "%.3f\n", b - a }'; }
median() { sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
{
    echo "# Cost of the publication checks: warm deps-diff of sharkdp/fd $BASE..$HEAD"
    echo
    echo "$(nproc) cores, $(awk '/MemTotal/ { printf "%.0f GiB", $2 / 1048576 }' /proc/meminfo), $(uname -sr); binary: $BIN; $RUNS warm runs each, median wall seconds. The index is asked in every run (as before this change, for \`yanked\`)."
    echo
    echo "| variant | --no-publisher | publishers from the cache | overhead | API requests |"
    echo "| --- | ---: | ---: | ---: | ---: |"
    for caps in on off; do
        extra=(); [[ $caps == off ]] && extra=(--no-capabilities)
        run "${extra[@]}" --no-publisher >/dev/null   # warm the result caches
        a=$(for _ in $(seq "$RUNS"); do time_of "${extra[@]}" --no-publisher; done | median)
        b=$(for _ in $(seq "$RUNS"); do time_of "${extra[@]}"; done | median)
        req=$(python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(d["publication"]["api_requests"], d["publication"]["publisher_not_checked"])' "$S/run.json")
        echo "| capabilities $caps | $a | $b | $(awk -v a="$a" -v b="$b" 'BEGIN { printf "%+.1f%%", (b - a) / a * 100 }') | ${req% *} (not checked: ${req#* }) |"
    done
} >"$OUT/fd-cost.md"
cat "$OUT/fd-release-ages.md" "$OUT/fd-cost.md"
