"""A big kubectl List parsed a slice of items at a time (api/parse.py `_Slices`, issue 14): what a
caller sees is what PyYAML makes of the whole text: the same documents, `each` over every item in
order, `progress` adding up to the text, the same fallbacks and errors with the file's line
numbers. Slices are parsed one after the other on the calling thread: a worker thread running
yaml-rs on the next slice crashed the interpreter (SIGSEGV). Text that may nest deep enough to
crash yaml-rs goes to PyYAML."""
from __future__ import annotations

import subprocess
import sys
import tempfile
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


def run(text: str, slice_chars: int, via_file: bool = False) -> tuple[Any, list[Any]]:
    """(the documents or the error, the each/progress calls in order)."""
    calls: list[Any] = []

    def each(item: Any, tree: bool) -> Any:
        calls.append(("each", item.get("metadata", {}).get("name") if isinstance(item, dict) else item, tree))
        return item

    with pytest.MonkeyPatch.context() as mp, tempfile.TemporaryDirectory() as tmp:
        mp.setattr(parse, "SLICE_CHARS", slice_chars)
        try:
            if via_file:
                path = Path(tmp) / "l.yaml"
                path.write_text(text)
                got: Any = parse.load_file(str(path), "l.yaml", lambda n: calls.append(("progress", n)), each)
            else:
                got = parse.load_text(text, "l.yaml", lambda n: calls.append(("progress", n)), each)
        except InputError as e:
            got = ("error", str(e))
    return got, calls


def pyyaml_outcome(text: str) -> Any:
    try:
        return list(yaml.safe_load_all(text))
    except yaml.YAMLError as e:
        return ("error", f"line {e.problem_mark.line + 1}, column {e.problem_mark.column + 1}")


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.sampled_from(["plain"] * 6 + ["risky", "risky", "cut", "bad"]), min_size=1, max_size=40),
       st.sampled_from([1, 64, 200, 700]), st.booleans())
def test_sliced_lists_read_as_pyyaml_reads_them_whole(kinds, slice_chars, via_file):
    text = list_text(kinds)
    got, _ = run(text, slice_chars, via_file)
    want = pyyaml_outcome(text)
    if isinstance(want, tuple):
        assert got[0] == "error" and want[1] in got[1], (got, want)
    else:
        assert got == want


def test_many_slices_read_again_and_again():
    """The List of 3,600 one-item slices read three times in one process (a worker thread running
    yaml-rs beside the main thread's slimming crashed the interpreter on this)."""
    code = """
from caldera.api import parse
parse.SLICE_CHARS = 1
text = "apiVersion: v1\\nitems:\\n" + "".join(
    f"- apiVersion: v1\\n  kind: Pod\\n  metadata:\\n    name: p{i}\\n    labels: {{{{a: b}}}}\\n" for i in range(3600))
text += 'kind: List\\nmetadata:\\n  resourceVersion: ""\\n'
for _ in range(3):
    docs = parse.load_text(text, "l.yaml", each=lambda it, tree: dict(it))
    assert len(docs[0]["items"]) == 3600
print("ok")
"""
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert (p.returncode, p.stdout.strip()) == (0, "ok"), (p.returncode, p.stderr[-500:])


def test_progress_is_told_in_order_and_adds_up_to_the_text():
    text = list_text(["plain", "risky"] * 20)
    reported: list[int] = []
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(parse, "SLICE_CHARS", 100)
        parse.load_text(text, "l.yaml", reported.append)
    assert len(reported) > 5 and all(n > 0 for n in reported)
    assert sum(reported) == len(text)


def test_a_malformed_slice_is_an_error_with_the_files_line():
    kinds = ["plain"] * 20 + ["bad"] + ["plain"] * 20
    text = list_text(kinds)
    want = pyyaml_outcome(text)
    for via_file in (False, True):
        got, calls = run(text, 100, via_file)
        assert got[0] == "error" and want[1] in got[1] and got[1].startswith("l.yaml: malformed YAML"), got
        assert [c[1] for c in calls if c[0] == "each"] == [f"p{i}" for i in range(20)]   # up to the bad slice


def test_a_document_marker_among_the_items_parses_the_text_whole():
    text = list_text(["plain"] * 60)[:-len('kind: List\nmetadata:\n  resourceVersion: ""\n')]
    text += "---\n- kind: Pod\n  metadata:\n    name: z\n"
    want = pyyaml_outcome(text)
    assert len(want) == 2
    for via_file in (False, True):
        got, _ = run(text, 100, via_file)
        assert got == want


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


def test_a_deep_item_in_a_sliced_list_is_a_one_line_error():
    code = f"""
from caldera.api import parse
from caldera.errors import InputError
parse.SLICE_CHARS = 64
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
