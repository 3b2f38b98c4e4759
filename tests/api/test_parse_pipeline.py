"""A big kubectl List's slices parsed on a worker thread (api/parse.py `_Slices`, issue 14): yaml-rs
parses slice k+1 on the worker while the main thread runs `each` over slice k. What a caller
sees must be what the sequential path gives: the same documents, the same `each` and `progress`
calls in the same order, the same fallbacks and errors; no thread is left running; at most two
slices are in flight. Text that may nest deep enough to crash yaml-rs goes to PyYAML."""
from __future__ import annotations

import subprocess
import sys
import tempfile
import threading
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from caldera.api import parse
from caldera.errors import InputError

# item texts at column 0, as kubectl prints them; {i} makes each name unique
ITEMS = {
    "plain": "- apiVersion: v1\n  kind: Pod\n  metadata:\n    name: p{i}\n  spec:\n    nodeName: n1\n",
    # read by PyYAML (1.1 boolean, octal, an anchor and its alias): the slice is not a tree
    "risky": "- kind: Pod\n  metadata:\n    name: r{i}\n    labels: &l{i} {{a: yes, b: 0755}}\n  x: *l{i}\n",
    # a column-0 `- ` inside a double-quoted scalar: a slice cut there fails at its end
    "cut": '- kind: Pod\n  metadata:\n    name: c{i}\n    annotations:\n      n: "one\n- two"\n',
    # malformed in the middle of its slice
    "bad": "- kind: Pod\n  metadata: {{name: [\n  spec: x\n- kind: Pod\n  metadata:\n    name: b{i}\n",
}


def list_text(kinds: list[str]) -> str:
    return ("apiVersion: v1\nitems:\n" + "".join(ITEMS[k].format(i=i) for i, k in enumerate(kinds))
            + 'kind: List\nmetadata:\n  resourceVersion: ""\n')


def run(text: str, cpus: int, slice_chars: int, via_file: bool = False) -> tuple[Any, list[Any], list[bool]]:
    """(the documents or the error, the each/progress calls in order, for each yaml-rs parse
    whether it ran on the main thread)."""
    calls: list[Any] = []
    on_main: list[bool] = []
    real = parse._yaml_rs

    def spy(piece: str) -> Any:
        on_main.append(threading.current_thread() is threading.main_thread())
        return real(piece)

    def each(item: Any, tree: bool) -> Any:
        calls.append(("each", item.get("metadata", {}).get("name") if isinstance(item, dict) else item, tree))
        return item

    before = threading.active_count()
    with pytest.MonkeyPatch.context() as mp, tempfile.TemporaryDirectory() as tmp:
        mp.setattr(parse, "SLICE_CHARS", slice_chars)
        mp.setattr(parse, "_cpus", lambda: cpus)
        mp.setattr(parse, "_yaml_rs", spy)
        try:
            if via_file:
                path = Path(tmp) / "l.yaml"
                path.write_text(text)
                got: Any = parse.load_file(str(path), "l.yaml", lambda n: calls.append(("progress", n)), each)
            else:
                got = parse.load_text(text, "l.yaml", lambda n: calls.append(("progress", n)), each)
        except InputError as e:
            got = ("error", str(e))
    assert threading.active_count() == before           # the worker is stopped, whatever happened
    return got, calls, on_main


def pyyaml_outcome(text: str) -> Any:
    try:
        return list(yaml.safe_load_all(text))
    except yaml.YAMLError as e:
        return ("error", f"line {e.problem_mark.line + 1}, column {e.problem_mark.column + 1}")


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.sampled_from(["plain"] * 6 + ["risky", "risky", "cut", "bad"]), min_size=1, max_size=40),
       st.sampled_from([1, 64, 200, 700]), st.booleans())
def test_threaded_slices_read_as_the_sequential_path(kinds, slice_chars, via_file):
    text = list_text(kinds)
    threaded, calls_t, _ = run(text, 2, slice_chars, via_file)
    sequential, calls_s, on_main_s = run(text, 1, slice_chars, via_file)
    assert threaded == sequential
    assert calls_t == calls_s                     # the same items through each, progress in between
    assert all(on_main_s)
    want = pyyaml_outcome(text)
    if isinstance(want, tuple):
        assert threaded[0] == "error" and want[1] in threaded[1], (threaded, want)
    else:
        assert threaded == want


def test_the_worker_parses_the_next_slice():
    """With more than two slices and more than one CPU, yaml-rs runs on the worker thread."""
    text = list_text(["plain"] * 30)
    got, _, on_main = run(text, 2, 64)
    assert got == pyyaml_outcome(text)
    assert on_main.count(False) >= 25, on_main
    _, _, on_main = run(text, 1, 64)               # one CPU: no thread
    assert all(on_main)


def test_two_slices_are_parsed_without_a_thread():
    text = list_text(["plain"] * 2)
    got, calls, on_main = run(text, 2, 1)
    assert got == pyyaml_outcome(text)
    assert on_main == [True, True, True]          # the two slices, then the List's own keys
    assert [c[0] for c in calls] == ["each", "progress", "each", "progress", "progress"]


def test_at_most_two_slices_in_flight():
    """When `each` sees slice k's items, yaml-rs has started on at most slice k+1."""
    started: list[int] = []
    seen: list[tuple[int, int]] = []
    real = parse._yaml_rs

    def spy(piece: str) -> Any:
        started.append(1)
        return real(piece)

    def each(item: Any, tree: bool) -> Any:
        seen.append((int(item["metadata"]["name"][1:]), len(started)))
        return item

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(parse, "SLICE_CHARS", 1)        # one item a slice
        mp.setattr(parse, "_cpus", lambda: 4)
        mp.setattr(parse, "_yaml_rs", spy)
        parse.load_text(list_text(["plain"] * 40), "l.yaml", each=each)
    assert [k for k, _ in seen] == list(range(40))
    assert all(n <= k + 2 for k, n in seen), seen   # (k counts from 0: slice k is the (k+1)-th)


def test_progress_is_told_in_order_and_adds_up_to_the_text():
    text = list_text(["plain", "risky"] * 20)
    reported: list[int] = []
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(parse, "SLICE_CHARS", 100)
        mp.setattr(parse, "_cpus", lambda: 2)
        parse.load_text(text, "l.yaml", reported.append)
    assert len(reported) > 5 and all(n > 0 for n in reported)
    assert sum(reported) == len(text)


def test_a_malformed_slice_stops_the_worker_with_the_files_line(tmp_path):
    kinds = ["plain"] * 20 + ["bad"] + ["plain"] * 20
    text = list_text(kinds)
    want = pyyaml_outcome(text)
    for via_file in (False, True):
        got, calls, on_main = run(text, 2, 100, via_file)
        assert got[0] == "error" and want[1] in got[1] and got[1].startswith("l.yaml: malformed YAML"), got
        assert not all(on_main)
        assert [c[1] for c in calls if c[0] == "each"] == [f"p{i}" for i in range(20)]   # up to the bad slice


def test_an_interrupt_in_each_leaves_no_thread_running():
    before = threading.active_count()
    n = [0]

    def each(item: Any, tree: bool) -> Any:
        n[0] += 1
        if n[0] == 7:
            raise KeyboardInterrupt
        return item

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(parse, "SLICE_CHARS", 1)
        mp.setattr(parse, "_cpus", lambda: 2)
        with pytest.raises(KeyboardInterrupt):
            parse.load_text(list_text(["plain"] * 30), "l.yaml", each=each)
    assert threading.active_count() == before
    assert not [t for t in threading.enumerate() if t.name.startswith("caldera-yaml")]


def read_error_outcome(blocks: list[str], fail_at: int, cpus: int, slice_chars: int) -> tuple[str, list[str]]:
    """`_list_items` over `blocks`, the read of block `fail_at` failing as a file that is not
    UTF-8 there does."""
    seen: list[str] = []
    reads = iter(range(1, len(blocks) + 1))

    def more() -> str:
        i = next(reads, len(blocks))
        if i == fail_at:
            raise UnicodeDecodeError("utf-8", b"\xff", 0, 1, "invalid start byte")
        return blocks[i] if i < len(blocks) else ""

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(parse, "SLICE_CHARS", slice_chars)
        mp.setattr(parse, "_cpus", lambda: cpus)
        try:
            got = parse._list_items(blocks[0], 0, None, lambda it, tree: seen.append(it["metadata"]["name"]) or it,
                                    more)
            return ("whole" if got is None else "items"), seen
        except parse._Malformed as e:
            return e.message(), seen
        except UnicodeDecodeError:
            return "not utf-8", seen


@pytest.mark.parametrize("kind,slice_chars,first", [("bad", 100, "malformed YAML at line 42, column 7"),
                                                     ("cut", 1, "whole")])
def test_a_read_error_comes_after_the_slices_cut_before_it(kind, slice_chars, first):
    """The slices cut before a block is read are parsed before that read's error is seen, as the
    sequential path does: a malformed item (or one cut in the wrong place: the document is then
    read whole) before bytes that are not UTF-8 decides the outcome, wherever the bad bytes are."""
    text = list_text(["plain"] * 6 + [kind] + ["plain"] * 30)
    blocks = [text[i:i + 100] for i in range(0, len(text), 100)]
    outcomes = set()
    for fail_at in range(1, len(blocks)):
        sequential = read_error_outcome(blocks, fail_at, 1, slice_chars)
        assert read_error_outcome(blocks, fail_at, 2, slice_chars) == sequential, fail_at
        outcomes.add(sequential[0].split(":")[0])
    assert outcomes == {"not utf-8", first}


def test_a_document_marker_among_the_items_parses_the_text_whole():
    text = list_text(["plain"] * 60)[:-len('kind: List\nmetadata:\n  resourceVersion: ""\n')]
    text += "---\n- kind: Pod\n  metadata:\n    name: z\n"
    want = pyyaml_outcome(text)
    assert len(want) == 2
    for via_file in (False, True):
        threaded, calls_t, _ = run(text, 2, 100, via_file)
        sequential, calls_s, _ = run(text, 1, 100, via_file)
        assert threaded == sequential == want
        assert calls_t == calls_s


# ---- yaml-rs and deep nesting -------------------------------------------------------------------------

DEEP = "- " * 20000 + "1\n"     # yaml-rs crashes the process (SIGSEGV) on this


@pytest.mark.parametrize("text", [
    "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nx:\n" + DEEP,
    "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nx:\n" + "".join(" " * i + "-\n" + " " * (i + 1) + "a:\n"
                                                                   for i in range(300)) + " " * 300 + "- 1\n",
])
def test_text_too_deep_for_yaml_rs_is_a_one_line_error(tmp_path, text):
    f = tmp_path / "deep.yaml"
    f.write_text(text)
    p = subprocess.run([str(Path(sys.executable).parent / "caldera"), "schedule", "-f", str(f)],
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 2, (p.returncode, p.stderr[-500:])
    assert p.stderr.strip() == f"caldera: error: {f}: nested more than 100 levels deep"


def test_a_deep_item_in_a_threaded_list_is_a_one_line_error():
    code = f"""
from caldera.api import parse
from caldera.errors import InputError
parse.SLICE_CHARS = 64
parse._cpus = lambda: 2
items = "".join(f"- kind: Pod\\n  metadata:\\n    name: p{{i}}\\n" for i in range(20))
text = "apiVersion: v1\\nitems:\\n" + items + "- kind: Pod\\n  x:\\n" + {DEEP!r} + items + "kind: List\\n"
try:
    parse.load_text(text, "l.yaml")
except InputError as e:
    print(e)
"""
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, (p.returncode, p.stderr[-500:])
    assert p.stdout.strip() == "l.yaml: nested more than 100 levels deep"


def test_reading_json_imports_no_yaml_parser():
    code = ("import sys\nfrom caldera.api import parse\n"
            "assert parse.load_text('{\"kind\": \"Pod\", \"x\": [[1]]}', 'p.json') == [{'kind': 'Pod', 'x': [[1]]}]\n"
            "print(sorted(m for m in ('yaml', 'yaml_rs') if m in sys.modules))")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    assert p.stdout.strip() == "[]"
