#!/usr/bin/env python3
"""Hostile shapes for benchmark/hostile.sh (sections 5 to 7).

    shapes.py surface DIR     one workspace per surface shape under DIR/<shape>/
    shapes.py deps DIR        for each deps-diff shape, DIR/<shape>/{old,new}.lock and the two
                              .crate files placed in DIR/<shape>/cache as velaris' cache holds them
    shapes.py apps            nothing; kept for symmetry

Every workspace has one program, `h`, whose code outside the hostile part uses
`std::process::Command` (so the rest of the crate is seen to be analysed). Everything is built
from this file alone: no network.
"""

import gzip
import hashlib
import io
import os
import shutil
import sys
import tarfile

REST = 'pub fn run() { let _ = std::process::Command::new("sh"); }\n'


def workspace(root, members):
    """members: [(name, {relative path: text})]; each member a package of its own."""
    shutil.rmtree(root, ignore_errors=True)
    os.makedirs(root)
    lock = "version = 3\n"
    for name, files in members:
        os.makedirs(os.path.join(root, name, "src"), exist_ok=True)
        with open(os.path.join(root, name, "Cargo.toml"), "w") as f:
            f.write(f'[package]\nname = "{name}"\nversion = "0.1.0"\nedition = "2021"\n')
        for rel, text in files.items():
            path = os.path.join(root, name, rel)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            if isinstance(text, tuple) and text[0] == "symlink":
                os.symlink(text[1], path)
                continue
            with open(path, "w") as f:
                f.write(text)
        lock += f'\n[[package]]\nname = "{name}"\nversion = "0.1.0"\n'
    with open(os.path.join(root, "Cargo.toml"), "w") as f:
        f.write("[workspace]\nmembers = [%s]\nresolver = \"2\"\n" % ", ".join(f'"{m}"' for m, _ in members))
    with open(os.path.join(root, "Cargo.lock"), "w") as f:
        f.write(lock)


def doubling(levels, position):
    """Each macro invokes the one before it twice, `levels` deep, invoked once."""
    out = [REST]
    if position == "statements":
        out.append('macro_rules! m0 { () => { let _ = std::fs::read("a"); }; }')
        for i in range(1, levels + 1):
            out.append(f"macro_rules! m{i} {{ () => {{ m{i-1}!(); m{i-1}!(); }}; }}")
        out.append(f"fn main() {{ m{levels}!(); run(); }}")
    elif position == "expressions":
        out.append('macro_rules! m0 { () => { std::fs::read("a") }; }')
        for i in range(1, levels + 1):
            out.append(f"macro_rules! m{i} {{ () => {{ (m{i-1}!(), m{i-1}!()) }}; }}")
        out.append(f"fn main() {{ let _ = m{levels}!(); run(); }}")
    else:
        out.append('macro_rules! m0 { () => { pub fn f() { let _ = std::fs::read("a"); } }; }')
        for i in range(1, levels + 1):
            out.append(f"macro_rules! m{i} {{ () => {{ mod a {{ m{i-1}!(); }} mod b {{ m{i-1}!(); }} }}; }}")
        out.append(f"m{levels}!();")
        out.append("fn main() { run(); }")
    return "\n".join(out) + "\n"


def many_arms(arms=1000, calls=400, width=134):
    """One macro of `arms` arms of a few hundred tokens, invoked `calls` times with the input
    of the last arm: every arm before it matches all but the last token (about 860 KB)."""
    words = " ".join(f"w{j}" for j in range(width))
    out = [REST, "macro_rules! big {"]
    for i in range(arms):
        out.append(f'    ({words} k{i}) => {{ pub fn f{i}() {{ let _ = std::fs::read("a"); }} }};')
    out.append("}")
    for c in range(calls):
        out.append(f"mod c{c} {{ big!({words} k{arms - 1}); }}")
    out.append("fn main() { run(); }")
    return "\n".join(out) + "\n"


def fragment_arms(arms=1000, terms=4000):
    """1,000 arms each taking an expression and a marker, invoked with an expression of
    8,000 tokens and the last marker: each arm parses the expression again."""
    out = [REST, "macro_rules! pick {"]
    for i in range(arms):
        out.append(f'    ($e:expr ; k{i}) => {{ pub fn f{i}() {{ let _ = std::fs::read($e); }} }};')
    out.append("}")
    out.append("pick!(%s ; k%d);" % (" + ".join(f"x{i}" for i in range(terms)), arms - 1))
    out.append("fn main() { run(); }")
    return "\n".join(out) + "\n"


def nested(open_, close, depth, inner="1"):
    return open_ * depth + inner + close * depth


def surface(root):
    os.makedirs(root, exist_ok=True)
    main = lambda text: [("h", {"src/main.rs": text})]
    for levels in (18, 30):
        for position in ("statements", "expressions", "items"):
            workspace(os.path.join(root, f"doubling-{levels}-{position}"), main(doubling(levels, position)))
    workspace(os.path.join(root, "two-doubling-30"), [("h", {"src/main.rs": doubling(30, "statements")}), ("g", {"src/main.rs": doubling(30, "statements")})])
    workspace(os.path.join(root, "many-arms-860kb"), main(many_arms()))
    workspace(os.path.join(root, "fragment-arms"), main(fragment_arms()))
    # Parsing shapes, already bounded before: each must stay fast and unanalyzed at its place.
    workspace(os.path.join(root, "parens-200000"), main(REST + "fn main() { let _ = %s; run(); }\n" % nested("(", ")", 200_000)))
    workspace(os.path.join(root, "blocks-100000"), main(REST + "fn main() { %s run(); }\n" % nested("{", "}", 100_000, "")))
    workspace(os.path.join(root, "inline-modules-20000"), main(REST + "".join(f"mod m{i} {{ " for i in range(20_000)) + "}" * 20_000 + "\nfn main() { run(); }\n"))
    workspace(os.path.join(root, "path-to-itself"), main(REST + '#[path = "main.rs"]\nmod again;\nfn main() { run(); }\n'))
    workspace(os.path.join(root, "symlink-loop"), [("h", {"src/main.rs": REST + "mod a;\nfn main() { run(); }\n", "src/a": ("symlink", "."), "src/a.rs": ("symlink", "a/a.rs")})])


def crate(name, version, files):
    """A .crate (gzip'd tar under NAME-VERSION/), deterministic."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.GNU_FORMAT) as t:
        for path, data in sorted(files.items()):
            info = tarfile.TarInfo(f"{name}-{version}/{path}")
            info.size = len(data)
            info.mode = 0o644
            info.mtime = 0
            t.addfile(info, io.BytesIO(data))
    return gzip.compress(buf.getvalue(), compresslevel=6, mtime=0)


def deps(root):
    os.makedirs(root, exist_ok=True)
    manifest = lambda v: f'[package]\nname = "p"\nversion = "{v}"\nedition = "2021"\n'.encode()
    big_old = b"a" * (50 * 1000 * 1000)
    big_new = bytearray(big_old)
    big_new[25_000_000] = ord("b")
    many = lambda tag: {f"src/f{i}.rs": f"pub fn f{i}() -> u32 {{ {i} }} // {tag}\n".encode() for i in range(99_990)}
    # Short lines, so that the file stays under the size limit and is diffed.
    lines = lambda tag: b"".join(b"%d%s\n" % (i, tag) for i in range(1_000_000))
    def shuffle(n, seed):
        order, state = list(range(n)), seed
        for i in range(n - 1, 0, -1):
            state = (state * 6364136223846793005 + 1442695040888963407) % (1 << 64)
            j = (state >> 33) % (i + 1)
            order[i], order[j] = order[j], order[i]
        return order
    shuffled = lambda o: b"".join(b"line %d\n" % i for i in o)
    shapes = {
        "one-line-50mb": ({"data/blob.txt": big_old}, {"data/blob.txt": bytes(big_new)}),
        "files-100000": (many("old"), many("new")),
        "lines-1000000": ({"src/table.rs": lines(b"")}, {"src/table.rs": lines(b"a")}),
        "lines-200000-shuffled": ({"src/table.rs": shuffled(range(200_000))}, {"src/table.rs": shuffled(shuffle(200_000, 7))}),
        "files-20-shuffled-100000": (
            {f"src/t{k}.rs": shuffled(range(100_000)) for k in range(20)},
            {f"src/t{k}.rs": shuffled(shuffle(100_000, k + 1)) for k in range(20)},
        ),
    }
    for name, (old, new) in shapes.items():
        d = os.path.join(root, name)
        shutil.rmtree(d, ignore_errors=True)
        os.makedirs(d)
        locks = {}
        for side, version, files in (("old", "1.0.0", old), ("new", "1.0.1", new)):
            files = dict(files)
            files["Cargo.toml"] = manifest(version)
            files.setdefault("src/lib.rs", b"pub fn run() {}\n")
            data = crate("p", version, files)
            digest = hashlib.sha256(data).hexdigest()
            path = os.path.join(d, "cache", "crates", "sha256", digest[:2], digest + ".crate")
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "wb") as f:
                f.write(data)
            locks[side] = (
                'version = 3\n\n[[package]]\nname = "p"\nversion = "%s"\n'
                'source = "registry+https://github.com/rust-lang/crates.io-index"\nchecksum = "%s"\n' % (version, digest)
            )
        for side, text in locks.items():
            with open(os.path.join(d, f"{side}.lock"), "w") as f:
                f.write(text)


if __name__ == "__main__":
    what, root = sys.argv[1], sys.argv[2]
    {"surface": surface, "deps": deps}[what](root)
