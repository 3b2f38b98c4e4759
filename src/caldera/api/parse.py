"""Parse manifest text: JSON and YAML with PyYAML's meaning, at a native parser's speed.

What a document means is what PyYAML's `safe_load_all` made of it, as Caldera has always read
manifests (YAML 1.1: `yes`/`no`/`on`/`off` are booleans, `0755` is octal, unquoted timestamps
are datetimes, `<<` merges); what is fast is how:

- JSON: the standard library's json, as before (orjson and msgspec parse a kubectl List only
  10-20% faster, and orjson reads integers past 64 bits as floats); when it refuses the text,
  YAML. The time is in what comes after parsing.
- YAML: yaml-rs (a YAML 1.2 parser in Rust; ~35x PyYAML's libyaml-based CSafeLoader, ~100x its
  pure-Python SafeLoader) for text where YAML 1.1 and 1.2 read the same. `risky` finds,
  conservatively, whatever might read differently (1.1-only booleans, octal, sexagesimal or
  underscored numbers, unquoted timestamps, merge keys, anchors, aliases, tags, complex keys,
  block scalars, multi-line flow collections, characters PyYAML rejects or takes as line
  breaks); such text, and text yaml-rs rejects, goes through PyYAML's CSafeLoader. Malformed
  text gets PyYAML's pure-Python message, as before: "malformed YAML at line L, column C: ...".
  tests/api/test_reader.py checks yaml-rs against PyYAML on generated text `risky` passes.
- A big `kind: List` as `kubectl get -o yaml` prints it (items at column 0) is parsed a slice of
  items at a time, so a slice that needs PyYAML costs only itself and each item can be slimmed
  (`each`) before the next slice is parsed: the whole parsed List never exists at once, and
  `load_file` reads such a file a block at a time, so neither does its whole text. A line
  starting `- ` at column 0 can only start an item: a slice cut inside a quoted scalar or a flow
  collection fails at its end, and then the document is parsed whole.
- No worker thread parses slices ahead: yaml-rs releases the GIL while it parses, but parsing
  the next slice on a thread while this one slimmed the last crashed the interpreter inside
  yaml-rs (SIGSEGV) on Lists of many slices (tried 2026-12-02; a gain of ~10 % wall at best).
- yaml-rs converts nested collections recursively and crashes the process (SIGSEGV) somewhere
  past 8,000 levels: text that might nest that deep (a line whose first 256 characters are
  spaces and dashes) goes to PyYAML, which stops with a RecursionError, worded as too deep.
- Depth: no document may nest more than MAX_DEPTH collections (kube's decoders stop at 10,000;
  no real manifest comes near 100). `check_depth` is the check, for other readers too; text
  whose shape bounds its depth below the limit is not walked.

Duplicate keys keep the last value, as PyYAML and encoding/json do. PyYAML, yaml-rs and numpy
are imported when first needed: reading JSON imports neither YAML parser.
"""
from __future__ import annotations

import json
import os
import re
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ..errors import InputError

if TYPE_CHECKING:
    import yaml

MAX_DEPTH = 100
DEPTH_PROBLEM = f"nested more than {MAX_DEPTH} levels deep"

# A kubectl List is parsed in slices of about this many characters.
SLICE_CHARS = 1 << 19

Progress = Callable[[int], None]  # told how many more characters have been parsed
# Each List item parsed in slices goes through it as its slice is parsed, with whether the item
# is a tree (no part of it shared through an alias).
Each = Callable[[Any, bool], Any]

# ---- what yaml-rs might read differently from PyYAML ------------------------------------------------
# A plain scalar starts after a space, a flow indicator or a line start, and ends at a line end,
# a comment, a flow indicator or a `: ` (a key). The candidates below are whole such tokens.
_END = r"(?=[ ]*(?:\n|$|[,\]}]|:[ \n]|:$| \#))"
_RISKY_TOKEN = (
    # YAML 1.1 booleans that 1.2 reads as strings
    r"(?:yes|Yes|YES|no|No|NO|on|On|ON|off|Off|OFF"
    # .inf/.nan, merge and value keys
    r"|[-+]?\.(?:inf|Inf|INF|nan|NaN|NAN)|<<|="
    # numbers in either YAML's notations (hex, octal, binary, exponents, underscores, even
    # leading ones as yaml-rs takes them, sexagesimal) but canonical decimal integers and
    # fractions, which both read alike
    r"|(?!-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?" + _END + r")(?=[-+]?[._0-9])[-+]?"
    r"(?:0[xX][0-9a-fA-F_]*|0[oObB][0-9_]*|[0-9][0-9_]*(?::[0-9_]+)+(?:\.[0-9_]*)?"
    r"|[0-9_]*\.?[0-9_]*(?:[eE][-+]?[0-9_]*)?)"
    # timestamps (their T, t, Z or spaces fall outside the number characters above)
    r"|[0-9]{4}-[0-9]{1,2}-[0-9]{1,2}(?:[Tt ][^\n]*)?"
    r")" + _END)
# anchors, aliases, tags, reserved indicators, complex keys, block scalars (yaml-rs reads an empty
# one as "\n"), empty keys and plain scalars starting with ":"
_INDICATOR = r"[&*!@`%|>?:]"
# The character before a token is consumed (a look-behind at every position is slow), and the
# first one prefiltered.
_RISKY_START = re.compile(r"[ \n\[{,](?=[+._0-9<=&*!@`%|>?:]|-[+._0-9]|[yY][eE]|[nN][oO]|[oO][nNfF])(?:"
                          + _INDICATOR + "|" + _RISKY_TOKEN + ")")
_RISKY_AT_0 = re.compile(r"(?:" + _INDICATOR + "|" + _RISKY_TOKEN + ")")
# characters PyYAML rejects, or takes as line breaks, or that YAML 1.2 reads differently
_RISKY_CHAR = re.compile(r"[\t\r\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\ufeff\u2028\u2029\ud800-\udfff\ufffe\uffff]")
_SAFE_ASCII = bytes(b for b in range(128) if b in (10,) or 32 <= b < 127)


def _risky_char(text: str) -> bool:
    if text.isascii():   # (translate deletes the safe bytes in C: far faster than a regex scan)
        return bool(text.encode("ascii").translate(None, _SAFE_ASCII))
    return _RISKY_CHAR.search(text) is not None
_FLOW_KEY = re.compile(r"[\]}][ ]*:(?:[ \n]|$)")     # a flow collection as a key
_QUESTION = re.compile(r"\?(?:[ \n,\]}:]|$)")       # YAML 1.1 ends a flow plain scalar at `?`
_MARKER = re.compile(r"^(?:%|---|\.\.\.)", re.MULTILINE)
_OPENER = re.compile(r"[\[{](?![\]}])")


def _has_marker(text: str) -> bool:
    """Whether a line may start with a directive or a document marker (cheap prefilter)."""
    return text.startswith(("---", "...", "%")) or "\n---" in text or "\n..." in text or "\n%" in text


def _only_empty_flow(text: str) -> bool:
    """Whether every flow collection in `text` is an empty `{}` or `[]` (kubectl's only ones)."""
    return text.count("{") == text.count("{}") and text.count("[") == text.count("[]")


def _multiline_flow(text: str) -> bool:
    """Whether a flow collection may span lines (yaml-rs takes multi-line keys in one; PyYAML
    does not): a line that opens more brackets than it closes."""
    pos = 0
    while (m := _OPENER.search(text, pos)) is not None:
        start = text.rfind("\n", 0, m.start()) + 1
        end = text.find("\n", m.start())
        end = len(text) if end < 0 else end
        line = text[start:end]
        if line.count("[") + line.count("{") != line.count("]") + line.count("}"):
            return True
        pos = end
    return False


def risky(text: str) -> bool:
    """Whether yaml-rs might read `text` differently from PyYAML (false positives only cost time)."""
    return (_has_marker(text) and _MARKER.search(text) is not None) or _risky_body(text, _only_empty_flow(text))


def _risky_body(text: str, empty_flow: bool) -> bool:
    """`risky` but for directives and document markers (a piece of a document has none)."""
    return (_risky_char(text)
            or "\\/" in text                                        # an escape YAML 1.1 lacks
            or ("?" in text and _QUESTION.search(text) is not None)
            or _RISKY_AT_0.match(text) is not None
            or _RISKY_START.search(text) is not None
            or (("]" in text or "}" in text) and _FLOW_KEY.search(text) is not None)
            or (not empty_flow and _multiline_flow(text)))


# ---- depth ---------------------------------------------------------------------------------------------

def depth_exceeds(obj: object, limit: int = MAX_DEPTH) -> bool:
    """Whether `obj` nests more than `limit` dicts/lists (the outermost counts as 1). Iterative."""
    level: list[Any] = [obj] if isinstance(obj, (dict, list)) else []
    depth = 0
    while level:
        depth += 1
        if depth > limit:
            return True     # (a cycle, which YAML aliases can make, too)
        nxt: dict[int, Any] = {}     # by identity: what aliases share is walked once a level
        for x in level:
            for v in (x.values() if isinstance(x, dict) else x):
                if isinstance(v, (dict, list)):
                    nxt[id(v)] = v
        level = list(nxt.values())
    return False


def check_depth(obj: object, source: str | None = None, limit: int = MAX_DEPTH) -> None:
    """InputError naming `source` when `obj` nests more than `limit` levels (for any parsed
    document: manifests here, configuration files in their loaders)."""
    if depth_exceeds(obj, limit):
        raise InputError(f"nested more than {limit} levels deep", source)


# YAML text where no line is indented 32 or more, no `- - -` chains, and no flow collection opens
# inside another cannot nest 100 levels: each block level indents at least one more column (a
# sequence under a mapping key may share its column: two levels a column), and a line opens at
# most four more (two compact sequences, a compact mapping, one flow collection).
_NESTED_FLOW = re.compile(r"[\[{][^\]}]*[\[{]")
_ALIAS = re.compile(r"(?:^|[ \[{,])\*", re.MULTILINE)
_DASHES = re.compile(r"-[ ]+-[ ]+-[ ]")


def _yaml_depth_bounded(text: str, empty_flow: bool | None = None) -> bool:
    if empty_flow is None:
        empty_flow = _only_empty_flow(text)
    return (("*" not in text or _ALIAS.search(text) is None)          # an alias can make a cycle
            and "\n" + " " * 32 not in text and not text.startswith(" " * 32) and _DASHES.search(text) is None
            and (empty_flow or _NESTED_FLOW.search(text) is None))


def _json_depth_bounded(text: str) -> bool:
    return text.count("{") + text.count("[") <= MAX_DEPTH


_JSON_BLOCK = 1 << 22
_NOT_QUOTE_OR_BRACKET = bytes(b for b in range(256) if b not in b'"[]{}')


def json_depth(data: bytes) -> int | None:
    """The deepest bracket nesting of JSON text outside its strings, from the text (bytes.translate
    keeps quotes and brackets, numpy counts: some 10x cheaper than walking the parsed objects);
    None when a string holds an escaped quote."""
    if b'\\"' in data:
        return None
    import numpy as np
    a = np.frombuffer(data.translate(None, _NOT_QUOTE_OR_BRACKET), dtype=np.uint8)
    depth = best = parity = 0
    for off in range(0, len(a), _JSON_BLOCK):
        blk = a[off:off + _JSON_BLOCK]
        quote = blk == 34
        outside = ((np.cumsum(quote, dtype=np.int32) + parity) & 1) == 0
        parity = (parity + int(np.count_nonzero(quote))) & 1
        step = (((blk == 91) | (blk == 123)) & outside).astype(np.int32)
        step -= ((blk == 93) | (blk == 125)) & outside
        run = np.cumsum(step, dtype=np.int32)
        best = max(best, depth + int(run.max()))
        depth += int(run[-1])
    return best


# ---- YAML ---------------------------------------------------------------------------------------------

class _Malformed(Exception):
    """A piece PyYAML rejects: its error, where the piece starts in the file, and whether the
    error is at the piece's very end (then the piece may have been cut in the wrong place)."""

    def __init__(self, err: yaml.YAMLError, line0: int, at_end: bool):
        super().__init__()
        self.err, self.line0, self.at_end = err, line0, at_end

    def message(self) -> str:
        mark = getattr(self.err, "problem_mark", None)
        where = f" at line {mark.line + 1 + self.line0}, column {mark.column + 1}" if mark else ""
        problem = getattr(self.err, "problem", None) or str(self.err).splitlines()[0]
        return f"malformed YAML{where}: {problem}"


def _pyyaml(text: str, line0: int, loader: type | None = None) -> list[Any]:
    """All documents of `text` through PyYAML; _Malformed with the pure-Python parser's error
    (the messages Caldera has always given)."""
    import yaml
    if loader is None:
        loader = yaml.CSafeLoader
    try:
        return list(yaml.load_all(text, Loader=loader))
    except RecursionError:
        raise InputError(DEPTH_PROBLEM) from None
    except yaml.YAMLError as e:
        if loader is not yaml.SafeLoader:
            return _pyyaml(text, line0, yaml.SafeLoader)
        mark = getattr(e, "problem_mark", None)
        raise _Malformed(e, line0, mark is not None and mark.index >= len(text.rstrip())) from None


def _one_document(piece: str, line0: int) -> Any:
    """The single document of `piece` (no document marker inside), checked for depth."""
    return _parse_piece(piece, line0)[0]


# Without a line whose first 256 characters are spaces and dashes, block collections nest at most
# some 500 levels (two a column) and yaml-rs takes at most 256 levels of flow ones: far from the
# depth at which its recursion crashes the process (some 8,000 levels on an 8 MB stack).
_DEEP_LINE = re.compile(r"\n[- ]{256}")
_DEEP_AT_0 = re.compile(r"[- ]{256}")


def _yaml_rs_may_read(piece: str, empty_flow: bool, bounded: bool) -> bool:
    """Whether yaml-rs may read `piece`: it would read it as PyYAML does and cannot crash on its
    depth."""
    deep = not bounded and (_DEEP_LINE.search(piece) is not None or _DEEP_AT_0.match(piece) is not None)
    return not deep and not _risky_body(piece, empty_flow)


def _parse_piece(piece: str, line0: int) -> tuple[Any, bool]:
    """(the document of `piece`, whether yaml-rs read it: then it is a tree, no alias shares a
    part of it)."""
    empty_flow = _only_empty_flow(piece)
    bounded = _yaml_depth_bounded(piece, empty_flow)
    obj: Any = None
    fast = _yaml_rs_may_read(piece, empty_flow, bounded)
    if fast:
        import yaml_rs
        try:
            obj = yaml_rs.loads(piece, parse_datetime=False, duplicate_key_policy=yaml_rs.DuplicateKeyPolicy.LastWins)
        except (yaml_rs.YAMLDecodeError, RecursionError, OverflowError, ValueError):
            fast = False    # PyYAML decides, and words the error
    if not fast:
        docs = _pyyaml(piece, line0)
        obj = docs[0] if docs else None
    if not bounded:
        check_depth(obj)
    return obj, fast


# `---` alone on its line (a comment may follow) starts a document; any other marker, a
# directive, or content after `---` leaves the text to PyYAML whole.
_DOC_START = re.compile(r"^---[ ]*(?:#[^\n]*)?(?:\n|$)", re.MULTILINE)
_ANY_MARKER = re.compile(r"^(?:---|\.\.\.|%)", re.MULTILINE)
_BLANK_OR_COMMENTS = re.compile(r"(?:[ ]*(?:#[^\n]*)?\n)*[ ]*(?:#[^\n]*)?")


def _split_documents(text: str) -> list[tuple[int, str]] | None:
    """(first line, text) of each document, as PyYAML counts them; None when not that simple."""
    starts = []
    if _has_marker(text):
        starts = list(_DOC_START.finditer(text))
        if len(starts) != len(_ANY_MARKER.findall(text)):
            return None
    pieces: list[tuple[int, str]] = []
    pos, line = 0, 0
    for m in starts:
        pieces.append((line, text[pos:m.start()]))
        line += text.count("\n", pos, m.end())
        pos = m.end()
    pieces.append((line, text[pos:]))
    # what comes before the first `---` is a document only if it has content
    if _BLANK_OR_COMMENTS.fullmatch(pieces[0][1]):
        pieces.pop(0)
    return pieces


# kubectl's layout of a List: top-level keys at column 0, `items:` then `- ` items at column 0,
# until the next line at column 0 that is not an item, a comment or blank.
_ITEM_START = re.compile(r"\n-(?=[ \n])")
_REGION_END = re.compile(r"\n[^- #\n]")


def _list_start(text: str) -> int | None:
    """Where the items of a kubectl List begin in `text` (after an `items:` line at column 0,
    on a `- ` line at column 0), or None."""
    if text.startswith("items:"):
        key = 0
    elif (key := text.find("\nitems:") + 1) == 0:
        return None
    nl = text.find("\n", key)
    if nl < 0 or text[key + 6:nl].strip(" ") or not text.startswith(("- ", "-\n"), nl + 1):
        return None
    return nl + 1


def _no_more() -> str:
    return ""


class _NotSliced(Exception):
    """A slice failed at its very end: it may have been cut inside a scalar; parse the whole."""


class _Slices:
    """The slices of a List's items, given in order (`add`) and parsed as they come into `items`
    (each item through `each`, then `progress` told the slice's length). _NotSliced when one
    fails at its very end or is not a sequence."""

    def __init__(self, line: int, progress: Progress | None, each: Each | None, items: list[Any]):
        self.line, self.progress, self.each, self.items = line, progress, each, items

    def add(self, text: str) -> None:
        line = self.line
        self.line += text.count("\n")
        try:
            obj, tree = _parse_piece(text, line)
        except _Malformed as e:
            if e.at_end:
                raise _NotSliced from None
            raise
        if not isinstance(obj, list):
            raise _NotSliced
        each = self.each
        self.items.extend(obj if each is None else [each(it, tree) for it in obj])
        if self.progress:
            self.progress(len(text))


def _list_items(text: str, line0: int, progress: Progress | None, each: Each | None,
                more: Callable[[], str] = _no_more) -> list[Any] | None:
    """A kubectl List document parsed a slice of items at a time, from `text` and the blocks
    `more()` returns after it ("" at the end: a file read a block at a time). None when it is not
    one, holds a document marker, or a slice may have been cut inside a scalar: the caller then
    parses the document whole."""
    begin = _list_start(text)
    if begin is None or _has_marker(text[:begin]):
        return None
    prefix, buf, pos = text[:begin], text, begin       # buf[pos - 1] is always a newline
    items: list[Any] = []
    slices = _Slices(line0 + prefix.count("\n"), progress, each, items)
    eof = False

    def read_more() -> None:
        nonlocal buf, pos, eof
        block = more()
        eof = not block
        if block:
            buf, pos = buf[pos - 1:] + block, 1

    try:
        while True:
            end_m = _REGION_END.search(buf, pos - 1)       # the first line after the items
            while end_m is None and not eof and len(buf) - pos < 2 * SLICE_CHARS:
                read_more()
                end_m = _REGION_END.search(buf, pos - 1)
            stop = end_m.start() + 1 if end_m else None
            if stop is not None or eof:
                cut = len(buf) if stop is None else stop
            else:       # up to the last item start: that item may go on in the next block
                cut = max(buf.rfind("\n- ", pos), buf.rfind("\n-\n", pos)) + 1
                if cut <= pos:
                    read_more()
                    continue
            if any(buf.find(marker, pos - 1, cut) >= 0 for marker in ("\n---", "\n...", "\n%")):
                return None
            start = pos
            for m in _ITEM_START.finditer(buf, pos, cut):
                b = m.start() + 1
                if b - start >= SLICE_CHARS:
                    slices.add(buf[start:b])
                    start = b
            if start < cut:
                slices.add(buf[start:cut])
            pos = cut
            if stop is not None or eof:
                break
    except _NotSliced:
        return None
    buf = buf[pos:]
    while block := more():
        buf += block
    try:
        head = _one_document(prefix + buf, line0)
    except _Malformed:
        return None    # its lines are not the file's: the whole document words the error
    kind = head.get("kind") if isinstance(head, dict) else None
    if not isinstance(kind, str) or not kind.endswith("List") or head.get("items") is not None:
        return None
    head["items"] = items
    if progress:
        progress(len(prefix) + len(buf))
    return [head]


def load_file(path: str, source: str, progress: Progress | None = None, each: Each | None = None) -> list[Any]:
    """`load_text` of a file's content. A big kubectl List in YAML is read from the file a block
    at a time: its whole text is never in memory either."""
    try:
        if not path.endswith(".json") and os.path.getsize(path) > 4 * SLICE_CHARS:
            with open(path, encoding="utf-8") as f:
                first = f.read(SLICE_CHARS)
                if not first.lstrip().startswith(("{", "[")):
                    got = _list_items(first, 0, progress, each, lambda: f.read(SLICE_CHARS))
                    if got is not None:
                        return got
    except (_Malformed, InputError) as e:
        raise InputError(e.message() if isinstance(e, _Malformed) else e.problem, source) from None
    except UnicodeDecodeError:
        pass            # read whole, the error says where
    with open(path, encoding="utf-8") as f:
        text = f.read()
    return load_text(text, source, progress, each)


def _yaml_documents(text: str, progress: Progress | None, each: Each | None) -> list[Any]:
    pieces = _split_documents(text)
    if pieces is None:
        docs = _pyyaml(text, 0)
        if not _yaml_depth_bounded(text):
            for d in docs:
                check_depth(d)
        if progress:
            progress(len(text))
        return docs
    out: list[Any] = []
    for line0, piece in pieces:
        got = _list_items(piece, line0, progress, each) if len(piece) > SLICE_CHARS else None
        if got is None:
            got = [_one_document(piece, line0)]
            if progress:
                progress(len(piece))
        out.extend(got)
    return out


# ---- JSON ---------------------------------------------------------------------------------------------

_NOT_JSON = object()


def _json(text: str) -> Any:
    try:
        return json.loads(text)
    except RecursionError:
        raise InputError(DEPTH_PROBLEM) from None
    except json.JSONDecodeError:
        return _NOT_JSON    # YAML is a superset; the YAML parser words the error


# ---- entry point -----------------------------------------------------------------------------------------

def load_text(text: str, source: str, progress: Progress | None = None, each: Each | None = None) -> list[Any]:
    """The documents of a manifest file's text (a JSON array's elements are documents).
    InputError naming `source` when the text is malformed or nests too deep."""
    try:
        if source.endswith(".json") or text.lstrip().startswith(("{", "[")):
            data = _json(text)
            if data is not _NOT_JSON:
                if not _json_depth_bounded(text):
                    deepest = json_depth(text.encode("utf-8", "surrogatepass"))
                    if deepest is None:
                        check_depth(data)
                    elif deepest > MAX_DEPTH:
                        raise InputError(DEPTH_PROBLEM)
                if progress:
                    progress(len(text))
                return data if isinstance(data, list) else [data]
        return _yaml_documents(text, progress, each)
    except _Malformed as e:
        raise InputError(e.message(), source) from None
    except InputError as e:
        raise InputError(e.problem, source) from None
