"""The ``ragged-ndarray`` Zarr v3 codec: ``ndarray`` elements of every shape pattern.

Each chunk stores every element's variable extents in one table ahead of the values, so decoding
is a vectorized computation with no scan. Importing this package registers the codec and the
``ndarray`` data type with zarr-python (idempotently); zarr >= 3.4.1 also finds the codec
through its ``zarr.codecs`` entry point.

>>> from zarr_ragged_ndarray import RaggedNDArrayCodec
>>> RaggedNDArrayCodec().to_dict()
{'name': 'ragged-ndarray', 'configuration': {}}
"""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version

# Columnar access serves every pattern and both codecs: the data type package's own objects.
from zarr_ndarray_dtype import Columnar, read_columnar, write_columnar
from zarr_ragged_ndarray.codec import CODEC_NAME, CodecMetadataError, RaggedNDArrayCodec, register
from zarr_ragged_ndarray.layout import RaggedLayoutError

try:
    __version__ = version("zarr-ragged-ndarray")
except PackageNotFoundError:  # pragma: no cover - running from a source tree without install
    __version__ = "0+unknown"

__all__ = [
    "CODEC_NAME", "CodecMetadataError", "Columnar", "RaggedLayoutError", "RaggedNDArrayCodec",
    "__version__", "read_columnar", "register", "write_columnar",
]  # fmt: skip

register()
