"""The hooks into zarr: serializer selection without ``serializer=``, and stepping aside safely."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest
import zarr
import zarr.core.array
from packaging.version import Version
from zarr.codecs import BytesCodec

from zarr_ndarray_dtype import (
    FillValueError,
    HookWarning,
    MetadataError,
    NDArrayDTypeError,
    _hooks,
    register,
)
from zarr_ndarray_dtype import (
    NDArrayDType as NDArray,
)


def test_fixed_patterns_default_to_little_endian_bytes() -> None:
    arr = zarr.create_array(store={}, shape=(2,), dtype=NDArray(dtype="float32", shape=(2, 2)))
    assert isinstance(arr.metadata.codecs[0], BytesCodec)
    assert arr.metadata.codecs[0].to_dict() == {
        "name": "bytes",
        "configuration": {"endian": "little"},
    }


@pytest.mark.parametrize("shape", [(None, None), (2, None), (None, 3, None)])
def test_other_variable_patterns_without_the_codec_name_the_package(
    shape: tuple, monkeypatch: pytest.MonkeyPatch
) -> None:
    def unknown(name: str) -> None:
        raise KeyError(name)

    monkeypatch.setattr(zarr.registry, "get_codec_class", unknown)
    store: dict = {}
    with pytest.raises(
        NDArrayDTypeError,
        match=re.escape("pip install ./packages/ndarray-dtype ./packages/ragged-ndarray-codec "),
    ) as info:
        zarr.create_array(store=store, shape=(2,), dtype=NDArray(dtype="int8", shape=shape))
    assert "serializer=zarr_ragged_ndarray.RaggedNDArrayCodec()" in str(info.value)
    assert not store


@pytest.mark.parametrize("shape", [(None, None), (2, None), (None, 3, None)])
def test_other_variable_patterns_pick_the_registered_ragged_codec(shape: tuple) -> None:
    pytest.importorskip("zarr_ragged_ndarray")
    codec = zarr.core.array.default_serializer_v3(NDArray(dtype="float32", shape=shape))
    assert codec.to_dict()["name"] == "ragged-ndarray"
    arr = zarr.create_array(store={}, shape=(2,), dtype=NDArray(dtype="int8", shape=shape))
    assert arr.metadata.to_dict()["codecs"][0]["name"] == "ragged-ndarray"


def test_leading_variable_pattern_without_the_codec_names_the_package(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def unknown(name: str) -> None:
        raise KeyError(name)

    monkeypatch.setattr(zarr.registry, "get_codec_class", unknown)
    store: dict = {}
    with pytest.raises(
        NDArrayDTypeError,
        match=re.escape("pip install ./packages/ndarray-dtype ./packages/vlen-ndarray-codec "),
    ) as info:
        zarr.create_array(store=store, shape=(2,), dtype=NDArray(dtype="float32", shape=(None, 2)))
    assert "serializer=zarr_vlen_ndarray.VlenNDArrayCodec()" in str(info.value)
    assert not store


def test_leading_variable_pattern_picks_the_registered_vlen_codec() -> None:
    pytest.importorskip("zarr_vlen_ndarray")
    codec = zarr.core.array.default_serializer_v3(NDArray(dtype="float32", shape=(None, 2)))
    assert codec.to_dict()["name"] == "vlen-ndarray"


def test_every_hook_is_installed_on_every_supported_zarr() -> None:
    """At most five zarr functions are replaced (the table in _hooks.TARGETS), every one on
    every supported release."""
    installed = _hooks.installed()
    assert len(installed) == 5 and all(installed.values()), installed


# --------------------------------------------------------------- codecs that cannot serve ndarray


def _vlen_bytes() -> object:
    from zarr.codecs import VLenBytesCodec

    with warnings.catch_warnings():  # zarr 3.1.x: "not part of the Zarr format 3 specification"
        warnings.simplefilter("ignore", UserWarning)
        return VLenBytesCodec()


@pytest.mark.parametrize("sharded", [False, True], ids=["plain", "inside-sharding"])
def test_vlen_bytes_is_refused_at_creation(sharded: bool) -> None:
    """SPEC 1.6/1: zarr would accept it, read raw bytes and fail on the first write."""
    store: dict = {}
    with pytest.raises(MetadataError, match=r"'vlen-bytes' codec cannot serve .* \(SPEC 1\.6/1\)"):
        zarr.create_array(
            store=store,
            shape=(4,),
            chunks=(2,),
            shards=(4,) if sharded else None,
            dtype=NDArray(dtype="float32", shape=(None, 2)),
            serializer=_vlen_bytes(),
        )
    assert not store


@pytest.mark.filterwarnings("ignore:The codec `vlen-bytes` is currently not part")
def test_vlen_bytes_is_refused_when_opening(tmp_path: Path) -> None:
    pytest.importorskip("zarr_vlen_ndarray")  # writes the [null] array first
    arr = zarr.create_array(tmp_path, shape=(2,), dtype=NDArray(dtype="int16", shape=(None,)))
    arr[0] = np.array([1, 2], np.int16)
    meta = json.loads((tmp_path / "zarr.json").read_text())
    meta["codecs"][0] = {"name": "vlen-bytes", "configuration": {}}
    (tmp_path / "zarr.json").write_text(json.dumps(meta))
    with pytest.raises(MetadataError, match=r"downgrade the store .* \(SPEC 1\.6/1\)"):
        zarr.open_array(tmp_path, mode="r")


@pytest.mark.filterwarnings("ignore:.*does not have a Zarr V3 specification")
@pytest.mark.filterwarnings("ignore:The codec `vlen-bytes` is currently not part")
def test_plain_zarr_keeps_its_codecs() -> None:
    """The codec check is for ndarray arrays only: vlen-bytes, transpose and sharding of other
    data types are zarr's business."""
    raw = zarr.create_array(
        store={}, shape=(2,), dtype=zarr.dtype.VariableLengthBytes(), serializer=_vlen_bytes()
    )
    raw[:] = np.array([b"ab", b""], dtype=object)
    assert raw[:].tolist() == [b"ab", b""]
    from zarr.codecs import TransposeCodec

    ints = zarr.create_array(
        store={},
        shape=(2, 2),
        shards=(2, 2),
        chunks=(1, 2),
        dtype="int8",
        filters=[TransposeCodec(order=(1, 0))],
    )
    ints[:] = [[1, 2], [3, 4]]
    assert ints[:].tolist() == [[1, 2], [3, 4]]


def _chain(error: BaseException) -> list[BaseException]:
    chain = [error]
    while chain[-1].__cause__ is not None or chain[-1].__context__ is not None:
        chain.append(chain[-1].__cause__ or chain[-1].__context__)  # type: ignore[arg-type]
    return chain


def test_bad_metadata_names_its_rule_when_opened(tmp_path: Path) -> None:
    """zarr reads a fill value in its own words first (TypeError("Invalid fill_value")), with
    the data type's error, naming the rule, as its cause."""
    pytest.importorskip("zarr_vlen_ndarray")  # writes the [null] array first
    zarr.create_array(tmp_path, shape=(2,), dtype=NDArray(dtype="float32", shape=(None,)))
    path = tmp_path / "zarr.json"
    good = json.loads(path.read_text())
    for change, error, rule in (
        ({"fill_value": "%%%"}, FillValueError, "1.5/2"),
        ({"fill_value": 0}, FillValueError, "1.5/1"),
    ):
        path.write_text(json.dumps({**good, **change}))
        with pytest.raises(Exception) as info:
            zarr.open_array(tmp_path, mode="r")
        assert any(isinstance(e, error) and f"SPEC {rule}" in str(e) for e in _chain(info.value))
    # A data type breaking a rule when opened: test_dtype (zarr's registry decides by release).


def test_the_pipeline_hook_passes_other_arrays_on_unchanged() -> None:
    arr = zarr.create_array(store={}, shape=(3,), dtype="int32", fill_value=7)
    original = zarr.core.array.create_codec_pipeline.__wrapped__  # type: ignore[attr-defined]
    made = zarr.core.array.create_codec_pipeline(arr.metadata, store=arr.store)
    assert type(made) is type(original(arr.metadata, store=arr.store))


def test_install_is_idempotent_and_other_types_unchanged() -> None:
    before = zarr.core.array.default_serializer_v3
    evolve = BytesCodec.evolve_from_array_spec
    methods = (zarr.AsyncArray._set_selection, zarr.AsyncArray._get_selection)
    pipeline = zarr.core.array.create_codec_pipeline
    register()
    register()
    assert zarr.core.array.create_codec_pipeline is pipeline
    assert zarr.core.array.default_serializer_v3 is before
    assert BytesCodec.evolve_from_array_spec is evolve
    assert (zarr.AsyncArray._set_selection, zarr.AsyncArray._get_selection) == methods
    arr = zarr.create_array(store={}, shape=(2,), dtype="int16")
    assert type(arr.metadata.codecs[0]) is BytesCodec
    arr[:] = np.array([1, 2])


def test_one_byte_items_keep_the_endian_the_user_passed() -> None:
    arr = zarr.create_array(
        store={},
        shape=(2,),
        dtype=NDArray(dtype="uint8", shape=(3,)),
        serializer=BytesCodec(endian=None),
    )
    assert arr.metadata.codecs[0].to_dict() in (
        {"name": "bytes"},
        {"name": "bytes", "configuration": {}},
    )
    cells = np.empty(2, dtype=object)
    cells[:] = [np.arange(3, dtype="u1"), np.ones(3, dtype="u1")]
    arr[:] = cells
    assert np.array_equal(zarr.open_array(arr.store, mode="r")[1:][0], np.ones(3, dtype="u1"))


@pytest.mark.parametrize("dtype", ["int16", "uint8", "float64", "bool", "complex64"])
def test_other_dtypes_get_exactly_what_zarr_gives(dtype: str) -> None:
    from types import SimpleNamespace

    original_serializer = zarr.core.array.default_serializer_v3.__wrapped__
    original_evolve = BytesCodec.evolve_from_array_spec.__wrapped__  # type: ignore[attr-defined]
    arr = zarr.create_array(store={}, shape=(2,), dtype=dtype)
    zdtype = arr.metadata.data_type
    expected = original_evolve(original_serializer(zdtype), SimpleNamespace(dtype=zdtype))
    (codec,) = [c for c in arr.metadata.codecs if c.to_dict()["name"] == "bytes"]
    assert type(codec) is BytesCodec
    assert codec.to_dict() == expected.to_dict()


def _changed_serializer(dtype: object, *, hint: object = None) -> object:
    raise AssertionError("not called in this test")


def _changed_evolve(self: object, array_spec: object, extra: object) -> object:
    raise AssertionError("not called in this test")


async def _changed_selection(self: object, indexer: object, value: object) -> object:
    raise AssertionError("not called in this test")


@pytest.mark.parametrize("missing", [True, False], ids=["missing", "changed"])
def test_unexpected_targets_are_left_untouched_with_one_warning(
    monkeypatch: pytest.MonkeyPatch, missing: bool
) -> None:
    methods = ("_set_selection", "_get_selection")
    if missing:
        monkeypatch.delattr(zarr.core.array, "default_serializer_v3")
        monkeypatch.delattr(BytesCodec, "evolve_from_array_spec")
        for name in methods:
            monkeypatch.delattr(zarr.AsyncArray, name)
    else:
        monkeypatch.setattr(zarr.core.array, "default_serializer_v3", _changed_serializer)
        monkeypatch.setattr(BytesCodec, "evolve_from_array_spec", _changed_evolve)
        for name in methods:
            monkeypatch.setattr(zarr.AsyncArray, name, _changed_selection)
    monkeypatch.setattr(_hooks, "_warned", set())
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        _hooks.install()
        _hooks.install()
        register()
    record = [w for w in record if issubclass(w.category, HookWarning)]
    assert len(record) == 4  # once per target, however often installed
    methods_targets = (
        "zarr.core.array.default_serializer_v3",
        "zarr.codecs.BytesCodec.evolve_from_array_spec",
        "zarr.AsyncArray._set_selection",
        "zarr.AsyncArray._get_selection",
    )
    texts = sorted(str(w.message) for w in record)
    assert all(f"zarr {zarr.__version__}" in t for t in texts)
    for target in _hooks.TARGETS:
        if target.name in methods_targets:
            assert sum(target.name in t and target.without in t for t in texts) == 1
    assert all(("does not exist" if missing else "not the expected") in t for t in texts)
    installed = _hooks.installed()
    assert not any(installed[t] for t in methods_targets)
    if not missing:
        assert zarr.core.array.default_serializer_v3 is _changed_serializer
        assert BytesCodec.__dict__["evolve_from_array_spec"] is _changed_evolve
        assert all(zarr.AsyncArray.__dict__[name] is _changed_selection for name in methods)


def _changed_pipeline(metadata: object) -> object:
    raise AssertionError("not called in this test")


@pytest.mark.parametrize("missing", [True, False], ids=["missing", "changed"])
def test_an_unexpected_pipeline_target_is_left_untouched(
    monkeypatch: pytest.MonkeyPatch, missing: bool
) -> None:
    name = "zarr.core.array.create_codec_pipeline"
    if missing:
        monkeypatch.delattr(zarr.core.array, "create_codec_pipeline")
    else:
        monkeypatch.setattr(zarr.core.array, "create_codec_pipeline", _changed_pipeline)
    monkeypatch.setattr(_hooks, "_warned", set())
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        _hooks.install()
        _hooks.install()
    texts = [str(w.message) for w in record if issubclass(w.category, HookWarning)]
    assert len(texts) == 1 and name in texts[0] and "vlen-bytes" in texts[0], texts
    assert not _hooks.installed()[name]
    if not missing:
        assert zarr.core.array.create_codec_pipeline is _changed_pipeline


def test_install_never_raises(monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(target: object) -> None:
        raise RuntimeError("zarr internals moved")

    monkeypatch.setattr(_hooks._Target, "current", broken)
    monkeypatch.setattr(_hooks, "_warned", set())
    with pytest.warns(HookWarning, match="could not be wrapped .RuntimeError: zarr internals"):
        _hooks.install()


# A fresh interpreter where zarr's targets differ from what the hooks expect, before we import.
FRESH = """
import sys, warnings
import numpy as np
import zarr, zarr.core.array as za
from zarr.codecs import BytesCodec
assert "zarr_ndarray_dtype" not in sys.modules
original_serializer = za.default_serializer_v3
original_evolve = BytesCodec.evolve_from_array_spec
MODE = sys.argv[1]
if MODE == "changed":
    def default_serializer_v3(dtype, *, hint=None):  # a release that added a parameter
        return original_serializer(dtype)
    def evolve_from_array_spec(self, array_spec, *, prototype=None):
        return original_evolve(self, array_spec)
    za.default_serializer_v3 = default_serializer_v3
    BytesCodec.evolve_from_array_spec = evolve_from_array_spec
else:  # a release that renamed both: zarr calls its new names, ours are gone
    del za.default_serializer_v3
    del BytesCodec.evolve_from_array_spec
    za.renamed_default_serializer = original_serializer
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    import zarr_ndarray_dtype
    from zarr_ndarray_dtype import HookWarning, NDArrayDType as NDArray
    from zarr_ndarray_dtype.codecs import FixedCellBytesCodec
    zarr_ndarray_dtype.register()
hook_warnings = [w for w in caught if issubclass(w.category, HookWarning)]
assert len(hook_warnings) == 2, [str(w.message) for w in caught]
if MODE == "missing":  # put zarr back together as the renamed release would be
    za.default_serializer_v3 = original_serializer
    BytesCodec.evolve_from_array_spec = original_evolve
else:
    assert za.default_serializer_v3 is default_serializer_v3
    assert BytesCodec.evolve_from_array_spec is evolve_from_array_spec
store = {}
plain = zarr.create_array(store=store, shape=(4,), chunks=(2,), dtype="int16")
plain[:] = np.arange(4)
assert zarr.open(store=store, mode="r")[:].tolist() == [0, 1, 2, 3]
assert plain.metadata.codecs[0].to_dict()["name"] == "bytes"
nd_store = {}
nd = zarr.create_array(
    store=nd_store, shape=(3,), chunks=(2,), dtype=NDArray(dtype="float32", shape=(2,)),
    serializer=FixedCellBytesCodec(endian="little"),
)
cells = np.empty(3, dtype=object)
cells[:] = [np.array([i, -i], dtype="float32") for i in range(3)]
nd[:] = cells
assert [c.tolist() for c in nd[:]] == [[0.0, 0.0], [1.0, -1.0], [2.0, -2.0]]
print("ok")
"""


@pytest.mark.parametrize("mode", ["missing", "changed"])
def test_fresh_process_with_moved_targets_keeps_zarr_working(mode: str) -> None:
    result = subprocess.run(
        [sys.executable, "-c", FRESH, mode],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "ok"


# zarr >= 3.4.1 imports us through the zarr.data_type entry point while resolving ANY data type:
# with moved targets, plain zarr must keep working without anyone importing us.
ENTRY_POINT = """
import sys, warnings
import numpy as np
import zarr, zarr.core.array as za
from zarr.abc.codec import ArrayBytesCodec
from zarr.codecs import BytesCodec
assert "zarr_ndarray_dtype" not in sys.modules
original_serializer = za.default_serializer_v3
def default_serializer_v3(dtype, *, hint=None):  # a release that added a parameter
    return original_serializer(dtype)
za.default_serializer_v3 = default_serializer_v3
del BytesCodec.evolve_from_array_spec  # a release that dropped the override
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    store = {}
    plain = zarr.create_array(store=store, shape=(4,), chunks=(2,), dtype="int16")
    plain[:] = np.arange(4)
    assert zarr.open(store=store, mode="r")[:].tolist() == [0, 1, 2, 3]
    f8 = zarr.create_array(store={}, shape=(2,), dtype="float64")
    f8[:] = [1.5, 2.5]
    assert f8[:].tolist() == [1.5, 2.5]
assert za.default_serializer_v3 is default_serializer_v3
assert "evolve_from_array_spec" not in BytesCodec.__dict__
loaded = "zarr_ndarray_dtype" in sys.modules
names = sorted({w.category.__name__ for w in caught if "zarr-ndarray-dtype" in str(w.message)})
print(loaded, names)
"""


def test_entry_point_import_with_moved_targets_leaves_plain_zarr_working() -> None:
    result = subprocess.run(
        [sys.executable, "-c", ENTRY_POINT],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    loaded = Version(zarr.__version__) >= Version("3.4.1")  # the first to load entry points
    expected = "True ['HookWarning']" if loaded else "False []"
    assert result.stdout.strip() == expected


def test_the_readme_lists_every_replaced_function() -> None:
    """The one table of hooks (TARGETS), as the README shows it: at most five functions."""
    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text(encoding="utf-8")
    table = readme.split("## Hooks into zarr", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in table.splitlines() if line.startswith("| `zarr")]
    assert len(_hooks.TARGETS) == len(rows) <= 5
    assert all(f"`{t.name}`" in row for t, row in zip(_hooks.TARGETS, rows, strict=True))
