# lspd's Python fetcher, run inside the FETCH jail as
#   /usr/bin/python3 -I -B pip-driver.py --workspace DIR --target DIR --report FILE --index-url URL
#     [--wheels-out DIR [--wheels-in DIR]]
# (src/fetch/python.ts builds that argv and reads the report).
#
# Wheels only: a wheel is an archive, and installing one runs none of its code; an
# sdist would have to be built, which runs its setup.py or build backend. So every
# requirement comes from a lock the tree already has, pinned to one version, and is
# installed with `pip install --only-binary=:all: --no-deps --target`:
# - --only-binary=:all: pip never downloads an sdist, let alone builds one. A
#   requirement with no wheel for this platform is skipped and named in the report.
# - --no-deps: the lock is the whole set; pip resolves nothing of its own.
# - hashes in the lock are passed as --hash, and pip checks them (--require-hashes
#   for the requirements that have them; a mismatch fails the fetch).
# - with --wheels-out, hashed requirements are `pip download`ed there (what the
#   daemon takes into the org's package store), except those whose wheel the store
#   gave in --wheels-in, then installed from those two dirs with --no-index
#   (install_hashed; src/fetch/python-wheels.ts has the why).
# - the tree's requirement lines are never handed to pip as they are: a requirements
#   file can carry --index-url, --find-links, -e, URLs and paths. Each line is
#   parsed here and re-written as `name==version ; marker --hash=...`, or skipped.
# - -I (isolated): neither the tree (cwd) nor the script's dir is on sys.path, so a
#   `pip/` directory in the tree is never imported; --isolated and PIP_CONFIG_FILE
#   keep pip from reading any configuration but this command line.
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import urllib.error
import urllib.request

try:
    import tomllib
except ImportError:  # Python < 3.11: TOML locks are refused with a reason
    tomllib = None

MAX_REQUIREMENTS = 5000
MAX_LOCK_BYTES = 64 * 1024 * 1024
MAX_INCLUDE_DEPTH = 5

NAME = re.compile(r"^[A-Za-z0-9](?:[A-Za-z0-9._-]{0,198}[A-Za-z0-9])?$")
VERSION = re.compile(r"^[A-Za-z0-9][A-Za-z0-9.+!_-]{0,63}$")
HASH = re.compile(r"^(sha256|sha384|sha512):[0-9a-fA-F]{64,128}$")
# Environment markers as PEP 508 writes them; anything else is not passed to pip.
MARKER = re.compile(r"""^[A-Za-z0-9_ .'"<>=!~(),*+-]{1,400}$""")
PINNED = re.compile(
    r"^(?P<name>[A-Za-z0-9][A-Za-z0-9._-]*)\s*(?P<extras>\[[^\]]*\])?\s*(?P<op>===|==)\s*(?P<version>[^\s;,]+)\s*(?:;\s*(?P<marker>.*))?$"
)
REQUIREMENTS_FILE = re.compile(r"^requirements[\w.-]*\.txt$")

NO_WHEEL = "no wheel of this version for this platform on the index (an sdist is never built)"


def norm(name):
    return re.sub(r"[-_.]+", "-", name).lower()


class Plan:
    def __init__(self):
        self.reqs = []  # dicts: name, version, hashes, marker
        self.skipped = []  # "display: reason"
        self.notes = []
        self._seen = set()

    def add(self, name, version, hashes=(), marker=None, where=""):
        if not isinstance(name, str) or not NAME.match(name):
            self.skip(repr(name)[:80], "not a valid distribution name")
            return
        if not isinstance(version, str) or not VERSION.match(version) or "*" in version:
            self.skip(name, "not pinned to one version" + where)
            return
        hashes = [h for h in hashes if isinstance(h, str) and HASH.match(h)]
        if marker is not None and (not isinstance(marker, str) or not MARKER.match(marker) or "--" in marker):
            self.skip(f"{name}=={version}", "its environment marker could not be read")
            return
        key = norm(name)
        if key in self._seen:
            return  # the first lock entry for a name wins (default before develop, requirements.txt first)
        if len(self.reqs) >= MAX_REQUIREMENTS:
            self.skip(f"{name}=={version}", f"more than {MAX_REQUIREMENTS} requirements")
            return
        self._seen.add(key)
        self.reqs.append({"name": name, "version": version, "hashes": hashes, "marker": marker})

    def skip(self, what, reason):
        self.skipped.append(f"{what}: {reason}")


def read_text(path):
    st = os.lstat(path)
    if not os.path.isfile(path) or os.path.islink(path):
        raise ValueError(f"{os.path.basename(path)} is not a regular file")
    if st.st_size > MAX_LOCK_BYTES:
        raise ValueError(f"{os.path.basename(path)} is larger than {MAX_LOCK_BYTES} bytes")
    with open(path, "rb") as f:
        return f.read().decode("utf-8", errors="replace")


# --- lock readers -------------------------------------------------------------


def from_uv_lock(plan, path):
    data = tomllib.loads(read_text(path))
    for pkg in data.get("package", []):
        if not isinstance(pkg, dict):
            continue
        name, version, source = pkg.get("name"), pkg.get("version"), pkg.get("source") or {}
        if not isinstance(source, dict) or "registry" not in source:
            # The project itself (editable/virtual) is the tree; git, url and path
            # sources are not on an index and could only be built.
            kind = next(iter(source), "unknown") if isinstance(source, dict) else "unknown"
            if kind not in ("editable", "virtual"):
                plan.skip(str(name), f"from a {kind} source, not an index")
            continue
        hashes = [w.get("hash") for w in pkg.get("wheels", []) if isinstance(w, dict)]
        sdist = pkg.get("sdist")
        if isinstance(sdist, dict):
            hashes.append(sdist.get("hash"))
        plan.add(name, version, hashes)


def from_poetry_lock(plan, path):
    data = tomllib.loads(read_text(path))
    legacy_files = (data.get("metadata") or {}).get("files") or {}
    for pkg in data.get("package", []):
        if not isinstance(pkg, dict):
            continue
        name, version = pkg.get("name"), pkg.get("version")
        source = pkg.get("source")
        if isinstance(source, dict) and source.get("type") in ("git", "directory", "file", "url"):
            plan.skip(f"{name}=={version}", f"from a {source.get('type')} source, not an index")
            continue
        files = pkg.get("files") or legacy_files.get(name) or []
        hashes = [f.get("hash") for f in files if isinstance(f, dict)]
        marker = pkg.get("markers") if isinstance(pkg.get("markers"), str) else None
        plan.add(name, version, hashes, marker)


def from_pipfile_lock(plan, path):
    data = json.loads(read_text(path))
    for section in ("default", "develop"):
        entries = data.get(section) or {}
        if not isinstance(entries, dict):
            continue
        for name, e in entries.items():
            if not isinstance(e, dict):
                continue
            if any(k in e for k in ("git", "hg", "svn", "path", "file", "editable")):
                plan.skip(str(name), "not from an index (a VCS, path or URL entry)")
                continue
            version = e.get("version")
            if isinstance(version, str) and version.startswith("=="):
                version = version[2:]
            else:
                plan.skip(str(name), "not pinned to one version")
                continue
            plan.add(name, version, e.get("hashes") or [], e.get("markers"))


def logical_lines(text):
    """Requirement-file lines with comments removed and `\\` continuations joined (pip's rules)."""
    buf = ""
    for raw in text.splitlines():
        line = re.sub(r"(^|\s+)#.*$", "", raw)
        if line.endswith("\\"):
            buf += line[:-1] + " "
            continue
        yield (buf + line).strip()
        buf = ""
    if buf.strip():
        yield buf.strip()


def from_requirements(plan, path, top, depth=0):
    where = f" (in {os.path.relpath(path, top)})"
    for line in logical_lines(read_text(path)):
        if not line:
            continue
        if line.startswith("-"):
            opt, _, arg = line.partition(" ")
            if "=" in opt and not arg:
                opt, _, arg = opt.partition("=")
            arg = arg.strip()
            if opt in ("-r", "--requirement"):
                include(plan, path, arg, top, depth)
            elif opt in ("-e", "--editable"):
                plan.skip(arg or line, "an editable requirement is built from source, never fetched")
            elif opt in ("-c", "--constraint"):
                pass  # constraints pin nothing by themselves
            else:
                # --index-url, --find-links, --trusted-host, --pre, ...: the index is
                # lspd's (LSPD_PIP_INDEX_URL), never the tree's.
                plan.notes.append(f"ignored option line{where}: {opt}")
            continue
        req, hashes = split_hashes(line)
        if "@" in req.split(";")[0] or "://" in req or req.startswith((".", "/")):
            plan.skip(req.split(";")[0].strip()[:120], "a direct URL or path, not an index requirement")
            continue
        m = PINNED.match(req)
        if not m:
            plan.skip(req[:120], "not pinned with == to one version" + where)
            continue
        marker = m.group("marker")
        plan.add(m.group("name"), m.group("version"), hashes, marker.strip() if marker else None, where)


def split_hashes(line):
    hashes = re.findall(r"--hash[=\s]+(\S+)", line)
    req = re.split(r"\s--", " " + line, maxsplit=1)[0].strip()
    return req, hashes


def include(plan, path, arg, top, depth):
    if depth >= MAX_INCLUDE_DEPTH or not arg or "://" in arg:
        plan.notes.append(f"ignored include {arg!r}")
        return
    target = os.path.realpath(os.path.join(os.path.dirname(path), arg))
    # Only files of the tree: nothing else is in this jail worth reading, but the
    # report should not name anything outside it either.
    if not target.startswith(TREE_TOP + "/") or not os.path.isfile(target):
        plan.notes.append(f"ignored include {arg!r}: not a file of the tree")
        return
    from_requirements(plan, target, top, depth + 1)


def read_plan(ws):
    plan = Plan()
    names = sorted(os.listdir(ws))
    for lock, reader, needs_toml in (("uv.lock", from_uv_lock, True), ("poetry.lock", from_poetry_lock, True), ("Pipfile.lock", from_pipfile_lock, False)):
        if lock in names:
            if needs_toml and tomllib is None:
                raise ValueError(f"{lock} needs Python 3.11's tomllib")
            print(f"lspd: reading {lock}", flush=True)
            reader(plan, os.path.join(ws, lock))
            return plan
    reqs = [n for n in names if REQUIREMENTS_FILE.match(n)]
    reqs.sort(key=lambda n: (n != "requirements.txt", n))
    for n in reqs:
        print(f"lspd: reading {n}", flush=True)
        from_requirements(plan, os.path.join(ws, n), ws)
    return plan


# --- pip ------------------------------------------------------------------------


def line_of(r):
    s = f"{r['name']}=={r['version']}"
    if r["marker"]:
        s += f" ; {r['marker']}"
    for h in r["hashes"]:
        s += f" --hash={h}"
    return s


def run_pip(args, reqs, require_hashes, mode="index"):
    """One pip run over `reqs`. mode: "index" installs from the index, "download"
    only downloads into --wheels-out, "local" installs from the stored and
    downloaded wheels with no index at all."""
    with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False, dir=os.environ.get("TMPDIR")) as f:
        f.write("\n".join(line_of(r) for r in reqs) + "\n")
        listing = f.name
    cmd = [
        sys.executable, "-I", "-m", "pip", "download" if mode == "download" else "install",
        "--isolated", "--no-input", "--disable-pip-version-check", "--no-cache-dir",
        "--progress-bar", "off", "--only-binary=:all:", "--no-deps",
    ]
    if mode == "download":
        cmd += ["--dest", args.wheels_out]
    else:
        cmd += ["--no-compile", "--no-warn-script-location", "--target", args.target]
    if mode == "local":
        cmd.append("--no-index")
        for d in (args.wheels_in, args.wheels_out):
            if d and os.path.isdir(d):
                cmd += ["--find-links", d]
    else:
        # An index that does not answer fails the workspace in well under a minute:
        # the egress proxy answers 504 after 10 s without a connection, and pip's
        # defaults (5 retries, 15 s reads) would wait minutes on it.
        cmd += ["--index-url", args.index_url, "--retries", "1", "--timeout", "15"]
        if args.trusted_host:
            cmd += ["--trusted-host", args.trusted_host]
    if require_hashes:
        cmd.append("--require-hashes")
    cmd += ["-r", listing]
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, cwd=os.environ.get("TMPDIR", "/tmp"))
    out = p.stdout.decode("utf-8", errors="replace")
    # The root warning says nothing to a caller: pip runs as an unprivileged jail uid.
    sys.stdout.write("".join(l + "\n" for l in out.splitlines() if "Running pip as the 'root' user" not in l))
    sys.stdout.flush()
    os.unlink(listing)
    return p.returncode, out


def probe_index(index_url, name):
    """Why the index cannot serve us, or None: one request for one project page.

    pip says nothing of an index it cannot reach but "No matching distribution"
    (its retries and the proxy's status are logged only with -v), which reads as a
    package with no wheel. So the index is asked once first, through the same egress
    proxy (urllib reads HTTP(S)_PROXY as pip does), and the proxy's status names the
    cause: 403 not an allowed registry, 502 not reachable, 504 no answer in time.
    """
    url = index_url.rstrip("/") + "/" + norm(name) + "/"
    try:
        with urllib.request.urlopen(url, timeout=15):
            return None
    except urllib.error.HTTPError as e:
        body = e.read(512).decode("utf-8", errors="replace")
        if e.code == 403 and "not an allowed fetch registry" in body:
            return "the index host is not an allowed registry (not in LSPD_FETCH_REGISTRIES)"
        if e.code == 502:
            return "the index host could not be reached"
        if e.code == 504:
            return "the index host did not answer in time"
        return None  # the index answered (a 404 is one project it lacks): pip says the rest
    except (urllib.error.URLError, OSError) as e:
        text = str(getattr(e, "reason", e))
        if re.search(r"\b403\b", text):
            return "the index host is not an allowed registry (not in LSPD_FETCH_REGISTRIES)"
        if re.search(r"\b504\b|timed out", text):
            return "the index host did not answer in time"
        return "the index host could not be reached"


def classify(out):
    """(fatal, reason) for a failed pip run.

    The egress proxy's status tells the causes apart (src/jail/egress-proxy.ts): 403
    the index host is not an allowed registry, 502 it could not be reached, 504 it
    did not answer in time. pip prints that status ("Tunnel connection failed: 403
    Forbidden" through CONNECT, "403 Client Error" for a plain-http index, "too many
    502 error responses" after its retries), then often "No matching distribution":
    so the proxy's answers are read before pip's conclusion, or a refused host would
    read as a package with no wheel. Keep in step with src/fetch/registry-reason.ts.
    """
    if "DO NOT MATCH THE HASHES" in out or "do not match the hashes" in out:
        return True, "a downloaded wheel does not match the hashes in the lock"
    if re.search(r"\b403\b[^\n]*Forbidden|403 Client Error", out):
        return True, "the index host is not an allowed registry (not in LSPD_FETCH_REGISTRIES)"
    if re.search(r"\b504\b|Gateway Time-?out|Read timed out|timed out", out):
        return True, "the index host did not answer in time"
    if re.search(r"\b502\b|Bad Gateway|Retrying \(Retry\(|ProxyError|Max retries exceeded|Connection refused|Tunnel connection failed", out):
        return True, "the index host could not be reached"
    if re.search(r"404 Client Error|\b404\b[^\n]*Not Found", out):
        return False, "not found in the package index (404)"
    if "No matching distribution found" in out or "Could not find a version that satisfies" in out:
        return False, NO_WHEEL
    return True, "pip failed (see the log)"


def failing_name(out, reqs):
    m = re.search(r"No matching distribution found for ([A-Za-z0-9._-]+)", out)
    if not m:
        return None
    want = norm(m.group(1))
    return next((r for r in reqs if norm(r["name"]) == want), None)


def install(args, reqs, require_hashes, report, mode="index"):
    """Run pip over `reqs` in as few runs as it takes (one, plus one per requirement
    with no wheel); the requirements it installed (or downloaded)."""
    pending = list(reqs)
    while pending:
        code, out = run_pip(args, pending, require_hashes, mode)
        if code == 0:
            return pending
        fatal, reason = classify(out)
        culprit = failing_name(out, pending) or (pending[0] if len(pending) == 1 else None)
        if fatal:
            report["failed"].append(f"{culprit['name']}=={culprit['version']}: {reason}" if culprit else reason)
            # The daemon's hint reads this line (src/fetch/python.ts pythonHint).
            print(f"lspd: failed: {reason}", flush=True)
            return []
        if culprit is None:
            # Not attributable to one requirement: one at a time, so each says for itself.
            done = []
            for r in pending:
                done += install(args, [r], require_hashes, report, mode)
                if report["failed"]:
                    break
            return done
        report["skipped"].append(f"{culprit['name']}=={culprit['version']}: {reason}")
        print(f"lspd: skipped {culprit['name']}=={culprit['version']}: {reason}", flush=True)
        pending.remove(culprit)
    return []


def stored_sha256s(wheels_in):
    """Digests of the wheels the daemon laid out from the org's store (its manifest: `<sha256> <file>` lines)."""
    if not wheels_in:
        return set()
    try:
        with open(os.path.join(wheels_in, "lspd-sha256.txt")) as f:
            return {line.split(" ", 1)[0] for line in f if line.strip()}
    except OSError:
        return set()


def in_store(r, have):
    return any(h.lower().startswith("sha256:") and h[7:].lower() in have for h in r["hashes"])


def install_hashed(args, reqs, report):
    """Requirements with hashes, through local dirs: the store's wheels and what
    `pip download` brings of the rest (kept in --wheels-out for the daemon to store),
    then one `pip install --no-index` of them all. One install run: several runs
    into one --target would each skip a directory an earlier one made (namespace
    packages). A stored wheel pip does not take (pip checks each hash; a wheel of
    another interpreter's tags) is downloaded instead and the install redone."""
    have = stored_sha256s(args.wheels_in)
    stored = [r for r in reqs if in_store(r, have)]
    rest = [r for r in reqs if r not in stored]
    if stored:
        print(f"lspd: {len(stored)} wheels from the package store", flush=True)
    got = install(args, rest, True, report, "download") if rest else []
    if report["failed"] or not (stored or got):
        return
    while True:
        code, out = run_pip(args, stored + got, True, "local")
        if code == 0 or not stored:
            break
        # A stored wheel pip would not take here: that one (unnamed: all of them) from the index.
        culprit = failing_name(out, stored)
        again = [culprit] if culprit else stored
        print(f"lspd: {len(again)} stored wheels did not install; downloading them", flush=True)
        stored = [r for r in stored if r not in again]
        got += install(args, again, True, report, "download")
        if report["failed"] or not (stored or got):
            return
    if code != 0:
        fatal, reason = classify(out)
        report["failed"].append(reason if fatal else f"the downloaded wheels did not install: {reason}")
        print(f"lspd: failed: {reason}", flush=True)
        return
    report["installed"] += [f"{r['name']}=={r['version']}" for r in stored + got]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--workspace", required=True)
    ap.add_argument("--tree", required=True)
    ap.add_argument("--target", required=True)
    ap.add_argument("--report", required=True)
    ap.add_argument("--index-url", required=True)
    ap.add_argument("--trusted-host")
    ap.add_argument("--wheels-in")  # read-only: the org's stored wheels (src/fetch/python-wheels.ts)
    ap.add_argument("--wheels-out")  # where hashed requirements are downloaded to (taken into the store after)
    args = ap.parse_args()
    global TREE_TOP
    TREE_TOP = os.path.realpath(args.tree)
    report = {"v": 1, "installed": [], "skipped": [], "failed": [], "notes": []}
    try:
        plan = read_plan(args.workspace)
    except (ValueError, OSError) as e:
        report["failed"].append(f"the lock could not be read: {e}")
        write_report(args.report, report)
        print(f"lspd: the lock could not be read: {e}", flush=True)
        return 3
    report["skipped"] += plan.skipped
    report["notes"] += plan.notes
    for s in plan.skipped:
        print(f"lspd: skipped {s}", flush=True)
    for n in plan.notes:
        print(f"lspd: {n}", flush=True)
    os.makedirs(args.target, exist_ok=True)
    hashed = [r for r in plan.reqs if r["hashes"]]
    plain = [r for r in plan.reqs if not r["hashes"]]
    have = stored_sha256s(args.wheels_in) if args.wheels_out else set()
    # The index is asked only when something comes from it (all from the store: no request at all).
    from_index = plain + [r for r in hashed if not in_store(r, have)]
    if from_index:
        reason = probe_index(args.index_url, from_index[0]["name"])
        if reason:
            report["failed"].append(reason)
            write_report(args.report, report)
            print(f"lspd: failed: {reason}", flush=True)
            return 3
    # pip's hash mode is all or nothing per run: requirements with hashes are
    # installed in a run that requires them, the rest in a run of their own.
    if hashed and args.wheels_out:
        os.makedirs(args.wheels_out, exist_ok=True)
        install_hashed(args, hashed, report)
    elif hashed:
        report["installed"] += [f"{r['name']}=={r['version']}" for r in install(args, hashed, True, report)]
    if plain and not report["failed"]:
        report["installed"] += [f"{r['name']}=={r['version']}" for r in install(args, plain, False, report)]
    write_report(args.report, report)
    print(f"lspd: {len(report['installed'])} installed, {len(report['skipped'])} skipped, {len(report['failed'])} failed", flush=True)
    return 3 if report["failed"] else 0


def write_report(path, report):
    with open(path, "w") as f:
        json.dump(report, f)


TREE_TOP = "/src"

if __name__ == "__main__":
    sys.exit(main())
