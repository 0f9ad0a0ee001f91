"""Write the golden IPC files of the nd_arrow.array format from hand-built pyarrow arrays.

This script does not import nd_arrow: every buffer is laid out here by hand from FORMAT.md, so a
regression in the package's writer cannot also change the expected bytes. Run from this folder:

    python make_golden.py

and commit the .arrow files. The tests read them and compare the package's writer against them.
"""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa

HERE = Path(__file__).parent
# Key order as pyarrow's IPC writer emits it for a registered extension type (metadata, then
# name), so a registered type and a plain tagged struct serialize to the same bytes.
EXT = {b"ARROW:extension:metadata": b'{"version":1}', b"ARROW:extension:name": b"nd_arrow.array"}
GLOBAL = {
    b"ARROW:extension:metadata": b'{"version":1}',
    b"ARROW:extension:name": b"nd_arrow.global_attributes",
}


def lst(offsets: list[int], values: pa.Array, item_nullable: bool) -> pa.ListArray:
    item = pa.field("item", values.type, nullable=item_nullable)
    return pa.ListArray.from_arrays(pa.array(offsets, pa.int32()), values, type=pa.list_(item))


def nd_storage(
    values: pa.Array,
    value_offsets: list[int],
    names: list[str],
    sizes: list[int],
    dim_offsets: list[int],
    attrs: pa.StructArray | None,
    null_rows: list[bool] | None,
) -> pa.StructArray:
    children = [
        lst(value_offsets, values, True),
        lst(dim_offsets, pa.array(names, pa.string()), False),
        lst(dim_offsets, pa.array(sizes, pa.uint32()), False),
    ]
    fields = [
        pa.field("values", children[0].type, nullable=False),
        pa.field("dim_names", children[1].type, nullable=False),
        pa.field("dim_sizes", children[2].type, nullable=False),
    ]
    if attrs is not None:
        children.append(attrs)
        fields.append(pa.field("attrs", attrs.type, nullable=False))
    mask = pa.array(null_rows, pa.bool_()) if null_rows and any(null_rows) else None
    return pa.StructArray.from_arrays(children, fields=fields, mask=mask)


def write(name: str, fields: list[pa.Field], arrays: list[pa.Array]) -> None:
    table = pa.Table.from_arrays(arrays, schema=pa.schema(fields))
    with pa.OSFile(str(HERE / name), "wb") as sink, pa.ipc.new_file(sink, table.schema) as w:
        w.write_table(table)


def example() -> None:
    """FORMAT.md's example plus a null row, a rank-0 row with a null value and a null element.

    row 0: float64 (time=2, lat=3), attrs units="K", valid_range=[0.0, 2.0]
    row 1: null row
    row 2: rank 0, its one value null, attrs units="C"
    row 3: (x=3) [1.5, null, 2.5], no attributes
    """
    values = pa.array([0.0, 0.1, 0.2, 1.0, 1.1, 1.2, None, 1.5, None, 2.5], pa.float64())
    attrs = pa.StructArray.from_arrays(
        [
            pa.array(["K", None, "C", None], pa.string()),
            pa.array([[0.0, 2.0], None, None, None], pa.list_(pa.float64())),
        ],
        fields=[
            pa.field("units", pa.string(), nullable=True),
            pa.field("valid_range", pa.list_(pa.float64()), nullable=True),
        ],
    )
    storage = nd_storage(
        values,
        [0, 6, 6, 7, 10],
        ["time", "lat", "x"],
        [2, 3, 3],
        [0, 2, 2, 2, 3],
        attrs,
        [False, True, False, False],
    )
    write("example.arrow", [pa.field("temperature", storage.type, metadata=EXT)], [storage])


def strings_no_attrs() -> None:
    """String values without attributes (no attrs child), and an empty (station=0) row.

    row 0: ["a", "bc"] (station=2); row 1: [] (station=0); row 2: [["x","y","z"]] (y=1, x=3)
    """
    values = pa.array(["a", "bc", "x", "y", "z"], pa.string())
    storage = nd_storage(
        values,
        [0, 2, 2, 5],
        ["station", "station", "y", "x"],
        [2, 0, 1, 3],
        [0, 1, 2, 4],
        None,
        None,
    )
    write("strings.arrow", [pa.field("label", storage.type, metadata=EXT)], [storage])


def dataset() -> None:
    """Two nd batches encoded as one RecordBatch.

    batch 0: t int32 (time=2, lat=2) [[1,2],[3,4]], lat float32 (lat=2) [10, 20],
             global attrs title="first", version=2
    batch 1: t int32 (time=1, lat=2) [[5,6]], no lat, global attrs title="second"
    """
    t = nd_storage(
        pa.array([1, 2, 3, 4, 5, 6], pa.int32()),
        [0, 4, 6],
        ["time", "lat", "time", "lat"],
        [2, 2, 1, 2],
        [0, 2, 4],
        None,
        None,
    )
    lat = nd_storage(
        pa.array([10.0, 20.0], pa.float32()), [0, 2, 2], ["lat"], [2], [0, 1, 1], None, [False, True]
    )
    glob = pa.StructArray.from_arrays(
        [pa.array(["first", "second"], pa.string()), pa.array([2, None], pa.int64())],
        fields=[pa.field("title", pa.string()), pa.field("version", pa.int64())],
    )
    fields = [
        pa.field("t", t.type, metadata=EXT),
        pa.field("lat", lat.type, metadata=EXT),
        pa.field("__global_attrs__", glob.type, metadata=GLOBAL),
    ]
    write("dataset.arrow", fields, [t, lat, glob])


if __name__ == "__main__":
    example()
    strings_no_attrs()
    dataset()
