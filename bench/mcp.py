"""``zim mcp`` against openzim-mcp 3.4.0, both driven by the MCP SDK's client over stdio.

    python3 bench/mcp.py [--zim PATH ...] [--runs 30] [--runs-for NAME=N ...] [--note TEXT]
                         [--out bench/results/mcp]

``--runs-for rustjava=10`` times fewer calls on the archives whose file name starts
with ``rustjava`` (where openzim-mcp's search takes many seconds a call); ``--note``
says the machine's conditions in the report, beside the load averages measured at
the start and end of each archive's run.

openzim-mcp needs PyPI's ``libzim`` (python-libzim, whose import name is ours)
and Python >= 3.12: it runs from its own venv (``--peer-venv``, default
``~/.cache/libzim-c/openzim-mcp-3.4.0``; made with pyenv's 3.12 and
``pip install openzim-mcp==3.4.0``), in ``--mode advanced`` (its 8 tools), offline
(HF_HUB_OFFLINE / TRANSFORMERS_OFFLINE), its rate limiter off (it would throttle
the 8-in-flight runs), its result cache on as shipped: every timed call has inputs
no earlier call had, so no cache answers it. Both servers run at once and the
calls alternate between them (one input: ours, then theirs), so machine load
falls on both alike.

Measured per archive: each tool's first call and the median of ``--runs`` more;
search with 1 and 8 calls in flight on one session (wall time per call); the
text of ``read`` against BeautifulSoup's visible text of the page's main region
(``[role=main]``, else ``body``): distinct-word recall both ways, and the share
of the region's inline ``<code>`` and link texts found in the output; whether each
search snippet holds a query word (or one with its English stem, as Xapian matches); the tool list's size in tokens (cl100k_base
through ``quicktok`` when installed, the encoding openzim-mcp itself counts with;
otherwise characters / 4, said in the output).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import sys
import time
from pathlib import Path
from typing import Any

# This file is bench/mcp.py: its folder first on sys.path would shadow the SDK's package.
HERE = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != HERE]

import anyio  # noqa: E402
from mcp import Client, StdioServerParameters  # noqa: E402

REPO = HERE.parent
sys.path.insert(0, str(REPO))
CACHE = Path.home() / ".cache" / "libzim-c"
DEFAULT_ZIM = CACHE / "python3.11-doc__python3.11-doc_3.11.2-6+deb12u9__f1.zim"
CALL_TIMEOUT = 300  # seconds: one call of either server


def tokens(text: str) -> tuple[int, str]:
    """The token count of ``text`` and how it was counted."""
    try:
        import quicktok

        return len(quicktok.get_encoding("cl100k_base").encode(text)), "cl100k_base (quicktok)"
    except Exception:  # noqa: BLE001 - no offline tokenizer: the documented approximation
        return (len(text) + 3) // 4, "characters / 4"


def inputs(zim: Path, n: int) -> tuple[list[str], list[str], list[str]]:
    """Distinct queries (the bench's query file, then words of titles), article
    paths and suggestion prefixes, at least ``n`` + 1 + 16 of each where the archive has them."""
    from libzim.reader import Archive

    a = Archive(zim)
    qfile = REPO / "bench" / "queries" / "python3.11-doc.txt"
    queries = [q.strip() for q in qfile.read_text().splitlines() if q.strip() and not q.startswith("#")] \
        if "python3" in zim.name else []
    paths, titles = [], []
    step = max(1, a.entry_count // 400)
    for i in range(0, a.entry_count, step):
        e = a._get_entry_by_id(i)
        if e.is_redirect or not e.path.endswith(".html") or "genindex" in e.path:
            continue
        if not e.get_item().mimetype.startswith("text/html"):
            continue
        paths.append(e.path)
        titles.append(e.title.split(" — ")[0])
    seen = set(queries)
    for t in titles:
        words = re.findall(r"[A-Za-z]{4,}", t)
        q = " ".join(words[:2]).lower()
        if q and q not in seen:
            seen.add(q)
            queries.append(q)
    prefixes = list(dict.fromkeys(t[:4] for t in titles if len(t) >= 4))
    return queries, paths, prefixes


def text_of(result: Any) -> str:
    return "".join(c.text for c in result.content if getattr(c, "type", "") == "text")


class Side:
    """One server: how its tools are called and how their answers are read."""

    def __init__(self, name: str, params: StdioServerParameters, zim_arg: str) -> None:
        self.name, self.params, self.zim = name, params, zim_arg
        self.client: Client | None = None

    async def call(self, tool: str, args: dict[str, Any]) -> tuple[float, Any]:
        assert self.client is not None
        t = time.perf_counter()
        with anyio.fail_after(CALL_TIMEOUT):
            r = await self.client.call_tool(tool, args)
        dt = time.perf_counter() - t
        if r.is_error:
            raise RuntimeError(f"{self.name} {tool} {args}: {text_of(r)[:300]}")
        return dt, json.loads(text_of(r))


class Ours(Side):
    def search(self, q: str) -> tuple[str, dict[str, Any]]:
        return "search", {"query": q, "limit": 5}

    def read(self, p: str) -> tuple[str, dict[str, Any]]:
        return "read", {"archive": self.zim, "path": p, "max_chars": 100_000}

    def suggest(self, q: str) -> tuple[str, dict[str, Any]]:
        return "suggest", {"query": q, "limit": 5}

    def links(self, p: str) -> tuple[str, dict[str, Any]]:
        return "links", {"archive": self.zim, "path": p}

    @staticmethod
    def snippets(out: dict[str, Any]) -> list[str]:
        return [h["snippet"] for h in out["hits"]]

    @staticmethod
    def body(out: dict[str, Any]) -> str:
        return str(out["text"])


class Theirs(Side):
    def search(self, q: str) -> tuple[str, dict[str, Any]]:
        return "zim_search", {"query": q, "zim_file_path": self.zim, "limit": 5}

    def read(self, p: str) -> tuple[str, dict[str, Any]]:
        return "zim_get", {"zim_file_path": self.zim, "entry_path": p, "max_content_length": 100_000}

    def suggest(self, q: str) -> tuple[str, dict[str, Any]]:
        return "zim_search", {"query": q, "zim_file_path": self.zim, "mode": "suggest", "limit": 5}

    def links(self, p: str) -> tuple[str, dict[str, Any]]:
        return "zim_links", {"zim_file_path": self.zim, "entry_path": p}

    @staticmethod
    def snippets(out: dict[str, Any]) -> list[str]:
        return [h.get("snippet", "") for h in out.get("results", [])]

    @staticmethod
    def body(out: dict[str, Any]) -> str:
        return str(out.get("content", ""))


def visible(page: str) -> tuple[set[str], list[str], list[str]]:
    """BeautifulSoup's visible words of the main region, its inline code and link texts."""
    from bs4 import BeautifulSoup

    soup = BeautifulSoup(page, "html.parser")
    for tag in soup(["script", "style", "template", "noscript", "head"]):
        tag.decompose()
    main = soup.select_one("main, [role=main]") or soup.body or soup  # mdbook's <main> has no role
    words = set(re.findall(r"\w+", main.get_text(" ").lower()))
    code = [" ".join(c.get_text(" ").split()) for c in main.find_all("code")]
    link = [" ".join(a.get_text(" ").split()) for a in main.find_all("a")]
    return words, [c for c in code if c], [t for t in link if t and t != "¶"]


def quality(zim: Path, paths: list[str], bodies: dict[str, list[str]]) -> dict[str, Any]:
    from libzim.reader import Archive

    a = Archive(zim)
    out: dict[str, Any] = {}
    for side, texts in bodies.items():
        rec, prec, code_kept, link_kept = [], [], [], []
        for p, text in zip(paths, texts):
            words, code, link = visible(bytes(a.get_entry_by_path(p).get_item().content).decode("utf-8", "replace"))
            got = set(re.findall(r"\w+", text.lower()))
            flat = " ".join(text.split())
            if words:
                rec.append(len(words & got) / len(words))
            if got:
                prec.append(len(got & words) / len(got))
            if code:
                code_kept.append(sum(c in flat for c in code) / len(code))
            if link:
                link_kept.append(sum(t in flat for t in link) / len(link))

        def p10(xs: list[float]) -> float:
            return sorted(xs)[len(xs) // 10] if xs else float("nan")
        out[side] = {"recall_median": statistics.median(rec), "recall_p10": p10(rec),
                     "reverse_median": statistics.median(prec), "reverse_p10": p10(prec),
                     "inline_code_kept": statistics.mean(code_kept), "link_text_kept": statistics.mean(link_kept),
                     "pages": len(texts)}
    return out


def holds_query_word(snippet: str, query: str) -> bool:
    """Whether the snippet holds a word of the query, as written or with the same
    English stem (Xapian matches stems: "dictionaries" for "dictionary")."""
    import snowballstemmer

    stem = snowballstemmer.stemmer("english").stemWord
    wanted = {w for w in re.findall(r"\w+", query.lower()) if len(w) >= 2}
    words = set(re.findall(r"\w+", snippet.lower()))
    return bool(wanted & words) or bool({stem(w) for w in wanted} & {stem(w) for w in words})


async def tool_list(side: Side) -> dict[str, Any]:
    assert side.client is not None
    listed = await side.client.list_tools()
    dumped = json.dumps([t.model_dump(by_alias=True, exclude_none=True, mode="json") for t in listed.tools],
                        ensure_ascii=False)
    n, how = tokens(dumped)
    return {"tools": len(listed.tools), "chars": len(dumped), "tokens": n, "counted_with": how}


async def in_flight(side: Side, queries: list[str], k: int) -> float:
    """Wall seconds per call for the queries run with ``k`` calls in flight on one session."""
    todo = list(queries)

    async def worker() -> None:
        while todo:
            q = todo.pop()
            await side.call(*side.search(q))
    t = time.perf_counter()
    async with anyio.create_task_group() as tg:
        for _ in range(k):
            tg.start_soon(worker)
    return (time.perf_counter() - t) / len(queries)


async def run_archive(zim: Path, sides: list[Side], runs: int) -> dict[str, Any]:
    queries, paths, prefixes = inputs(zim, runs)
    need = runs + 1
    started = time.monotonic()
    res: dict[str, Any] = {"archive": zim.name, "runs": runs, "latency": {}, "tool_list": {},
                           "load_start": os.getloadavg()[0]}
    for s in sides:
        res["tool_list"][s.name] = await tool_list(s)
    bodies: dict[str, list[str]] = {s.name: [] for s in sides}
    snippet_ok: dict[str, list[bool]] = {s.name: [] for s in sides}
    for tool, items in (("search", queries[:need]), ("read", paths[:need]), ("suggest", prefixes[:need]),
                        ("links", paths[need:2 * need] or paths[:need])):
        times: dict[str, list[float]] = {s.name: [] for s in sides}
        for i, x in enumerate(items):
            for s in sides:  # interleaved: one input, each server in turn
                dt, out = await s.call(*getattr(s, tool)(x))
                times[s.name].append(dt)
                if tool == "read":
                    bodies[s.name].append(s.body(out))
                if tool == "search":
                    snippet_ok[s.name].extend(holds_query_word(sn, x) for sn in s.snippets(out))
            print(f"{zim.name} {tool} {i + 1}/{len(items)}", file=sys.stderr, flush=True)
        res["latency"][tool] = {n: {"first_ms": t[0] * 1e3, "p50_ms": statistics.median(t[1:]) * 1e3,
                                    "calls": len(t)} for n, t in times.items()}
    rest = queries[need:need + 16]
    if len(rest) >= 8:
        res["concurrency"] = {}
        for s in sides:
            one = await in_flight(s, rest[:8], 1)
            eight = await in_flight(s, rest[8:16] or rest[:8], 8)
            res["concurrency"][s.name] = {"ms_per_call_1": one * 1e3, "ms_per_call_8": eight * 1e3}
    res["quality"] = quality(zim, paths[:need], bodies)
    res["snippets"] = {n: {"with_query_word": sum(v), "snippets": len(v)} for n, v in snippet_ok.items()}
    res["load_end"], res["elapsed_s"] = os.getloadavg()[0], round(time.monotonic() - started)
    return res


def render(all_res: list[dict[str, Any]]) -> str:
    lines = ["# zim mcp against openzim-mcp 3.4.0", "",
             "Made by `bench/mcp.py` (both servers over stdio, the MCP SDK 2.3.0 client; calls interleaved; "
             "each timed call with new inputs). Times are round trips as the client sees them.", ""]
    for r in all_res:
        lines += [f"## {r['archive']} ({r['runs']} calls after the first)", ""]
        if "load_start" in r:
            lines += [f"Conditions: {r.get('note') or 'not recorded'}; 1-minute load average {r['load_start']:.1f} "
                      f"at the start, {r['load_end']:.1f} at the end; {r['elapsed_s'] / 60:.1f} minutes.", ""]
        lines += [
                  "| tool | ours first | ours p50 | openzim-mcp first | openzim-mcp p50 | p50 ratio |",
                  "|---|---:|---:|---:|---:|---:|"]
        for tool, d in r["latency"].items():
            o, t = d["ours"], d["openzim-mcp"]
            lines.append(f"| {tool} | {o['first_ms']:.1f} ms | {o['p50_ms']:.1f} ms | {t['first_ms']:.0f} ms | "
                         f"{t['p50_ms']:.0f} ms | {t['p50_ms'] / o['p50_ms']:.0f}x |")
        if "concurrency" in r:
            lines += ["", "| search, wall ms per call | 1 in flight | 8 in flight |", "|---|---:|---:|"]
            for n, c in r["concurrency"].items():
                lines.append(f"| {n} | {c['ms_per_call_1']:.1f} | {c['ms_per_call_8']:.1f} |")
        lines += ["", "| read text vs BeautifulSoup (main region) | recall median / p10 | reverse median / p10 "
                  "| inline code kept | link text kept |", "|---|---:|---:|---:|---:|"]
        for n, q in r["quality"].items():
            lines.append(f"| {n} | {q['recall_median']:.3f} / {q['recall_p10']:.3f} | {q['reverse_median']:.3f} / "
                         f"{q['reverse_p10']:.3f} | {q['inline_code_kept']:.1%} | {q['link_text_kept']:.1%} |")
        lines += ["", "| snippets holding a query word | share |", "|---|---:|"]
        for n, s in r["snippets"].items():
            lines.append(f"| {n} | {s['with_query_word']} / {s['snippets']} |")
        lines += ["", "| tool list | tools | characters | tokens |", "|---|---:|---:|---:|"]
        for n, t in r["tool_list"].items():
            lines.append(f"| {n} | {t['tools']} | {t['chars']:,} | {t['tokens']:,} ({t['counted_with']}) |")
        lines += ["", *goals(r), ""]
    return "\n".join(lines)


def goals(r: dict[str, Any]) -> list[str]:
    """Issue 29's goals, met or not, in this run."""
    lat, q, sn, tl = r["latency"], r["quality"]["ours"], r["snippets"]["ours"], r["tool_list"]
    ratio = {t: lat[t]["openzim-mcp"]["p50_ms"] / lat[t]["ours"]["p50_ms"] for t in ("search", "read")}
    share = tl["ours"]["tokens"] / tl["openzim-mcp"]["tokens"]

    def met(ok: bool) -> str:
        return "met" if ok else "**not met**"
    return ["Goals (issue 29):", "",
            f"- search at least 50x faster at p50: {ratio['search']:.0f}x, {met(ratio['search'] >= 50)}",
            f"- read at least 50x faster at p50: {ratio['read']:.0f}x, {met(ratio['read'] >= 50)}",
            f"- text recall >= 0.97: median {q['recall_median']:.3f}, 10th percentile {q['recall_p10']:.3f}, "
            f"{met(q['recall_p10'] >= 0.97)}",
            f"- every snippet holds a query word: {sn['with_query_word']} / {sn['snippets']}, "
            f"{met(sn['with_query_word'] == sn['snippets'])}",
            f"- tool list under a quarter of openzim-mcp's tokens: {share:.1%}, {met(share < 0.25)}"]


async def main_async(args: argparse.Namespace) -> list[dict[str, Any]]:
    out = []
    for zim in args.zim:
        # openzim-mcp serves only files inside the folders it is given, real paths checked: a hard link there
        folder = CACHE / "ozm-zims"
        folder.mkdir(parents=True, exist_ok=True)
        link = folder / (zim.name.split("__")[0] + ".zim" if "__" in zim.name else zim.name)
        if link.exists() and not os.path.samefile(link, zim):
            link.unlink()  # a link to an earlier build of the archive: measure this one
        if not link.exists():
            os.link(zim, link)
        env = dict(os.environ, HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", OPENZIM_MCP_RATE_LIMIT__ENABLED="false")
        ours = Ours("ours", StdioServerParameters(command=sys.executable, args=["-m", "libzim", "mcp", str(link)],
                                                  cwd=str(REPO), env=dict(os.environ, PYTHONPATH=str(REPO))),
                    link.stem)
        theirs = Theirs("openzim-mcp", StdioServerParameters(
            command=str(args.peer_venv / "bin" / "python"),
            args=["-m", "openzim_mcp", "--mode", "advanced", str(folder)], env=env, cwd="/tmp"), str(link))
        async with Client(ours.params) as c1, Client(theirs.params) as c2:
            ours.client, theirs.client = c1, c2
            runs = next((n for name, n in args.runs_for if zim.name.startswith(name)), args.runs)
            res = await run_archive(link, [ours, theirs], runs)
            res["note"] = args.note
            out.append(res)
    return out


def runs_for(arg: str) -> tuple[str, int]:
    name, sep, n = arg.rpartition("=")
    if not sep or not name or not n.isdigit() or int(n) < 1:
        raise argparse.ArgumentTypeError(f"expected NAME=N with N >= 1, got {arg!r}")
    return name, int(n)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--zim", type=Path, action="append", help=f"archive (repeatable; default {DEFAULT_ZIM.name})")
    ap.add_argument("--runs", type=int, default=30)
    ap.add_argument("--runs-for", type=runs_for, action="append", default=[], metavar="NAME=N",
                    help="N calls after the first on archives whose file name starts with NAME (repeatable)")
    ap.add_argument("--note", default="", help="the machine's conditions, for the report (e.g. who else ran)")
    ap.add_argument("--peer-venv", type=Path, default=CACHE / "openzim-mcp-3.4.0")
    ap.add_argument("--out", type=Path, default=REPO / "bench" / "results" / "mcp")
    ap.add_argument("--render", type=Path, metavar="JSON", help="only write the report of an earlier run's JSON")
    args = ap.parse_args()
    args.zim = args.zim or [DEFAULT_ZIM]
    res = json.loads(args.render.read_text()) if args.render else anyio.run(main_async, args)
    args.out.with_suffix(".json").write_text(json.dumps(res, indent=1) + "\n")
    args.out.with_suffix(".md").write_text(render(res))
    print(render(res))


if __name__ == "__main__":
    main()
