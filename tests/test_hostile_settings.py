"""Hostile evalsite.toml: what would take tomllib unbounded memory, recursion or an integer Python
refuses to read is one line naming the file, for every command (they all read the settings
first), and the file is left as it was."""

from __future__ import annotations

import pytest

from evalsite.project import MAX_KEY_PARTS

SHAPES = {
    "a 5,000-digit integer": ("x = " + "9" * 5_000, "an integer of more than 4,300 digits"),
    "arrays 100,000 deep": ("x = " + "[" * 100_000 + "]" * 100_000, "arrays or tables nested too deeply"),
    "inline tables 3,000 deep": ("x = " + "{a=" * 3_000 + "1" + "}" * 3_000, "arrays or tables nested too deeply"),
    # 20,000 parts took tomllib 1.6 GB and 8 s; 100,000 parts, a 200 KB file, more memory than the machine has
    "a dotted key of 100,000 parts": ("a" + ".a" * 100_000 + " = 1", f"a dotted key of more than {MAX_KEY_PARTS} parts"),
    "a table header of 100,000 parts": ("[" + "a." * 100_000 + "a]", f"a dotted key of more than {MAX_KEY_PARTS} parts"),
    "an inline table's key": ("x = {b = 1, " + "a." * 100_000 + "a = 1}", f"a dotted key of more than {MAX_KEY_PARTS} parts"),
    "quoted parts": ('"a"' + '."a"' * 100_000 + " = 1", f"a dotted key of more than {MAX_KEY_PARTS} parts"),
}


@pytest.mark.parametrize("shape", SHAPES)
def test_hostile_settings_are_one_line_naming_the_file(example_project, cli, shape):
    text, problem = SHAPES[shape]
    settings = example_project / "evalsite.toml"
    settings.write_text(text + "\n", encoding="utf-8")
    for command in (["runs"], ["validate"], ["build"]):
        result = cli(*command)
        assert result.exit_code != 0, command
        assert result.output.strip().splitlines() == [f"Error: {settings}: invalid TOML: {problem}"], command
    assert settings.read_text(encoding="utf-8") == text + "\n"


def test_keys_of_many_parts_and_long_dotted_text_within_the_bound_are_read(example_project, cli):
    key = ".".join(["a"] * MAX_KEY_PARTS)  # read, then reported as an unknown table
    (example_project / "evalsite.toml").write_text(
        f'{key} = 1\n[site]\ntitle = "{"v1." * 5_000}"\n', encoding="utf-8")
    result = cli("runs")
    assert result.exit_code == 0, result.output
    assert "unknown table [a]" in result.output
