"""The ``vlen-ndarray`` Zarr v3 codec: ragged ndarray elements, byte-identical to ``vlen-bytes``.

Drop-in successor of zarr-vlen-ndarray 0.2.0: the same public names, JSON and chunk bytes. The
``ndarray`` data type lives in the ``zarr-ndarray-dtype`` package; ``NDArray`` (its
``NDArrayDType``), ``VlenScalar``, ``unbox`` and ``DTYPE_NAME`` are the very same objects.
Importing this package registers the data type and the codec with zarr-python (idempotently).

>>> from zarr_vlen_ndarray import VlenNDArrayCodec
>>> VlenNDArrayCodec().to_dict()
{'name': 'vlen-ndarray', 'configuration': {}}
"""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version

# zarr's registries were module attributes of 0.2.0's package; kept importable.
from zarr.dtype import data_type_registry as data_type_registry
from zarr.registry import register_codec as register_codec

# Columnar access (new in 0.3.0) is the data type package's; kept out of __all__, which lists
# exactly 0.2.0's names.
from zarr_ndarray_dtype import Columnar as Columnar
from zarr_ndarray_dtype import read_columnar as read_columnar
from zarr_ndarray_dtype import write_columnar as write_columnar
from zarr_vlen_ndarray.codec import CODEC_NAME, VlenNDArrayCodec, register
from zarr_vlen_ndarray.dtype import DTYPE_NAME, NDArray, NDArrayDType, VlenScalar, unbox

try:
    __version__ = version("zarr-vlen-ndarray")
except PackageNotFoundError:  # pragma: no cover - running from a source tree without install
    __version__ = "0+unknown"

__all__ = [
    "CODEC_NAME", "DTYPE_NAME", "NDArray", "NDArrayDType", "VlenNDArrayCodec", "VlenScalar",
    "__version__", "unbox",
]  # fmt: skip

register()
