#!/usr/bin/env bash
# Write .github/release/manifest.txt from the SHA256SUMS of a release, for action.yml to check
# the binaries it downloads against.
#
#   gh release download vX.Y.Z --pattern SHA256SUMS
#   .github/release/update-manifest.sh vX.Y.Z SHA256SUMS
#
# RELEASE_URL overrides where the assets are downloaded from (a mirror); by default the
# repository's GitHub releases.
set -euo pipefail
if [ "$#" -ne 2 ]; then
  echo "usage: $0 vX.Y.Z SHA256SUMS" >&2
  exit 2
fi
tag="$1"
sums="$2"
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
version="${tag#v}"
cargo_version="$(sed -n 's/^version = "\(.*\)"$/\1/p' "$root/Cargo.toml" | head -n 1)"
if [ "$tag" != "v$version" ] || [ "$version" != "$cargo_version" ]; then
  echo "error: $tag is not v$cargo_version, the version in Cargo.toml" >&2
  exit 2
fi
out="$here/manifest.txt"
{
  sed -n '/^#/p;/^version /q' "$out" | sed '/^version /d'
  echo "version $version"
  echo "url ${RELEASE_URL:-https://github.com/velaris/ratchet/releases/download}"
  echo "# target sha256 asset"
  for target in x86_64-unknown-linux-gnu aarch64-unknown-linux-gnu x86_64-apple-darwin aarch64-apple-darwin x86_64-pc-windows-msvc; do
    exe=""
    case "$target" in *windows*) exe=".exe" ;; esac
    asset="velaris-$tag-$target$exe"
    sum="$(awk -v a="$asset" '$2 == a || $2 == "*" a { print $1 }' "$sums")"
    if ! printf '%s' "$sum" | grep -Eq '^[0-9a-f]{64}$'; then
      echo "error: $sums has no sha256 for $asset" >&2
      exit 2
    fi
    echo "$target $sum $asset"
  done
} > "$out.tmp"
mv "$out.tmp" "$out"
echo "wrote $out for $tag"
