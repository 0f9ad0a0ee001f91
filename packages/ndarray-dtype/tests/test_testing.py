"""zarr_ndarray_dtype.testing: README examples taken out, scripts run, entry points checked."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from zarr_ndarray_dtype import NDArray
from zarr_ndarray_dtype.testing import (
    assert_entry_point,
    assert_printed_as_commented,
    readme_examples,
    run_script,
    zarr_private_uses,
)


def test_readme_examples_takes_the_python_blocks_in_order(tmp_path: Path) -> None:
    readme = tmp_path / "README.md"
    readme.write_text(
        "# Title\n\n```python\nx = 1\n```\n\n```bash\nls\n```\n\n"
        "text\n\n```python\nprint(2)\n```\n",
        encoding="utf-8",
    )
    assert readme_examples(readme) == {"block0": "x = 1\n", "block1": "print(2)\n"}


def test_readme_examples_of_a_readme_without_any(tmp_path: Path) -> None:
    readme = tmp_path / "README.md"
    readme.write_text("# Title\n\n```\nplain\n```\n", encoding="utf-8")
    assert readme_examples(readme) == {}


def test_run_script_returns_what_it_printed(tmp_path: Path) -> None:
    done = run_script("import warnings\nwarnings.warn('hidden')\nprint(6 * 7)\n", tmp_path)
    assert done.stdout == "42\n"
    assert done.stderr == ""
    assert (tmp_path / "script.py").is_file()


def test_run_script_dedents_and_runs_in_cwd(tmp_path: Path) -> None:
    done = run_script(
        """
        import os
        print(os.getcwd())
        """,
        tmp_path,
    )
    assert Path(done.stdout.strip()).resolve() == tmp_path.resolve()


def test_run_script_raises_with_the_error_of_a_failing_example(tmp_path: Path) -> None:
    with pytest.raises(AssertionError, match=r"(?s)exited with 1:\n.*ZeroDivisionError"):
        run_script("1 / 0\n", tmp_path)


def test_run_script_gives_up_after_the_timeout(tmp_path: Path) -> None:
    with pytest.raises(subprocess.TimeoutExpired):
        run_script("import time\ntime.sleep(30)\n", tmp_path, timeout=0.5)


def test_assert_printed_as_commented_compares_each_commented_print_in_order() -> None:
    code = 'print(1 + 1)  # 2\nx = 3\nprint("a".upper())  # A: a remark after the colon\n'
    assert_printed_as_commented(code, "2\nA\n")
    with pytest.raises(AssertionError, match="'3'"):
        assert_printed_as_commented(code, "3\nA\n")
    with pytest.raises(ValueError):  # a commented print that printed nothing
        assert_printed_as_commented(code, "2\n")


def test_assert_entry_point_accepts_the_declared_one() -> None:
    assert_entry_point("zarr.data_type", "ndarray", "zarr_ndarray_dtype:NDArray", NDArray)


@pytest.mark.parametrize(
    ("group", "name", "value", "target", "message"),
    [
        ("zarr.data_type", "no-such-type", "m:C", NDArray, "0 entry points 'no-such-type'"),
        (
            "zarr.data_type",
            "ndarray",
            "zarr_ndarray_dtype:Other",
            NDArray,
            "not 'zarr_ndarray_dtype:Other'",
        ),
        ("zarr.data_type", "ndarray", "zarr_ndarray_dtype:NDArray", object, "loads <class"),
    ],
)
def test_assert_entry_point_refuses_what_differs(
    group: str, name: str, value: str, target: object, message: str
) -> None:
    with pytest.raises(AssertionError, match=message):
        assert_entry_point(group, name, value, target)


def test_zarr_private_uses_finds_reads_imports_overrides_and_foreign_stores(tmp_path: Path) -> None:
    (tmp_path / "_compat.py").write_text("def shard(codec):\n    return codec._shard_index_size\n")
    (tmp_path / "glue.py").write_text(
        "from zarr.abc.codec import ArrayBytesCodec\n"
        "from zarr.core.array import _build_parents\n"
        "class Codec(ArrayBytesCodec):\n"
        "    async def _decode_single(self, data, spec):  # a listed subclass hook\n"
        "        return data\n"
        "    def _get_index_chunk_spec(self, shape):  # overrides another private member\n"
        "        return shape\n"
        "def patch(array):\n"
        "    array._async_array = None  # a store into zarr's object is a use too\n"
        "    return array._async_array\n"
    )
    outside = zarr_private_uses(tmp_path)
    assert sorted(outside) == [
        "glue.py:10 _async_array",
        "glue.py:2 _build_parents",
        "glue.py:6 _get_index_chunk_spec",
        "glue.py:9 _async_array",
    ], outside
    assert zarr_private_uses(tmp_path, inside=True) == ["_compat.py:2 _shard_index_size"]
