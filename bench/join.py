#!/usr/bin/env python3
"""Joins tile-bench's tile.json with bench/python/baseline.py's baseline.json into one table.

    python3 bench/join.py DIR                 # DIR/tile.json + DIR/baseline.json -> DIR/joined.md
    python3 bench/join.py --tile T.json [--tile T2.json ...] --baseline B.json
                          [--baseline B2.json ...] --out joined.md [--plots DIR]

Rows are joined on (kernel, variant, shape, dtype): per case the median time (ms) of every
implementation (tile_fused, tile_unfused, torch_unfused, torch_native, cublas, triton, and where a
family has them tile_split_rows, tile_words4 and triton_words4) and the ratios of each other
implementation's time to tile_fused's (above 1: tile_fused is faster), with tile_fused's and
triton's share of the copy bandwidth each run measured for itself. Plain launches and CUDA-graph
replays are two tables (graphs exist only where a run found the case launch-bound, so a graph row
may have one side only). A time that is missing or whose check failed shows as "-" (a failed check
as "FAIL", an implementation that cannot run the case as "refused"). Bytes that differ between the two files for one case (the traffic would be counted
differently) are listed as warnings.

Plots (only if matplotlib is importable; otherwise a message says they were skipped): one chart per
kernel family, effective GB/s of every implementation per case (grouped bars, cases sorted by
bytes moved; plain launches and CUDA-graph replays in two panels), the two runs' copy bandwidths as
horizontal lines; PNG and SVG under DIR/joined_plots (or --plots).

Python 3 standard library only (matplotlib optional). Exit code 0, or 2 when an input cannot be
read.
"""

import argparse
import json
import os
import sys

# Order of the columns; an impl not listed here is appended after these.
IMPLS = ["tile_fused", "tile_tuned", "tile_rule", "tile_desc", "tile_unfused", "tile_split_rows", "tile_words4", "tile_user",
         "tile_tutorial", "torch_unfused",
         "torch_native", "cublas", "triton", "triton_words4"]
BASE = "tile_fused"


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("dir", nargs="?", help="folder with tile.json and baseline.json")
    p.add_argument("--tile", action="append", help="tile-bench JSON (default DIR/tile.json); "
                   "repeat it to join the rows of several tile-bench runs (the flash_attention "
                   "family run in parts, --attn-parts on both sides)")
    p.add_argument("--baseline", action="append", help="baseline.py JSON (default "
                   "DIR/baseline.json); repeat it to join the rows of several baseline runs "
                   "(e.g. the flash_attention family run in parts)")
    p.add_argument("--out", help="Markdown output (default DIR/joined.md)")
    p.add_argument("--plots", help="plot folder (default DIR/joined_plots)")
    a = p.parse_args(argv)
    if a.dir is None and (a.tile is None or a.baseline is None or a.out is None):
        p.error("give DIR, or all of --tile, --baseline and --out")
    d = a.dir or os.path.dirname(os.path.abspath(a.out))
    a.tile = a.tile or [os.path.join(d, "tile.json")]
    a.baseline = a.baseline or [os.path.join(d, "baseline.json")]
    a.out = a.out or os.path.join(d, "joined.md")
    a.plots = a.plots or os.path.join(d, "joined_plots")
    return a


def load(path, what):
    try:
        with open(path) as f:
            doc = json.load(f)
    except (OSError, ValueError) as e:
        print(f"join.py: cannot read the {what} file {path}: {e}", file=sys.stderr)
        raise SystemExit(2)
    if not isinstance(doc, dict) or not isinstance(doc.get("rows"), list):
        print(f"join.py: {path} has no 'rows' list; is it a {what} file?", file=sys.stderr)
        raise SystemExit(2)
    return doc


def load_all(paths, what):
    """The first file's document with the rows and failures of the others (runs in parts)
    appended."""
    doc = load(paths[0], what)
    for path in paths[1:]:
        more = load(path, what)
        doc["rows"] = doc["rows"] + more["rows"]
        doc["failures"] = (doc.get("failures") or []) + (more.get("failures") or [])
    return doc


def key_of(r):
    """(kernel, variant, shape, dtype), the join key."""
    return (r.get("kernel"), r.get("variant"), tuple(r.get("shape") or ()), r.get("dtype"))


def shape_str(shape):
    return "x".join(str(s) for s in shape)


def collect(docs):
    """{graph: {key: {impl: row}}}, keys in first-seen order; and the cases whose byte counts
    differ between the sources."""
    cases = {False: {}, True: {}}
    nbytes = {}  # key -> {(source, bytes)}
    for source, doc in docs:
        for r in doc["rows"]:
            if not isinstance(r, dict) or "impl" not in r:
                continue
            k = key_of(r)
            cases[bool(r.get("graph"))].setdefault(k, {})[r["impl"]] = r
            if isinstance(r.get("bytes"), (int, float)):
                nbytes.setdefault(k, set()).add((source, float(r["bytes"])))
    mismatches = []
    for k, counts in nbytes.items():
        values = sorted({b for _, b in counts})
        if values[-1] > values[0] * (1 + 1e-9):
            listed = ", ".join(f"{s} {b:.0f}" for s, b in sorted(counts))
            mismatches.append(f"{fmt_key(k)}: {listed} bytes")
    return cases, mismatches


def fmt_key(k):
    kernel, variant, shape, dtype = k
    return f"{kernel}{'/' + variant if variant else ''} {shape_str(shape)} {dtype}"


def ms_of(row):
    """The row's time if it was measured and its check passed, else None."""
    if not row or not row.get("ok") or not isinstance(row.get("ms"), (int, float)):
        return None
    return row["ms"] if row["ms"] > 0 else None


def cell_ms(row):
    if row is None:
        return "-"
    if row.get("refused"):
        return "refused"
    ms = ms_of(row)
    if ms is None:
        return "FAIL" if not row.get("ok") else "-"
    return f"{ms:.4f}"


def is_compute(by_impl):
    """Whether a case is a matrix product (its rows count FLOPs): its table shows TFLOP/s and the
    share of cuBLAS instead of the share of the copy bandwidth."""
    return any(r.get("flops") or r.get("gflops") for r in by_impl.values())


def tflops_of(row):
    """TFLOP/s of a row whose time and check are good, from either file's fields."""
    ms = ms_of(row)
    if ms is None:
        return None
    if isinstance(row.get("flops"), (int, float)):
        return row["flops"] / (ms * 1e-3) / 1e12
    if isinstance(row.get("gflops"), (int, float)):
        return row["gflops"] / 1e3
    return None


# The cuBLAS row of a compute case (% cuBLAS is against it): plain cuBLAS for gemm, cuBLASLt's
# fused epilogue where PyTorch has one, else addmm + activation.
CUBLAS = ["cublas", "torch_native", "torch_unfused"]


def table(cases, impls, copy):
    """Markdown lines of one table (plain or graph); compute cases get TFLOP/s columns."""
    others = [i for i in impls if i != BASE]
    compute = bool(cases) and all(is_compute(b) for b in cases.values())
    tail = (["tile_fused TFLOP/s", "best other TFLOP/s", "tile_fused % of cuBLAS"] if compute
            else ["tile_fused % copy", "triton % copy"])
    head = (["kernel", "variant", "shape", "dtype"] + [f"{i} (ms)" for i in impls]
            + [f"{i} / {BASE}" for i in others] + tail)
    lines = ["| " + " | ".join(head) + " |", "|" + "|".join("---" for _ in head) + "|"]
    for k, by_impl in cases.items():
        kernel, variant, shape, dtype = k
        base = ms_of(by_impl.get(BASE))
        cells = [kernel, variant or "-", shape_str(shape), dtype]
        cells += [cell_ms(by_impl.get(i)) for i in impls]
        for i in others:
            t = ms_of(by_impl.get(i))
            cells.append(f"{t / base:.2f}x" if t and base else "-")
        if compute:
            mine = tflops_of(by_impl.get(BASE))
            rest = [tflops_of(r) for i, r in by_impl.items() if not i.startswith("tile")]
            rest = [t for t in rest if t]
            ref = next((ms_of(by_impl.get(i)) for i in CUBLAS if ms_of(by_impl.get(i))), None)
            cells.append(f"{mine:.1f}" if mine else "-")
            cells.append(f"{max(rest):.1f}" if rest else "-")
            cells.append(f"{100.0 * ref / base:.1f}%" if ref and base else "-")
        else:
            for impl, c in ((BASE, copy["tile"]), ("triton", copy["baseline"])):
                r = by_impl.get(impl)
                g = r.get("gbps") if r and ms_of(r) else None
                cells.append(f"{100.0 * g / c:.1f}%" if g and c else "-")
        lines.append("| " + " | ".join(cells) + " |")
    return lines


def impls_in(cases):
    seen = {i for by in cases.values() for i in by}
    return [i for i in IMPLS if i in seen] + sorted(seen - set(IMPLS))


def color_of(impl):
    """The same color for an implementation in every chart (matplotlib's cycle C0..C9)."""
    i = IMPLS.index(impl) if impl in IMPLS else len(IMPLS) + sum(map(ord, impl))
    return f"C{i % 10}"


def plots(cases, copy, folder, devices):
    """One chart per kernel family: grouped bars of effective GB/s per case (sorted by bytes
    moved), one bar per implementation, plain launches above and CUDA-graph replays below (when
    there are any). Returns the files written, and a message when none could be."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return [], "matplotlib is not installed: plots skipped"
    os.makedirs(folder, exist_ok=True)
    families = []
    for graph in (False, True):
        for k in cases[graph]:
            if k[0] not in families:
                families.append(k[0])
    written = []
    for fam in families:
        panels = []
        for graph in (False, True):
            fam_cases = [(k, by) for k, by in cases[graph].items() if k[0] == fam]
            fam_cases = [(k, by) for k, by in fam_cases if any(ms_of(r) for r in by.values())]
            if fam_cases:
                panels.append((graph, fam_cases))
        if not panels:
            continue
        fig, axes = plt.subplots(len(panels), 1, squeeze=False,
                                 figsize=(12, 5 * len(panels)))
        for ax, (graph, fam_cases) in zip(axes[:, 0], panels):
            fam_cases.sort(key=lambda kb: max(r.get("bytes") or 0 for r in kb[1].values()))
            impls = impls_in(dict(fam_cases))
            width = 0.8 / max(len(impls), 1)
            for j, impl in enumerate(impls):
                xs, ys = [], []
                for i, (_, by) in enumerate(fam_cases):
                    r = by.get(impl)
                    if ms_of(r) and r.get("gbps"):
                        xs.append(i - 0.4 + width * (j + 0.5))
                        ys.append(r["gbps"])
                ax.bar(xs, ys, width=width, label=impl, color=color_of(impl))
            for name, style in (("tile", ":"), ("baseline", "-.")):
                if copy[name]:
                    ax.axhline(copy[name], color="k", linestyle=style, linewidth=1,
                               label=f"D2D copy, {name} run: {copy[name]:.0f} GB/s")
            labels = []
            for (_, variant, shape, dtype), by in fam_cases:
                mb = max(r.get("bytes") or 0 for r in by.values()) / 1e6
                size = f"{mb:.0f} MB" if mb >= 1 else f"{mb:.3f} MB"
                name = f"{variant + ' ' if variant else ''}{shape_str(shape)} {dtype}"
                labels.append(f"{name}\n{size}")
            ax.set_xticks(range(len(fam_cases)))
            ax.set_xticklabels(labels, fontsize=8)
            ax.set_ylabel("effective GB/s")
            ax.set_title(f"{fam}, {'CUDA-graph replays' if graph else 'plain launches'}: "
                         f"{devices}", fontsize=10)
            ax.grid(True, axis="y", alpha=0.3)
            ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.0, 1.0))
        fig.tight_layout()
        for ext in ("png", "svg"):
            path = os.path.join(folder, f"{fam}.{ext}")
            fig.savefig(path, dpi=110 if ext == "png" else None, bbox_inches="tight")
            written.append(path)
        plt.close(fig)
    return written, None


def main(argv=None):
    a = parse_args(argv)
    tile = load_all(a.tile, "tile-bench")
    base = load_all(a.baseline, "baseline")
    cases, mismatches = collect([("tile-bench", tile), ("baseline", base)])
    copy = {"tile": tile.get("copy_gbps"), "baseline": base.get("copy_gbps")}
    dev_t, dev_b = tile.get("device", "?"), base.get("device", "?")
    out = ["# tile vs PyTorch and Triton", ""]
    out.append(f"- tile-bench: {dev_t}, {tile.get('date', '?')}, copy {copy['tile'] or 0:.0f} GB/s"
               f", launch {(tile.get('launch') or {}).get('tile_us') or float('nan'):.2f} us, "
               f"`{tile.get('command', '')}`")
    out.append(f"- baseline: {dev_b}, {base.get('date', '?')}, copy {copy['baseline'] or 0:.0f} "
               f"GB/s, torch {base.get('torch', '?')}, triton {base.get('triton', '?')}")
    out.append(f"- ratios are (other impl's ms) / ({BASE} ms): above 1, {BASE} is faster; "
               "% copy is against each run's own copy bandwidth")
    for name, doc in (("tile-bench", tile), ("baseline", base)):
        if doc.get("meaningful_timings") is False:
            out.append(f"- **WARNING: the {name} file comes from a CPU run: its times are "
                       "meaningless**")
    if dev_t != dev_b and not str(dev_t).startswith(str(dev_b)):
        out.append(f"- **WARNING: different devices ({dev_t} / {dev_b})**")
    for title, graph in (("Plain launches", False), ("CUDA-graph replays", True)):
        rows = cases[graph]
        out += ["", f"## {title}", ""]
        if not rows:
            out.append("(none)")
            continue
        memory = {k: v for k, v in rows.items() if not is_compute(v)}
        compute = {k: v for k, v in rows.items() if is_compute(v)}
        if memory:
            out += table(memory, impls_in(memory), copy)
        for fam in dict.fromkeys(k[0] for k in compute):
            part = {k: v for k, v in compute.items() if k[0] == fam}
            out += ["", f"### {title}: {fam} (matrix products; % of cuBLAS = cuBLAS's time / "
                    "tile_fused's, cuBLAS being the first of " + ", ".join(CUBLAS)
                    + " the case has)", ""]
            out += table(part, impls_in(part), copy)
    if mismatches:
        out += ["", "## Byte counts that differ", ""] + [f"- {m}" for m in mismatches]
    failures = (tile.get("failures") or []) + (base.get("failures") or [])
    if failures:
        out += ["", "## Failures reported by the runs", ""] + [f"- {f}" for f in failures]
    written, why = plots(cases, copy, a.plots, dev_t if dev_t == dev_b else f"{dev_t} / {dev_b}")
    out += ["", "## Plots", ""]
    out += [f"- {os.path.relpath(p, os.path.dirname(os.path.abspath(a.out)))}"
            for p in written if p.endswith(".png")] or [f"- {why}"]
    text = "\n".join(out) + "\n"
    os.makedirs(os.path.dirname(os.path.abspath(a.out)), exist_ok=True)
    with open(a.out, "w") as f:
        f.write(text)
    print(text)
    print(f"joined table: {a.out}")
    if why:
        print(why)
    return 0


if __name__ == "__main__":
    sys.exit(main())
