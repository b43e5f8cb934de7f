#!/usr/bin/env python3
"""What pip installs on free-threaded CPython 3.13t, in one place: the recipe
(tools/freethreaded_recipe.sh) installs with it, and a developer checks with it.

    python3 tools/freethreaded_pip.py check [FILE ...]    # the before-stop check; < 1 min
    PY install FILE                                       # what the recipe runs, PY its venv's python

`check` is a pip dry run (`pip install --dry-run`, nothing installed) of every
requirements*.txt (or the FILEs) against the free-threaded venv
(FT_VENV, default /tmp/libzim-c-ft; made from PY313T, default
/opt/py313t/bin/python3.13t, when missing), under the same rules as `install`,
and says per file what would not install. Exit 0 when everything installs
but what the rules let go (LEFT_OUT, and ON_ITS_OWN without a wheel set);
1 when something else would not (a new dependency that has no cp313t wheel
and whose sdist does not build); 2 when there is no free-threaded interpreter.

The rules (each found by running the recipe on 3.13t; docs/contributing.md,
"The free-threaded build", says more):
- LEFT_OUT: never installed there (C or Rust extensions without cp313t
  wheels); the tests that need them skip with their reason.
- ON_ITS_OWN: installed each on its own from wheels only
  (--only-binary=:all:), so that pip goes back to the newest release whose
  compiled dependencies (pydantic-core, cryptography, cffi, rpds-py) have a
  cp313t wheel; left out, saying so in one line, when no release has. Their
  tests skip on a free-threaded build only (elsewhere a missing one fails).
- the rest together, --prefer-binary (an older release's wheel over a newer
  release's sdist) and --only-binary for TOGETHER_BINARY (sdists that need
  Rust or Arrow's C++ libraries); what has no cp313t wheel in any release
  builds from its sdist with the C compiler, as on any Python.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent

LEFT_OUT = {
    "mypy": "its compiled dependencies have no cp313t wheels and their sdists build with Rust",
    "httptools": "a C extension without cp313t wheels; zim serve runs on h11",
    "uvloop": "a C extension without cp313t wheels; zim serve runs on asyncio's loop",
}
ON_ITS_OWN = {
    "fastapi": "needs pydantic-core, a Rust extension whose newest releases have no cp313t wheel",
    "mcp": "its pyjwt[crypto] needs cryptography (Rust) and cffi, neither with a cp313t wheel in any release",
}
TOGETHER_BINARY = ("hypothesis", "pyarrow")
# Seconds one pip run may take (bounded: a stuck download fails, saying so). An
# install from nothing took 3.5 min on 2 loaded cores (msgpack, PyYAML, tornado
# compile), a dry run against the made venv 2-5 s.
TIMEOUT = {True: 300, False: 1800}  # by dry_run

NAME = re.compile(r"^([A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?)")


def canonical(name: str) -> str:
    """PEP 503's normal form of a project name (`Foo_Bar` -> `foo-bar`)."""
    return re.sub(r"[-_.]+", "-", name).lower()


@dataclass
class Plan:
    """One requirements file split by the rules: what pip runs for it."""

    together: list[str] = field(default_factory=list)  # requirement lines, pip options (-c ...) included
    own: list[tuple[str, str]] = field(default_factory=list)  # (name, requirement line)
    left_out: list[str] = field(default_factory=list)  # names


def plan(path: Path, seen: set[Path] | None = None) -> Plan:
    """Split `path` (and what it -r includes) by the rules; a name is kept once."""
    seen = set() if seen is None else seen
    out = Plan()
    path = path.resolve()
    if path in seen:
        return out
    seen.add(path)
    for raw in path.read_text().splitlines():
        line = raw.split(" #", 1)[0].strip()
        if not line or line.startswith("#"):
            continue
        include = re.match(r"^(?:-r|--requirement)(?:\s+|=)(.+)$", line)
        if include:
            sub = plan(path.parent / include.group(1).strip(), seen)
            for mine, theirs in ((out.together, sub.together), (out.own, sub.own), (out.left_out, sub.left_out)):
                for x in theirs:
                    _add(mine, x)
            continue
        m = NAME.match(line)
        name = canonical(m.group(1)) if m and not line.startswith("-") else ""
        if name in LEFT_OUT:
            _add(out.left_out, name)
        elif name in ON_ITS_OWN:
            _add(out.own, (name, line))
        else:
            _add(out.together, line)
    return out


def _add(items: list[Any], item: Any) -> None:
    if item not in items:
        items.append(item)


def together_args(reqs: Path) -> list[str]:
    """pip's arguments for the together group (its lines go through a file: pip options may be among them)."""
    return ["--prefer-binary", "--only-binary=" + ",".join(TOGETHER_BINARY), "-r", str(reqs)]


def own_args(line: str) -> list[str]:
    return ["--only-binary=:all:", line]


def pip(python: str, args: list[str], dry_run: bool) -> subprocess.CompletedProcess[str]:
    """`python -m pip install` with args; dry runs write pip's JSON report to stdout."""
    cmd = [python, "-m", "pip", "install", "--disable-pip-version-check"]
    if dry_run:
        cmd += ["--dry-run", "-q", "--report", "-"]
    cmd += args
    try:
        return subprocess.run(cmd, capture_output=dry_run, text=True, timeout=TIMEOUT[dry_run])
    except subprocess.TimeoutExpired:
        msg = f"ERROR: pip did not finish in {TIMEOUT[dry_run]} s"
        if not dry_run:
            print(f"freethreaded_pip: {msg}", file=sys.stderr)
        return subprocess.CompletedProcess(cmd, 124, "", msg)


def why(proc: subprocess.CompletedProcess[str]) -> str:
    """pip's reason in one line: its first ERROR line, else its last line."""
    lines = [x.strip() for x in (proc.stderr or "").splitlines() if x.strip()]
    errors = [x for x in lines if x.startswith("ERROR:")]
    return (errors or lines or [f"pip exited {proc.returncode}"])[0][:300]


def would_install(proc: subprocess.CompletedProcess[str]) -> list[str]:
    """`name==version` of each package a dry run would install (from pip's --report)."""
    try:
        report = json.loads(proc.stdout or "{}")
    except json.JSONDecodeError:
        return []
    return [f"{x['metadata']['name']}=={x['metadata']['version']}" for x in report.get("install", [])]


def run_together(python: str, lines: list[str], dry_run: bool) -> subprocess.CompletedProcess[str]:
    with tempfile.NamedTemporaryFile("w", prefix="libzim-c-ft-reqs.", suffix=".txt") as f:
        f.write("\n".join(lines) + "\n")
        f.flush()
        return pip(python, (["-q"] if not dry_run else []) + together_args(Path(f.name)), dry_run)


def cmd_install(args: argparse.Namespace) -> int:
    """Install FILE by the rules into args.python's environment (what the recipe runs)."""
    p = plan(Path(args.file))
    if p.left_out:
        print(f"freethreaded_pip: left out on 3.13t: {', '.join(p.left_out)}", flush=True)
    if run_together(args.python, p.together, False).returncode:
        print(f"freethreaded_pip: {args.file} did not install on {args.python}", file=sys.stderr)
        return 1
    for name, line in p.own:
        if pip(args.python, ["-q"] + own_args(line), False).returncode:
            print(f"freethreaded_pip: {name} left out: no release of it has a wheel set for this interpreter "
                  f"({ON_ITS_OWN[name]}); its tests skip, saying so", file=sys.stderr, flush=True)
    return 0


def check_file(python: str, path: Path, own_seen: dict[str, str]) -> tuple[bool, list[str]]:
    """Dry-run one file; (ok, report lines). A failed together group is retried line by line to name the culprit."""
    p = plan(path)
    out, ok = [], True
    proc = run_together(python, p.together, True)
    if proc.returncode == 0:
        new = would_install(proc)
        out.append(f"{len(p.together)} requirement(s) together: ok" + (f" (would install {', '.join(new)})" if new else ""))
    else:
        ok = False
        bad = [line for line in p.together if run_together(python, [line], True).returncode]
        out.append(f"{len(p.together)} requirement(s) together: WOULD NOT INSTALL: {', '.join(bad) or 'the set as a whole'}: {why(proc)}")
    for name, line in p.own:
        if line not in own_seen:
            proc = pip(python, own_args(line), True)
            own_seen[line] = "ok" if proc.returncode == 0 else f"would not install, left out ({ON_ITS_OWN[name]}): {why(proc)}"
        out.append(f"{name} on its own, wheels only: {own_seen[line]}")
    if p.left_out:
        out.append("left out: " + "; ".join(f"{n}: {LEFT_OUT[n]}" for n in p.left_out))
    return ok, out


def venv_python(py313t: str, venv: Path) -> str | None:
    """The free-threaded venv's python, made (without packages) when missing; None without an interpreter."""
    python = venv / "bin" / "python"
    if python.exists():
        return str(python)
    if not os.access(py313t, os.X_OK):
        return None
    subprocess.run([py313t, "-m", "venv", str(venv)], check=True, timeout=TIMEOUT[True])
    return str(python)


def cmd_check(args: argparse.Namespace) -> int:
    files = [Path(f) for f in args.files] or sorted(ROOT.glob("requirements*.txt"))
    python = args.python or venv_python(args.py313t, Path(args.venv))
    if python is None:
        print(f"freethreaded_pip: no free-threaded interpreter at {args.py313t} "
              "(bash tools/build_freethreaded_python.sh builds it)", file=sys.stderr)
        return 2
    print(f"freethreaded_pip: dry runs with {python}", flush=True)
    own_seen: dict[str, str] = {}
    failed = []
    for path in files:
        ok, lines = check_file(python, path, own_seen)
        failed += [] if ok else [path.name]
        for line in lines:
            print(f"{path.name}: {line}", flush=True)
    if failed:
        print(f"freethreaded_pip: would not install on 3.13t: {', '.join(failed)} (see above)")
        return 1
    print(f"freethreaded_pip: {len(files)} file(s) ok on 3.13t (but what is left out, as said above)")
    return 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="freethreaded_pip.py", description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="command", required=True)
    ck = sub.add_parser("check", help="pip dry run of every requirements file against the free-threaded venv")
    ck.add_argument("files", nargs="*", help="requirements files (default: the checkout's requirements*.txt)")
    ck.add_argument("--venv", default=os.environ.get("FT_VENV", "/tmp/libzim-c-ft"),
                    help="the free-threaded venv (FT_VENV; default /tmp/libzim-c-ft, the recipe's)")
    ck.add_argument("--py313t", default=os.environ.get("PY313T", "/opt/py313t/bin/python3.13t"),
                    help="the interpreter that makes the venv when missing (PY313T)")
    ck.add_argument("--python", help="dry-run with this python instead of the venv's")
    ck.set_defaults(func=cmd_check)
    ins = sub.add_parser("install", help="install a requirements file by the rules (the recipe's step)")
    ins.add_argument("file")
    ins.add_argument("--python", default=sys.executable, help="the environment's python (default: this one)")
    ins.set_defaults(func=cmd_install)
    args = ap.parse_args(argv)
    return int(args.func(args))


if __name__ == "__main__":
    sys.exit(main())
