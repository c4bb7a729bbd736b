"""Loading YAML as hostile input: every refusal names the file and place, in bounded time and memory."""

from __future__ import annotations

import resource
import time

import pytest

from config.errors import ConfigError
from config.loading import MAX_DEPTH, MAX_NODES, load_yaml


def _load(tmp_path, content: bytes | str):
    path = tmp_path / "c.yaml"
    path.write_bytes(content if isinstance(content, bytes) else content.encode())
    return path, lambda: load_yaml(path, "campaign file")


def test_plain_yaml_with_a_few_anchors_loads(tmp_path):
    _, load = _load(tmp_path, "base: &b {speed: 5}\nfirst: *b\nsecond: *b\nlist: [1, 2.5, x]\n")
    assert load() == {"base": {"speed": 5}, "first": {"speed": 5}, "second": {"speed": 5}, "list": [1, 2.5, "x"]}


@pytest.mark.parametrize("content, expected", [
    (b"name: \xff\xfe bad", r"expected a campaign file in UTF-8 text, got byte 0xff at offset 6"),
    ("a: 1\nb: [1, 2\n", r"line \d+, column \d+: expected valid YAML, got a syntax error"),
    ("speed: 5\nname: x\nspeed: 6\n", r"line 3: key 'speed' appears twice in one mapping \(first at line 1\)"),
    ("n: " + "9" * 400 + "\n", r"line 1: expected an integer within 64 bits, got one with 400 digits"),
    ("x: " + "[" * (MAX_DEPTH + 10) + "]" * (MAX_DEPTH + 10) + "\n", rf"line 1: expected at most {MAX_DEPTH} levels of nesting"),
])
def test_broken_files_are_refused_naming_the_place(tmp_path, content, expected):
    path, load = _load(tmp_path, content)
    with pytest.raises(ConfigError, match=rf"^{path}: {expected}"):
        load()


def test_a_billion_laughs_is_refused_quickly_without_memory(tmp_path):
    lines = ['a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    for i, name in enumerate("bcdefghi"):
        prev = "abcdefghi"[i]
        lines.append(f"{name}: &{name} [" + ",".join([f"*{prev}"] * 9) + "]")
    path, load = _load(tmp_path, "\n".join(lines) + "\n")
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    start = time.monotonic()
    with pytest.raises(ConfigError, match=rf"expected at most {MAX_NODES} values with YAML aliases"):
        load()
    assert time.monotonic() - start < 2.0
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before < 50_000  # kB


def test_huge_and_missing_files_are_refused(tmp_path):
    path, load = _load(tmp_path, "x: " + "a" * (2 * 1024 * 1024) + "\n")
    with pytest.raises(ConfigError, match=rf"^{path}: expected a campaign file of at most 1024 kB, got a larger file"):
        load()
    with pytest.raises(ConfigError, match="expected a readable campaign file, got No such file or directory"):
        load_yaml(tmp_path / "missing.yaml", "campaign file")
