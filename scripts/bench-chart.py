#!/usr/bin/env python3
"""An SVG bar chart of the harness's results: create and extract wall time
(medians) of every tool, one group of bars per scenario.

    scripts/bench-chart.py RESULTS.md... -o CHART.svg [--title TEXT]

RESULTS.md are files `pgp_compare` writes (`--output`, or the `--root`
directory's results.md; scripts/bench-real.sh writes linux.md, media.md
and random-1g.md). Their table rows are read, nothing else; a tool the
run did not measure has no bar. Only the standard library: the SVG is
written by hand.
"""

import argparse
import html
import re
import sys

# The harness's columns (benches/pgp_compare/src/report.rs), by header text.
SCENARIO, TOOL, CREATE, EXTRACT = "scenario", "tool", "create s", "extract s"
NUMBER = re.compile(r"\d+(?:\.\d+)?")

ROW_HEIGHT = 13
BAR_GAP = 3
GROUP_GAP = 18
LABEL_WIDTH = 230
PLOT_WIDTH = 420
COLORS = {"create": "#4c78a8", "extract": "#f58518"}


def read_rows(path):
    """(scenario, tool, create s, extract s) of each table row in `path`."""
    columns = None
    rows = []
    scenario = None
    with open(path, encoding="utf-8") as f:
        for line in f:
            if not line.startswith("|"):
                columns = None
                continue
            # A `|` inside a cell is written `\|` (tar \| age -r).
            cells = re.split(r"(?<!\\)\|", line.strip().strip("|"))
            cells = [c.replace("\\|", "|").strip() for c in cells]
            if columns is None:
                if SCENARIO in cells and TOOL in cells:
                    columns = cells
                continue
            if set("".join(cells)) <= set("-: "):
                continue  # the header's rule
            cell = dict(zip(columns, cells))
            scenario = cell.get(SCENARIO) or scenario
            create = first_number(cell, CREATE, columns)
            extract = first_number(cell, EXTRACT, columns)
            if scenario and cell.get(TOOL) and (isinstance(create, float) or isinstance(extract, float)):
                rows.append((scenario, cell[TOOL], create, extract))
    return rows


def first_number(cell, prefix, columns):
    """The median: the first number of the column whose header starts with
    `prefix`; else the cell's text (`= lockbox`: the row above's), or None."""
    for name in columns:
        if name.startswith(prefix):
            text = cell.get(name, "")
            found = NUMBER.search(text)
            if found and not text.startswith("="):
                return float(found.group())
            return text if text.startswith("=") else None
    return None


def render(rows, title):
    groups = {}
    for scenario, tool, create, extract in rows:
        groups.setdefault(scenario, []).append((tool, create, extract))
    longest = max((t for r in rows for t in (r[2], r[3]) if isinstance(t, float)), default=1.0)
    scale = PLOT_WIDTH / longest
    out = []
    y = 56
    for scenario, tools in groups.items():
        out.append(text(8, y + 10, scenario, weight="bold"))
        y += 16
        for tool, create, extract in tools:
            out.append(text(LABEL_WIDTH - 6, y + 2 * ROW_HEIGHT // 2 + 4, tool, anchor="end"))
            for i, (kind, seconds) in enumerate((("create", create), ("extract", extract))):
                top = y + i * ROW_HEIGHT
                if not isinstance(seconds, float):
                    shown = seconds or "not measured"
                    out.append(text(LABEL_WIDTH + 4, top + 10, f"{kind}: {shown}", size=10, fill="#777"))
                    continue
                width = max(1.0, seconds * scale)
                out.append(
                    f'<rect x="{LABEL_WIDTH}" y="{top}" width="{width:.1f}" height="{ROW_HEIGHT - 2}" '
                    f'fill="{COLORS[kind]}"><title>{html.escape(tool)}, {kind}: {seconds:g} s</title></rect>'
                )
                out.append(text(LABEL_WIDTH + width + 4, top + 9, f"{seconds:g} s", size=10))
            y += 2 * ROW_HEIGHT + BAR_GAP
        y += GROUP_GAP
    width = LABEL_WIDTH + PLOT_WIDTH + 70
    legend = [
        f'<rect x="{8 + i * 110}" y="30" width="12" height="12" fill="{COLORS[k]}"/>'
        + text(24 + i * 110, 40, f"{k}, wall", size=11)
        for i, k in enumerate(("create", "extract"))
    ]
    head = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{y}" viewBox="0 0 {width} {y}" '
        'font-family="sans-serif" font-size="11">',
        f'<rect width="{width}" height="{y}" fill="white"/>',
        text(8, 20, title, size=13, weight="bold"),
    ]
    return "\n".join(head + legend + out + ["</svg>", ""])


def text(x, y, s, size=11, anchor="start", weight="normal", fill="#222"):
    return (
        f'<text x="{x:.1f}" y="{y}" font-size="{size}" text-anchor="{anchor}" font-weight="{weight}" '
        f'fill="{fill}">{html.escape(s)}</text>'
    )


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("results", nargs="+", help="results files the harness wrote")
    parser.add_argument("-o", "--output", required=True, help="the SVG to write")
    parser.add_argument("--title", default="lockbox and its peers: wall time, median (lower is faster)")
    args = parser.parse_args()
    rows = [row for path in args.results for row in read_rows(path)]
    if not rows:
        sys.exit(f"bench-chart: no result rows in {', '.join(args.results)}")
    svg = render(rows, args.title)
    with open(args.output, "w", encoding="utf-8") as f:
        f.write(svg)


if __name__ == "__main__":
    main()
