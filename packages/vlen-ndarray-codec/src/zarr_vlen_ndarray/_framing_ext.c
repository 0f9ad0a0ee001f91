/* The compiled framing kernel of zarr_vlen_ndarray: the vlen-bytes hot loops in C.
 *
 * Layout (see framing.py): u32le count | u32le len_0 | payload_0 | u32le len_1 | payload_1 | ...
 *
 * This module is private: zarr_vlen_ndarray.framing calls it (allocates the numpy outputs and
 * passes everything through the buffer protocol) and does every check that produces a
 * user-facing message; _framing_ref.py is the same kernel in plain Python. Each function here
 * still checks every index against the buffers it was given, so a wrong call raises ValueError
 * instead of touching foreign memory.
 *
 * Built against the CPython stable ABI (Py_LIMITED_API 3.11: the buffer protocol is part of it
 * since 3.11), so one wheel serves every CPython >= 3.11. No numpy C API: numpy arrays arrive as
 * buffers. A loop over at least RELEASE_GIL_BYTES runs with the GIL released; shorter ones keep
 * it, since a thread that gives it up for microseconds may then wait a whole switch interval
 * (5 ms) to take it back while other threads run Python (zarr's many small inner chunks).
 */

#ifndef Py_LIMITED_API
#define Py_LIMITED_API 0x030B0000
#endif
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <stdint.h>
#include <string.h>

#define HEADER_NBYTES 4
#define PREFIX_NBYTES 4
#define RELEASE_GIL_BYTES ((Py_ssize_t)1 << 20)

/* The GIL released for work of at least RELEASE_GIL_BYTES bytes; NULL (kept) for less. */
static inline PyThreadState *
release_gil_for(Py_ssize_t work)
{
    return work >= RELEASE_GIL_BYTES ? PyEval_SaveThread() : NULL;
}

static inline void
take_gil_back(PyThreadState *released)
{
    if (released != NULL) {
        PyEval_RestoreThread(released);
    }
}

/* Little-endian u32 at p, whatever the alignment and the host byte order. */
static inline uint32_t
load_u32le(const unsigned char *p)
{
    return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) |
           ((uint32_t)p[3] << 24);
}

static inline void
store_u32le(unsigned char *p, uint32_t v)
{
    p[0] = (unsigned char)(v & 0xFF);
    p[1] = (unsigned char)((v >> 8) & 0xFF);
    p[2] = (unsigned char)((v >> 16) & 0xFF);
    p[3] = (unsigned char)((v >> 24) & 0xFF);
}

/* A buffer argument: contiguous bytes, optionally writable; int64 buffers need whole items. */
static int
get_buffer(PyObject *obj, Py_buffer *view, int writable, Py_ssize_t itemsize, const char *name)
{
    int flags = writable ? (PyBUF_SIMPLE | PyBUF_WRITABLE) : PyBUF_SIMPLE;
    if (PyObject_GetBuffer(obj, view, flags) < 0) {
        return -1;
    }
    if (view->len % itemsize) {
        PyErr_Format(PyExc_ValueError, "%s: %zd bytes is not a whole number of %zd-byte items",
                     name, view->len, itemsize);
        PyBuffer_Release(view);
        return -1;
    }
    return 0;
}

/* scan(data, count, unit, starts, nbytes) -> bool
 *
 * Walk the length prefixes of a chunk that must hold exactly `count` elements (the header is
 * already checked by the caller). Fills starts[i] (byte offset of element i's length prefix) and
 * nbytes[i] (its length). Returns False, leaving the outputs partly written, as soon as anything
 * is off: a prefix or payload running past the end, a length that is not a multiple of `unit`,
 * or bytes left after the last element; the caller then names the problem.
 */
static PyObject *
kernel_scan(PyObject *self, PyObject *args)
{
    PyObject *data_obj, *starts_obj, *nbytes_obj;
    Py_ssize_t count, unit;
    Py_buffer data, starts, nbytes;
    int ok = 1;
    PyThreadState *released;

    (void)self;
    if (!PyArg_ParseTuple(args, "OnnOO:scan", &data_obj, &count, &unit, &starts_obj,
                          &nbytes_obj)) {
        return NULL;
    }
    if (count < 0 || unit < 1) {
        PyErr_SetString(PyExc_ValueError, "scan: count must be >= 0 and unit >= 1");
        return NULL;
    }
    if (get_buffer(data_obj, &data, 0, 1, "scan data") < 0) {
        return NULL;
    }
    if (get_buffer(starts_obj, &starts, 1, 8, "scan starts") < 0) {
        PyBuffer_Release(&data);
        return NULL;
    }
    if (get_buffer(nbytes_obj, &nbytes, 1, 8, "scan nbytes") < 0) {
        PyBuffer_Release(&starts);
        PyBuffer_Release(&data);
        return NULL;
    }
    if (starts.len / 8 < count || nbytes.len / 8 < count) {
        PyBuffer_Release(&nbytes);
        PyBuffer_Release(&starts);
        PyBuffer_Release(&data);
        PyErr_SetString(PyExc_ValueError, "scan: the output arrays hold fewer than count items");
        return NULL;
    }

    released = release_gil_for(data.len);
    {
        const unsigned char *raw = (const unsigned char *)data.buf;
        const Py_ssize_t size = data.len;
        int64_t *out_starts = (int64_t *)starts.buf;
        int64_t *out_nbytes = (int64_t *)nbytes.buf;
        const uint64_t u = (uint64_t)unit;
        Py_ssize_t p = HEADER_NBYTES;
        Py_ssize_t i;

        if (size < HEADER_NBYTES) {
            ok = 0;
        }
        for (i = 0; ok && i < count; i++) {
            uint32_t length;
            if (size - p < PREFIX_NBYTES) {
                ok = 0;
                break;
            }
            length = load_u32le(raw + p);
            /* Compare against the bytes left, never compute p + length first (no overflow). */
            if ((uint64_t)length > (uint64_t)(size - p - PREFIX_NBYTES) ||
                (u > 1 && (uint64_t)length % u)) {
                ok = 0;
                break;
            }
            out_starts[i] = (int64_t)p;
            out_nbytes[i] = (int64_t)length;
            p += PREFIX_NBYTES + (Py_ssize_t)length;
        }
        if (ok && p != size) {
            ok = 0;
        }
    }
    take_gil_back(released);

    PyBuffer_Release(&nbytes);
    PyBuffer_Release(&starts);
    PyBuffer_Release(&data);
    return PyBool_FromLong(ok);
}

/* gather(data, starts, nbytes, out, dst) -> None
 *
 * Copy the payload of every element i (nbytes[i] bytes after the prefix at starts[i]) to
 * out[dst[i]:dst[i] + nbytes[i]]: elements in any order, to any place of `out` (e.g. a cell's
 * place in one output shared by many chunks). With an int `dst` the payloads go back to back
 * from that byte offset (no table of places to read).
 */
static PyObject *
kernel_gather(PyObject *self, PyObject *args)
{
    PyObject *data_obj, *starts_obj, *nbytes_obj, *out_obj, *dst_obj;
    Py_buffer data, starts, nbytes, out, dst;
    int bad = 0, packed = 0;
    PyThreadState *released;
    long long cursor = 0;

    (void)self;
    if (!PyArg_ParseTuple(args, "OOOOO:gather", &data_obj, &starts_obj, &nbytes_obj, &out_obj,
                          &dst_obj)) {
        return NULL;
    }
    if (get_buffer(data_obj, &data, 0, 1, "gather data") < 0) {
        return NULL;
    }
    if (get_buffer(starts_obj, &starts, 0, 8, "gather starts") < 0) {
        PyBuffer_Release(&data);
        return NULL;
    }
    if (get_buffer(nbytes_obj, &nbytes, 0, 8, "gather nbytes") < 0) {
        PyBuffer_Release(&starts);
        PyBuffer_Release(&data);
        return NULL;
    }
    if (get_buffer(out_obj, &out, 1, 1, "gather out") < 0) {
        PyBuffer_Release(&nbytes);
        PyBuffer_Release(&starts);
        PyBuffer_Release(&data);
        return NULL;
    }
    if (PyLong_Check(dst_obj)) {
        packed = 1;
        cursor = PyLong_AsLongLong(dst_obj);
        if (cursor == -1 && PyErr_Occurred()) {
            PyBuffer_Release(&out);
            PyBuffer_Release(&nbytes);
            PyBuffer_Release(&starts);
            PyBuffer_Release(&data);
            return NULL;
        }
        dst.len = starts.len; /* no table: its length only stands for the check below */
        dst.buf = NULL;
    }
    else if (get_buffer(dst_obj, &dst, 0, 8, "gather dst") < 0) {
        PyBuffer_Release(&out);
        PyBuffer_Release(&nbytes);
        PyBuffer_Release(&starts);
        PyBuffer_Release(&data);
        return NULL;
    }
    if (starts.len != nbytes.len || starts.len != dst.len) {
        bad = 1;
    }
    else {
        /* the bytes to copy: the sum of the lengths (a pass over them with the GIL held) */
        const int64_t *lengths = (const int64_t *)nbytes.buf;
        Py_ssize_t work = 0, k;
        for (k = 0; k < nbytes.len / 8 && work < RELEASE_GIL_BYTES; k++) {
            work += lengths[k] > 0 ? (Py_ssize_t)lengths[k] : 0;
        }
        released = release_gil_for(work);
        {
            const unsigned char *raw = (const unsigned char *)data.buf;
            const int64_t *at = (const int64_t *)starts.buf;
            const int64_t *len = (const int64_t *)nbytes.buf;
            const int64_t *to = (const int64_t *)dst.buf;
            unsigned char *target = (unsigned char *)out.buf;
            const Py_ssize_t count = starts.len / 8;
            const int64_t size = (int64_t)data.len;
            const int64_t room = (int64_t)out.len;
            Py_ssize_t i;

            for (i = 0; i < count; i++) {
                const int64_t start = at[i] + PREFIX_NBYTES;
                const int64_t n = len[i];
                const int64_t d = packed ? (int64_t)cursor : to[i];
                if (at[i] < HEADER_NBYTES || n < 0 || start > size || n > size - start || d < 0 ||
                    d > room || n > room - d) {
                    bad = 1;
                    break;
                }
                cursor = (long long)(d + n);
                if (n) { /* memcpy of 0 bytes from an empty buffer's pointer is not portable */
                    memcpy(target + d, raw + start, (size_t)n);
                }
            }
        }
        take_gil_back(released);
    }
    if (!packed) {
        PyBuffer_Release(&dst);
    }
    PyBuffer_Release(&out);
    PyBuffer_Release(&nbytes);
    PyBuffer_Release(&starts);
    PyBuffer_Release(&data);
    if (bad) {
        PyErr_SetString(PyExc_ValueError,
                        "gather: starts/nbytes/dst do not fit the chunk or the output buffer");
        return NULL;
    }
    Py_RETURN_NONE;
}

/* frame(payload, nbytes, out) -> None
 *
 * Write the framed chunk into `out`, which must hold exactly 4 + 4 * count + sum(nbytes) bytes;
 * every length must fit a u32le and the lengths must sum to the payload's size.
 */
static PyObject *
kernel_frame(PyObject *self, PyObject *args)
{
    PyObject *payload_obj, *nbytes_obj, *out_obj;
    Py_buffer payload, nbytes, out;
    int bad = 0;
    PyThreadState *released;

    (void)self;
    if (!PyArg_ParseTuple(args, "OOO:frame", &payload_obj, &nbytes_obj, &out_obj)) {
        return NULL;
    }
    if (get_buffer(payload_obj, &payload, 0, 1, "frame payload") < 0) {
        return NULL;
    }
    if (get_buffer(nbytes_obj, &nbytes, 0, 8, "frame nbytes") < 0) {
        PyBuffer_Release(&payload);
        return NULL;
    }
    if (get_buffer(out_obj, &out, 1, 1, "frame out") < 0) {
        PyBuffer_Release(&nbytes);
        PyBuffer_Release(&payload);
        return NULL;
    }
    if ((uint64_t)(nbytes.len / 8) > 0xFFFFFFFFu || out.len < HEADER_NBYTES) {
        bad = 1;
    }
    else {
        released = release_gil_for(out.len);
        {
            const unsigned char *src = (const unsigned char *)payload.buf;
            const int64_t *len = (const int64_t *)nbytes.buf;
            unsigned char *dst = (unsigned char *)out.buf;
            const Py_ssize_t count = nbytes.len / 8;
            int64_t left = (int64_t)payload.len;
            int64_t room = (int64_t)out.len - HEADER_NBYTES;
            Py_ssize_t i;

            store_u32le(dst, (uint32_t)count);
            dst += HEADER_NBYTES;
            for (i = 0; i < count; i++) {
                const int64_t n = len[i];
                if (n < 0 || n > (int64_t)0xFFFFFFFFu || n > left ||
                    room < PREFIX_NBYTES || n > room - PREFIX_NBYTES) {
                    bad = 1;
                    break;
                }
                store_u32le(dst, (uint32_t)n);
                if (n) {
                    memcpy(dst + PREFIX_NBYTES, src, (size_t)n);
                }
                dst += PREFIX_NBYTES + n;
                src += n;
                left -= n;
                room -= PREFIX_NBYTES + n;
            }
            if (!bad && (left != 0 || room != 0)) {
                bad = 1;
            }
        }
        take_gil_back(released);
    }
    PyBuffer_Release(&out);
    PyBuffer_Release(&nbytes);
    PyBuffer_Release(&payload);
    if (bad) {
        PyErr_SetString(PyExc_ValueError,
                        "frame: nbytes do not fit u32le fields, the payload or the output buffer");
        return NULL;
    }
    Py_RETURN_NONE;
}

static PyMethodDef kernel_methods[] = {
    {"scan", kernel_scan, METH_VARARGS,
     "scan(data, count, unit, starts, nbytes) -> bool: walk the length prefixes."},
    {"gather", kernel_gather, METH_VARARGS,
     "gather(data, starts, nbytes, out, dst) -> None: copy each payload to its place (an int "
     "dst: back to back from there)."},
    {"frame", kernel_frame, METH_VARARGS,
     "frame(payload, nbytes, out) -> None: write count, prefixes and payloads."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef kernel_module = {
    PyModuleDef_HEAD_INIT,
    "zarr_vlen_ndarray._framing_ext",
    "The compiled vlen-bytes framing kernel (private; use zarr_vlen_ndarray.framing).",
    0,
    kernel_methods,
    NULL,
    NULL,
    NULL,
    NULL,
};

PyMODINIT_FUNC
PyInit__framing_ext(void)
{
    return PyModuleDef_Init(&kernel_module);
}
