"""The ladder holds (docs/LAYOUT.md): in src/ and redis/, no file calls
a file on a higher rung, and no files call each other in a circle; in
src/ no file includes a header of a higher rung and no headers include
each other in a circle; cli/ and python/src/ have no circles. Calls are
read from the build's own objects (nm: the symbols each defines and the
ones it takes from others; python/src's compiled here, as the package
build compiles them in one step), not from the sources' text; includes
from the sources' #include lines. Ends with "N passed, N failed"."""
import os
import re
import subprocess
import sys
import sysconfig
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BUILD = os.path.abspath(os.environ.get("BUILD", os.path.join(ROOT, "build")))
passed = failed = 0


def check(what, ok, detail=""):
    global passed, failed
    if ok:
        passed += 1
        print("ok - " + what)
    else:
        failed += 1
        print("FAIL - %s%s" % (what, (": " + str(detail)) if detail else ""))


def table(section, pattern):
    """{name: rung} for the names LAYOUT.md's table after the line starting
    with `section` places (pattern: a regex with one group, the name); the
    rung column is kept from the row above when blank."""
    text = open(os.path.join(ROOT, "docs", "LAYOUT.md")).read()
    at = text.index(section)
    out, rung = {}, None
    for line in text[at:].splitlines()[1:]:
        if line.startswith("| rung") or line.startswith("|---"):
            continue
        if not line.startswith("|"):
            if out:
                break
            continue
        cells = line.split("|")
        if cells[1].strip():
            rung = int(cells[1].strip())
        for name in re.findall(pattern, cells[2]):
            out.setdefault(name, rung)
    return out


def rungs(section):
    """{file stem: rung} of the .c files the table places."""
    return table(section, r"`([A-Za-z0-9_]+)\.c`")


def header_rungs(section):
    """{header name: rung} of the headers the table places."""
    return table(section, r"`([A-Za-z0-9_]+\.h)`")


def includes(path):
    """The quoted includes of a source file, by name."""
    with open(path, errors="replace") as f:
        return re.findall(r'^\s*#\s*include\s+"(?:[^"/]*/)?([^"/]+)"', f.read(), re.M)


def include_ladder(srcdir, section):
    """src/'s include graph: no circle of headers, and no file includes
    (directly or through other headers) a header of a higher rung than
    its own: a lower file using a higher one's types or inline calls is a
    call up the ladder the objects' symbols do not show."""
    stems = rungs(section)
    hr = header_rungs(section)
    heads = {f: includes(os.path.join(srcdir, f)) for f in os.listdir(srcdir) if f.endswith(".h")}
    g = {h: {i for i in inc if i in heads} for h, inc in heads.items()}
    check("src: no circle of headers", not circles(g), circles(g))
    up = []
    for f in sorted(os.listdir(srcdir)):
        if not f.endswith(".c") or f[:-2] not in stems:
            continue
        seen, todo = set(), [i for i in includes(os.path.join(srcdir, f)) if i in heads]
        while todo:
            h = todo.pop()
            if h not in seen:
                seen.add(h)
                todo.extend(g.get(h, ()))
        r = stems[f[:-2]]
        up += ["%s (rung %d) includes %s (rung %d)" % (f, r, h, hr[h])
               for h in sorted(seen) if hr.get(h, 0) > r]
    check("src: no include up the ladder", not up, up)


def graph(objdir, stems):
    """{stem: {stem it takes symbols from}} over the objects in objdir."""
    defs, uses = {}, {}
    for stem in stems:
        obj = os.path.join(objdir, stem + ".o")
        if not os.path.exists(obj):
            continue
        out = subprocess.run(["nm", "-P", obj], stdout=subprocess.PIPE, check=True,
                             universal_newlines=True).stdout
        uses[stem] = set()
        for line in out.splitlines():
            parts = line.split()
            if len(parts) < 2:
                continue
            name, kind = parts[0], parts[1]
            if kind == "U":
                uses[stem].add(name)
            elif kind in ("T", "D", "B", "R", "V", "W", "C"):  # defined, global
                defs.setdefault(name, stem)
    return {s: {defs[n] for n in used if n in defs and defs[n] != s} for s, used in uses.items()}


def circles(g):
    """Strongly connected components of more than one file (Tarjan)."""
    index, low, on, stack, out, counter = {}, {}, set(), [], [], [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(g.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    sys.setrecursionlimit(10000)
    for v in sorted(g):
        if v not in index:
            visit(v)
    return out


def ladder(name, objdir, section):
    stems = rungs(section)
    g = graph(objdir, stems)
    check("%s: the objects of every file LAYOUT.md places (%d)" % (name, len(g)),
          len(g) == len(stems), sorted(set(stems) - set(g)))
    up = ["%s.c (rung %d) -> %s.c (rung %d)" % (a, stems[a], b, stems[b])
          for a in sorted(g) for b in sorted(g[a]) if stems[b] > stems[a]]
    check("%s: no call up the ladder" % name, not up, up)
    check("%s: no circle of files" % name, not circles(g), circles(g))


def loose(name, objdir):
    stems = [f[:-2] for f in os.listdir(objdir) if f.endswith(".o")] if os.path.isdir(objdir) else []
    for sub in ("cmd", "input", "join"):
        d = os.path.join(objdir, sub)
        if os.path.isdir(d):
            stems += [os.path.join(sub, f[:-2]) for f in os.listdir(d) if f.endswith(".o")]
    g = graph(objdir, stems)
    check("%s: objects found (%d)" % (name, len(g)), len(g) > 0)
    check("%s: no circle of files" % name, not circles(g), circles(g))


def python_objects(out):
    """python/src/*.c compiled into out, one object each; False if this
    Python has no C headers (the python suite says so)."""
    inc = sysconfig.get_config_var("INCLUDEPY") or sysconfig.get_paths()["include"]
    if not os.path.exists(os.path.join(inc, "Python.h")):
        return False
    src = os.path.join(ROOT, "python", "src")
    for name in sorted(os.listdir(src)):
        if name.endswith(".c"):
            subprocess.run([os.environ.get("CC", "cc"), "-std=gnu11", "-c", "-fPIC",
                            "-I" + inc, "-I" + os.path.join(ROOT, "include"),
                            os.path.join(src, name), "-o",
                            os.path.join(out, name[:-2] + ".o")], check=True)
    return True


# The files that name a particular kind (a BK_KIND_ constant), outside
# the tests and benchmarks: the public header (the numbers), the registry
# (kinds.c: facts, the default by rate, how each is planned; registry.c:
# composite rows; array.c: the single arrays' operations), the kinds that
# build on others' (scalable.c and packed.c: chains of blocked, classic,
# precise and RedisBloom links), and where a user or the tool chooses a
# kind by name (--window, WBF.*, BF.RESERVE's kinds, the join's filter).
# docs/LAYOUT.md: a new kind is its files and its rows; none of these
# changes. A file may leave this list (delete its line), none may join it,
# and it holds at most 12.
NAMES_KINDS = """
cli/join/join_plan.c cli/window_opt.c include/bloomkit/bloomkit.h redis/cmd_wbf.c
redis/create.c src/array.c src/kinds.c src/packed.c src/registry.c src/scalable.c
""".split()


def files_naming_kinds():
    found = []
    for top in ("src", "cli", "redis", "python/src", "client", "include"):
        for d, _, names in os.walk(os.path.join(ROOT, top)):
            for name in names:
                if name.endswith((".c", ".h")):
                    path = os.path.join(d, name)
                    with open(path, errors="replace") as f:
                        if re.search(r"\bBK_KIND_[A-Z0-9_]+", f.read()):
                            found.append(os.path.relpath(path, ROOT))
    return sorted(found)


naming = files_naming_kinds()
joined = sorted(set(naming) - set(NAMES_KINDS))
check("no new file names a particular kind (%d name one)" % len(naming), not joined, joined)
check("at most 12 files name a particular kind (%d)" % len(naming), len(naming) <= 12, naming)
check("the ratchet lists only files that still name one (delete the others' lines)",
      not set(NAMES_KINDS) - set(naming), sorted(set(NAMES_KINDS) - set(naming)))

# A composite kind is its own files and its rows (docs/LAYOUT.md): no other
# object of the library takes an internal symbol (bki_*, bkf_*) of a
# window's, a cuckoo filter's or a static filter's files but registry.c,
# so adding such a kind changes no file of src/ but its own, kinds.c and
# registry.c. (The cuckoo filter's public bk_cuckoo_* calls are an API of
# their own, used where cuckoo filters are asked for by name.)
def takers(objdir, own):
    defs, uses = {}, {}
    for name in sorted(os.listdir(objdir)):
        if not name.endswith(".o"):
            continue
        stem = name[:-2]
        out = subprocess.run(["nm", "-P", os.path.join(objdir, name)], stdout=subprocess.PIPE,
                             check=True, universal_newlines=True).stdout
        uses[stem] = set()
        for line in out.splitlines():
            parts = line.split()
            if len(parts) < 2:
                continue
            if parts[1] == "U":
                uses[stem].add(parts[0])
            elif parts[1] in ("T", "D", "B", "R", "V", "W", "C"):
                defs[parts[0]] = stem
    found = {}
    for stem, used in uses.items():
        if stem in own:
            continue
        for sym in used:
            if defs.get(sym) in own and sym.startswith(("bki_", "bkf_")):
                found.setdefault(stem, set()).add(sym)
    return found


for kind, own in (("window", {"window", "window_codec"}), ("cuckoo", {"cuckoo", "cuckoo_codec"}),
                  ("static (fuse)", {"fuse", "fuse_codec"})):
    found = takers(os.path.join(BUILD, "obj"), own)
    found.pop("registry", None)
    check("the %s kind's files are reached only through registry.c" % kind, not found,
          {k: sorted(v)[:4] for k, v in found.items()})

ladder("src", os.path.join(BUILD, "obj"), "| rung | files | job |")
include_ladder(os.path.join(ROOT, "src"), "| rung | files | job |")
ladder("redis", os.path.join(BUILD, "redis"), "| rung | file | job |")
loose("cli", os.path.join(BUILD, "cli"))
with tempfile.TemporaryDirectory() as tmp:
    if python_objects(tmp):
        loose("python/src", tmp)
    else:
        print("python/src: skipped: no Python.h for %s" % sys.executable)
print("%d passed, %d failed" % (passed, failed))
sys.exit(1 if failed else 0)
