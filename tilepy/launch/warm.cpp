// The C-level warm path of tilepy.launch (launch/warm.py builds and loads it; dispatch.py's
// module docstring says what a warm launch must check). Per call: read each argument's
// pointer, shape, strides, dtype and device (numpy through its object's fields, torch and
// cupy-like arrays through the attributes the Python path reads), fold every fact the plan
// depends on into a key of 64-bit words, find the plan in the kernel's table, check which
// arrays overlap (sorted extents, O(n log n)), then pack the argument block and call the CPU
// library's entry (or hand the values to the Python plan: GPU plans, kernels that print).
// Anything unusual returns MISS: the Python path (dispatch.signature) then decides, validates
// and explains, so both paths take the same decisions and raise the same errors.
// Written in C-style C++: the CPU backend already requires the host C++ compiler.
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <pythread.h>

#include <stddef.h>
#include <stdint.h>
#include <string.h>

namespace {

enum { MAX_ARGS = 64, MAX_DIMS = 32, KEY_WORDS = 4096, MAX_PLANS = 1024, MAX_BLOCK = 4096,
       MAX_REG = 64, MAX_GPU_ARGS = 256 };

// numpy's PyArrayObject_fields, its public layout since numpy 1.7 (warm.py checks it on live
// arrays before the module is used).
struct NpArray {
    PyObject_HEAD
    char *data;
    int nd;
    Py_ssize_t *dims;
    Py_ssize_t *strides;
    PyObject *base;
    PyObject *descr;
    int flags;
};
const int NPY_WRITEABLE = 0x0400;

// tp::cpu::Report (cpu_shim.h), cpu.Report in Python (warm.py compares the layouts).
struct Report {
    int watch_signals, signal, asserts, nextents;
    void *extents;
    void *pool;
    int error_line;
    char error_file[1024];
    char error[1024];
};
typedef int (*Entry)(void **, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                     unsigned long long, int, Report *);

// Argument kinds in the key (a word's low byte).
enum Tag : uint64_t { T_NUMPY = 1, T_TORCH, T_CUPY, T_SCALAR, T_CONST_INT, T_CONST_BOOL,
                      T_CONST_NONE, T_CONST_FLOAT, T_CONST_STR, T_CONST_OBJ, T_TUPLE, T_RECORD };

// A registry: objects known by identity (dtype objects, scalar types), each with a small code.
// Registered objects are kept alive, so a code never names another object.
struct Registry {
    PyObject *obj[MAX_REG];
    int n;
    int find(PyObject *o) const {
        for (int i = 0; i < n; i++)
            if (obj[i] == o) return i;
        return -1;
    }
};

struct State {
    PyObject *ndarray = nullptr;       // numpy.ndarray
    PyObject *torch_tensor = nullptr;  // torch.Tensor, once intake has seen one
    PyObject *cupy_array = nullptr;    // cupy.ndarray, once intake has seen one
    Registry np_dtypes{}, torch_dtypes{}, scalar_types{}, const_objs{};
    // Dataclasses (record(cls, names)): a class, and its field names (a tuple of str) at the
    // same index; both kept alive, so a code never names another class.
    Registry records{};
    PyObject *record_names[MAX_REG];
    PyObject *env = nullptr;           // os.environ._data (bytes -> bytes)
    PyObject *k_interpret = nullptr, *v_off = nullptr;   // TILEPY_INTERPRET, b"0"
    PyObject *k_mode = nullptr, *modes = nullptr;        // TILEPY_CPU_MODE, {b"fast": "fast", ..}
    PyObject *mode_var = nullptr;      // cpu._mode_override (a ContextVar)
    PyObject *cpu_mode = nullptr;      // the Python function the plans' stream_for take
    PyObject *report_type = nullptr;   // cpu.Report
    PyObject *miss = nullptr;          // the sentinel returned when the Python path must decide
    PyObject *fast = nullptr;          // "fast"
    unsigned long main_thread = 0;
    int ready = 0;
    // GPU plans (configure_gpu): the module host.driver (its __dict__, the `current` it
    // defines), TILEPY_GPU_COMPILER and its values, settings.gpu_compiler_requested,
    // gpu.stream_handle, gpu.stream_on.
    PyObject *driver = nullptr, *driver_dict = nullptr, *current_fn = nullptr,
             *k_gpu_compiler = nullptr, *compilers = nullptr, *gpu_compiler = nullptr,
             *stream_handle = nullptr, *stream_on = nullptr, *nvrtc = nullptr;
    // The torch reader (warm_torch.cpp, built against torch's headers; null: attributes).
    int (*torch_facts)(void *, struct TorchFacts *) = nullptr;
    int (*torch_mode)() = nullptr;
    Py_ssize_t torch_impl = 0;         // where a torch.Tensor object holds its TensorImpl*
    short torch_code[256];             // c10::ScalarType -> torch_dtypes code (-1: none)
} S;

PyObject *s_current, *s_active, *s_current_as_defined, *s_current_context, *s_ctx,
    *s_set_current, *s_context_of, *s_set_context, *s_core, *s_launch, *s_cuda_stream,
    *s_config, *s_failed, *s_tp_plans, *s_ctable,
    *s_reads, *s_items, *s_changed, *s_data_ptr, *s_shape, *s_stride, *s_dtype, *s_device,
    *s_is_cpu, *s_is_cuda, *s_get_device, *s_is_neg, *s_data, *s_ptr, *s_strides, *s_id,
    *s_stream_for, *s_run, *s_check, *s_workers, *s_from_buffer_copy;

// What warm_torch.cpp reads of a tensor (its TorchFacts; warm.py checks the size).
struct TorchFacts {
    uint64_t ptr;
    int32_t ndim, scalar_type, device_kind, device_index, neg, pad;
    int64_t sizes[MAX_DIMS];
    int64_t strides[MAX_DIMS];
};

// The torch reader's facts of a tensor; false: it cannot say (no reader, another kind of
// tensor, a __torch_function__ mode active): the attribute reads decide.
bool torch_facts(PyObject *t, TorchFacts &f) {
    if (!S.torch_facts || S.torch_mode()) return false;
    void *impl = *(void **)((char *)t + S.torch_impl);
    return S.torch_facts(impl, &f) == 1 && (unsigned)f.scalar_type < 256 &&
           S.torch_code[f.scalar_type] >= 0;
}

// ----------------------------------------------------------------------------- the key
struct Call {
    uint64_t key[KEY_WORDS];
    int nkey;
    uint64_t hash;
    int nargs;
    uint64_t ptr[MAX_ARGS];            // per argument: its data pointer (arrays)
    PyObject *val[MAX_ARGS];           // per argument: the object (borrowed)
    bool put(uint64_t w) {
        if (nkey >= KEY_WORDS) return false;
        key[nkey++] = w;
        hash = (hash ^ w) * 0x100000001b3ull;
        hash ^= hash >> 29;
        return true;
    }
};

// A Python int as an int64; false (no error set) when it is not an exact int or does not fit.
bool as_i64(PyObject *o, int64_t *out) {
    if (!PyLong_CheckExact(o)) return false;
    int overflow = 0;
    long long v = PyLong_AsLongLongAndOverflow(o, &overflow);
    if (overflow || (v == -1 && PyErr_Occurred())) {
        PyErr_Clear();
        return false;
    }
    *out = v;
    return true;
}

// A tuple (or tuple subclass such as torch.Size) of ints into the key.
bool put_ints(Call &c, PyObject *t) {
    if (!PyTuple_Check(t)) return false;
    Py_ssize_t n = PyTuple_GET_SIZE(t);
    if (n > MAX_DIMS || !c.put((uint64_t)n)) return false;
    for (Py_ssize_t i = 0; i < n; i++) {
        int64_t v;
        if (!as_i64(PyTuple_GET_ITEM(t, i), &v) || !c.put((uint64_t)v)) return false;
    }
    return true;
}

// A pointer from a Python int (data_ptr(), data.ptr).
bool as_ptr(PyObject *o, uint64_t *out) {
    if (!PyLong_Check(o)) return false;
    unsigned long long v = PyLong_AsUnsignedLongLong(o);
    if (v == (unsigned long long)-1 && PyErr_Occurred()) {
        PyErr_Clear();
        return false;
    }
    *out = v;
    return true;
}

bool put_numpy(Call &c, PyObject *a, int i) {
    NpArray *arr = (NpArray *)a;
    int code = S.np_dtypes.find(arr->descr);
    if (code < 0 || arr->nd > MAX_DIMS) return false;
    uint64_t p = (uint64_t)(uintptr_t)arr->data;
    c.ptr[i] = p;
    if (!c.put(T_NUMPY | (uint64_t)code << 8 | (uint64_t)arr->nd << 16 |
               (uint64_t)((arr->flags & NPY_WRITEABLE) != 0) << 24 | (p & 15) << 32))
        return false;
    for (int d = 0; d < arr->nd; d++)
        if (!c.put((uint64_t)arr->dims[d]) || !c.put((uint64_t)arr->strides[d])) return false;
    return true;
}

// What the Python path's signature reads of a torch tensor: data_ptr(), dtype, shape,
// stride(), device, is_neg(); any exception (sparse layouts...) is a miss. The device is read
// as is_cpu, else is_cuda and get_device() (torch.device's own attributes cost microseconds):
// the same facts for CPU and CUDA tensors; any other device is a miss.
bool put_torch(Call &c, PyObject *t, int i) {
    TorchFacts f;
    if (torch_facts(t, f)) {               // the same words as the attribute reads below
        c.ptr[i] = f.ptr;
        if (!c.put(T_TORCH | (uint64_t)S.torch_code[f.scalar_type] << 8 |
                   (uint64_t)f.device_kind << 16 | (uint64_t)(f.neg != 0) << 24 |
                   (f.ptr & 15) << 32) ||
            !c.put((uint64_t)(int64_t)f.device_index) || !c.put((uint64_t)f.ndim))
            return false;
        for (int d = 0; d < f.ndim; d++)
            if (!c.put((uint64_t)f.sizes[d])) return false;
        if (!c.put((uint64_t)f.ndim)) return false;
        for (int d = 0; d < f.ndim; d++)
            if (!c.put((uint64_t)f.strides[d])) return false;
        return true;
    }
    bool ok = false;
    PyObject *p = nullptr, *dtype = nullptr, *shape = nullptr, *stride = nullptr, *cpu = nullptr,
             *cuda = nullptr, *index = nullptr, *neg = nullptr;
    uint64_t ptr, kind;
    int code, neg_bit;
    int64_t idx = -1;
    if (!(p = PyObject_CallMethodNoArgs(t, s_data_ptr)) || !as_ptr(p, &ptr)) goto done;
    if (!(dtype = PyObject_GetAttr(t, s_dtype)) || (code = S.torch_dtypes.find(dtype)) < 0) goto done;
    if (!(cpu = PyObject_GetAttr(t, s_is_cpu))) goto done;
    if (cpu == Py_True) {
        kind = 1;
    } else if (cpu != Py_False || !(cuda = PyObject_GetAttr(t, s_is_cuda)) || cuda != Py_True) {
        goto done;                      // other devices: intake explains
    } else {
        kind = 2;
        if (!(index = PyObject_CallMethodNoArgs(t, s_get_device)) || !as_i64(index, &idx)) goto done;
    }
    if (!(neg = PyObject_CallMethodNoArgs(t, s_is_neg)) || (neg_bit = PyObject_IsTrue(neg)) < 0)
        goto done;
    c.ptr[i] = ptr;
    if (!c.put(T_TORCH | (uint64_t)code << 8 | kind << 16 | (uint64_t)neg_bit << 24 |
               (ptr & 15) << 32) || !c.put((uint64_t)idx))
        goto done;
    if (!(shape = PyObject_GetAttr(t, s_shape)) || !put_ints(c, shape)) goto done;
    if (!(stride = PyObject_CallMethodNoArgs(t, s_stride)) || !put_ints(c, stride)) goto done;
    ok = true;
done:
    Py_XDECREF(p); Py_XDECREF(dtype); Py_XDECREF(shape); Py_XDECREF(stride); Py_XDECREF(cpu);
    Py_XDECREF(cuda); Py_XDECREF(index); Py_XDECREF(neg);
    if (!ok) PyErr_Clear();
    return ok;
}

// A cupy-like array: data.ptr, dtype, shape, strides, device.id (what the Python path reads).
bool put_cupy(Call &c, PyObject *a, int i) {
    bool ok = false;
    PyObject *data = nullptr, *p = nullptr, *dtype = nullptr, *shape = nullptr,
             *strides = nullptr, *dev = nullptr, *id = nullptr;
    uint64_t ptr;
    int code;
    int64_t did;
    if (!(data = PyObject_GetAttr(a, s_data)) || !(p = PyObject_GetAttr(data, s_ptr)) ||
        !as_ptr(p, &ptr))
        goto done;
    if (!(dtype = PyObject_GetAttr(a, s_dtype)) || (code = S.np_dtypes.find(dtype)) < 0) goto done;
    if (!(dev = PyObject_GetAttr(a, s_device)) || !(id = PyObject_GetAttr(dev, s_id)) ||
        !as_i64(id, &did))
        goto done;
    c.ptr[i] = ptr;
    if (!c.put(T_CUPY | (uint64_t)code << 8 | (ptr & 15) << 32) || !c.put((uint64_t)did)) goto done;
    if (!(shape = PyObject_GetAttr(a, s_shape)) || !put_ints(c, shape)) goto done;
    if (!(strides = PyObject_GetAttr(a, s_strides)) || !put_ints(c, strides)) goto done;
    ok = true;
done:
    Py_XDECREF(data); Py_XDECREF(p); Py_XDECREF(dtype); Py_XDECREF(shape); Py_XDECREF(strides);
    Py_XDECREF(dev); Py_XDECREF(id);
    if (!ok) PyErr_Clear();
    return ok;
}

// A Constant's value: the Python path keys it by (type, value) (floats by their hex, so 0.0
// and -0.0 differ; here by their bits, which is finer: NaNs of other payloads only miss).
bool put_const(Call &c, PyObject *a) {
    PyTypeObject *t = Py_TYPE(a);
    if (t == &PyBool_Type) return c.put(T_CONST_BOOL | (uint64_t)(a == Py_True) << 8);
    if (t == &PyLong_Type) {
        int64_t v;
        return as_i64(a, &v) && c.put(T_CONST_INT) && c.put((uint64_t)v);
    }
    if (a == Py_None) return c.put(T_CONST_NONE);
    if (t == &PyFloat_Type) {
        double d = PyFloat_AS_DOUBLE(a);
        uint64_t bits;
        memcpy(&bits, &d, 8);
        return c.put(T_CONST_FLOAT) && c.put(bits);
    }
    if (t == &PyUnicode_Type) {
        Py_ssize_t n;
        const char *s = PyUnicode_AsUTF8AndSize(a, &n);
        if (!s) {
            PyErr_Clear();
            return false;
        }
        if (!c.put(T_CONST_STR) || !c.put((uint64_t)n)) return false;
        for (Py_ssize_t k = 0; k < n; k += 8) {
            uint64_t w = 0;
            memcpy(&w, s + k, n - k < 8 ? (size_t)(n - k) : 8);
            if (!c.put(w)) return false;
        }
        return true;
    }
    int code = S.const_objs.find(a);           // DType values (Constant[DType])
    return code >= 0 && c.put(T_CONST_OBJ | (uint64_t)code << 8);
}

// One argument into slot i (`constant`: a Constant's).
__attribute__((always_inline)) inline bool put_leaf(Call &c, PyObject *a, PyObject *t,
                                                    bool constant, int i) {
    c.val[i] = a;
    c.ptr[i] = 0;
    if (t == S.ndarray) return put_numpy(c, a, i);
    if (t == S.torch_tensor) return put_torch(c, a, i);
    if (t == S.cupy_array) return put_cupy(c, a, i);
    if (constant) return put_const(c, a);
    int code = S.scalar_types.find(t);
    return code >= 0 && c.put(T_SCALAR | (uint64_t)code << 8);
}

bool put_item(Call &c, PyObject *a, bool constant, int &k, int depth);

// The items of a tuple argument (an exact tuple, recursively), in host/params.flat's order,
// into slots k, k+1, ...
bool put_tuple(Call &c, PyObject *tup, bool constant, int &k, int depth) {
    Py_ssize_t n = PyTuple_GET_SIZE(tup);
    if (depth > 8 || !c.put(T_TUPLE | (uint64_t)n << 8)) return false;
    for (Py_ssize_t j = 0; j < n; j++)
        if (!put_item(c, PyTuple_GET_ITEM(tup, j), constant, k, depth + 1)) return false;
    return true;
}

// The fields of a dataclass object of registered class `code`, as a tuple's items (its class
// in the key). A field's value is held by the object, so the slot's reference is borrowed.
bool put_record(Call &c, PyObject *a, int code, bool constant, int &k, int depth) {
    PyObject *names = S.record_names[code];
    Py_ssize_t n = PyTuple_GET_SIZE(names);
    if (depth > 8 || !c.put(T_RECORD | (uint64_t)code << 8 | (uint64_t)n << 32)) return false;
    for (Py_ssize_t j = 0; j < n; j++) {
        PyObject *v = PyObject_GetAttr(a, PyTuple_GET_ITEM(names, j));
        if (!v) {
            PyErr_Clear();
            return false;
        }
        bool ok = put_item(c, v, constant, k, depth + 1);
        Py_DECREF(v);
        if (!ok) return false;
    }
    return true;
}

// One argument, or an item of a tuple or a field of a dataclass, at `depth`.
bool put_item(Call &c, PyObject *a, bool constant, int &k, int depth) {
    PyObject *t = (PyObject *)Py_TYPE(a);
    if (t == (PyObject *)&PyTuple_Type) return put_tuple(c, a, constant, k, depth);
    if (S.records.n) {
        int code = S.records.find(t);
        if (code >= 0) return put_record(c, a, code, constant, k, depth);
    }
    return k < MAX_ARGS && put_leaf(c, a, t, constant, k++);
}

// The key of a call, or false: the Python path decides (`consts`: per parameter 0 a value, 1 a
// Constant, as is every item of a tuple given for it; 2 a tuple annotation, which the Python
// path reads).
bool make_key(Call &c, PyObject *args, const char *consts, int nconsts) {
    Py_ssize_t n = PyTuple_GET_SIZE(args);
    c.nkey = 0;
    c.hash = 0xcbf29ce484222325ull;
    if (n != nconsts || n > MAX_ARGS) return false;
    int k = 0;
    for (int i = 0; i < n; i++) {
        if (consts[i] > 1 || !put_item(c, PyTuple_GET_ITEM(args, i), consts[i], k, 0))
            return false;
    }
    c.nargs = k;
    return true;
}

// ----------------------------------------------------------------------------- overlap
// Per (start, length) byte range: does it share no byte with any other? As intake's
// disjoint_flags: in the order of their starts, a range overlaps an earlier one iff it starts
// before the furthest end so far, and a later one iff it ends after the next start.
void disjoint_flags(int n, const uint64_t *lo, const uint64_t *len, bool *flags) {
    int order[MAX_ARGS], m = 0;
    for (int i = 0; i < n; i++) {
        flags[i] = true;
        if (len[i] == 0) continue;
        int k = m++;                                       // insertion sort by (start, end, i)
        while (k > 0) {
            int j = order[k - 1];
            if (lo[j] < lo[i] || (lo[j] == lo[i] && len[j] <= len[i])) break;
            order[k] = j;
            k--;
        }
        order[k] = i;
    }
    uint64_t reach = 0;
    bool any = false;
    for (int k = 0; k < m; k++) {
        int i = order[k];
        uint64_t hi = lo[i] + len[i];
        if ((any && lo[i] < reach) || (k + 1 < m && lo[order[k + 1]] < hi)) flags[i] = false;
        if (!any || hi > reach) reach = hi;
        any = true;
    }
}

// ----------------------------------------------------------------------------- plans
// How a kernel argument is packed into the argument block.
enum Kind { K_NONE, K_PTR, K_BOOL, K_I8, K_U8, K_I16, K_U16, K_I32, K_U32, K_I64, K_U64, K_F32,
            K_F64, K_CONV16, K_WRAP };

struct Slot {
    int kind;
    int offset;           // GPU plans: the index in the launch's argument list
    PyObject *conv;       // K_CONV16: the Python converter (value -> 16-bit pattern); K_WRAP:
    PyObject *wrap;       // the parameter's range check, then its numpy scalar type
    // GPU plans: the argument object passed last (K_PTR: the int of `last_ptr`; K_WRAP: the
    // wrapped `last_in`, an int, float or bool, immutable), passed again for the same value.
    PyObject *last, *last_in;
    uint64_t last_ptr;
};

struct Plan {
    PyObject_HEAD
    PyObject *py;         // the Python plan (dispatch.CpuPlan or GpuPlan)
    int native;           // 1: a CPU plan called from here; 0: the Python plan runs
    Entry entry;
    char *tmpl;
    int tmpl_size;
    int nfields;
    int *field_offset;    // the void*[] the entry takes: per C parameter, its offset
    int nslots;
    Slot *slots;          // per kernel argument
    unsigned bx, by, bz;
    unsigned long long smem;
    void *pool;
    PyObject *mode;       // the CPU mode the library was built for (None: any)
    int noverlap;         // arrays whose overlap pattern the plan was made for
    int *ov_index;
    uint64_t *ov_extent;
    bool *ov_pattern;
    // native == 2: a GPU plan whose stream_for and run are done here (dispatch.GpuPlan's).
    PyObject *drv, *errors, *kernel, *ctx, *dev, *dev_id, *compiler, *args;
    int torch_args;
    PyObject *last_stream, *last_s;     // the stream resolved last (a strong reference)
    uint64_t last_handle;
    unsigned last_g[3];
    PyObject *last_cfg;                 // its grid's LaunchConfig
};

void plan_dealloc(Plan *p) {
    Py_XDECREF(p->py);
    Py_XDECREF(p->mode);
    PyObject **refs[] = {&p->drv, &p->errors, &p->kernel, &p->ctx, &p->dev,
                         &p->dev_id, &p->compiler, &p->args, &p->last_stream, &p->last_s,
                         &p->last_cfg};
    for (PyObject **r : refs) Py_CLEAR(*r);
    for (int i = 0; p->slots && i < p->nslots; i++) {
        Py_XDECREF(p->slots[i].conv);
        Py_XDECREF(p->slots[i].wrap);
        Py_XDECREF(p->slots[i].last);
        Py_XDECREF(p->slots[i].last_in);
    }
    PyMem_Free(p->tmpl); PyMem_Free(p->field_offset); PyMem_Free(p->slots);
    PyMem_Free(p->ov_index); PyMem_Free(p->ov_extent); PyMem_Free(p->ov_pattern);
    Py_TYPE(p)->tp_free((PyObject *)p);
}

PyTypeObject PlanType = {PyVarObject_HEAD_INIT(nullptr, 0) "tilepy.launch._warm.Plan"};

// ----------------------------------------------------------------------------- the table
struct TEntry {
    uint64_t hash;
    int nkey;
    uint64_t *key;
    Plan *plan;
};

struct Table {
    PyObject_HEAD
    char consts[MAX_ARGS];
    int nconsts;
    int count;
    int cap;              // a power of two, at least twice the count
    TEntry *slots;
};

void table_clear(Table *t) {
    for (int i = 0; i < t->cap; i++) {
        TEntry &e = t->slots[i];
        if (e.plan) {
            PyMem_Free(e.key);
            Py_DECREF(e.plan);
            e = TEntry{0, 0, nullptr, nullptr};
        }
    }
    t->count = 0;
}

void table_dealloc(Table *t) {
    table_clear(t);
    PyMem_Free(t->slots);
    Py_TYPE(t)->tp_free((PyObject *)t);
}

TEntry *table_find(Table *t, const Call &c) {
    uint64_t mask = (uint64_t)t->cap - 1;
    for (uint64_t i = c.hash & mask;; i = (i + 1) & mask) {
        TEntry &e = t->slots[i];
        if (!e.plan) return &e;
        if (e.hash == c.hash && e.nkey == c.nkey &&
            memcmp(e.key, c.key, sizeof(uint64_t) * c.nkey) == 0)
            return &e;
    }
}

PyTypeObject TableType = {PyVarObject_HEAD_INIT(nullptr, 0) "tilepy.launch._warm.Table"};

PyObject *table_new(PyTypeObject *, PyObject *args, PyObject *) {
    PyObject *consts;
    if (!PyArg_ParseTuple(args, "O!", &PyTuple_Type, &consts)) return nullptr;
    Py_ssize_t n = PyTuple_GET_SIZE(consts);
    Table *t = PyObject_New(Table, &TableType);
    if (!t) return nullptr;
    t->nconsts = n > MAX_ARGS ? -1 : (int)n;        // -1: never matches, the Python path runs
    t->count = 0;
    t->cap = 0;
    t->slots = (TEntry *)PyMem_Calloc(8, sizeof(TEntry));
    if (!t->slots) {
        Py_DECREF(t);
        return PyErr_NoMemory();
    }
    t->cap = 8;
    for (Py_ssize_t i = 0; i < n && i < MAX_ARGS; i++) {
        long code = PyLong_AsLong(PyTuple_GET_ITEM(consts, i));
        if (code < 0 || code > 2) {
            Py_DECREF(t);
            if (!PyErr_Occurred())
                PyErr_SetString(PyExc_ValueError, "Table: a parameter's code is 0, 1 or 2");
            return nullptr;
        }
        t->consts[i] = (char)code;
    }
    return (PyObject *)t;
}

// Double the table when it is half full (entries move; the keys and plans stay).
bool table_grow(Table *t) {
    int cap = t->cap * 2;
    TEntry *slots = (TEntry *)PyMem_Calloc(cap, sizeof(TEntry)), *old = t->slots;
    if (!slots) return false;
    for (int i = 0; i < t->cap; i++) {
        if (!old[i].plan) continue;
        uint64_t mask = (uint64_t)cap - 1, j = old[i].hash & mask;
        while (slots[j].plan) j = (j + 1) & mask;
        slots[j] = old[i];
    }
    t->slots = slots;
    t->cap = cap;
    PyMem_Free(old);
    return true;
}

// ----------------------------------------------------------------------------- per call
// The grid as 3 ints when it is plainly valid (dispatch.grid3); false otherwise.
bool grid3(PyObject *grid, unsigned long limit, unsigned g[3]) {
    g[0] = g[1] = g[2] = 1;
    if (PyLong_CheckExact(grid)) {
        int64_t v;
        if (!as_i64(grid, &v) || v <= 0 || (uint64_t)v > limit) return false;
        g[0] = (unsigned)v;
        return true;
    }
    if (!PyTuple_CheckExact(grid)) return false;
    Py_ssize_t n = PyTuple_GET_SIZE(grid);
    if (n < 1 || n > 3) return false;
    for (Py_ssize_t i = 0; i < n; i++) {
        int64_t v;
        if (!as_i64(PyTuple_GET_ITEM(grid, i), &v) || v <= 0 || (uint64_t)v > limit) return false;
        g[i] = (unsigned)v;
    }
    return true;
}
unsigned long g_grid_limit = 0x7fffffff;

// Is an environment variable set to something other than these values? (os.environ's table)
PyObject *env_value(PyObject *key) {
    return S.env ? PyDict_GetItemWithError(S.env, key) : nullptr;
}

// A setting as settings.py reads it from os.environ's table: `map`'s value for the raw bytes,
// `dflt` when unset, else what the Python `reader` (which validates) returns; a new reference,
// or null with an error set.
PyObject *env_choice(PyObject *key, PyObject *map, PyObject *dflt, PyObject *reader) {
    PyObject *raw = env_value(key);
    if (!raw) {
        if (PyErr_Occurred()) return nullptr;
        Py_INCREF(dflt);
        return dflt;
    }
    PyObject *v = PyDict_GetItemWithError(map, raw);
    if (v) {
        Py_INCREF(v);
        return v;
    }
    if (PyErr_Occurred()) return nullptr;
    return PyObject_CallNoArgs(reader);               // another spelling: settings validates it
}

// The CPU mode a launch made now would use, as the Python path reads it (the cpu_mode()
// override, else TILEPY_CPU_MODE); a new reference, or null with an error set.
PyObject *current_mode() {
    PyObject *v = nullptr;
    if (PyContextVar_Get(S.mode_var, nullptr, &v) < 0) return nullptr;
    if (v && v != Py_None) return v;
    Py_XDECREF(v);
    return env_choice(S.k_mode, S.modes, S.fast, S.cpu_mode);
}

// Write one scalar argument into the block; false (no error) when the Python path must
// convert it (out of range, another type: its converters raise the error the user sees).
bool pack_scalar(const Slot &s, PyObject *v, char *blk) {
    char *dst = blk + s.offset;
    if (s.kind == K_F32 || s.kind == K_F64) {
        double d;
        if (PyFloat_CheckExact(v)) d = PyFloat_AS_DOUBLE(v);
        else {
            d = PyFloat_AsDouble(v);
            if (d == -1.0 && PyErr_Occurred()) {
                PyErr_Clear();
                return false;
            }
        }
        if (s.kind == K_F32) {
            float f = (float)d;
            memcpy(dst, &f, 4);
        } else {
            memcpy(dst, &d, 8);
        }
        return true;
    }
    if (s.kind == K_BOOL) {
        int b = PyObject_IsTrue(v);
        if (b < 0) {
            PyErr_Clear();
            return false;
        }
        *(unsigned char *)dst = (unsigned char)b;
        return true;
    }
    if (s.kind == K_CONV16) {
        PyObject *bits = PyObject_CallOneArg(s.conv, v);
        int64_t b;
        bool ok = bits && as_i64(bits, &b) && b >= 0 && b < 65536;
        Py_XDECREF(bits);
        if (!ok) {
            PyErr_Clear();
            return false;
        }
        uint16_t h = (uint16_t)b;
        memcpy(dst, &h, 2);
        return true;
    }
    PyObject *i = PyLong_CheckExact(v) ? (Py_INCREF(v), v) : PyNumber_Index(v);   // numpy ints
    if (!i) {
        PyErr_Clear();
        return false;
    }
    int64_t x;
    bool fits = as_i64(i, &x);
    if (!fits && s.kind == K_U64) {                         // 2^63 .. 2^64-1
        unsigned long long u = PyLong_AsUnsignedLongLong(i);
        Py_DECREF(i);
        if (u == (unsigned long long)-1 && PyErr_Occurred()) {
            PyErr_Clear();
            return false;
        }
        memcpy(dst, &u, 8);
        return true;
    }
    Py_DECREF(i);
    if (!fits) return false;
    switch (s.kind) {
    case K_I8: if (x < -128 || x > 127) return false; *(int8_t *)dst = (int8_t)x; return true;
    case K_U8: if (x < 0 || x > 255) return false; *(uint8_t *)dst = (uint8_t)x; return true;
    case K_I16: if (x < -32768 || x > 32767) return false; { int16_t y = (int16_t)x; memcpy(dst, &y, 2); } return true;
    case K_U16: if (x < 0 || x > 65535) return false; { uint16_t y = (uint16_t)x; memcpy(dst, &y, 2); } return true;
    case K_I32: if (x < INT32_MIN || x > INT32_MAX) return false; { int32_t y = (int32_t)x; memcpy(dst, &y, 4); } return true;
    case K_U32: if (x < 0 || x > (int64_t)UINT32_MAX) return false; { uint32_t y = (uint32_t)x; memcpy(dst, &y, 4); } return true;
    case K_I64: memcpy(dst, &x, 8); return true;
    case K_U64: if (x < 0) return false; memcpy(dst, &x, 8); return true;
    }
    return false;
}

unsigned long long g_served = 0;    // launches this module ran (for the tests)

// Run a native CPU plan: pack, call the entry without the GIL, check. Returns None, null with
// the Python check's error, or MISS.
PyObject *run_native(Plan *p, const Call &c, const unsigned g[3]) {
    alignas(16) char blk[MAX_BLOCK];
    void *params[MAX_BLOCK / 4];
    memcpy(blk, p->tmpl, p->tmpl_size);
    for (int i = 0; i < p->nslots; i++) {
        const Slot &s = p->slots[i];
        if (s.kind == K_NONE) continue;
        if (s.kind == K_PTR) {
            void *ptr = (void *)(uintptr_t)c.ptr[i];
            memcpy(blk + s.offset, &ptr, sizeof ptr);
        } else if (!pack_scalar(s, c.val[i], blk)) {
            Py_INCREF(S.miss);
            return S.miss;
        }
    }
    for (int i = 0; i < p->nfields; i++) params[i] = blk + p->field_offset[i];
    int workers = 1;
    if ((uint64_t)g[0] * g[1] * g[2] != 1) {
        PyObject *fn = PyObject_GetAttr(p->py, s_workers);
        if (!fn) return nullptr;
        PyObject *n = PyObject_CallNoArgs(fn);
        Py_DECREF(fn);
        if (!n) return nullptr;
        long v = PyLong_AsLong(n);
        Py_DECREF(n);
        if (v == -1 && PyErr_Occurred()) return nullptr;
        workers = (int)v;
    }
    Report r;
    memset(&r, 0, offsetof(Report, error_file));
    r.error_file[0] = r.error[0] = 0;
    r.pool = p->pool;
    r.watch_signals = PyThread_get_thread_ident() == S.main_thread;
    int rc;
    Entry fn = p->entry;
    Py_BEGIN_ALLOW_THREADS
    rc = fn(params, g[0], g[1], g[2], p->bx, p->by, p->bz, p->smem, workers, &r);
    Py_END_ALLOW_THREADS
    g_served++;
    if (rc == 0 && r.signal == 0 && r.asserts == 0) Py_RETURN_NONE;
    // Something to report: the Python plan's check says it (cpu.check_launch).
    PyObject *bytes = PyBytes_FromStringAndSize((const char *)&r, sizeof r);
    if (!bytes) return nullptr;
    PyObject *report = PyObject_CallMethodOneArg(S.report_type, s_from_buffer_copy, bytes);
    Py_DECREF(bytes);
    if (!report) return nullptr;
    PyObject *check = PyObject_GetAttr(p->py, s_check);
    PyObject *out = nullptr;
    if (check) {
        PyObject *rcobj = PyLong_FromLong(rc);
        if (rcobj) out = PyObject_CallFunctionObjArgs(check, rcobj, report, nullptr);
        Py_XDECREF(rcobj);
        Py_DECREF(check);
    }
    Py_DECREF(report);
    if (!out) return nullptr;
    Py_DECREF(out);
    Py_RETURN_NONE;
}

// The values the Python plans' run takes: per argument its pointer (arrays), value
// (scalars) or None (constants).
PyObject *values_list(const Plan *p, const Call &c) {
    PyObject *vals = PyList_New(c.nargs);
    if (!vals) return nullptr;
    for (int i = 0; i < c.nargs; i++) {
        PyObject *v;
        if (p->slots[i].kind == K_PTR) {
            v = PyLong_FromUnsignedLongLong(c.ptr[i]);
            if (!v) {
                Py_DECREF(vals);
                return nullptr;
            }
        } else {
            v = p->slots[i].kind == K_NONE ? Py_None : c.val[i];
            Py_INCREF(v);
        }
        PyList_SET_ITEM(vals, i, v);
    }
    return vals;
}

// A Python plan (GPU, or a CPU kernel that prints): its stream_for, then its run.
PyObject *run_python(Plan *p, const Call &c, const unsigned g[3], PyObject *stream) {
    PyObject *s = PyObject_CallMethodObjArgs(p->py, s_stream_for, stream, S.cpu_mode, nullptr);
    if (!s) return nullptr;
    if (s == Py_False) {
        Py_DECREF(s);
        Py_INCREF(S.miss);
        return S.miss;
    }
    g_served++;
    PyObject *vals = values_list(p, c);
    PyObject *grid = vals ? Py_BuildValue("(III)", g[0], g[1], g[2]) : nullptr;
    PyObject *out = grid ? PyObject_CallMethodObjArgs(p->py, s_run, grid, vals, s, nullptr) : nullptr;
    Py_XDECREF(grid);
    Py_XDECREF(vals);
    Py_DECREF(s);
    return out;
}

// ----------------------------------------------------------------------------- GPU plans
// host.driver.current(), read per call (a test's driver.use or install changes it between
// calls): while the module's `current` is still the function driver.py defines (its
// `_current_as_defined`), its answer is the last item of the module's `_active` list, read
// here without calling it; anything else (a replaced `current`, a list it would not read)
// calls `current`. A borrowed reference (compared by identity only), or null with an error.
PyObject *current_driver() {
    PyObject *fn = PyDict_GetItemWithError(S.driver_dict, s_current);
    if (fn && fn == S.current_fn) {
        PyObject *active = PyDict_GetItemWithError(S.driver_dict, s_active);
        if (active && PyList_CheckExact(active) && PyList_GET_SIZE(active) > 0)
            return PyList_GET_ITEM(active, PyList_GET_SIZE(active) - 1);
    }
    if (PyErr_Occurred()) return nullptr;
    PyObject *drv = fn ? PyObject_CallNoArgs(fn) : PyObject_CallMethodNoArgs(S.driver, s_current);
    Py_XDECREF(drv);                    // (the module holds the drivers it can return)
    return drv;
}

// dispatch.GpuPlan's stream_for, here: the stream's handle and cuda.core Stream; null with an
// error, or MISS (a new reference either way) when the plan cannot run the call.
PyObject *gpu_stream(Plan *p, PyObject *stream) {
    if (p->compiler != Py_None) {                       // TILEPY_GPU_COMPILER chose the plan's
        PyObject *now = env_choice(S.k_gpu_compiler, S.compilers, S.nvrtc, S.gpu_compiler);
        int same = now ? PyObject_RichCompareBool(now, p->compiler, Py_EQ) : -1;
        Py_XDECREF(now);
        if (same < 0) return nullptr;
        if (!same) return (Py_INCREF(S.miss), S.miss);
    }
    PyObject *drv = current_driver();
    if (!drv) return nullptr;
    if (drv != p->drv) return (Py_INCREF(S.miss), S.miss);   // a plan of another driver
    // The handle: `__cuda_stream__` read here; None and the other spellings by gpu.stream_handle.
    uint64_t handle = 0;
    bool have = false;
    if (stream != Py_None) {
        PyObject *fn = PyObject_GetAttr(stream, s_cuda_stream);
        PyObject *pair = fn ? PyObject_CallNoArgs(fn) : nullptr;
        Py_XDECREF(fn);
        if (!fn && PyErr_ExceptionMatches(PyExc_AttributeError)) PyErr_Clear();
        else if (!pair) return nullptr;
        else {
            have = PyTuple_Check(pair) && PyTuple_GET_SIZE(pair) == 2 &&
                   PyLong_CheckExact(PyTuple_GET_ITEM(pair, 1)) &&
                   as_ptr(PyTuple_GET_ITEM(pair, 1), &handle);
            Py_DECREF(pair);
        }
    }
    if (!have) {
        PyObject *h = PyObject_CallFunctionObjArgs(S.stream_handle, stream,
                                                   p->torch_args ? Py_True : Py_False,
                                                   p->dev_id, nullptr);
        if (!h) return nullptr;
        bool ok = as_ptr(h, &handle);
        Py_DECREF(h);
        if (!ok) return (Py_INCREF(S.miss), S.miss);
    }
    if (p->last_s && p->last_stream == stream && p->last_handle == handle) {
        Py_INCREF(p->last_s);                           // resolved (and checked) before
        return p->last_s;
    }
    PyObject *h = PyLong_FromUnsignedLongLong(handle);
    PyObject *st = h ? PyObject_CallFunctionObjArgs(S.stream_on, h, stream, p->dev, p->drv,
                                                    nullptr) : nullptr;
    Py_XDECREF(h);
    if (!st) return nullptr;
    Py_INCREF(stream);
    Py_XSETREF(p->last_stream, stream);
    Py_INCREF(st);
    Py_XSETREF(p->last_s, st);
    p->last_handle = handle;
    return st;
}

// gpu.DeviceContext's enter and leave, here (the plan's `ctx`): make the device current
// unless its context already is, and put the caller's back after; the driver's calls are the
// same. enter returns the caller's context (new reference) or null; leave, None or null.
PyObject *ctx_enter(Plan *p) {
    PyObject *prev = PyObject_CallMethodNoArgs(p->drv, s_current_context);
    PyObject *mine = prev ? PyObject_GetAttr(p->ctx, s_ctx) : nullptr;
    int same = mine == nullptr   ? -1
               : mine == Py_None ? 0
                                 : PyObject_RichCompareBool(prev, mine, Py_EQ);
    Py_XDECREF(mine);
    if (same == 0) {
        PyObject *r = PyObject_CallMethodNoArgs(p->dev, s_set_current);
        PyObject *now = r ? PyObject_CallMethodOneArg(p->drv, s_context_of, p->dev) : nullptr;
        Py_XDECREF(r);
        same = now && PyObject_SetAttr(p->ctx, s_ctx, now) == 0 ? 1 : -1;
        Py_XDECREF(now);
    }
    if (same < 0) Py_CLEAR(prev);
    return prev;
}

PyObject *ctx_leave(Plan *p, PyObject *prev) {
    PyObject *mine = PyObject_GetAttr(p->ctx, s_ctx);
    int same = mine ? PyObject_RichCompareBool(prev, mine, Py_EQ) : -1;
    Py_XDECREF(mine);
    if (same < 0) return nullptr;
    if (same) Py_RETURN_NONE;
    return PyObject_CallMethodOneArg(p->drv, s_set_context, prev);
}

// dispatch.GpuPlan.run, here: the arguments (the plan's list with this call's pointers and
// scalars), the grid's LaunchConfig, the device's context around cuda.core's launch; the
// driver's errors become the plan's TileLaunchError. (Kernels that synchronize after each
// launch, to report asserts or prints, run on the Python path: warm.py `_plan`.)
PyObject *run_gpu(Plan *p, const Call &c, const unsigned g[3], PyObject *stream) {
    PyObject *s = gpu_stream(p, stream);
    if (!s || s == S.miss) return s;
    Py_ssize_t nargs = PyList_GET_SIZE(p->args);
    PyObject *argv[3 + MAX_GPU_ARGS];
    PyObject *owned[MAX_ARGS];
    int nowned = 0;
    PyObject *out = nullptr, *cfg = nullptr, *prev = nullptr;
    if (nargs > MAX_GPU_ARGS) {                  // (warm.py makes no such plan)
        Py_DECREF(s);
        return (Py_INCREF(S.miss), S.miss);
    }
    for (Py_ssize_t i = 0; i < nargs; i++) argv[3 + i] = PyList_GET_ITEM(p->args, i);
    for (int i = 0; i < p->nslots && i < c.nargs; i++) {
        Slot &sl = p->slots[i];
        PyObject *in = c.val[i];
        if (sl.kind == K_PTR && !(sl.last && sl.last_ptr == c.ptr[i])) {
            PyObject *v = PyLong_FromUnsignedLongLong(c.ptr[i]);
            if (!v) goto done;
            Py_XSETREF(sl.last, v);
            sl.last_ptr = c.ptr[i];
        } else if (sl.kind == K_WRAP && !(sl.last && sl.last_in == in &&
                                           (PyLong_CheckExact(in) || PyFloat_CheckExact(in) ||
                                            PyBool_Check(in)))) {
            PyObject *x = PyObject_CallOneArg(sl.conv, in);     // raises the user's error
            PyObject *v = x ? PyObject_CallOneArg(sl.wrap, x) : nullptr;
            Py_XDECREF(x);
            if (!v) goto done;
            Py_XSETREF(sl.last, v);
            Py_INCREF(in);
            Py_XSETREF(sl.last_in, in);
        } else if (sl.kind != K_PTR && sl.kind != K_WRAP) {
            continue;
        }
        Py_INCREF(sl.last);                      // (a launch re-entering may replace it)
        owned[nowned++] = sl.last;
        argv[3 + sl.offset] = sl.last;
    }
    if (p->last_cfg && !memcmp(p->last_g, g, sizeof p->last_g)) {
        cfg = p->last_cfg;
        Py_INCREF(cfg);
    } else {
        PyObject *grid = Py_BuildValue("(III)", g[0], g[1], g[2]);
        cfg = grid ? PyObject_CallMethodOneArg(p->py, s_config, grid) : nullptr;
        Py_XDECREF(grid);
        if (!cfg) goto done;
        Py_INCREF(cfg);
        Py_XSETREF(p->last_cfg, cfg);
        memcpy(p->last_g, g, sizeof p->last_g);
    }
    prev = ctx_enter(p);
    if (!prev) goto done;
    argv[0] = s, argv[1] = cfg, argv[2] = p->kernel;
    {
        PyObject *core = PyObject_GetAttr(p->drv, s_core);      // (looked up per call, as
        PyObject *fn = core ? PyObject_GetAttr(core, s_launch) : nullptr;   // GpuPlan does)
        out = fn ? PyObject_Vectorcall(fn, argv, 3 + nargs, nullptr) : nullptr;
        Py_XDECREF(fn);
        Py_XDECREF(core);
    }
    g_served++;
    if (!out && PyErr_ExceptionMatches(p->errors)) {     // the plan's TileLaunchError
        PyObject *type, *value, *tb;
        PyErr_Fetch(&type, &value, &tb);
        PyErr_NormalizeException(&type, &value, &tb);
        PyObject *r = value ? PyObject_CallMethodOneArg(p->py, s_failed, value) : nullptr;
        Py_XDECREF(r);
        Py_XDECREF(type); Py_XDECREF(value); Py_XDECREF(tb);
    }
    {                                                    // finally: the caller's context back
        PyObject *type, *value, *tb;
        PyErr_Fetch(&type, &value, &tb);
        PyObject *r = ctx_leave(p, prev);
        if (!r) {
            Py_XDECREF(type); Py_XDECREF(value); Py_XDECREF(tb);
            Py_CLEAR(out);
        } else {
            Py_DECREF(r);
            PyErr_Restore(type, value, tb);
        }
    }
    if (out) {
        Py_DECREF(out);
        out = Py_None;
        Py_INCREF(out);
    }
done:
    for (int i = 0; i < nowned; i++) Py_DECREF(owned[i]);
    Py_XDECREF(prev);
    Py_XDECREF(cfg);
    Py_DECREF(s);
    return out;
}

// The plan of a call, or null (no error: a miss; with an error: it propagates).
Plan *find_plan(PyObject *kernel, PyObject *args, Call &c, PyObject **table_out) {
    *table_out = nullptr;
    if (!PyTuple_CheckExact(args)) return nullptr;
    PyObject *raw = env_value(S.k_interpret);            // TILEPY_INTERPRET: the Python path
    if (raw && PyObject_RichCompareBool(raw, S.v_off, Py_EQ) != 1) return nullptr;
    if (PyErr_Occurred()) return nullptr;
    // Whatever fails to be read here is the Python path's to find (and to raise).
    PyObject *kp = PyObject_GetAttr(kernel, s_tp_plans);
    PyObject *table = kp ? PyObject_GetAttr(kp, s_ctable) : nullptr;
    Py_XDECREF(kp);
    if (!table || Py_TYPE(table) != &TableType) {
        PyErr_Clear();
        Py_XDECREF(table);
        return nullptr;
    }
    // A value a trace read was rebound: the Python path drops the plans and compiles again.
    PyObject *reads = PyObject_GetAttr(kernel, s_reads);
    PyObject *items = reads ? PyObject_GetAttr(reads, s_items) : nullptr;
    Py_XDECREF(reads);
    int any = items ? PyObject_IsTrue(items) : -1;
    Py_XDECREF(items);
    if (any) {
        PyObject *changed = any > 0 ? PyObject_CallMethodNoArgs(kernel, s_changed) : nullptr;
        int yes = changed ? PyObject_IsTrue(changed) : -1;
        Py_XDECREF(changed);
        if (yes != 0) {
            PyErr_Clear();
            Py_DECREF(table);
            return nullptr;
        }
    }
    Table *t = (Table *)table;
    if (!make_key(c, args, t->consts, t->nconsts)) {
        Py_DECREF(table);
        return nullptr;
    }
    *table_out = table;
    return table_find(t, c)->plan;
}

bool overlap_same(const Plan *p, const Call &c) {
    if (p->noverlap < 2) return true;
    uint64_t lo[MAX_ARGS];
    bool flags[MAX_ARGS];
    for (int k = 0; k < p->noverlap; k++) lo[k] = c.ptr[p->ov_index[k]];
    disjoint_flags(p->noverlap, lo, p->ov_extent, flags);
    for (int k = 0; k < p->noverlap; k++)
        if (flags[k] != p->ov_pattern[k]) return false;
    return true;
}

Call g_call;        // the GIL guards it: no other thread runs this code while one does
int g_busy = 0;     // a launch re-entering (a Python callback launching): it gets its own

// launch(kernel, args, grid, stream): the warm launch, or MISS.
PyObject *py_launch(PyObject *, PyObject *const *argv, Py_ssize_t argc) {
    if (argc != 4) {
        PyErr_SetString(PyExc_TypeError, "launch(kernel, args, grid, stream)");
        return nullptr;
    }
    if (!S.ready) {
        Py_INCREF(S.miss);
        return S.miss;
    }
    Call *heap = nullptr;
    Call *c = &g_call;
    if (g_busy) {
        c = heap = (Call *)PyMem_Malloc(sizeof(Call));
        if (!c) return PyErr_NoMemory();
    }
    g_busy++;
    PyObject *table, *out = nullptr;
    unsigned g[3];
    Plan *p = find_plan(argv[0], argv[1], *c, &table);
    if (!p || !grid3(argv[2], g_grid_limit, g) || !overlap_same(p, *c)) {
        if (!PyErr_Occurred()) {
            out = S.miss;
            Py_INCREF(out);
        }
    } else {
        Py_INCREF(p);
        if (p->native == 2) {
            out = run_gpu(p, *c, g, argv[3]);
        } else if (!p->native) {
            out = run_python(p, *c, g, argv[3]);
        } else if (argv[3] != Py_None) {
            out = S.miss;                       // a stream with CPU arrays: intake explains
            Py_INCREF(out);
        } else {
            PyObject *mode = p->mode == Py_None ? nullptr : current_mode();
            if (p->mode != Py_None && !mode) {
                out = nullptr;
            } else if (mode && PyObject_RichCompareBool(mode, p->mode, Py_EQ) != 1) {
                out = PyErr_Occurred() ? nullptr : (Py_INCREF(S.miss), S.miss);
            } else {
                out = run_native(p, *c, g);
            }
            Py_XDECREF(mode);
        }
        Py_DECREF(p);
    }
    Py_XDECREF(table);
    g_busy--;
    PyMem_Free(heap);
    return out;
}

// ----------------------------------------------------------------------------- Python API
PyObject *py_served(PyObject *, PyObject *) { return PyLong_FromUnsignedLongLong(g_served); }

PyObject *py_key(PyObject *, PyObject *const *argv, Py_ssize_t argc) {
    if (argc != 2 || !PyTuple_Check(argv[0]) || Py_TYPE(argv[1]) != &TableType) {
        PyErr_SetString(PyExc_TypeError, "key(args: tuple, table: Table)");
        return nullptr;
    }
    Table *t = (Table *)argv[1];
    Call *c = (Call *)PyMem_Malloc(sizeof(Call));
    if (!c) return PyErr_NoMemory();
    PyObject *out;
    if (S.ready && make_key(*c, argv[0], t->consts, t->nconsts))
        out = PyBytes_FromStringAndSize((const char *)c->key, sizeof(uint64_t) * c->nkey);
    else if (PyErr_Occurred())
        out = nullptr;
    else {
        out = Py_None;
        Py_INCREF(out);
    }
    PyMem_Free(c);
    return out;
}

// lookup(kernel, args, grid): the Python plan the warm path would run for this call (no
// stream or mode checked), or None.
PyObject *py_lookup(PyObject *, PyObject *const *argv, Py_ssize_t argc) {
    if (argc != 3) {
        PyErr_SetString(PyExc_TypeError, "lookup(kernel, args, grid)");
        return nullptr;
    }
    Call *c = (Call *)PyMem_Malloc(sizeof(Call));
    if (!c) return PyErr_NoMemory();
    PyObject *table;
    unsigned g[3];
    Plan *p = S.ready ? find_plan(argv[0], argv[1], *c, &table) : (table = nullptr, nullptr);
    PyObject *out = nullptr;
    if (!PyErr_Occurred()) {
        out = (p && grid3(argv[2], g_grid_limit, g) && overlap_same(p, *c)) ? p->py : Py_None;
        Py_INCREF(out);
    }
    Py_XDECREF(table);
    PyMem_Free(c);
    return out;
}

// store(table, args, plan): file `plan` (a Plan) under the key of `args`; False when the
// arguments have no key here (the Python path serves them).
PyObject *py_store(PyObject *, PyObject *const *argv, Py_ssize_t argc) {
    if (argc != 3 || Py_TYPE(argv[0]) != &TableType || !PyTuple_Check(argv[1]) ||
        Py_TYPE(argv[2]) != &PlanType) {
        PyErr_SetString(PyExc_TypeError, "store(table: Table, args: tuple, plan: Plan)");
        return nullptr;
    }
    Table *t = (Table *)argv[0];
    Call *c = (Call *)PyMem_Malloc(sizeof(Call));
    if (!c) return PyErr_NoMemory();
    PyObject *out = Py_False;
    if (S.ready && make_key(*c, argv[1], t->consts, t->nconsts)) {
        if (t->count >= MAX_PLANS) table_clear(t);
        if (2 * (t->count + 1) > t->cap && !table_grow(t)) {
            PyMem_Free(c);
            return PyErr_NoMemory();
        }
        TEntry *e = table_find(t, *c);
        if (e->plan) {
            Py_DECREF(e->plan);
        } else {
            e->key = (uint64_t *)PyMem_Malloc(sizeof(uint64_t) * (c->nkey ? c->nkey : 1));
            if (!e->key) {
                PyMem_Free(c);
                return PyErr_NoMemory();
            }
            memcpy(e->key, c->key, sizeof(uint64_t) * c->nkey);
            e->nkey = c->nkey;
            e->hash = c->hash;
            t->count++;
        }
        Py_INCREF(argv[2]);
        e->plan = (Plan *)argv[2];
        out = Py_True;
    }
    PyMem_Free(c);
    if (PyErr_Occurred()) return nullptr;
    Py_INCREF(out);
    return out;
}

// Fill an int array from a sequence of ints.
bool int_array(PyObject *seq, int **out, int *n) {
    PyObject *f = PySequence_Fast(seq, "expected a sequence of ints");
    if (!f) return false;
    *n = (int)PySequence_Fast_GET_SIZE(f);
    *out = (int *)PyMem_Calloc(*n ? *n : 1, sizeof(int));
    for (int i = 0; *out && i < *n; i++) (*out)[i] = (int)PyLong_AsLong(PySequence_Fast_GET_ITEM(f, i));
    Py_DECREF(f);
    return *out && !PyErr_Occurred();
}

void set_ref(PyObject **slot, PyObject *v) {
    Py_XINCREF(v);
    Py_XSETREF(*slot, v);
}

// A plan's overlap pattern: None or (indices, extents, pattern).
bool set_overlap(Plan *p, PyObject *overlap) {
    if (overlap == Py_None) return true;
    PyObject *idx, *ext, *pat;
    if (!PyArg_ParseTuple(overlap, "OOO", &idx, &ext, &pat)) return false;
    if (!int_array(idx, &p->ov_index, &p->noverlap)) return false;
    p->ov_extent = (uint64_t *)PyMem_Calloc(p->noverlap + 1, sizeof(uint64_t));
    p->ov_pattern = (bool *)PyMem_Calloc(p->noverlap + 1, sizeof(bool));
    if (!p->ov_extent || !p->ov_pattern || PySequence_Size(ext) != p->noverlap ||
        PySequence_Size(pat) != p->noverlap || p->noverlap > MAX_ARGS) {
        PyErr_SetString(PyExc_ValueError, "overlap: indices, extents and pattern differ");
        return false;
    }
    for (int k = 0; k < p->noverlap; k++) {
        PyObject *x = PySequence_GetItem(ext, k), *y = PySequence_GetItem(pat, k);
        p->ov_extent[k] = x ? PyLong_AsUnsignedLongLong(x) : 0;
        p->ov_pattern[k] = y ? PyObject_IsTrue(y) == 1 : false;
        Py_XDECREF(x);
        Py_XDECREF(y);
        if (p->ov_index[k] < 0 || p->ov_index[k] >= p->nslots) {
            PyErr_SetString(PyExc_ValueError, "overlap: index out of range");
            return false;
        }
    }
    if (PyErr_Occurred()) return false;
    return true;
}

// plan(py, native, entry, template, field_offsets, slots, block, smem, pool, mode, overlap)
//   slots: per kernel argument (kind, offset, conv or None);
//   overlap: None or (indices, extents, pattern).
// The plan's slots from a sequence of tuples, each read into its Slot by `one` (false: stop, with
// a Python error set).
template <class F> bool read_slots(Plan *p, PyObject *slots, F one) {
    PyObject *f = PySequence_Fast(slots, "slots: a sequence");
    if (!f) return false;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(f);
    p->slots = (Slot *)PyMem_Calloc(n ? n : 1, sizeof(Slot));
    p->nslots = (int)n;
    if (!p->slots) PyErr_NoMemory();
    for (Py_ssize_t i = 0; p->slots && i < n; i++)
        if (!one(p->slots[i], PySequence_Fast_GET_ITEM(f, i))) break;
    Py_DECREF(f);
    return p->slots && !PyErr_Occurred();
}

PyObject *py_plan(PyObject *, PyObject *args) {
    PyObject *py, *offsets, *slots, *mode, *overlap;
    int native;
    unsigned long long entry, smem, pool;
    const char *tmpl;
    Py_ssize_t tmpl_size;
    unsigned bx, by, bz;
    if (!PyArg_ParseTuple(args, "OpKy#OO(III)KKOO", &py, &native, &entry, &tmpl, &tmpl_size,
                          &offsets, &slots, &bx, &by, &bz, &smem, &pool, &mode, &overlap))
        return nullptr;
    if (tmpl_size > MAX_BLOCK) {
        PyErr_SetString(PyExc_ValueError, "argument block too large for the warm path");
        return nullptr;
    }
    Plan *p = PyObject_New(Plan, &PlanType);
    if (!p) return nullptr;
    memset((char *)p + sizeof(PyObject), 0, sizeof(Plan) - sizeof(PyObject));
    Py_INCREF(py);
    p->py = py;
    Py_INCREF(mode);
    p->mode = mode;
    p->native = native;
    p->entry = (Entry)(uintptr_t)entry;
    p->tmpl = (char *)PyMem_Malloc(tmpl_size ? tmpl_size : 1);
    if (!p->tmpl) goto fail;
    memcpy(p->tmpl, tmpl, tmpl_size);
    p->tmpl_size = (int)tmpl_size;
    if (!int_array(offsets, &p->field_offset, &p->nfields)) goto fail;
    if (p->nfields > MAX_BLOCK / 4) {
        PyErr_SetString(PyExc_ValueError, "too many parameters for the warm path");
        goto fail;
    }
    if (!read_slots(p, slots, [](Slot &s, PyObject *item) {
            PyObject *conv;
            if (!PyArg_ParseTuple(item, "iiO", &s.kind, &s.offset, &conv)) return false;
            if (conv != Py_None) {
                Py_INCREF(conv);
                s.conv = conv;
            }
            return true;
        }))
        goto fail;
    p->bx = bx, p->by = by, p->bz = bz, p->smem = smem, p->pool = (void *)(uintptr_t)pool;
    if (!set_overlap(p, overlap)) goto fail;
    for (int i = 0; i < p->nfields; i++)
        if (p->field_offset[i] < 0 || p->field_offset[i] >= p->tmpl_size) {
            PyErr_SetString(PyExc_ValueError, "a field offset is outside the argument block");
            goto fail;
        }
    for (int i = 0; native && i < p->nslots; i++)      // (a value is at most 8 bytes)
        if (p->slots[i].kind != K_NONE &&
            (p->slots[i].offset < 0 || p->slots[i].offset + 8 > MAX_BLOCK ||
             p->slots[i].offset >= p->tmpl_size)) {
            PyErr_SetString(PyExc_ValueError, "a slot is outside the argument block");
            goto fail;
        }
    return (PyObject *)p;
fail:
    Py_DECREF(p);
    return nullptr;
}

// gpu_plan(py, slots, overlap, drv, errors, kernel, ctx, dev, dev_id, compiler, args,
//          torch_args): a GPU plan run from here (dispatch.GpuPlan's fields);
//   slots: per kernel argument (kind, index in args, conv or None, wrap or None).
PyObject *py_gpu_plan(PyObject *, PyObject *a) {
    PyObject *py, *slots, *overlap, *drv, *errors, *kernel, *ctx, *dev, *dev_id, *compiler,
        *args;
    int torch_args;
    if (!PyArg_ParseTuple(a, "OOOOO!OOOO!OO!p", &py, &slots, &overlap, &drv, &PyTuple_Type,
                          &errors, &kernel, &ctx, &dev, &PyLong_Type, &dev_id, &compiler,
                          &PyList_Type, &args, &torch_args))
        return nullptr;
    if (!S.driver) {
        PyErr_SetString(PyExc_ValueError, "gpu_plan: configure_gpu first");
        return nullptr;
    }
    Plan *p = PyObject_New(Plan, &PlanType);
    if (!p) return nullptr;
    memset((char *)p + sizeof(PyObject), 0, sizeof(Plan) - sizeof(PyObject));
    p->native = 2;
    PyObject *objs[] = {py, drv, errors, kernel, ctx, dev, dev_id, compiler, args, Py_None};
    PyObject **refs[] = {&p->py, &p->drv, &p->errors, &p->kernel, &p->ctx, &p->dev, &p->dev_id,
                         &p->compiler, &p->args, &p->mode};
    for (int i = 0; i < 10; i++) {
        Py_INCREF(objs[i]);
        *refs[i] = objs[i];
    }
    p->torch_args = torch_args;
    if (!read_slots(p, slots, [args](Slot &sl, PyObject *item) {
            PyObject *conv, *wrap;
            if (!PyArg_ParseTuple(item, "iiOO", &sl.kind, &sl.offset, &conv, &wrap)) return false;
            if (sl.kind != K_NONE && (sl.offset < 0 || sl.offset >= PyList_GET_SIZE(args) ||
                                      (sl.kind == K_WRAP) != (conv != Py_None) ||
                                      (sl.kind != K_PTR && sl.kind != K_WRAP))) {
                PyErr_SetString(PyExc_ValueError, "gpu_plan: a slot is not an argument's");
                return false;
            }
            if (sl.kind == K_WRAP) {
                Py_INCREF(conv);
                sl.conv = conv;
                Py_INCREF(wrap);
                sl.wrap = wrap;
            }
            return true;
        }))
        goto fail;
    if (p->nslots > MAX_ARGS || PyList_GET_SIZE(args) > MAX_GPU_ARGS) {
        PyErr_SetString(PyExc_ValueError, "gpu_plan: too many arguments for the warm path");
        goto fail;
    }
    if (!set_overlap(p, overlap)) goto fail;
    return (PyObject *)p;
fail:
    Py_DECREF(p);
    return nullptr;
}

// configure_gpu(driver, k_gpu_compiler, compilers, gpu_compiler, stream_handle, stream_on):
// what GPU plans compare and call (warm.py gives them at the first GPU plan).
PyObject *py_configure_gpu(PyObject *, PyObject *args) {
    PyObject *o[6];
    if (!PyArg_ParseTuple(args, "O!OO!OOO", &PyModule_Type, &o[0], &o[1], &PyDict_Type, &o[2],
                          &o[3], &o[4], &o[5]))
        return nullptr;
    PyObject *fn = PyDict_GetItemWithError(PyModule_GetDict(o[0]), s_current_as_defined);
    if (!fn) {
        if (!PyErr_Occurred())
            PyErr_SetString(PyExc_ValueError, "configure_gpu: the driver module has no "
                                              "_current_as_defined");
        return nullptr;
    }
    set_ref(&S.current_fn, fn);
    set_ref(&S.driver, o[0]);
    S.driver_dict = PyModule_GetDict(o[0]);           // (borrowed: S.driver holds it)
    set_ref(&S.k_gpu_compiler, o[1]);
    set_ref(&S.compilers, o[2]);
    set_ref(&S.gpu_compiler, o[3]);
    set_ref(&S.stream_handle, o[4]);
    set_ref(&S.stream_on, o[5]);
    Py_RETURN_NONE;
}

// disjoint(ranges): intake.disjoint_flags over (start, length) pairs (for the tests).
PyObject *py_disjoint(PyObject *, PyObject *ranges) {
    PyObject *f = PySequence_Fast(ranges, "expected (start, length) pairs");
    if (!f) return nullptr;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(f);
    if (n > MAX_ARGS) {
        Py_DECREF(f);
        PyErr_SetString(PyExc_ValueError, "too many ranges");
        return nullptr;
    }
    uint64_t lo[MAX_ARGS], len[MAX_ARGS];
    bool flags[MAX_ARGS];
    for (Py_ssize_t i = 0; i < n; i++) {
        if (!PyArg_ParseTuple(PySequence_Fast_GET_ITEM(f, i), "KK", &lo[i], &len[i])) {
            Py_DECREF(f);
            return nullptr;
        }
    }
    Py_DECREF(f);
    disjoint_flags((int)n, lo, len, flags);
    PyObject *out = PyTuple_New(n);
    for (Py_ssize_t i = 0; out && i < n; i++) {
        PyObject *b = flags[i] ? Py_True : Py_False;
        Py_INCREF(b);
        PyTuple_SET_ITEM(out, i, b);
    }
    return out;
}

// probe(array): what this module reads of a numpy array (warm.py checks it against numpy).
PyObject *py_probe(PyObject *, PyObject *a) {
    NpArray *arr = (NpArray *)a;
    PyObject *shape = PyTuple_New(arr->nd), *strides = PyTuple_New(arr->nd);
    for (int d = 0; shape && strides && d < arr->nd; d++) {
        PyTuple_SET_ITEM(shape, d, PyLong_FromSsize_t(arr->dims[d]));
        PyTuple_SET_ITEM(strides, d, PyLong_FromSsize_t(arr->strides[d]));
    }
    PyObject *out = Py_BuildValue("(KNNOO)", (unsigned long long)(uintptr_t)arr->data, shape,
                                  strides, arr->descr,
                                  (arr->flags & NPY_WRITEABLE) ? Py_True : Py_False);
    return out;
}

// probe_torch(tensor): what the torch reader reads of a tensor, (ptr, shape, strides,
// scalar type, device kind, device index, neg), or None (warm.py checks it against torch).
PyObject *py_probe_torch(PyObject *, PyObject *t) {
    TorchFacts f;
    if (!S.torch_facts || (PyObject *)Py_TYPE(t) != S.torch_tensor || S.torch_mode() ||
        S.torch_facts(*(void **)((char *)t + S.torch_impl), &f) != 1)
        Py_RETURN_NONE;
    PyObject *shape = PyTuple_New(f.ndim), *strides = PyTuple_New(f.ndim);
    for (int d = 0; shape && strides && d < f.ndim; d++) {
        PyTuple_SET_ITEM(shape, d, PyLong_FromLongLong(f.sizes[d]));
        PyTuple_SET_ITEM(strides, d, PyLong_FromLongLong(f.strides[d]));
    }
    return Py_BuildValue("(KNNiiii)", (unsigned long long)f.ptr, shape, strides, f.scalar_type,
                         f.device_kind, f.device_index, f.neg);
}

// torch_reader(facts, mode, facts_size, offset, codes): use warm_torch.cpp's functions (their
// addresses; 0: none) on tensors holding their TensorImpl* at `offset`; `codes`: (scalar
// type, torch_dtypes code) pairs.
PyObject *py_torch_reader(PyObject *, PyObject *args) {
    unsigned long long facts, mode;
    int size;
    Py_ssize_t offset;
    PyObject *codes;
    if (!PyArg_ParseTuple(args, "KKinO", &facts, &mode, &size, &offset, &codes)) return nullptr;
    S.torch_facts = nullptr;
    S.torch_mode = nullptr;
    if (!facts) Py_RETURN_NONE;
    if (size != (int)sizeof(TorchFacts) || offset < (Py_ssize_t)sizeof(PyObject) || !mode) {
        PyErr_SetString(PyExc_ValueError, "torch_reader: the reader's layout differs");
        return nullptr;
    }
    for (short &c : S.torch_code) c = -1;
    PyObject *f = PySequence_Fast(codes, "codes: (scalar type, code) pairs");
    if (!f) return nullptr;
    for (Py_ssize_t i = 0; i < PySequence_Fast_GET_SIZE(f); i++) {
        int st, code;
        if (!PyArg_ParseTuple(PySequence_Fast_GET_ITEM(f, i), "ii", &st, &code)) {
            Py_DECREF(f);
            return nullptr;
        }
        if (st >= 0 && st < 256 && code >= 0 && code < S.torch_dtypes.n)
            S.torch_code[st] = (short)code;
    }
    Py_DECREF(f);
    S.torch_impl = offset;
    S.torch_mode = (int (*)())(uintptr_t)mode;
    S.torch_facts = (int (*)(void *, TorchFacts *))(uintptr_t)facts;
    Py_RETURN_NONE;
}

bool fill_registry(Registry &r, PyObject *seq) {
    PyObject *f = PySequence_Fast(seq, "expected a sequence");
    if (!f) return false;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(f);
    for (int i = 0; i < r.n; i++) Py_DECREF(r.obj[i]);
    r.n = 0;
    for (Py_ssize_t i = 0; i < n && r.n < MAX_REG; i++) {
        PyObject *o = PySequence_Fast_GET_ITEM(f, i);
        Py_INCREF(o);
        r.obj[r.n++] = o;
    }
    Py_DECREF(f);
    return true;
}

// configure(**facts): what the module compares and reads (warm.py gives them once).
PyObject *py_configure(PyObject *, PyObject *args, PyObject *kw) {
    static const char *names[] = {"ndarray", "np_dtypes", "scalar_types", "const_objs", "env",
                                  "k_interpret", "v_off", "k_mode", "modes", "mode_var",
                                  "cpu_mode", "report_type", "miss", "main_thread",
                                  "grid_limit", nullptr};
    PyObject *o[13];
    unsigned long main_thread, grid_limit;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "OOOOOOOOOOOOOkk", (char **)names, &o[0], &o[1],
                                     &o[2], &o[3], &o[4], &o[5], &o[6], &o[7], &o[8], &o[9],
                                     &o[10], &o[11], &o[12], &main_thread, &grid_limit))
        return nullptr;
    if (!fill_registry(S.np_dtypes, o[1]) || !fill_registry(S.scalar_types, o[2]) ||
        !fill_registry(S.const_objs, o[3]))
        return nullptr;
    set_ref(&S.ndarray, o[0]);
    set_ref(&S.env, o[4] == Py_None ? nullptr : o[4]);
    set_ref(&S.k_interpret, o[5]);
    set_ref(&S.v_off, o[6]);
    set_ref(&S.k_mode, o[7]);
    set_ref(&S.modes, o[8]);
    set_ref(&S.mode_var, o[9]);
    set_ref(&S.cpu_mode, o[10]);
    set_ref(&S.report_type, o[11]);
    set_ref(&S.miss, o[12]);
    S.main_thread = main_thread;
    g_grid_limit = grid_limit;
    if (!PyDict_CheckExact(S.modes) || (S.env && !PyDict_CheckExact(S.env)) ||
        !PyContextVar_CheckExact(S.mode_var)) {
        PyErr_SetString(PyExc_TypeError, "configure: modes and env must be dicts, mode_var a "
                                         "ContextVar");
        return nullptr;
    }
    S.ready = 1;
    Py_RETURN_NONE;
}

// adopt(torch_tensor, torch_dtypes, cupy_array): the array types intake has met since.
PyObject *py_adopt(PyObject *, PyObject *args) {
    PyObject *tt, *tdt, *cp;
    if (!PyArg_ParseTuple(args, "OOO", &tt, &tdt, &cp)) return nullptr;
    S.torch_facts = nullptr;           // its codes name the old registry: warm.py gives it again
    if (!fill_registry(S.torch_dtypes, tdt)) return nullptr;
    set_ref(&S.torch_tensor, tt == Py_None ? nullptr : tt);
    set_ref(&S.cupy_array, cp == Py_None ? nullptr : cp);
    Py_RETURN_NONE;
}

// record(cls, names): key objects of dataclass `cls` by their fields `names` (a tuple of str,
// host/params.DataclassParam's order); false when the registry is full.
PyObject *py_record(PyObject *, PyObject *args) {
    PyObject *cls, *names;
    if (!PyArg_ParseTuple(args, "OO!", &cls, &PyTuple_Type, &names)) return nullptr;
    Registry &r = S.records;
    if (r.find(cls) >= 0) Py_RETURN_TRUE;
    if (r.n >= MAX_REG) Py_RETURN_FALSE;
    Py_INCREF(cls);
    Py_INCREF(names);
    S.record_names[r.n] = names;
    r.obj[r.n++] = cls;
    Py_RETURN_TRUE;
}

PyMethodDef methods[] = {
    {"launch", (PyCFunction)(void (*)(void))py_launch, METH_FASTCALL,
     "launch(kernel, args, grid, stream): the warm launch, or the MISS sentinel"},
    {"lookup", (PyCFunction)(void (*)(void))py_lookup, METH_FASTCALL,
     "lookup(kernel, args, grid): the Python plan the warm path would run, or None"},
    {"key", (PyCFunction)(void (*)(void))py_key, METH_FASTCALL,
     "key(args, table): the call's key as bytes, or None"},
    {"store", (PyCFunction)(void (*)(void))py_store, METH_FASTCALL,
     "store(table, args, plan): file plan under the key of args"},
    {"plan", (PyCFunction)py_plan, METH_VARARGS, "plan(...): a plan for the table"},
    {"gpu_plan", (PyCFunction)py_gpu_plan, METH_VARARGS, "gpu_plan(...): a GPU plan run here"},
    {"configure_gpu", (PyCFunction)py_configure_gpu, METH_VARARGS,
     "configure_gpu(...): what GPU plans compare and call"},
    {"served", (PyCFunction)py_served, METH_NOARGS, "served(): launches run by this module"},
    {"disjoint", (PyCFunction)py_disjoint, METH_O, "disjoint(ranges): intake.disjoint_flags"},
    {"probe", (PyCFunction)py_probe, METH_O, "probe(array): what is read of a numpy array"},
    {"configure", (PyCFunction)(void (*)(void))py_configure, METH_VARARGS | METH_KEYWORDS,
     "configure(...): the objects the module compares and reads"},
    {"adopt", (PyCFunction)py_adopt, METH_VARARGS, "adopt(tensor_type, dtypes, cupy_type)"},
    {"record", (PyCFunction)py_record, METH_VARARGS, "record(cls, names): key a dataclass"},
    {"probe_torch", (PyCFunction)py_probe_torch, METH_O,
     "probe_torch(tensor): what the torch reader reads of a tensor, or None"},
    {"torch_reader", (PyCFunction)py_torch_reader, METH_VARARGS,
     "torch_reader(facts, mode, facts_size, offset, codes): read tensors with warm_torch.cpp"},
    {nullptr, nullptr, 0, nullptr}};

PyModuleDef module = {PyModuleDef_HEAD_INIT, "_warm", "tilepy's C-level warm launch path", -1,
                      methods};

}  // namespace

extern "C" PyMODINIT_FUNC PyInit__warm(void) {
    PlanType.tp_basicsize = sizeof(Plan);
    PlanType.tp_dealloc = (destructor)plan_dealloc;
    PlanType.tp_flags = Py_TPFLAGS_DEFAULT;
    PlanType.tp_doc = "a launch plan as the warm path runs it";
    TableType.tp_basicsize = sizeof(Table);
    TableType.tp_dealloc = (destructor)table_dealloc;
    TableType.tp_flags = Py_TPFLAGS_DEFAULT;
    TableType.tp_new = table_new;
    TableType.tp_doc = "Table(consts): a kernel's plans by call key";
    if (PyType_Ready(&PlanType) < 0 || PyType_Ready(&TableType) < 0) return nullptr;
    struct { PyObject **slot; const char *text; } strs[] = {
        {&s_tp_plans, "_tp_plans"}, {&s_ctable, "ctable"}, {&s_reads, "reads"},
        {&s_items, "items"}, {&s_changed, "changed"}, {&s_data_ptr, "data_ptr"},
        {&s_shape, "shape"}, {&s_stride, "stride"}, {&s_dtype, "dtype"}, {&s_device, "device"},
        {&s_is_cpu, "is_cpu"}, {&s_is_cuda, "is_cuda"}, {&s_get_device, "get_device"}, {&s_is_neg, "is_neg"}, {&s_data, "data"},
        {&s_ptr, "ptr"}, {&s_strides, "strides"}, {&s_id, "id"}, {&s_stream_for, "stream_for"}, {&s_run, "run"}, {&s_check, "check"},
        {&s_workers, "workers"}, {&s_from_buffer_copy, "from_buffer_copy"}, {&S.fast, "fast"},
        {&s_cuda_stream, "__cuda_stream__"}, {&s_config, "config"},
        {&s_current_context, "current_context"}, {&s_current, "current"},
        {&s_active, "_active"}, {&s_current_as_defined, "_current_as_defined"},
        {&s_ctx, "ctx"}, {&s_set_current, "set_current"}, {&s_context_of, "context_of"},
        {&s_set_context, "set_context"}, {&s_core, "core"}, {&s_launch, "launch"},
        {&s_failed, "failed"}, {&S.nvrtc, "nvrtc"}};
    for (auto &s : strs)
        if (!(*s.slot = PyUnicode_InternFromString(s.text))) return nullptr;
    PyObject *m = PyModule_Create(&module);
    if (!m) return nullptr;
    Py_INCREF(&TableType);
    PyModule_AddObject(m, "Table", (PyObject *)&TableType);
    const char *kinds[] = {"K_NONE", "K_PTR", "K_BOOL", "K_I8", "K_U8", "K_I16", "K_U16", "K_I32",
                           "K_U32", "K_I64", "K_U64", "K_F32", "K_F64", "K_CONV16", "K_WRAP"};
    for (int k = 0; k <= K_WRAP; k++) PyModule_AddIntConstant(m, kinds[k], k);
    PyModule_AddIntConstant(m, "REPORT_SIZE", sizeof(Report));
    PyModule_AddIntConstant(m, "MAX_BLOCK", MAX_BLOCK);
    PyModule_AddIntConstant(m, "MAX_ARGS", MAX_ARGS);
    PyModule_AddIntConstant(m, "MAX_GPU_ARGS", MAX_GPU_ARGS);
    return m;
}
