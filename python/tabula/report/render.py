"""The report dict (:mod:`.analysis`) as files: ``report.html`` (self-contained: inline CSS, the charts as
base64 PNG ``data:`` images, no script and no address outside the file), ``report.md`` (the same tables,
no images) and ``report.json`` (the dict).  Charts (matplotlib, Agg): per-layer SQNR vs float, per-op
instructions (``profile=1``) and the arena timeline (each tensor a bar from the op writing it to its last
reader, at its arena offset)."""
from __future__ import annotations

import base64
import html
import io
import json
import math
from pathlib import Path

__all__ = ["write_report", "render_html", "render_markdown", "charts"]


def _fmt(v, digits: int = 2) -> str:
    if v is None:
        return "-"
    if isinstance(v, bool):
        return "yes" if v else "-"
    if isinstance(v, float):
        if math.isinf(v):
            return "inf" if v > 0 else "-inf"
        if math.isnan(v):
            return "nan"
        return f"{v:.{digits}f}"
    if isinstance(v, int):
        return f"{v:,}"
    return str(v)


def _figure(v) -> str:
    """A whole-model figure: floats to at most 4 decimals, trailing zeros dropped (36.13, 0.9778)."""
    if isinstance(v, float) and math.isfinite(v):
        return f"{v:.4f}".rstrip("0").rstrip(".")
    return _fmt(v)


def _scale(r: dict) -> str:
    s = r.get("scale")
    if s is None:
        return "-"
    if isinstance(s, list):
        return f"{s[0]:.3g}..{s[1]:.3g} ({r['per_channel']} ch)"
    return f"{s:.4g}"


def _shape(shape) -> str:
    return "x".join(str(d) for d in shape)


#: The per-layer table: (heading, function of a row -> text).
COLUMNS = [
    ("#", lambda r: str(r["index"])),
    ("op", lambda r: r["op"]),
    ("node", lambda r: r["node"] or "-"),
    ("in", lambda r: ", ".join(_shape(i["shape"]) for i in r["inputs"]) or "-"),
    ("out", lambda r: f"{r['output']} {_shape(r['shape'])} {r['dtype']}"),
    ("MACs", lambda r: _fmt(r["macs"]) if r["macs"] else "-"),
    ("weight B", lambda r: _fmt(r["weight_bytes"]) if r["weight_bytes"] else "-"),
    ("out B", lambda r: _fmt(r["output_bytes"])),
    ("scale / zp", lambda r: f"{_scale(r)} / {r['zero_point']}"),
    ("kernel", lambda r: (f"(in #{r['emitted']})" if r["fused"] else (r["kernel"] or "-")) if r["emitted"] is not None else "-"),
    ("path", lambda r: r["path"]),
    ("engine", lambda r: r["engine"]),
    ("instructions", lambda r: _fmt(r["instructions"]) if r["instructions"] is not None else
     (_fmt(r["ticks"], 1) + " ticks" if r["ticks"] is not None else "-")),
    ("SQNR dB", lambda r: _fmt(r["sqnr_db"])),
    ("max err LSB", lambda r: _fmt(r["max_error_lsb"])),
    ("codes 98%", lambda r: _fmt((r["calibration"] or {}).get("codes_central"), 1) if r["calibration"] else "-"),
    ("clipped", lambda r: f"{r['calibration']['clipped']:.2%}" if r["calibration"] else "-"),
]


def _png(fig) -> str:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=80, bbox_inches="tight")
    return base64.b64encode(buf.getvalue()).decode("ascii")


def charts(rep: dict) -> dict[str, bytes]:
    """The report's charts as PNG bytes: ``sqnr`` (per-layer SQNR vs float, the worst layers in red),
    ``instructions`` (per emitted op, ``profile=1`` only) and ``arena`` (the arena timeline); a chart
    without data is left out."""
    from matplotlib import colormaps
    from matplotlib.figure import Figure  # no pyplot: no GUI backend, a third less import time

    def subplots(figsize):
        fig = Figure(figsize=figsize)
        return fig, fig.subplots()

    out = {}
    rows = [r for r in rep["rows"] if r["sqnr_db"] is not None and math.isfinite(r["sqnr_db"])]
    if rows:
        fig, ax = subplots((max(5.0, 0.32 * len(rows) + 2), 3.0))
        worst = set(rep.get("worst") or [])
        ax.bar(range(len(rows)), [r["sqnr_db"] for r in rows],
               color=["#c0392b" if r["index"] in worst else "#2e86c1" for r in rows])
        ax.set_xticks(range(len(rows)))
        ax.set_xticklabels([f"{r['index']} {r['node'] or r['op']}"[:18] for r in rows], rotation=60, ha="right", fontsize=7)
        ax.set_ylabel("SQNR vs float (dB)")
        ax.set_title(f"{rep['title']}: per-layer SQNR (red: worst)", fontsize=9)
        ax.grid(axis="y", alpha=0.3)
        out["sqnr"] = _png(fig)
    prof = [r for r in rep["rows"] if r["instructions"] is not None or r["ticks"] is not None]
    if prof:
        instr = all(r["instructions"] is not None for r in prof)
        fig, ax = subplots((max(5.0, 0.32 * len(prof) + 2), 3.0))
        ax.bar(range(len(prof)), [r["instructions"] if instr else r["ticks"] for r in prof], color="#7d3c98")
        ax.set_xticks(range(len(prof)))
        ax.set_xticklabels([f"{r['emitted']} {r['kernel'] or r['op']}".replace("tabula_", "")[:22] for r in prof],
                           rotation=60, ha="right", fontsize=7)
        ax.set_ylabel("instructions" if instr else "ticks")
        ax.set_title(f"{rep['title']}: {'instructions' if instr else 'ticks'} per op", fontsize=9)
        ax.grid(axis="y", alpha=0.3)
        out["instructions"] = _png(fig)
    tl = rep.get("timeline") or []
    if tl and any(t["offset"] is not None for row in tl for t in row["tensors"]):
        spans: dict[str, list] = {}
        for row in tl:
            for t in row["tensors"]:
                if t["offset"] is None:
                    continue
                s = spans.setdefault(t["name"], [row["index"], row["index"], t["offset"], t["bytes"]])
                s[1] = row["index"]
        fig, ax = subplots((max(5.0, 0.3 * len(tl) + 2), 3.0))
        cmap = colormaps["tab20"]
        for k, (name, (a, b, off, nbytes)) in enumerate(sorted(spans.items(), key=lambda kv: kv[1][0])):
            ax.broken_barh([(a - 0.4, b - a + 0.8)], (off, nbytes), facecolors=cmap(k % 20), edgecolor="black", linewidth=0.4)
            if nbytes > 0.04 * max(s[2] + s[3] for s in spans.values()):
                ax.text(a - 0.35, off + nbytes / 2, name[:14], fontsize=6, va="center")
        ax.set_xlabel("op (model.c order)")
        ax.set_ylabel("arena offset (bytes)")
        ax.set_title(f"{rep['title']}: arena timeline", fontsize=9)
        out["arena"] = _png(fig)
    return {k: base64.b64decode(v) for k, v in out.items()}


_CSS = """
body{font-family:system-ui,sans-serif;margin:1.2em;color:#222}
table{border-collapse:collapse;font-size:12px;margin:0.5em 0}
th,td{border:1px solid #ccc;padding:2px 6px;text-align:left;vertical-align:top}
th{background:#eee} tr.worst td{background:#fdecea} tr.group td{background:#f6f6f6;font-weight:bold}
td.num{text-align:right;font-variant-numeric:tabular-nums}
.warn{background:#fff4d6;border-left:4px solid #e0a800;padding:4px 8px;margin:4px 0;font-size:13px}
.note{color:#666;font-size:12px} img{max-width:100%}
"""


def _e(v) -> str:
    return html.escape(str(v), quote=True)


def render_html(rep: dict, images: dict[str, bytes] | None = None) -> str:
    """``report.html``: one self-contained page (module docstring); ``images`` from :func:`charts`."""
    images = images if images is not None else charts(rep)
    m = rep["model"]
    h = [f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>tabula report: {_e(rep['title'])}</title>",
         f"<style>{_CSS}</style></head><body>", f"<h1>tabula report: {_e(rep['title'])}</h1>",
         f"<p class='note'>board {_e(rep.get('board') or '-')} ({_e(rep.get('cpu') or 'host')}"
         f"{', portable kernels' if rep.get('portable') else ''}); {_e(rep.get('data_note') or '')}</p>"]
    h.append("<h2>Model</h2><table>")
    for k, v in m.items():
        h.append(f"<tr><th>{_e(k)}</th><td class='num'>{_e(_figure(v))}</td></tr>")
    h.append("</table>")
    if rep.get("warnings"):
        h.append(f"<h2>Warnings ({len(rep['warnings'])})</h2>")
        h += [f"<div class='warn'><b>{_e(w['kind'])}</b>: {_e(w['text'])}</div>" for w in rep["warnings"]]
    else:
        h.append("<h2>Warnings</h2><p>none</p>")
    d = rep.get("first_divergence")
    if d:
        h.append("<h2>First divergence</h2><table>")
        h += [f"<tr><th>{_e(k)}</th><td>{_e(v)}</td></tr>" for k, v in d.items()]
        h.append("</table>")
    if rep.get("metrics"):
        h.append("<h2>Validation metrics</h2>" + _metrics_html(rep["metrics"]))
    if rep.get("worst"):
        by = {r["index"]: r for r in rep["rows"]}
        h.append("<h2>Worst layers</h2><ol>")
        h += [f"<li>op {i} {_e(by[i]['op'])} {_e(by[i]['output'])} ({_e(by[i]['source'])} node {_e(by[i]['node'])}): "
              f"{_e(_fmt(by[i]['sqnr_db']))} dB</li>" for i in rep["worst"]]
        h.append("</ol>")
    for key, title in (("sqnr", "Per-layer SQNR vs float"), ("instructions", "Instructions per op"),
                       ("arena", "Arena timeline")):
        if key in images:
            b64 = base64.b64encode(images[key]).decode("ascii")
            h.append(f"<h2>{title}</h2><img alt='{title}' src='data:image/png;base64,{b64}'>")
    h.append("<h2>Layers</h2><p class='note'>One row per IR op, grouped by source line. SQNR: the op's dequantized "
             "output against the float model's same activation (the FX node its tensor is named after).</p>")
    h.append("<table id='layers'><thead><tr>" + "".join(f"<th>{_e(c)}</th>" for c, _ in COLUMNS) + "</tr></thead><tbody>")
    for g in rep["groups"]:
        h.append(f"<tr class='group'><td colspan='{len(COLUMNS)}'>{_e(g['source'])}</td></tr>")
        for i in g["ops"]:
            r = rep["rows"][i]
            cls = "layer worst" if r["worst"] else "layer"
            cells = "".join(f"<td>{_e(f(r))}</td>" for _, f in COLUMNS)
            h.append(f"<tr class='{cls}' data-op='{r['index']}' data-tensor='{_e(r['output'])}' "
                     f"data-sqnr='{_e('' if r['sqnr_db'] is None else repr(r['sqnr_db']))}'>{cells}</tr>")
    h.append("</tbody></table>")
    if rep.get("timeline"):
        h.append("<h2>Arena timeline</h2><table><tr><th>#</th><th>op</th><th>live bytes</th><th>live tensors (offset:bytes)</th></tr>")
        for t in rep["timeline"]:
            live = ", ".join(f"{x['name']} ({x['offset']}:{x['bytes']})" for x in t["tensors"])
            h.append(f"<tr><td>{t['index']}</td><td>{_e(t['op'])}</td><td class='num'>{t['bytes']:,}</td><td>{_e(live)}</td></tr>")
        h.append("</table>")
    h.append("</body></html>\n")
    return "\n".join(h)


def _metrics_rows(metrics: list[dict]):
    for m in metrics:
        for vs in ("device_vs_float", "device_vs_reference", "reference_vs_float"):
            x = m.get(vs) or {}
            yield [str(m["index"]), vs.replace("_", " "), _fmt(x.get("rmse"), 5), _fmt(x.get("mae"), 5),
                   _fmt(x.get("l2r"), 5), _fmt(x.get("cos"), 6), _fmt(x.get("top1"), 4)]
        if m.get("accuracy"):
            a = m["accuracy"]
            yield [str(m["index"]), "accuracy (device / reference / float)",
                   f"{_fmt(a['device'], 4)} / {_fmt(a['reference'], 4)} / {_fmt(a['float'], 4)}", "", "", "", ""]


_METRIC_HEAD = ["output", "comparison", "RMSE", "MAE", "L2r", "COS", "top-1"]


def _metrics_html(metrics: list[dict]) -> str:
    h = ["<table><tr>" + "".join(f"<th>{c}</th>" for c in _METRIC_HEAD) + "</tr>"]
    h += ["<tr>" + "".join(f"<td>{_e(c)}</td>" for c in row) + "</tr>" for row in _metrics_rows(metrics)]
    return "".join(h) + "</table>"


def _md_cell(v: str) -> str:
    return str(v).replace("|", "\\|").replace("\n", " ")


def render_markdown(rep: dict) -> str:
    """``report.md``: the model figures, warnings, metrics, worst layers and the per-layer table (the charts
    are in ``report.html``)."""
    m = rep["model"]
    lines = [f"# tabula report: {rep['title']}", "",
             f"board {rep.get('board') or '-'} ({rep.get('cpu') or 'host'}); {rep.get('data_note') or ''}", "",
             "| figure | value |", "|---|---|"]
    lines += [f"| {k} | {_md_cell(_figure(v))} |" for k, v in m.items()]
    lines += ["", f"## Warnings ({len(rep.get('warnings') or [])})", ""]
    lines += [f"- **{w['kind']}**: {_md_cell(w['text'])}" for w in rep.get("warnings") or []] or ["none"]
    if rep.get("first_divergence"):
        lines += ["", "## First divergence", "", "| | |", "|---|---|"]
        lines += [f"| {k} | {_md_cell(v)} |" for k, v in rep["first_divergence"].items()]
    if rep.get("metrics"):
        lines += ["", "## Validation metrics", "", "| " + " | ".join(_METRIC_HEAD) + " |",
                  "|" + "---|" * len(_METRIC_HEAD)]
        lines += ["| " + " | ".join(_md_cell(c) for c in row) + " |" for row in _metrics_rows(rep["metrics"])]
    if rep.get("worst"):
        lines += ["", "## Worst layers", ""]
        by = {r["index"]: r for r in rep["rows"]}
        lines += [f"{n + 1}. op {i} {by[i]['op']} {by[i]['output']} ({by[i]['source']} node {by[i]['node']}): "
                  f"{_fmt(by[i]['sqnr_db'])} dB" for n, i in enumerate(rep["worst"])]
    lines += ["", "## Layers", "", "| " + " | ".join(c for c, _ in COLUMNS) + " |", "|" + "---|" * len(COLUMNS)]
    for g in rep["groups"]:
        lines.append(f"| **{_md_cell(g['source'])}** |" + " |" * (len(COLUMNS) - 1))
        for i in g["ops"]:
            r = rep["rows"][i]
            cells = [_md_cell(f(r)) for _, f in COLUMNS]
            if r["worst"]:
                cells[0] = f"**{cells[0]}**"
            lines.append("| " + " | ".join(cells) + " |")
    if rep.get("timeline"):
        lines += ["", "## Arena timeline", "", "| # | op | live bytes | live tensors (offset:bytes) |", "|---|---|---|---|"]
        for t in rep["timeline"]:
            live = ", ".join(f"{x['name']} ({x['offset']}:{x['bytes']})" for x in t["tensors"])
            lines.append(f"| {t['index']} | {t['op']} | {t['bytes']:,} | {_md_cell(live)} |")
    return "\n".join(lines) + "\n"


def write_report(rep: dict, out_dir) -> list[Path]:
    """Write ``report.html``, ``report.md`` and ``report.json`` for ``rep`` into ``out_dir`` (atomically;
    StageError naming the file when the disk is full).  Returns the paths."""
    from ..files import make_dirs, write_atomic

    out = make_dirs(out_dir)
    paths = [out / "report.html", out / "report.md", out / "report.json"]
    write_atomic(paths[0], render_html(rep))
    write_atomic(paths[1], render_markdown(rep))
    write_atomic(paths[2], json.dumps(rep, indent=1, sort_keys=True, default=str) + "\n")
    return paths
