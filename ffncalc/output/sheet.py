"""One document model for every command's human-readable output, and its three renderings.

A Document is a title, notes, tables and a footer of plain strings; rich, markdown and LaTeX draw
the same document, so every command gets every text format from one builder. CSV and JSON come
from records instead (machine-readable, exact), see ``render.py``.
"""

from __future__ import annotations

import csv
import io
import re
from dataclasses import dataclass, field
from functools import lru_cache
from typing import TYPE_CHECKING, Any, Iterable

if TYPE_CHECKING:
    from rich.console import Group


@dataclass(frozen=True)
class Section:
    head: list[str]
    rows: list[list[str]]
    left: int = 1  # leading columns aligned left; the rest (figures) right
    show_head: bool = True
    text_last: bool = False  # the last column is text (a reason, a note), aligned left

    def is_left(self, i: int) -> bool:
        return i < self.left or (self.text_last and i == len(self.head) - 1)


@dataclass(frozen=True)
class Document:
    title: str
    notes: list[str] = field(default_factory=list)
    sections: list[Section] = field(default_factory=list)
    footer: list[str] = field(default_factory=list)


def to_rich(doc: Document, width: int | None = None) -> Group:
    """The document for a terminal ``width`` columns wide (None: every table at its natural width)."""
    from rich.console import Group
    from rich.table import Table
    from rich.text import Text

    parts: list[Any] = [Text(clean(doc.title), style="bold")] + [Text(clean(n), style="dim") for n in doc.notes]
    footnotes: list[str] = []
    for sec in doc.sections:
        first = len(footnotes)
        for block in layout(sec, width, footnotes):
            tab = Table(
                show_edge=False,
                pad_edge=False,
                header_style="bold",
                show_header=block.show_head,
                box=None if not block.show_head else Table().box,
            )
            for name, left, w in zip(block.head, block.left, block.widths):
                tab.add_column(clean(name), justify="left" if left else "right", overflow="fold", width=w)
            for row in block.rows:
                tab.add_row(*[_styled(clean(cell)) for cell in row])
            parts += [Text(""), tab]
        parts += [Text(f"[{i + 1}] {clean(n)}", style="dim") for i, n in enumerate(footnotes[first:], first)]
    if doc.footer:
        parts.append(Text(""))
        parts += [_styled(clean(line), footer=True) for line in doc.footer]
    return Group(*parts)


_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")


def clean(text: str) -> str:
    """Text safe to print: control characters (a terminal's escape sequences among them) shown as \\xNN."""
    return _CONTROL.sub(lambda m: f"\\x{ord(m.group(0)):02x}", str(text))


LONGEST = 1000  # characters of an error line


def one_line(message: object) -> str:
    """An error as the one line the command line prints (and the web page shows): whitespace runs as one space,
    control characters shown, and a 5,000-character name cut in the middle so the reason after it is kept."""
    text = clean(" ".join(str(message).split()))
    if len(text) > LONGEST:
        half = (LONGEST - 1) // 2
        text = text[:half] + "…" + text[-half:]
    return text


def _styled(cell: str, footer: bool = False):
    from rich.text import Text

    if cell.startswith("✓"):
        return Text(cell, style="bold green" if footer else "green")
    if cell.startswith("✗"):
        return Text(cell, style="bold red")
    return Text(cell, style="dim") if footer else Text(cell)


def fits(doc: Document, width: int) -> bool:
    """Whether ``layout`` fits every table of ``doc`` within ``width`` columns (then ``to_plain`` prints what
    rich does); a table whose narrowest layout is still wider is left to rich, which folds words to fit."""
    notes: list[str] = []
    return all(b.total(separator(b.show_head)) <= width for sec in doc.sections for b in layout(sec, width, notes))


def to_plain(doc: Document, width: int) -> str:
    """``to_rich(doc, width)`` as rich prints it where styles are not shown (not a terminal), byte for byte,
    without loading rich's console: the same layout (``layout``: footnotes, wrapped text columns, blocks of
    figure columns), text wrapped at spaces as rich wraps it, in rich's heavy-head box without its edge."""
    lines = [*_wrapped(clean(doc.title), width)]
    for note in doc.notes:
        lines += _wrapped(clean(note), width)
    footnotes: list[str] = []
    for sec in doc.sections:
        first = len(footnotes)
        for block in layout(sec, width, footnotes):
            lines.append("")
            if block.show_head:
                lines += _row(block, block.head, "┃", bottom=True)
                last = len(block.widths) - 1
                lines.append("╇".join("━" * (w + (i > 0) + (i < last)) for i, w in enumerate(block.widths)))
            for r in block.rows:
                lines += _row(block, r, "│" if block.show_head else "")
        for i, note in enumerate(footnotes[first:], first):
            lines += _wrapped(f"[{i + 1}] {clean(note)}", width)
    if doc.footer:
        lines.append("")
        for line in doc.footer:
            lines += _wrapped(clean(line), width)
    return "".join(line + "\n" for line in lines)


def _row(block: Block, cells: list[str], bar: str, bottom: bool = False) -> list[str]:
    """One table row as printed lines: each cell wrapped to its column's width, justified left or right, with a
    space of padding each side (none at the table's edges), the cells' lines side by side, top-aligned (a
    header's bottom-aligned, as rich's)."""
    from rich.cells import cell_len

    last = len(block.widths) - 1
    columns = []
    for i, (cell, w, left) in enumerate(zip(cells, block.widths, block.left)):
        inner = w
        wrapped = _wrapped(clean(cell), inner) if cell else [""]
        if not left:  # rich's right justify: trailing spaces dropped, the line padded on the left
            wrapped = [line.rstrip() for line in wrapped]
        columns.append((wrapped, inner, left))
    height = max(len(c[0]) for c in columns)
    if bottom:
        columns = [([""] * (height - len(w)) + w, inner, left) for w, inner, left in columns]
    out = []
    for k in range(height):
        parts = []
        for i, (wrapped, inner, left) in enumerate(columns):
            text = wrapped[k] if k < len(wrapped) else ""
            fill = " " * (inner - cell_len(text))
            parts.append(" " * (i > 0) + (text + fill if left else fill + text) + " " * (i < last))
        out.append(bar.join(parts))
    return out


_WORD = re.compile(r"\s*\S+\s*")


def _wrapped(text: str, width: int) -> list[str]:
    """rich's word wrap of one Text (its default justify and fold overflow): a word with the spaces after it goes
    on the line if the word fits; a word longer than a line is folded; a line is cut to ``width`` cells."""
    from rich.cells import cell_len, chop_cells, set_cell_size

    out = []
    for line in text.split("\n"):
        breaks, offset = [], 0
        for m in _WORD.finditer(line):
            start, word = m.start(), m.group(0)
            length = cell_len(word.rstrip())
            if width - offset >= length:
                offset += cell_len(word)
            elif length > width:
                folded = chop_cells(word, width=width)
                for k, part in enumerate(folded):
                    if start:
                        breaks.append(start)
                    if k == len(folded) - 1:
                        offset = cell_len(part)
                    else:
                        start += len(part)
            elif offset and start:
                breaks.append(start)
                offset = cell_len(word)
        for a, b in zip([0, *breaks], [*breaks, len(line)]):
            piece = line[a:b]
            excess = len(piece) - width
            if excess > 0:  # surplus trailing spaces go first
                spaces = len(piece) - len(piece.rstrip())
                piece = piece[: len(piece) - min(spaces, excess)]
            out.append(set_cell_size(piece, width) if cell_len(piece) > width else piece)
    return out


def to_markdown(doc: Document) -> str:
    """GitHub markdown: figures right-aligned, text left; an indented label (a sub-total) marked with an em
    space per level, which a renderer keeps where it drops leading spaces."""
    out = [f"**{_md(doc.title)}**"]
    if doc.notes:
        out += [""] + [f"*{_md(n)}*  " for n in doc.notes]
    for sec in doc.sections:

        def line(cells: Iterable[str]) -> str:
            return "| " + " | ".join(_md_cell(c) for c in cells) + " |"

        align = ["---" if left else "---:" for left in aligns(sec)]
        out += ["", line(sec.head), "| " + " | ".join(align) + " |"] + [line(r) for r in sec.rows]
    if doc.footer:
        out += [""] + [f"{_md(line)}  " for line in doc.footer]
    return "\n".join(out) + "\n"


def to_html(doc: Document) -> str:
    """An HTML fragment for a notebook: the title, the notes, every table whole (figures right-aligned, text
    left, a sub-total's indent kept) and the footer."""
    from html import escape

    def text(s: str) -> str:
        return escape(clean(s))

    out = [f"<div><p><b>{text(doc.title)}</b></p>"] + [f"<p><i>{text(n)}</i></p>" for n in doc.notes]
    for sec in doc.sections:
        align = ["left" if left else "right" for left in aligns(sec)]

        def cells(row: list[str], tag: str) -> str:
            return "".join(
                f'<{tag} style="text-align:{a}">{"&emsp;" * _indent(c)[0]}{text(_indent(c)[1])}</{tag}>' for c, a in zip(row, align)
            )

        head = f"<thead><tr>{cells(sec.head, 'th')}</tr></thead>" if sec.show_head else ""
        body = "".join(f"<tr>{cells(r, 'td')}</tr>" for r in sec.rows)
        out.append(f"<table>{head}<tbody>{body}</tbody></table>")
    out += [f"<p>{text(line)}</p>" for line in doc.footer]
    return "\n".join(out) + "\n</div>\n"


def _indent(text: str) -> tuple[int, str]:
    """(levels, text): two leading spaces a level."""
    body = text.lstrip(" ")
    return (len(text) - len(body)) // 2, body


def _md_cell(text: str) -> str:
    level, body = _indent(text)
    return "&emsp;" * level + _md(body)


def _md(text: str) -> str:
    return clean(text).replace("|", "\\|")


_LATEX = {
    "\\": r"\textbackslash{}",
    "&": r"\&",
    "%": r"\%",
    "$": r"\$",
    "#": r"\#",
    "_": r"\_",
    "{": r"\{",
    "}": r"\}",
    "~": r"\textasciitilde{}",
    "^": r"\textasciicircum{}",
    "×": r"$\times$",
    "⊗": r"$\otimes$",
    "≤": r"$\le$",
    "ᵀ": r"$^\top$",
    "–": "--",
    "—": "---",
    "✓": r"\checkmark{}",
    "✗": r"$\times$",
    "→": r"$\to$",
    "²": r"$^2$",
    "·": r"$\cdot$",
    "⊙": r"$\odot$",
    "≈": r"$\approx$",
    "<": r"\textless{}",
    ">": r"\textgreater{}",
    "|": r"\textbar{}",
    "±": r"$\pm$",
    "−": r"$-$",
}


def latex_escape(text: str) -> str:
    level, body = _indent(clean(text))
    return r"\quad{}" * level + "".join(_LATEX.get(ch, ch) for ch in body)


def to_latex(doc: Document) -> str:
    """booktabs: one tabular per table, a headless section that follows a table (its totals) set below a
    rule in the same tabular; the title and notes as comments above."""
    out = [f"% {clean(doc.title)}"] + [f"% {clean(n)}" for n in doc.notes]
    groups: list[list[Section]] = []
    for sec in doc.sections:
        if groups and not sec.show_head and groups[-1][0].show_head and len(sec.head) <= len(groups[-1][0].head):
            groups[-1].append(sec)
        else:
            groups.append([sec])
    for first, *rest in groups:
        n = len(first.head)
        cols = "".join("l" if left else "r" for left in aligns(first))
        out += [f"\\begin{{tabular}}{{{cols}}}", "\\toprule"]
        if first.show_head:
            out += [" & ".join(latex_escape(h) for h in first.head) + r" \\", "\\midrule"]
        out += [" & ".join(latex_escape(c) for c in row) + r" \\" for row in first.rows]
        for sec in rest:
            out.append("\\midrule")
            left = aligns(sec)
            for row in sec.rows:  # the label spans the columns the values do not
                span = n - len(row) + 1
                cells = [f"\\multicolumn{{{span}}}{{l}}{{{latex_escape(row[0])}}}"] + [
                    latex_escape(c)
                    if left[i + 1] == (cols[n - len(row) + 1 + i] == "l")
                    else f"\\multicolumn{{1}}{{{'l' if left[i + 1] else 'r'}}}{{{latex_escape(c)}}}"
                    for i, c in enumerate(row[1:])
                ]
                out.append(" & ".join(cells) + r" \\")
        out += ["\\bottomrule", "\\end{tabular}"]
    out += [f"% {clean(line)}" for line in doc.footer]
    return "\n".join(out) + "\n"


def to_csv(rows: list[dict[str, Any]], fields: list[str] | None = None) -> str:
    """Records as CSV in a stable column order: ``fields``, else the first record's keys."""
    fields = fields or (list(rows[0]) if rows else [])
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(fields)
    for row in rows:
        writer.writerow([_csv_cell(row.get(f)) for f in fields])
    return buf.getvalue()


def _csv_cell(v: Any) -> str:
    if v is None:
        return ""
    if isinstance(v, (list, tuple)):
        return "/".join(map(_csv_cell, v))
    return clean(str(v)).replace("–", "-").replace("—", "-")


# --- fitting a table to a width -------------------------------------------------------------------

_NUMBER = re.compile(r"^[×x+\-−≈~<>]?\s?[0-9]")
MIN_TEXT = 12  # a text column is never wrapped narrower than this (or its longest word)
FOOTNOTE_OVER = 24  # text cells longer than this give their parenthetical explanations to footnotes


def is_number(cell: str) -> bool:
    return bool(_NUMBER.match(cell))


def aligns(sec: Section) -> list[bool]:
    """Per column, whether it is aligned left (text). A column the section calls a figure column but which
    holds no figure at all (a unit, a kind) is text too."""
    out = []
    for i in range(len(sec.head)):
        cells = [r[i] for r in sec.rows if i < len(r) and r[i].strip()]
        out.append(sec.is_left(i) or bool(cells) and not any(is_number(c) for c in cells))
    return out


@lru_cache(maxsize=1 << 16)  # a table's cells repeat (×2, names), and the layout measures each many times
def _width(text: str) -> int:
    from rich.cells import cell_len

    return max((cell_len(line) for line in text.split("\n")), default=0)


@lru_cache(maxsize=1 << 16)
def _longest_word(text: str) -> int:
    return max((_width(w) for w in text.split()), default=0)


@dataclass(frozen=True)
class Block:
    """One table as printed: its columns (indexes into the section), their widths and alignment."""

    head: list[str]
    rows: list[list[str]]
    left: list[bool]
    widths: list[int]
    show_head: bool

    def total(self, sep: int) -> int:
        return sum(self.widths) + sep * (len(self.widths) - 1)


def separator(show_head: bool) -> int:
    """Characters between two columns: ' │ ' under a header rule, two spaces without."""
    return 3 if show_head else 2


def layout(sec: Section, width: int | None, notes: list[str]) -> list[Block]:
    """The section as one or more blocks that fit ``width`` columns (None: its natural width).

    In order, until it fits: parenthetical explanations in long text cells become numbered footnotes
    (appended to ``notes``); text columns wrap, never narrower than MIN_TEXT or their longest word; the
    figure columns are split into several blocks, each repeating the leading text columns. Figures are
    never wrapped, cut or dropped."""
    left = aligns(sec)
    head, rows = list(sec.head), [list(r) + [""] * (len(sec.head) - len(r)) for r in sec.rows]
    sep = separator(sec.show_head)
    natural = _natural(head, rows, sec.show_head)
    if width is None or sum(natural) + sep * (len(natural) - 1) <= width:
        return [Block(head, rows, left, natural, sec.show_head)]
    rows = [[_footnoted(c, notes) if left[i] and _width(c) > FOOTNOTE_OVER else c for i, c in enumerate(r)] for r in rows]
    block = _shrink(head, rows, left, sec.show_head, width)
    if block.total(sep) <= width:
        return [block]
    floor = _floors(head, rows, left, sec.show_head)
    keys = [0] + ([1] if sec.left > 1 and len(head) > 2 and left[1] and natural[1] <= MIN_TEXT else [])
    groups: list[list[int]] = []
    used = sum(floor[k] for k in keys) + sep * (len(keys) - 1)
    room = used
    for i in range(len(keys), len(head)):
        if groups and room + sep + floor[i] <= width:
            groups[-1].append(i)
            room += sep + floor[i]
        else:
            groups.append([i])
            room = used + sep + floor[i]
    blocks = []
    for n, group in enumerate(groups):
        cols = keys + group
        sub = [[r[i] for i in cols] for r in rows if n == 0 or any(r[i].strip() for i in group)]
        blocks.append(_shrink([head[i] for i in cols], sub, [left[i] for i in cols], sec.show_head, width))
    return blocks


def _natural(head: list[str], rows: list[list[str]], show_head: bool) -> list[int]:
    return [max([_width(head[i]) if show_head else 0] + [_width(r[i]) for r in rows]) for i in range(len(head))]


def _floors(head, rows, left, show_head) -> list[int]:
    """The narrowest each column may be: a figure column its widest figure (its header wraps between words),
    a text column MIN_TEXT or its longest word."""
    natural = _natural(head, rows, show_head)
    out = []
    for i, nat in enumerate(natural):
        words = max([_longest_word(head[i]) if show_head else 0] + [_longest_word(r[i]) for r in rows])
        if left[i]:
            out.append(min(nat, max(MIN_TEXT, words)))
        else:
            out.append(max([words] + [_width(r[i]) for r in rows]))
    return out


def _shrink(head, rows, left, show_head, width) -> Block:
    """Wrap the widest text columns, one character at a time, then the figure columns' headers, until the
    block fits or none can give more."""
    widths = _natural(head, rows, show_head)
    floor = _floors(head, rows, left, show_head)
    excess = sum(widths) + separator(show_head) * (len(widths) - 1) - width
    for text in (True, False):
        while excess > 0:
            give = [i for i in range(len(widths)) if left[i] == text and widths[i] > floor[i]]
            if not give:
                break
            widest = max(give, key=lambda i: widths[i])
            widths[widest] -= 1
            excess -= 1
    return Block(head, rows, left, widths, show_head)


def _footnoted(cell: str, notes: list[str]) -> str:
    """The cell with each outermost parenthetical explanation replaced by a footnote mark, [1], [2], …"""
    out, depth, start = [], 0, 0
    for i, ch in enumerate(cell):
        if ch == "(":
            if depth == 0:
                start = i
            depth += 1
        elif ch == ")" and depth:
            depth -= 1
            if depth == 0:
                text = cell[start + 1 : i]
                if len(text) >= 8 and start > 0 and cell[start - 1] == " ":
                    if text not in notes:
                        notes.append(text)
                    out.append((start - 1, i + 1, f" [{notes.index(text) + 1}]"))
    for begin, end, mark in reversed(out):
        cell = cell[:begin] + mark + cell[end:]
    return cell
