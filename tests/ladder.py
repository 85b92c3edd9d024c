"""The ladder holds (docs/LAYOUT.md): in src/ and redis/, no file calls
a file on a higher rung, and no files call each other in a circle; cli/
and python/src/ have no circles. Read from the build's own objects (nm:
the symbols each defines and the ones it takes from others; python/src's
compiled here, as the package build compiles them in one step), not from
the sources' text. Ends with "N passed, N failed"."""
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


def rungs(section):
    """{file stem: rung} from LAYOUT.md's table after the line starting
    with `section` (the rung column is kept from the row above when blank)."""
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
        for name in re.findall(r"`([A-Za-z0-9_]+)\.c`", cells[2]):
            out.setdefault(name, rung)
    return out


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


ladder("src", os.path.join(BUILD, "obj"), "| rung | files | job |")
ladder("redis", os.path.join(BUILD, "redis"), "| rung | file | job |")
loose("cli", os.path.join(BUILD, "cli"))
with tempfile.TemporaryDirectory() as tmp:
    if python_objects(tmp):
        loose("python/src", tmp)
    else:
        print("python/src: skipped: no Python.h for %s" % sys.executable)
print("%d passed, %d failed" % (passed, failed))
sys.exit(1 if failed else 0)
