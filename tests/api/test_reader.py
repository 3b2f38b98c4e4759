"""Reading manifests (api/reader.py, api/parse.py): the fast paths read what PyYAML and json
read; errors name the file and line; nesting depth is limited; a kubectl List is read in slices;
unread Pod fields are dropped; the progress bar stays off a non-terminal."""
from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from caldera.api import parse, reader
from caldera.cli.main import cli
from caldera.errors import InputError

CALDERA = str(Path(sys.executable).parent / "caldera")
NODE = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"},
        "status": {"allocatable": {"cpu": "2", "memory": "4Gi", "pods": "10"}}}


def schedule(*args: str, stdin: str | None = None):
    return CliRunner().invoke(cli, ["schedule", *args], input=stdin)


def one_line_error(result, *needles: str) -> str:
    assert result.exit_code == 2, (result.exit_code, result.output)
    err = result.stderr.strip()
    assert "Traceback" not in err and len(err.splitlines()) == 1, err
    for n in needles:
        assert n in err, err
    return err


def pyyaml_docs(text: str) -> list:
    return list(yaml.safe_load_all(text))


# ---- what documents mean: PyYAML's YAML 1.1 -------------------------------------------------

@pytest.mark.parametrize("text", [
    "a: yes\nb: no\nc: on\nd: Off\n",                         # 1.1 booleans
    "a: 0755\nb: 0x1F\nc: 1_000\nd: 1:20\ne: 0b101\n",          # 1.1 integers
    "a: 1e3\nb: 1.5e+3\nc: .inf\nd: -.5\ne: .5\n",               # strings or floats as 1.1 reads them
    "a: 2025-01-01\nb: 2025-01-01T00:00:00Z\nc: '2025-01-01'\n",   # unquoted timestamps are datetimes
    "base: &b {x: 1}\nd:\n  <<: *b\n  y: 2\n",                  # anchors, aliases, merge keys
    "a: ~\nb: null\nc:\nd: ''\ne: \"\"\n",
    "a: |\n  x\n  y\nb: >-\n  x\n  y\nc: |\n",                  # block scalars, an empty one
    "a: \"\\x41\\u00e9\\N\\_\"\nb: 'it''s'\n",
    "a: 1\na: 2\n",                                              # duplicate keys: the last wins
    "80: http\n1.5: x\ntrue: t\n",                               # non-string keys
    "- a\n- 1\n- {b: [1, 2]}\n",
    "a: 1\n---\nb: 2\n---\n",                                    # several documents, an empty one
    "# only a comment\n",
    "---\n# c\n---\na: 1\n",
    "%YAML 1.1\n---\na: yes\n",
    "a: x\r\nb: y\r\n",
])
def test_yaml_reads_as_pyyaml_did(text):
    assert parse.load_text(text, "m.yaml") == pyyaml_docs(text)


@pytest.mark.parametrize("text", [
    '{"a": 1, "a": 2}',                                          # duplicate keys: the last wins
    '{"a": NaN, "b": Infinity}',
    '{"big": 123456789012345678901234567890}',
    '[{"kind": "Pod"}, {"kind": "Node"}]',                       # an array's elements are documents
])
def test_json_reads_as_json_did(text):
    want = json.loads(text)
    got = parse.load_text(text, "m.json")
    assert json.dumps(got) == json.dumps(want if isinstance(want, list) else [want])


def test_json_that_is_not_json_is_read_as_yaml():
    assert parse.load_text("{a: 1, b: [x, yes]}", "m.json") == [{"a": 1, "b": ["x", True]}]


# ---- errors ---------------------------------------------------------------------------------

def test_malformed_yaml_names_file_and_line(tmp_path):
    f = tmp_path / "m.yaml"
    f.write_text("apiVersion: v1\nkind: Node\nmetadata: {name: [\n")
    err = one_line_error(schedule("-f", str(f)), str(f), "malformed YAML at line", "column")
    assert "line 4" in err or "line 3" in err


def test_malformed_json_falls_back_to_the_yaml_message(tmp_path):
    f = tmp_path / "m.json"
    f.write_text('{"apiVersion": "v1",\n "kind": "Node",\n "metadata": {"name": "n1"\n')
    one_line_error(schedule("-f", str(f)), str(f), "malformed YAML at line")


def test_error_in_a_sliced_list_has_the_line_of_the_file(tmp_path, monkeypatch):
    """A List read in slices words an error with the line in the file, as a whole parse does."""
    monkeypatch.setattr(parse, "SLICE_CHARS", 200)
    items = "".join(f"- apiVersion: v1\n  kind: Pod\n  metadata:\n    name: p{i}\n" for i in range(40))
    bad = items + "- apiVersion: v1\n  kind: Pod\n  metadata: {name: [\n  spec: x\n" + items
    text = f"apiVersion: v1\nitems:\n{bad}kind: List\nmetadata:\n  resourceVersion: \"\"\n"
    with pytest.raises(yaml.YAMLError) as e:
        list(yaml.safe_load_all(text))
    want = f"line {e.value.problem_mark.line + 1}, column {e.value.problem_mark.column + 1}"
    with pytest.raises(InputError) as got:
        parse.load_text(text, "big.yaml")
    assert want in str(got.value) and str(got.value).startswith("big.yaml: malformed YAML")


@pytest.mark.parametrize("name,text", [
    ("flow.yaml", "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nx: " + "[" * 600 + "]" * 600 + "\n"),
    ("block.yaml", "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nx:\n"
     + "".join("  " * (i + 1) + "a:\n" for i in range(600)) + "  " * 601 + "1\n"),
    ("seq.yaml", "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nx:\n" + "- " * 600 + "1\n"),
    ("deep.json", '{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "x": '
     + "[" * 600 + "]" * 600 + "}"),
    ("deeper.json", '{"kind": "Pod", "x": ' + "[" * 5000 + "]" * 5000 + "}"),
    ("list.json", json.dumps({"kind": "List", "items": [NODE, {"kind": "Pod", "x": [[[[]]]]}]})[:-2]
     + ', {"x": ' + "[" * 300 + "]" * 300 + "}]}"),
])
def test_deep_nesting_is_a_one_line_error(tmp_path, name, text):
    f = tmp_path / name
    f.write_text(text)
    one_line_error(schedule("-f", str(f)), str(f), "nested more than 100 levels deep")


def test_deep_nesting_in_a_subprocess_exits_2(tmp_path):
    f = tmp_path / "deep.yaml"
    f.write_text("apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nx: " + "[" * 600 + "]" * 600 + "\n")
    p = subprocess.run([CALDERA, "schedule", "-f", str(f)], capture_output=True, text=True, timeout=60)
    assert p.returncode == 2 and "Traceback" not in p.stderr
    assert p.stderr.strip() == f"caldera: error: {f}: nested more than 100 levels deep"


def test_nesting_up_to_the_limit_is_read():
    ok = {"x": 1}
    for _ in range(parse.MAX_DEPTH - 1):
        ok = {"x": ok}
    assert parse.load_text(json.dumps(ok), "m.json") == [ok]
    assert parse.load_text(yaml.safe_dump(ok), "m.yaml") == [ok]
    with pytest.raises(InputError, match="nested more than 100"):
        parse.load_text(json.dumps({"y": ok}), "m.json")
    with pytest.raises(InputError, match="nested more than 100"):
        parse.load_text(yaml.safe_dump({"y": ok}), "m.yaml")


def test_aliases_that_make_a_cycle_are_too_deep_and_a_shared_alias_tree_is_fine():
    with pytest.raises(InputError, match="nested more than 100 levels deep"):
        parse.load_text("kind: Pod\na: &x [*x]\n", "c.yaml")
    bomb = "a: &a [1]\n" + "".join(f"{n}: &{n} [{', '.join(['*' + p] * 9)}]\n"
                                     for p, n in zip("abcdefg", "bcdefgh"))
    assert parse.load_text(bomb, "b.yaml")[0]["a"] == [1]     # 9**7 leaves, walked once a level


def test_check_depth_helper():
    parse.check_depth({"a": [1, {"b": []}]}, "c.yaml", limit=4)       # dict, list, dict, list
    with pytest.raises(InputError, match=r"^c.yaml: nested more than 3 levels deep$"):
        parse.check_depth({"a": [1, {"b": []}]}, "c.yaml", limit=3)


@settings(max_examples=150, deadline=None)
@given(st.recursive(st.none() | st.integers() | st.text(alphabet='ab"[]{}\\', max_size=4),
                    lambda c: st.lists(c, max_size=3) | st.dictionaries(st.text(alphabet='k"[', max_size=3), c,
                                                                            max_size=3), max_leaves=30))
def test_json_depth_from_text_is_the_depth_of_the_objects(obj):
    data = json.dumps(obj).encode()
    depth = parse.json_depth(data)
    if depth is None:
        assert b'\\"' in data
        return
    for limit in range(depth + 2):
        assert parse.depth_exceeds(obj, limit) == (depth > limit)


# ---- kubectl Lists, read in slices ----------------------------------------------------------

def kubectl_list(objs: list[dict]) -> str:
    from benchmarks.load_dump import _emit_seq
    out: list[str] = []
    _emit_seq(objs, 0, out)
    return "apiVersion: v1\nitems:\n" + "".join(out) + 'kind: List\nmetadata:\n  resourceVersion: ""\n'


_scalar = (st.none() | st.booleans() | st.integers(-10**6, 10**6)
           | st.sampled_from(["yes", "0755", "1e3", "2025-01-01", "10.0.0.1", "- x", "a: b", "*x", "&a", "!t",
                              "line\n- not an item", "{a: 1}", "'q'", '"dq"', "x #c", "~", "", " lead", "ünï"])
           | st.text(max_size=12))
_objects = st.recursive(_scalar, lambda c: st.lists(c, max_size=3)
                        | st.dictionaries(st.text(alphabet="abcxyz-./", min_size=1, max_size=6), c, max_size=4),
                        max_leaves=12)
_items = st.lists(st.fixed_dictionaries({"kind": st.sampled_from(["Pod", "Node", "Service"]),
                                         "metadata": st.fixed_dictionaries({"name": st.text(min_size=1, max_size=8)}),
                                         "spec": _objects}), min_size=1, max_size=25)


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_items, st.sampled_from([1, 64, 300, 1 << 21]))
def test_sliced_list_reads_as_a_whole_parse(items, slice_chars):
    text = kubectl_list(items)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(parse, "SLICE_CHARS", slice_chars)
        assert parse.load_text(text, "l.yaml") == pyyaml_docs(text)


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_items, st.sampled_from([24, 64, 300]), st.sampled_from(["", "# trailing comment\n", "extra: [1]\n"]))
def test_a_list_read_from_the_file_a_block_at_a_time_reads_as_a_whole_parse(items, slice_chars, tail):
    """parse.load_file reads a big List a block of SLICE_CHARS at a time (items cut across
    blocks, the List's own keys after them)."""
    import tempfile
    text = kubectl_list(items) + tail
    with tempfile.TemporaryDirectory() as tmp, pytest.MonkeyPatch.context() as mp:
        path = Path(tmp) / "l.yaml"
        path.write_text(text)
        mp.setattr(parse, "SLICE_CHARS", slice_chars)
        blocks: list[int] = []
        real = parse._list_items

        def spy(text, line0, progress, each, more=parse._no_more):
            blocks.append(len(text))
            return real(text, line0, progress, each, more)
        mp.setattr(parse, "_list_items", spy)
        assert parse.load_file(str(path), "l.yaml") == pyyaml_docs(text)
        if len(text) > 4 * slice_chars:
            assert blocks[0] == slice_chars             # the file was read a block at a time


def test_an_error_in_a_list_read_a_block_at_a_time_has_the_line_of_the_file(tmp_path, monkeypatch):
    monkeypatch.setattr(parse, "SLICE_CHARS", 100)
    items = "".join(f"- apiVersion: v1\n  kind: Pod\n  metadata:\n    name: p{i}\n" for i in range(40))
    text = f"apiVersion: v1\nitems:\n{items}- kind: Pod\n  metadata: {{name: p]}}\n{items}kind: List\n"
    with pytest.raises(yaml.YAMLError) as e:
        list(yaml.safe_load_all(text))
    f = tmp_path / "l.yaml"
    f.write_text(text)
    with pytest.raises(InputError) as got:
        parse.load_file(str(f), str(f))
    assert f"line {e.value.problem_mark.line + 1}, column {e.value.problem_mark.column + 1}" in str(got.value)


def test_a_file_that_is_not_utf8_is_a_one_line_error(tmp_path, monkeypatch):
    monkeypatch.setattr(parse, "SLICE_CHARS", 64)
    f = tmp_path / "l.yaml"
    f.write_bytes(kubectl_list([{"kind": "Pod", "metadata": {"name": f"p{i}"}} for i in range(30)]).encode()
                  + b"# \xff\xfe\n")
    one_line_error(schedule("-f", str(f)), str(f), "cannot read", "utf-8")


def test_a_column_0_dash_inside_a_quoted_scalar_is_not_an_item(monkeypatch):
    """PyYAML takes a double-quoted scalar's continuation line at column 0; the slice cut there
    fails at its end and the document is parsed whole."""
    monkeypatch.setattr(parse, "SLICE_CHARS", 1)
    text = ('apiVersion: v1\nitems:\n- kind: Pod\n  metadata:\n    name: a\n    annotations:\n      n: "one\n'
            '- two"\n- kind: Pod\n  metadata:\n    name: b\nkind: List\n')
    docs = parse.load_text(text, "l.yaml")
    assert docs == pyyaml_docs(text)
    assert [i["metadata"]["name"] for i in docs[0]["items"]] == ["a", "b"]


def test_slices_go_through_each_as_they_are_parsed(monkeypatch):
    monkeypatch.setattr(parse, "SLICE_CHARS", 1)
    seen: list[str] = []
    text = kubectl_list([{"kind": "Pod", "metadata": {"name": f"p{i}"}} for i in range(5)])
    parse.load_text(text, "l.yaml", each=lambda it, tree: seen.append(it["metadata"]["name"]) or it)
    assert seen == [f"p{i}" for i in range(5)]


# ---- the fast path agrees with PyYAML on what `risky` lets through ------------------------------

_WORDS = ["a", "name", "x y", "k8s.io/x", "10.0.0.1", "v1", "é", "a-b", "x:y", "1", "42", "-3", "1.5", "true", "false",
          "null", "~", "500m", "64Mi", "0", "", "yes", "0755", "1e3", "_1", "1:20", ".inf", "2025-01-01", "=", "<<",
          "?", "- x", ":x", "x?", "|", ">", "&a", "*a", "!t", "@x", "%x", "0x1F", "1_000", "+1", ".5", "08"]
_ESC = ["\\n", "\\t", "\\x41", "\\u00e9", "\\\\", '\\"', "\\N", "\\_", "\\L", "\\P", "\\e", "\\0", "\\/", "\\"]


def _gen_scalar(r, ind: int, flow: bool) -> str:
    x = r.random()
    w = r.choice(_WORDS)
    if x < 0.6:
        return w
    if x < 0.7 and w and not flow:
        return w + "\n" + " " * (ind + r.choice((0, 1, 2))) + r.choice(_WORDS)
    if x < 0.85:
        s = "".join(r.choice(_WORDS + _ESC) for _ in range(r.randint(0, 3)))
        if r.random() < 0.3:
            s += "\n" + " " * r.choice((0, ind, ind + 2)) + r.choice(_WORDS)
        return '"' + s + '"'
    s = "".join(r.choice(_WORDS) for _ in range(r.randint(0, 3))).replace("'", "''")
    if r.random() < 0.3:
        s += "\n" + " " * r.choice((0, ind, ind + 2)) + r.choice(_WORDS).replace("'", "")
    return "'" + s + "'"


def _gen_flow(r, d: int, ind: int) -> str:
    if d > 2 or r.random() < 0.6:
        return _gen_scalar(r, ind, True)
    sep = r.choice([", ", ",", ",\n" + " " * (ind + 2)])
    if r.random() < 0.5:
        return "[" + sep.join(_gen_flow(r, d + 1, ind) for _ in range(r.randint(0, 3))) + "]"
    return "{" + sep.join(f"{_gen_scalar(r, ind, True)}: {_gen_flow(r, d + 1, ind)}"
                          for _ in range(r.randint(0, 3))) + "}"


def _gen_block(r, ind: int, d: int) -> str:
    pad, out = " " * ind, []
    if r.random() < 0.5:
        for _ in range(r.randint(1, 4)):
            k = r.choice(_WORDS[:12]) if r.random() < 0.7 else _gen_scalar(r, ind, True)
            x = r.random()
            if x < 0.5 or d > 3:
                out.append(f"{pad}{k}: {_gen_flow(r, 0, ind)}{r.choice(['', '', ' # c'])}")
            elif x < 0.6:
                out.append(f"{pad}{k}:")
            else:
                out.append(f"{pad}{k}:\n" + _gen_block(r, ind + r.choice((0, 2, 4)), d + 1))
    else:
        for _ in range(r.randint(1, 4)):
            x = r.random()
            if x < 0.5 or d > 3:
                out.append(f"{pad}- {_gen_flow(r, 0, ind + 2)}")
            elif x < 0.7:
                out.append(f"{pad}- " + _gen_block(r, ind + 2, d + 1).lstrip(" "))
            else:
                out.append(f"{pad}-\n" + _gen_block(r, ind + r.choice((1, 2)), d + 1))
    return "\n".join(out)


@settings(max_examples=400, deadline=None)
@given(st.randoms(use_true_random=False))
def test_yaml_rs_reads_what_risky_passes_as_pyyaml_does(r):
    """Generated YAML (tricky tokens, quoting, escapes, multi-line scalars, flow and block
    collections): whatever `risky` lets yaml-rs read, yaml-rs reads as PyYAML does, or refuses."""
    text = _gen_block(r, 0, 0) + "\n"
    if parse.risky(text):
        return
    import yaml_rs
    try:
        fast = yaml_rs.loads(text, parse_datetime=False, duplicate_key_policy=yaml_rs.DuplicateKeyPolicy.LastWins)
    except yaml_rs.YAMLDecodeError:
        return                       # PyYAML decides
    slow = yaml.safe_load(text)      # PyYAML must accept what yaml-rs accepts here
    assert repr(fast) == repr(slow)  # types too (1 vs True vs 1.0)


@pytest.mark.parametrize("token,is_risky", [
    ("yes", True), ("No", True), ("0755", True), ("1e3", True), ("_1", True), ("1:20", True), (".inf", True),
    ("2025-01-01", True), ("<<", True), ("&a", True), ("*a", True), ("!t", True), ("|", True), (":x", True),
    ("12", False), ("-3", False), ("1.5", False), ("10.0.0.1", False), ("64Mi", False), ("500m", False),
    ("v1.2.3", False), ("true", False), ("null", False), ("name", False), ("node-1", False),
])
def test_risky_tokens(token, is_risky):
    for text in (f"k: {token}\n", f"- {token}\n", f"[a, {token}]\n"):
        assert parse.risky(text) == is_risky, text


# ---- what the reader keeps of a Pod -----------------------------------------------------------

def pod_doc(**meta) -> dict:
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "p", "managedFields": [{"x": 1}], "ownerReferences": [{"kind": "ReplicaSet"}],
                         **meta},
            "spec": {"securityContext": {}, "restartPolicy": "Always", "serviceAccountName": "sa",
                     "containers": [{"name": "c", "image": "i", "env": [{"name": "A"}],
                                     "livenessProbe": {}, "volumeMounts": [],
                                     "resources": {"requests": {"cpu": "1"}}}],
                     "initContainers": [{"name": "i", "command": ["x"], "restartPolicy": "Always"}],
                     "volumes": [{"name": "token", "projected": {"sources": []}}, {"name": "cm", "configMap": {}},
                                 {"name": "data", "persistentVolumeClaim": {"claimName": "d"}}]},
            "status": {"phase": "Running", "podIPs": [{"ip": "1.2.3.4"}], "containerStatuses": [{}],
                       "conditions": [{"type": "DisruptionTarget", "status": "True"}]}}


@pytest.mark.parametrize("layout", ["docs", "list"])
def test_unread_pod_fields_are_dropped(tmp_path, layout, monkeypatch):
    monkeypatch.setattr(parse, "SLICE_CHARS", 1)
    objs = [pod_doc(), pod_doc(name="q", deletionTimestamp="2025-01-01T00:00:00Z"), NODE]
    f = tmp_path / "m.yaml"
    f.write_text(kubectl_list(objs) if layout == "list" else yaml.safe_dump_all(objs))
    docs = [d for _, _, d in reader.read_documents([str(f)])]
    p, q, n = docs
    # ownerReferences stay: PodTopologySpread's default selector reads the pod's controller
    assert p["metadata"] == {"name": "p", "ownerReferences": [{"kind": "ReplicaSet"}]}
    assert set(p["spec"]) == {"containers", "initContainers", "volumes"}
    assert p["spec"]["volumes"] == [{"name": "data", "persistentVolumeClaim": {"claimName": "d"}}]
    assert p["spec"]["containers"] == [{"name": "c", "image": "i", "resources": {"requests": {"cpu": "1"}}}]
    assert p["spec"]["initContainers"] == [{"name": "i", "restartPolicy": "Always"}]
    assert p["status"] == {"phase": "Running"}                 # conditions only on a terminating pod
    assert q["status"]["conditions"] == [{"type": "DisruptionTarget", "status": "True"}]
    assert n == NODE


def test_a_sliced_list_shares_equal_strings(tmp_path, monkeypatch):
    monkeypatch.setattr(parse, "SLICE_CHARS", 1)
    monkeypatch.setattr(reader, "SHARE_FROM_BYTES", 0)     # (only big files, by default)
    f = tmp_path / "m.yaml"
    f.write_text(kubectl_list([{**NODE, "metadata": {"name": f"n{i}", "labels": {"zone": "z1"}}} for i in range(3)]))
    docs = [d for _, _, d in reader.read_documents([str(f)])]
    a, b = (next(iter(d["metadata"]["labels"].items())) for d in docs[:2])
    assert a[0] is b[0] and a[1] is b[1]


# ---- progress ---------------------------------------------------------------------------------

def test_no_progress_bar_off_a_terminal(tmp_path):
    f = tmp_path / "m.json"
    f.write_text(json.dumps({"kind": "List", "items": [NODE]}))
    res = CliRunner().invoke(cli, ["schedule", "-f", str(f), "-o", "json"])
    assert res.exit_code == 0 and res.stderr == ""
    from caldera.cli import progress
    with progress.loading(enabled=False):
        assert reader._progress.get() is None


def test_progress_bar_on_a_terminal_reports_the_bytes_read(tmp_path, monkeypatch):
    from rich.console import Console

    from caldera.cli import progress
    monkeypatch.setattr(parse, "SLICE_CHARS", 50)
    f = tmp_path / "m.yaml"
    f.write_text(kubectl_list([{**NODE, "metadata": {"name": f"n{i}"}} for i in range(20)]))
    out = io.StringIO()
    bar = progress.LoadProgress(Console(file=out, force_terminal=True, width=100), delay=0)
    calls: list[tuple[int, int]] = []
    with reader.reading_progress(lambda s, d, t: (calls.append((d, t)), bar(s, d, t))):
        reader.read_documents([str(f)])
    bar.close()
    size = len(f.read_text())
    assert calls[-1] == (size, size) and len(calls) > 2
    assert str(f) in out.getvalue()
