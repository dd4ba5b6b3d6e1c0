/* One-pass reader of TREC run and qrels text: ids interned into integer codes, scores and
 * grades parsed, without a Python or Arrow object per line (searchbench.data.native).
 *
 * The scanner accepts a strict subset of what the pure reader (trec.py) accepts: ASCII
 * fields separated by spaces or tabs, LF or CRLF line ends, blank and '#' comment lines,
 * exactly the layout's number of fields, scores in pyarrow's decimal grammar with a finite
 * value, grades -?[0-9]{1,18}. Anything else - a byte >= 0x80, a control character, a
 * field too many or too few, a number it does not take - makes feed() return False: the
 * caller then reads the whole file with the pure reader, which accepts it or names the
 * bad line. So both paths accept the same files, give the same values and the same
 * messages. Numbers: a decimal of at most 19 significant digits and a power of ten within
 * 10^+-22 is m * 10^e or m / 10^e of two exact doubles (one rounding: correctly rounded,
 * as pyarrow's parser); any other goes through strtod (correctly rounded in glibc). */

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#if defined(__linux__)
#include <sys/mman.h>
#endif
#include <pthread.h>
#include <unistd.h>

/* ---- growable arrays ------------------------------------------------------------------ */

/* The helpers below (buf_*, table_*, seen_*) touch no Python object: out of memory they
 * return -1 and set no exception; the function called from Python raises MemoryError. */

typedef struct {
    char *p;
    size_t used, cap; /* bytes */
} Buf;

static int buf_reserve(Buf *b, size_t extra) {
    if (b->used + extra <= b->cap) return 0;
    size_t cap = b->cap ? b->cap : 4096;
    while (cap < b->used + extra) cap *= 2;
    char *p = realloc(b->p, cap);
    if (!p) return -1;
    b->p = p;
    b->cap = cap;
    return 0;
}

static void buf_free(Buf *b) {
    free(b->p);
    b->p = NULL;
    b->used = b->cap = 0;
}

/* A Block owns a buffer's memory and lends it through the buffer protocol (numpy's
 * frombuffer): a column of 10^8 entries is handed over without a copy. */
typedef struct {
    PyObject_HEAD char *p;
    Py_ssize_t len;
    PyObject *owner; /* NULL: p is this block's; else p is lent by owner (read-only) */
} BlockObject;

static void block_dealloc(BlockObject *self) {
    if (self->owner)
        Py_DECREF(self->owner);
    else
        free(self->p);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static int block_getbuffer(BlockObject *self, Py_buffer *view, int flags) {
    static char empty[1];
    return PyBuffer_FillInfo(view, (PyObject *)self, self->p ? self->p : empty, self->len,
                             self->owner != NULL, flags);
}

static PyBufferProcs block_as_buffer = {.bf_getbuffer = (getbufferproc)block_getbuffer};

static PyTypeObject BlockType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "searchbench.data._scan.Block",
    .tp_basicsize = sizeof(BlockObject),
    .tp_dealloc = (destructor)block_dealloc,
    .tp_as_buffer = &block_as_buffer,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "A column's bytes, lent through the buffer protocol (owned here, not copied).",
};

/* A read-only Block of len bytes at p, owned by owner (kept alive while lent). */
static PyObject *block_lent(char *p, size_t len, PyObject *owner) {
    BlockObject *out = PyObject_New(BlockObject, &BlockType);
    if (!out) return NULL;
    out->p = p;
    out->len = (Py_ssize_t)len;
    Py_INCREF(owner);
    out->owner = owner;
    return (PyObject *)out;
}

/* The buffer's bytes as a Block (the buffer is emptied; its memory moves to the Block). */
static PyObject *buf_take(Buf *b) {
    BlockObject *out = PyObject_New(BlockObject, &BlockType);
    if (!out) return NULL;
    out->p = b->p;
    out->len = (Py_ssize_t)b->used;
    out->owner = NULL;
    if (b->p && b->used && b->used < b->cap) { /* give back the unused tail */
        char *p = realloc(b->p, b->used);
        if (p) out->p = p;
    }
    b->p = NULL;
    b->used = b->cap = 0;
    return (PyObject *)out;
}

/* ---- interning table: ids -> codes in order of first appearance ------------------------ */

typedef struct {
    Buf data;         /* the ids' bytes, back to back */
    Buf offsets;      /* int64, n + 1 */
    Buf hashes;       /* uint64 per id */
    uint64_t *slots;  /* open addressing: see SLOT_CODE */
    size_t mask;      /* slots - 1 */
    int64_t n;
} Table;

static inline __attribute__((always_inline)) uint64_t hash_bytes(const char *s, size_t len) {
    uint64_t h = 0x9E3779B97F4A7C15ULL ^ (len * 0xBF58476D1CE4E5B9ULL);
    while (len >= 8) {
        uint64_t w;
        memcpy(&w, s, 8);
        h = (h ^ w) * 0x94D049BB133111EBULL;
        h ^= h >> 31;
        s += 8;
        len -= 8;
    }
    if (len) {
        uint64_t w = 0;
        memcpy(&w, s, len);
        h = (h ^ w) * 0x94D049BB133111EBULL;
        h ^= h >> 31;
    }
    h *= 0xBF58476D1CE4E5B9ULL;
    h ^= h >> 29;
    return h;
}

/* n zeroed slots; a large table on Linux asks for transparent huge pages (a probe per line
 * lands anywhere in it: 4 KiB pages would add a TLB miss to the cache miss). */
static uint64_t *alloc_slots(size_t n) {
#if defined(__linux__) && defined(MADV_HUGEPAGE)
    size_t bytes = n * sizeof(uint64_t);
    if (bytes >= ((size_t)4 << 20)) {
        void *p = NULL;
        if (posix_memalign(&p, (size_t)2 << 20, bytes) == 0) {
            madvise(p, bytes, MADV_HUGEPAGE);
            memset(p, 0, bytes);
            return p;
        }
    }
#endif
    return calloc(n, sizeof(uint64_t));
}

static int table_init(Table *t) {
    memset(t, 0, sizeof(*t));
    size_t n_slots = 1 << 12;
    t->slots = alloc_slots(n_slots);
    if (!t->slots) return -1;
    t->mask = n_slots - 1;
    if (buf_reserve(&t->offsets, sizeof(int64_t)) < 0) return -1;
    ((int64_t *)t->offsets.p)[0] = 0;
    t->offsets.used = sizeof(int64_t);
    return 0;
}

static void table_free(Table *t) {
    buf_free(&t->data);
    buf_free(&t->offsets);
    buf_free(&t->hashes);
    free(t->slots);
    t->slots = NULL;
}

static inline const char *table_id(const Table *t, int64_t code, size_t *len) {
    const int64_t *off = (const int64_t *)t->offsets.p;
    *len = (size_t)(off[code + 1] - off[code]);
    return t->data.p + off[code];
}

static int table_grow(Table *t) {
    size_t n_slots = (t->mask + 1) * 2;
    uint64_t *slots = alloc_slots(n_slots);
    if (!slots) return -1;
    const uint64_t *hashes = (const uint64_t *)t->hashes.p;
    size_t mask = n_slots - 1;
    for (int64_t code = 0; code < t->n; code++) {
        size_t i = (size_t)hashes[code] & mask;
        while (slots[i]) i = (i + 1) & mask;
        slots[i] = ((hashes[code] >> 32) << 32) | (uint64_t)(code + 1);
    }
    free(t->slots);
    t->slots = slots;
    t->mask = mask;
    return 0;
}

/* A slot holds (hash high 32 bits << 32) | (code + 1); 0 is empty. The hash in the slot
 * settles most probes without touching the ids (one cache miss per new id). */
#define SLOT_CODE(slot) ((int64_t)((slot) & 0xffffffffULL) - 1)
#define SLOT_HASH(slot) ((uint32_t)((slot) >> 32))

/* Room for about n ids without growing (the table's slots at most half full). */
static int table_presize(Table *t, int64_t n) {
    while ((int64_t)(t->mask + 1) < 2 * n)
        if (table_grow(t) < 0) return -1;
    return 0;
}

/* The code of an id with hash h, or -1 (only look). */
static int64_t table_find_hashed(const Table *t, const char *s, size_t len, uint64_t h) {
    size_t i = (size_t)h & t->mask;
    for (;;) {
        uint64_t slot = t->slots[i];
        if (!slot) return -1;
        if (SLOT_HASH(slot) == (uint32_t)(h >> 32)) {
            size_t n;
            const char *id = table_id(t, SLOT_CODE(slot), &n);
            if (n == len && memcmp(id, s, len) == 0) return SLOT_CODE(slot);
        }
        i = (i + 1) & t->mask;
    }
}

/* The code of an id, or -1 (only look). */
static int64_t table_find(const Table *t, const char *s, size_t len) {
    return table_find_hashed(t, s, len, hash_bytes(s, len));
}

/* The code of an id with hash h, added if new; -1 on memory error. */
static int64_t table_intern_hashed(Table *t, const char *s, size_t len, uint64_t h) {
    size_t i = (size_t)h & t->mask;
    for (;;) {
        uint64_t slot = t->slots[i];
        if (!slot) break;
        if (SLOT_HASH(slot) == (uint32_t)(h >> 32)) {
            size_t n;
            const char *id = table_id(t, SLOT_CODE(slot), &n);
            if (n == len && memcmp(id, s, len) == 0) return SLOT_CODE(slot);
        }
        i = (i + 1) & t->mask;
    }
    if (t->n >= INT32_MAX - 1) {
        PyErr_SetString(PyExc_OverflowError, "more than 2**31 - 2 distinct ids");
        return -1;
    }
    if (buf_reserve(&t->data, len) < 0 || buf_reserve(&t->offsets, sizeof(int64_t)) < 0 ||
        buf_reserve(&t->hashes, sizeof(uint64_t)) < 0)
        return -1;
    memcpy(t->data.p + t->data.used, s, len);
    t->data.used += len;
    int64_t code = t->n++;
    ((int64_t *)t->offsets.p)[code + 1] = (int64_t)t->data.used;
    t->offsets.used += sizeof(int64_t);
    ((uint64_t *)t->hashes.p)[code] = h;
    t->hashes.used += sizeof(uint64_t);
    t->slots[i] = ((h >> 32) << 32) | (uint64_t)(code + 1);
    if ((size_t)t->n * 2 > t->mask + 1 && table_grow(t) < 0) return -1;
    return code;
}

static inline int64_t table_intern(Table *t, const char *s, size_t len) {
    return table_intern_hashed(t, s, len, hash_bytes(s, len));
}

/* ---- Vocab: a finished table, seen from Python ----------------------------------------- */

/* A Vocab holds its ids in t. An Entries (a run's ids, one per entry) may hold them in two
 * parts, t then tail: the rows of a second part scanned at once (absorb()) stay where
 * they were written, and are moved after t's only when buffers() lends them as one column
 * (evaluation never asks: judge() reads both parts). */
typedef struct {
    PyObject_HEAD Table t;
    Table tail;
} VocabObject;

static PyTypeObject VocabType;

static void vocab_dealloc(VocabObject *self) {
    table_free(&self->t);
    table_free(&self->tail);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static Py_ssize_t vocab_len(VocabObject *self) {
    return (Py_ssize_t)(self->t.n + self->tail.n);
}

/* The id at code (a Vocab) or entry (an Entries: t's, then tail's). */
static inline const char *vocab_id(const VocabObject *self, int64_t code, size_t *len) {
    return code < self->t.n ? table_id(&self->t, code, len)
                            : table_id(&self->tail, code - self->t.n, len);
}

/* The tail's ids appended to t's (their offsets shifted), the tail freed; -1 out of memory
 * (no exception set). */
static int vocab_join_tail(VocabObject *self) {
    Table *t = &self->t, *tail = &self->tail;
    if (!tail->n) return 0;
    if (buf_reserve(&t->data, tail->data.used) < 0 ||
        buf_reserve(&t->offsets, (size_t)tail->n * 8) < 0)
        return -1;
    int64_t shift = (int64_t)t->data.used;
    memcpy(t->data.p + t->data.used, tail->data.p, tail->data.used);
    t->data.used += tail->data.used;
    int64_t *out = (int64_t *)(t->offsets.p + t->offsets.used);
    const int64_t *in = (const int64_t *)tail->offsets.p;
    for (int64_t i = 0; i < tail->n; i++) out[i] = in[i + 1] + shift;
    t->offsets.used += (size_t)tail->n * 8;
    t->n += tail->n;
    table_free(tail);
    memset(tail, 0, sizeof(*tail));
    return 0;
}

static PyObject *vocab_tolist(VocabObject *self, PyObject *Py_UNUSED(ignored)) {
    PyObject *out = PyList_New(vocab_len(self));
    if (!out) return NULL;
    for (int64_t code = 0; code < vocab_len(self); code++) {
        size_t len;
        const char *s = vocab_id(self, code, &len);
        PyObject *item = PyUnicode_DecodeUTF8(s, (Py_ssize_t)len, "strict");
        if (!item) {
            Py_DECREF(out);
            return NULL;
        }
        PyList_SET_ITEM(out, (Py_ssize_t)code, item);
    }
    return out;
}

/* get(code): one id as str */
static PyObject *vocab_get(VocabObject *self, PyObject *arg) {
    long long code = PyLong_AsLongLong(arg);
    if (code == -1 && PyErr_Occurred()) return NULL;
    if (code < 0 || code >= vocab_len(self)) {
        PyErr_SetString(PyExc_IndexError, "code out of range");
        return NULL;
    }
    size_t len;
    const char *s = vocab_id(self, code, &len);
    return PyUnicode_DecodeUTF8(s, (Py_ssize_t)len, "strict");
}

static PyObject *vocab_buffers(VocabObject *self, PyObject *Py_UNUSED(ignored)) {
    if (vocab_join_tail(self) < 0) return PyErr_NoMemory();
    return Py_BuildValue("(NN)",
                         block_lent(self->t.offsets.p, self->t.offsets.used, (PyObject *)self),
                         block_lent(self->t.data.p, self->t.data.used, (PyObject *)self));
}

/* codes_of(ids): int32 bytearray, the code of each str of the sequence here, -1 if absent */
static PyObject *vocab_codes_of(VocabObject *self, PyObject *ids) {
    PyObject *seq = PySequence_Fast(ids, "codes_of() takes a sequence of str");
    if (!seq) return NULL;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    PyObject *out = PyByteArray_FromStringAndSize(NULL, n * (Py_ssize_t)sizeof(int32_t));
    if (!out) {
        Py_DECREF(seq);
        return NULL;
    }
    int32_t *codes = (int32_t *)PyByteArray_AS_STRING(out);
    PyObject **items = PySequence_Fast_ITEMS(seq);
    for (Py_ssize_t i = 0; i < n; i++) {
        Py_ssize_t len;
        const char *s = PyUnicode_Check(items[i]) ? PyUnicode_AsUTF8AndSize(items[i], &len)
                                                  : NULL;
        if (!s) {
            if (!PyErr_Occurred())
                PyErr_SetString(PyExc_TypeError, "codes_of() takes a sequence of str");
            Py_DECREF(seq);
            Py_DECREF(out);
            return NULL;
        }
        codes[i] = (int32_t)table_find(&self->t, s, (size_t)len);
    }
    Py_DECREF(seq);
    return out;
}

typedef struct {
    uint64_t prefix; /* the first 8 bytes, big-endian, zero-padded */
    const char *s;
    int64_t len;
    int64_t at;
} Key;

/* The first 8 bytes of s as a big-endian number (zero-padded): comparing two prefixes
 * compares the bytes (ids hold no NUL byte, so padding sorts a shorter id first). */
static uint64_t key_prefix(const char *s, size_t len) {
    uint64_t v = 0;
    size_t n = len < 8 ? len : 8;
    for (size_t i = 0; i < 8; i++) v = (v << 8) | (i < n ? (unsigned char)s[i] : 0);
    return v;
}

static int key_cmp(const void *a, const void *b) {
    const Key *x = a, *y = b;
    if (x->prefix != y->prefix) return x->prefix < y->prefix ? -1 : 1;
    int64_t n = x->len < y->len ? x->len : y->len;
    int c = memcmp(x->s, y->s, (size_t)n);
    if (c) return c;
    if (x->len != y->len) return x->len < y->len ? -1 : 1;
    return x->at < y->at ? -1 : (x->at > y->at);
}

/* keys sorted as key_cmp orders them: a stable LSD radix sort by prefix (a byte every key
 * shares is skipped), then key_cmp within each run of one prefix whose ids may differ (an
 * id longer than 8 bytes, or two lengths; ids of one length <= 8 with one prefix are the
 * same id, already in position order). qsort alone spent ~40 comparisons through a function
 * pointer per id. 0, or -1 out of memory. */
static int sort_keys(Key *keys, int64_t n) {
    Key *spare = malloc((size_t)(n ? n : 1) * sizeof(Key));
    if (!spare) return -1;
    Key *src = keys, *dst = spare;
    for (int shift = 0; shift < 64 && n > 1; shift += 8) {
        size_t count[256] = {0};
        for (int64_t i = 0; i < n; i++) count[(src[i].prefix >> shift) & 255]++;
        if (count[(src[0].prefix >> shift) & 255] == (size_t)n) continue;
        size_t at = 0;
        for (int b = 0; b < 256; b++) {
            size_t c = count[b];
            count[b] = at;
            at += c;
        }
        for (int64_t i = 0; i < n; i++) dst[count[(src[i].prefix >> shift) & 255]++] = src[i];
        Key *t = src;
        src = dst;
        dst = t;
    }
    if (src != keys) memcpy(keys, src, (size_t)n * sizeof(Key));
    free(spare);
    for (int64_t i = 0, j; i < n; i = j) {
        int differ = keys[i].len > 8;
        for (j = i + 1; j < n && keys[j].prefix == keys[i].prefix; j++)
            differ |= keys[j].len != keys[i].len;
        if (differ && j - i > 1) qsort(keys + i, (size_t)(j - i), sizeof(Key), key_cmp);
    }
    return 0;
}

/* order(codes): int64 bytearray, the positions of the int32 codes sorted byte-wise by their
 * ids (ties by position); codes None: all ids */
static PyObject *vocab_order(VocabObject *self, PyObject *arg) {
    Py_buffer view = {0};
    int64_t n = vocab_len(self);
    const int32_t *codes = NULL;
    if (arg != Py_None) {
        if (PyObject_GetBuffer(arg, &view, PyBUF_C_CONTIGUOUS) < 0) return NULL;
        if (view.len % 4) {
            PyBuffer_Release(&view);
            PyErr_SetString(PyExc_TypeError, "order() takes int32 codes");
            return NULL;
        }
        codes = view.buf;
        n = view.len / 4;
    }
    Key *keys = malloc((size_t)(n ? n : 1) * sizeof(Key));
    PyObject *out = keys ? PyByteArray_FromStringAndSize(NULL, (Py_ssize_t)(n * 8)) : NULL;
    if (!out) {
        free(keys);
        if (codes) PyBuffer_Release(&view);
        return keys ? NULL : PyErr_NoMemory();
    }
    for (int64_t i = 0; i < n; i++) {
        int64_t code = codes ? codes[i] : i;
        if (code < 0 || code >= vocab_len(self)) {
            free(keys);
            Py_DECREF(out);
            PyBuffer_Release(&view);
            PyErr_SetString(PyExc_IndexError, "code out of range");
            return NULL;
        }
        size_t len;
        keys[i].s = vocab_id(self, code, &len);
        keys[i].len = (int64_t)len;
        keys[i].prefix = key_prefix(keys[i].s, len);
        keys[i].at = i;
    }
    if (codes) PyBuffer_Release(&view);
    int sorted;
    Py_BEGIN_ALLOW_THREADS
    sorted = sort_keys(keys, n);
    Py_END_ALLOW_THREADS
    if (sorted < 0) {
        free(keys);
        Py_DECREF(out);
        return PyErr_NoMemory();
    }
    int64_t *order = (int64_t *)PyByteArray_AS_STRING(out);
    for (int64_t i = 0; i < n; i++) order[i] = keys[i].at;
    free(keys);
    return out;
}

static PyMethodDef vocab_methods[] = {
    {"tolist", (PyCFunction)vocab_tolist, METH_NOARGS, "The ids as a list of str."},
    {"get", (PyCFunction)vocab_get, METH_O, "The id with this code, as str."},
    {"buffers", (PyCFunction)vocab_buffers, METH_NOARGS,
     "(offsets, data): int64 offsets (n + 1) and the ids' UTF-8 bytes."},
    {"codes_of", (PyCFunction)vocab_codes_of, METH_O,
     "int32 bytearray: the code here of each str of a sequence, -1 where absent."},
    {"order", (PyCFunction)vocab_order, METH_O,
     "int64 bytearray: positions of int32 codes (None: all ids) in byte-wise id order."},
    {NULL, NULL, 0, NULL}};

static PySequenceMethods vocab_as_sequence = {.sq_length = (lenfunc)vocab_len};

static PyTypeObject VocabType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "searchbench.data._scan.Vocab",
    .tp_basicsize = sizeof(VocabObject),
    .tp_dealloc = (destructor)vocab_dealloc,
    .tp_as_sequence = &vocab_as_sequence,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Interned ids (codes in order of first appearance), held in C.",
    .tp_methods = vocab_methods,
};

/* ---- Entries: the doc id of every run line, in file order (not interned) ---------------- */

/* A run's doc ids are kept as they come (offsets and bytes, as an Arrow string column):
 * interning them into one run-wide table cost a cache miss per line once the table
 * outgrew the cache (10^7 distinct ids: 256 MiB of slots), and evaluation needs only each
 * entry's id looked up among the ids its own query judges (judge()). The table's slots
 * and hashes stay unused (NULL). */

static PyTypeObject EntriesType;

/* judge(): the entries of each run query looked up among the qrels rows of that query.
 * A query judges a few documents (3 on average in the benchmark's qrels, hundreds in
 * TREC's), so each query's judged ids go into a small table that stays in cache: an
 * entry costs the hash of its id and a probe there, never a miss in a table of every
 * judged id (three dependent reads per found entry once 10^6 ids outgrow the cache). */
typedef struct {
    const Table *head, *tail;  /* the entries' ids (see VocabObject) */
    const void *order;         /* rank position -> entry (NULL: the same) */
    const int64_t *starts;     /* or per query: the entry at its first position (NULL) */
    int64_t n_entries;         /* an entry order names outside 0..n_entries-1: refused */
    int order_wide;            /* order is int64 (else int32) */
    const int64_t *bounds;     /* n_queries + 1: the queries' rank positions */
    const int64_t *first_row;  /* per query: its qrels rows [first_row, end_row) */
    const int64_t *end_row;
    const int64_t *row_off;    /* the qrels rows' doc ids: offsets and bytes */
    const char *row_data;
} Judge;

typedef struct { /* a part's hits, growing */
    Buf query, rank, row; /* int32, int64, int32 */
    int failed;           /* 1: out of memory, 2: order names an entry out of range */
} Hits;

typedef struct {
    uint32_t tag;
    int32_t row; /* row + 1; 0: empty */
} JudgeSlot;

static int hits_add(Hits *hits, int64_t q, int64_t rank, int64_t row) {
    if (buf_reserve(&hits->query, 4) < 0 || buf_reserve(&hits->rank, 8) < 0 ||
        buf_reserve(&hits->row, 4) < 0)
        return -1;
    int32_t q32 = (int32_t)q, row32 = (int32_t)row;
    memcpy(hits->query.p + hits->query.used, &q32, 4);
    memcpy(hits->rank.p + hits->rank.used, &rank, 8);
    memcpy(hits->row.p + hits->row.used, &row32, 4);
    hits->query.used += 4, hits->rank.used += 8, hits->row.used += 4;
    return 0;
}

/* The entries of queries [q_lo, q_hi) judged for their query, appended to hits. */
static void judge_range(const Judge *job, int64_t q_lo, int64_t q_hi, Hits *hits) {
    JudgeSlot *slots = NULL;
    size_t cap = 0;
    for (int64_t q = q_lo; q < q_hi && !hits->failed; q++) {
        int64_t a = job->first_row[q], b = job->end_row[q];
        if (a >= b || job->bounds[q] == job->bounds[q + 1]) continue;
        size_t size = 16; /* at most a quarter full */
        while (size < 4 * (size_t)(b - a)) size *= 2;
        if (size > cap) {
            free(slots);
            slots = malloc(size * sizeof(JudgeSlot));
            cap = slots ? size : 0;
            if (!slots) {
                hits->failed = 1;
                break;
            }
        }
        size_t mask = size - 1;
        memset(slots, 0, size * sizeof(JudgeSlot));
        uint64_t some = 0; /* a bit per judged id (by its hash's top 6 bits): most entries
                            * are not judged, and a clear bit settles them at once */
        for (int64_t r = a; r < b; r++) { /* the query's judged ids (a repeated one: first) */
            const char *s = job->row_data + job->row_off[r];
            size_t len = (size_t)(job->row_off[r + 1] - job->row_off[r]);
            uint64_t h = hash_bytes(s, len);
            size_t i = (size_t)h & mask;
            int again = 0;
            for (; slots[i].row && !again; i = (i + 1) & mask) {
                int64_t k = slots[i].row - 1;
                again = slots[i].tag == (uint32_t)(h >> 32) &&
                        (size_t)(job->row_off[k + 1] - job->row_off[k]) == len &&
                        memcmp(job->row_data + job->row_off[k], s, len) == 0;
            }
            if (!again) slots[i] = (JudgeSlot){(uint32_t)(h >> 32), (int32_t)(r + 1)};
            some |= 1ULL << (h >> 58);
        }
        for (int64_t pos = job->bounds[q]; pos < job->bounds[q + 1]; pos++) {
            int64_t e = job->starts       ? job->starts[q] + (pos - job->bounds[q])
                        : !job->order     ? pos
                        : job->order_wide ? ((const int64_t *)job->order)[pos]
                                          : ((const int32_t *)job->order)[pos];
            if ((uint64_t)e >= (uint64_t)job->n_entries) {
                hits->failed = 2;
                break;
            }
            size_t len;
            const char *s = e < job->head->n ? table_id(job->head, e, &len)
                                             : table_id(job->tail, e - job->head->n, &len);
            uint64_t h = hash_bytes(s, len);
            if (!((some >> (h >> 58)) & 1)) continue;
            for (size_t i = (size_t)h & mask; slots[i].row; i = (i + 1) & mask) {
                int64_t k = slots[i].row - 1;
                if (slots[i].tag == (uint32_t)(h >> 32) &&
                    (size_t)(job->row_off[k + 1] - job->row_off[k]) == len &&
                    memcmp(job->row_data + job->row_off[k], s, len) == 0) {
                    if (hits_add(hits, q, pos - job->bounds[q], k) < 0) hits->failed = 1;
                    break;
                }
            }
        }
    }
    free(slots);
}

typedef struct {
    const Judge *job;
    int64_t lo, hi; /* queries */
    Hits hits;
} JudgePart;

static void *judge_part(void *arg) {
    JudgePart *part = (JudgePart *)arg;
    judge_range(part->job, part->lo, part->hi, &part->hits);
    return NULL;
}

/* judge_range over the n_queries queries in ``parts`` parts of about as many entries, each
 * but the first on its own thread (0: one per core, at most JUDGE_THREADS, none below
 * JUDGE_SPLIT entries a part); called without the GIL. A thread that cannot be started
 * leaves its part to the calling thread. */
enum { JUDGE_THREADS = 8, JUDGE_SPLIT = 1 << 18 };

static int64_t judge_parallel(const Judge *job, int64_t n_queries, int64_t parts,
                              JudgePart *part) {
    int64_t n = job->bounds[n_queries] - job->bounds[0];
    if (parts <= 0) {
        long cores = sysconf(_SC_NPROCESSORS_ONLN);
        parts = cores < 1 ? 1 : cores;
        if (parts > n / JUDGE_SPLIT) parts = n / JUDGE_SPLIT;
    }
    if (parts > JUDGE_THREADS) parts = JUDGE_THREADS;
    if (parts > n_queries) parts = n_queries;
    if (parts < 1) parts = 1;
    pthread_t thread[JUDGE_THREADS];
    int started[JUDGE_THREADS] = {0};
    int64_t q = 0;
    for (int64_t k = 0; k < parts; k++) { /* part k ends at the first query past k+1 shares */
        int64_t target = job->bounds[0] + n * (k + 1) / parts, end = q;
        while (end < n_queries && (job->bounds[end] < target || end == q)) end++;
        if (k == parts - 1) end = n_queries;
        memset(&part[k], 0, sizeof(JudgePart));
        part[k].job = job, part[k].lo = q, part[k].hi = end;
        q = end;
    }
    for (int64_t k = 1; k < parts; k++)
        started[k] = pthread_create(&thread[k], NULL, judge_part, &part[k]) == 0;
    judge_part(&part[0]);
    for (int64_t k = 1; k < parts; k++) {
        if (started[k]) pthread_join(thread[k], NULL);
        else judge_part(&part[k]);
    }
    return parts;
}

/* A contiguous buffer argument of ``count`` items of ``itemsize`` bytes (a format other
 * than 'q'/'i'/'l' or bytes is refused); 0 on success, -1 with an exception set. */
static int get_array(PyObject *obj, Py_buffer *view, Py_ssize_t itemsize, Py_ssize_t count,
                     const char *what) {
    if (PyObject_GetBuffer(obj, view, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) < 0) return -1;
    if (view->itemsize != itemsize || (count >= 0 && view->len != count * itemsize)) {
        PyErr_Format(PyExc_ValueError, "judge(): %s: expected %zd items of %zd bytes", what,
                     count, itemsize);
        PyBuffer_Release(view);
        return -1;
    }
    return 0;
}

/* The parts' hits one after the other, as one bytearray per column. */
static PyObject *hits_joined(JudgePart *part, int64_t parts) {
    size_t size[3] = {0, 0, 0};
    for (int64_t k = 0; k < parts; k++) {
        size[0] += part[k].hits.query.used;
        size[1] += part[k].hits.rank.used;
        size[2] += part[k].hits.row.used;
    }
    PyObject *out[3] = {NULL, NULL, NULL};
    for (int c = 0; c < 3; c++) {
        out[c] = PyByteArray_FromStringAndSize(NULL, (Py_ssize_t)size[c]);
        if (!out[c]) {
            Py_XDECREF(out[0]);
            Py_XDECREF(out[1]);
            return NULL;
        }
        char *at = PyByteArray_AS_STRING(out[c]);
        for (int64_t k = 0; k < parts; k++) {
            Buf *b = c == 0 ? &part[k].hits.query : c == 1 ? &part[k].hits.rank
                                                           : &part[k].hits.row;
            if (b->used) memcpy(at, b->p, b->used);
            at += b->used;
        }
    }
    return Py_BuildValue("(NNN)", out[0], out[1], out[2]);
}
/* judge(order, bounds, first_row, end_row, row_offsets, row_data, parts=0, starts=None):
 * the entries judged for their own query, as three bytearrays (int32 query, int64 rank,
 * int32 row): run query q's entries are at rank positions bounds[q]..bounds[q+1] (entry
 * order[pos]; order None: pos; starts given: starts[q] + pos - bounds[q]), its qrels rows
 * are first_row[q]..end_row[q], row r's doc id is row_data[row_offsets[r]:row_offsets[r+1]].
 * Hits come in query order, then rank order; see judge_parallel for ``parts``. */
static PyObject *entries_judge(VocabObject *self, PyObject *args, PyObject *kwargs) {
    static char *keywords[] = {"order", "bounds", "first_row", "end_row", "row_offsets",
                               "row_data", "parts", "starts", NULL};
    PyObject *order_obj, *bounds_obj, *first_obj, *end_obj, *roff_obj, *rdata_obj;
    PyObject *starts_obj = Py_None;
    Py_ssize_t parts = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OOOOOO|nO:judge", keywords, &order_obj,
                                     &bounds_obj, &first_obj, &end_obj, &roff_obj, &rdata_obj,
                                     &parts, &starts_obj))
        return NULL;
    Py_buffer view[7];
    int got = 0, ok = 1;
    Py_buffer *order = NULL;
    if (order_obj != Py_None) {
        ok = PyObject_GetBuffer(order_obj, &view[got], PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) == 0;
        if (ok) order = &view[got++];
        if (ok && order->itemsize != 4 && order->itemsize != 8) {
            PyErr_SetString(PyExc_ValueError, "judge(): order holds int32 or int64");
            ok = 0;
        }
    }
    Py_buffer *bounds = &view[got];
    ok = ok && get_array(bounds_obj, bounds, 8, -1, "bounds") == 0;
    got += ok;
    Py_ssize_t n_queries = ok ? bounds->len / 8 - 1 : 0;
    if (ok && n_queries < 0) {
        PyErr_SetString(PyExc_ValueError, "judge(): bounds is empty");
        ok = 0;
    }
    Py_buffer *first = &view[got];
    ok = ok && get_array(first_obj, first, 8, n_queries, "first_row") == 0;
    got += ok;
    Py_buffer *end = &view[got];
    ok = ok && get_array(end_obj, end, 8, n_queries, "end_row") == 0;
    got += ok;
    Py_buffer *roff = &view[got];
    ok = ok && get_array(roff_obj, roff, 8, -1, "row_offsets") == 0;
    got += ok;
    Py_buffer *rdata = &view[got];
    ok = ok && PyObject_GetBuffer(rdata_obj, rdata, PyBUF_SIMPLE) == 0;
    got += ok;
    Py_buffer *starts = NULL;
    if (ok && starts_obj != Py_None) {
        starts = &view[got];
        ok = get_array(starts_obj, starts, 8, n_queries, "starts") == 0;
        got += ok;
    }
    if (ok) { /* every position and row named must exist (and entry: judge_range) */
        const int64_t *b = bounds->buf, *fr = first->buf, *er = end->buf, *ro = roff->buf;
        int64_t n_pos = order ? order->len / order->itemsize : vocab_len(self);
        int64_t n_rows = roff->len / 8 - 1;
        for (Py_ssize_t q = 0; ok && q < n_queries; q++)
            ok = b[q] >= 0 && b[q] <= b[q + 1] && b[q + 1] <= n_pos &&
                 (fr[q] >= er[q] || (fr[q] >= 0 && er[q] <= n_rows));
        for (int64_t r = 0; ok && r < n_rows; r++)
            ok = ro[r] >= 0 && ro[r] <= ro[r + 1] && ro[r + 1] <= rdata->len;
        if (!ok) PyErr_SetString(PyExc_ValueError, "judge(): a bound, row or entry out of range");
    }
    PyObject *out = NULL;
    if (ok) {
        Judge job = {&self->t, &self->tail, order ? order->buf : NULL,
                     starts ? starts->buf : NULL, vocab_len(self),
                     order && order->itemsize == 8,
                     bounds->buf, first->buf, end->buf, roff->buf, rdata->buf};
        JudgePart part[JUDGE_THREADS];
        int64_t n_parts = 0;
        Py_BEGIN_ALLOW_THREADS
        n_parts = judge_parallel(&job, n_queries, (int64_t)parts, part);
        Py_END_ALLOW_THREADS
        int failed = 0;
        for (int64_t k = 0; k < n_parts; k++) failed |= part[k].hits.failed;
        if (failed & 2)
            PyErr_SetString(PyExc_ValueError, "judge(): a bound, row or entry out of range");
        else if (failed)
            PyErr_NoMemory();
        else
            out = hits_joined(part, n_parts);
        for (int64_t k = 0; k < n_parts; k++) {
            buf_free(&part[k].hits.query);
            buf_free(&part[k].hits.rank);
            buf_free(&part[k].hits.row);
        }
    }
    for (int k = 0; k < got; k++) PyBuffer_Release(&view[k]);
    return out;
}

static PyMethodDef entries_methods[] = {
    {"get", (PyCFunction)vocab_get, METH_O, "The id of this entry, as str."},
    {"buffers", (PyCFunction)vocab_buffers, METH_NOARGS,
     "(offsets, data): int64 offsets (n + 1) and the ids' UTF-8 bytes."},
    {"judge", (PyCFunction)(void (*)(void))entries_judge, METH_VARARGS | METH_KEYWORDS,
     "judge(order, bounds, first_row, end_row, row_offsets, row_data, parts=0, starts=None): "
     "(query, rank, row) bytearrays (int32, int64, int32) of the entries whose doc id is "
     "among their own query's qrels rows; in ``parts`` parts at once (0: one per core for "
     "a large run)."},
    {"order", (PyCFunction)vocab_order, METH_O,
     "int64 bytearray: positions of int32 entry indices (None: all) in byte-wise id order."},
    {NULL, NULL, 0, NULL}};

static PyTypeObject EntriesType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "searchbench.data._scan.Entries",
    .tp_basicsize = sizeof(VocabObject),
    .tp_dealloc = (destructor)vocab_dealloc,
    .tp_as_sequence = &vocab_as_sequence,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "The doc id of every run entry, in file order (not interned), held in C.",
    .tp_methods = entries_methods,
};

/* ---- numbers ---------------------------------------------------------------------------- */

static const double POW10[] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,
                               1e8,  1e9,  1e10, 1e11, 1e12, 1e13, 1e14, 1e15,
                               1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};

static inline int is_digit(char c) { return c >= '0' && c <= '9'; }

/* pyarrow's grammar [+-]?(D+.?D*|.D+)([eE][+-]?D+)?; 1 and *out on success, 0 otherwise */
static int parse_score(const char *s, size_t len, double *out) {
    const char *p = s, *end = s + len;
    int negative = 0;
    if (p < end && (*p == '+' || *p == '-')) negative = *p++ == '-';
    uint64_t m = 0;
    int sig = 0, digits = 0, frac = 0, dropped = 0;
    while (p < end && is_digit(*p)) {
        if (m || *p != '0') {
            if (sig < 19) {
                m = m * 10 + (uint64_t)(*p - '0');
                sig++;
            } else {
                dropped = 1;
            }
        }
        p++;
        digits++;
    }
    if (p < end && *p == '.') {
        p++;
        while (p < end && is_digit(*p)) {
            if (m || *p != '0') {
                if (sig < 19) {
                    m = m * 10 + (uint64_t)(*p - '0');
                    sig++;
                    frac++;
                } else {
                    dropped = 1;
                }
            } else {
                frac++;
            }
            p++;
            digits++;
        }
    }
    if (!digits) return 0;
    long exp = 0;
    if (p < end && (*p == 'e' || *p == 'E')) {
        p++;
        int eneg = 0;
        if (p < end && (*p == '+' || *p == '-')) eneg = *p++ == '-';
        if (p == end || !is_digit(*p)) return 0;
        while (p < end && is_digit(*p)) {
            if (exp < 100000) exp = exp * 10 + (*p - '0');
            p++;
        }
        if (eneg) exp = -exp;
    }
    if (p != end) return 0;
    long e10 = exp - frac;
    double value;
    if (!dropped && m <= (1ULL << 53) && e10 >= -22 && e10 <= 22) {
        /* finite (at most 2^53 * 10^22): nothing waits on the division's result here */
        value = (double)m;
        value = e10 >= 0 ? value * POW10[e10] : value / POW10[-e10];
        *out = negative ? -value : value;
        return 1;
    } else {
        char small[128];
        if (len >= sizeof(small)) return 0;
        memcpy(small, s, len);
        small[len] = 0;
        value = strtod(small, NULL);
    }
    if (!isfinite(value)) return 0;
    *out = value;
    return 1;
}

/* -?[0-9]{1,18} */
static int parse_grade(const char *s, size_t len, int64_t *out) {
    int negative = len && s[0] == '-';
    size_t i = (size_t)negative;
    if (len - i < 1 || len - i > 18) return 0;
    int64_t v = 0;
    for (; i < len; i++) {
        if (!is_digit(s[i])) return 0;
        v = v * 10 + (s[i] - '0');
    }
    *out = negative ? -v : v;
    return 1;
}

/* ---- Scanner ---------------------------------------------------------------------------- */

enum { RUN = 0, QRELS_TREC = 1, QRELS_BEIR = 2 };
#define MAX_FIELDS 6

/* The doc ids of the current query's entries (a run grouped by query): a repeated
 * (query, doc) pair is found within the query, in a table that stays in cache. A slot is
 * current when its generation is the query's; a new query bumps the generation. The
 * table is at most a quarter full, so a probe's first slot is nearly always free (half
 * full, the probe loop's branch was mispredicted often enough to cost ~15 % of the scan). */
typedef struct {
    uint32_t gen, hash;
    int64_t entry;
} SeenSlot;

typedef struct {
    SeenSlot *slots;
    size_t mask;
    uint32_t gen;
    int64_t count, first; /* entries of the current query, its first entry */
} Seen;

typedef struct {
    PyObject_HEAD int kind, n_fields, q_field, d_field, v_field;
    int skip_first;       /* a header line to skip (BEIR qrels) */
    Table queries, docs;  /* docs: qrels ids interned; a run's ids one per entry */
    Table docs_tail;      /* a run's: the ids of the part absorbed (see VocabObject) */
    Buf q_codes, d_codes, values; /* int32, int32 (qrels), float64 (run) or int64 (qrels) */
    Buf q_bounds;         /* a grouped run's: int64, the first row of each query, instead of
                           * q_codes (built from them if the run turns out not grouped) */
    Seen seen;            /* run: the current query's doc ids */
    int64_t rows;
    int32_t prev_q;
    double prev_score;
    int grouped, descending, duplicate, tied, finished;
    PyObject *first_tag;  /* field 6 of the first run line (bytes) */
    const char *first_tag_at; /* that field in the block fed, until feed() makes it bytes */
    size_t first_tag_len;
    int busy;   /* a feed() is parsing (without the GIL) */
    int sealed; /* absorb() appended another scanner's rows: only finish() is left */
} ScannerObject;

static void scanner_dealloc(ScannerObject *self) {
    table_free(&self->queries);
    table_free(&self->docs);
    table_free(&self->docs_tail);
    buf_free(&self->q_codes);
    buf_free(&self->q_bounds);
    buf_free(&self->d_codes);
    buf_free(&self->values);
    free(self->seen.slots);
    Py_XDECREF(self->first_tag);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static int scanner_init(ScannerObject *self, PyObject *args, PyObject *kwds) {
    static char *names[] = {"kind", "skip_first", NULL};
    const char *kind;
    int skip_first = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "s|p", names, &kind, &skip_first)) return -1;
    if (strcmp(kind, "run") == 0) {
        self->kind = RUN;
        self->n_fields = 6, self->q_field = 0, self->d_field = 2, self->v_field = 4;
    } else if (strcmp(kind, "trec") == 0) {
        self->kind = QRELS_TREC;
        self->n_fields = 4, self->q_field = 0, self->d_field = 2, self->v_field = 3;
    } else if (strcmp(kind, "beir") == 0) {
        self->kind = QRELS_BEIR;
        self->n_fields = 3, self->q_field = 0, self->d_field = 1, self->v_field = 2;
    } else {
        PyErr_SetString(PyExc_ValueError, "kind is 'run', 'trec' or 'beir'");
        return -1;
    }
    self->skip_first = skip_first;
    if (table_init(&self->queries) < 0 || table_init(&self->docs) < 0) {
        PyErr_NoMemory();
        return -1;
    }
    self->prev_q = -1;
    self->grouped = self->descending = 1;
    if (self->kind == RUN) {
        self->seen.slots = calloc(256, sizeof(SeenSlot));
        if (!self->seen.slots) {
            PyErr_NoMemory();
            return -1;
        }
        self->seen.mask = 255;
    }
    return 0;
}

/* The entries e of the current query with the hash of their doc id, placed again in a
 * table of n_slots (a power of two). */
static int seen_resize(Seen *seen, const Table *docs, size_t n_slots) {
    SeenSlot *slots = calloc(n_slots, sizeof(SeenSlot));
    if (!slots) return -1;
    free(seen->slots);
    seen->slots = slots;
    seen->mask = n_slots - 1;
    seen->gen = 1;
    for (int64_t e = seen->first; e < seen->first + seen->count; e++) {
        size_t len;
        const char *id = table_id(docs, e, &len);
        uint64_t h = hash_bytes(id, len);
        size_t i = (size_t)h & seen->mask;
        while (slots[i].gen == seen->gen) i = (i + 1) & seen->mask;
        slots[i] = (SeenSlot){seen->gen, (uint32_t)(h >> 32), e};
    }
    return 0;
}

/* Note entry e (its doc id s, already in docs) for the current query: 1 if the query
 * already holds this doc id, 0 if not, -1 on memory error. */
static int seen_add(Seen *seen, const Table *docs, const char *s, size_t len, int64_t e) {
    if ((size_t)(seen->count + 1) * 4 > seen->mask + 1 &&
        seen_resize(seen, docs, (seen->mask + 1) * 2) < 0)
        return -1;
    uint64_t h = hash_bytes(s, len);
    size_t i = (size_t)h & seen->mask;
    for (; seen->slots[i].gen == seen->gen; i = (i + 1) & seen->mask) {
        if (seen->slots[i].hash == (uint32_t)(h >> 32)) {
            size_t n;
            const char *id = table_id(docs, seen->slots[i].entry, &n);
            if (n == len && memcmp(id, s, len) == 0) return 1;
        }
    }
    seen->slots[i] = (SeenSlot){seen->gen, (uint32_t)(h >> 32), e};
    seen->count++;
    return 0;
}

/* A new query starts at entry e: forget the last one's doc ids. */
static void seen_restart(Seen *seen, int64_t e) {
    seen->first = e;
    seen->count = 0;
    if (++seen->gen == 0) { /* the generations wrapped: clear every slot */
        memset(seen->slots, 0, (seen->mask + 1) * sizeof(SeenSlot));
        seen->gen = 1;
    }
}

/* Append an id to a table's bytes without interning it (a run's doc id per entry). */
static int table_append(Table *t, const char *s, size_t len) {
    if (buf_reserve(&t->data, len) < 0 || buf_reserve(&t->offsets, sizeof(int64_t)) < 0)
        return -1;
    memcpy(t->data.p + t->data.used, s, len);
    t->data.used += len;
    ((int64_t *)t->offsets.p)[++t->n] = (int64_t)t->data.used;
    t->offsets.used += sizeof(int64_t);
    return 0;
}

/* The query code of a row (qrels, or a run not grouped); -1 out of memory. */
static inline int add_code(ScannerObject *self, int64_t q) {
    if (buf_reserve(&self->q_codes, 4) < 0) return -1;
    int32_t code = (int32_t)q;
    memcpy(self->q_codes.p + self->q_codes.used, &code, 4);
    self->q_codes.used += 4;
    return 0;
}

/* A grouped run's q_codes, written out of q_bounds for its rows so far (query k holds the
 * rows from bounds[k] to the next query's); q_bounds emptied. -1 out of memory. */
static int codes_from_bounds(ScannerObject *self) {
    const int64_t *bounds = (const int64_t *)self->q_bounds.p;
    int64_t n = (int64_t)(self->q_bounds.used / 8);
    if (buf_reserve(&self->q_codes, (size_t)self->rows * 4) < 0) return -1;
    int32_t *out = (int32_t *)(self->q_codes.p + self->q_codes.used);
    for (int64_t k = 0; k < n; k++) {
        int64_t end = k + 1 < n ? bounds[k + 1] : self->rows;
        for (int64_t r = bounds[k]; r < end; r++) out[r] = (int32_t)k;
    }
    self->q_codes.used += (size_t)self->rows * 4;
    buf_free(&self->q_bounds);
    return 0;
}

/* One data line's fields (start, length); 0 to defer to the pure reader. */
static int add_line(ScannerObject *self, const char **field, const size_t *len) {
    if (self->skip_first) {
        self->skip_first = 0;
        return 1;
    }
    Buf *values = &self->values;
    if (buf_reserve(values, 8) < 0) return -1;
    double score = 0;
    int64_t grade = 0;
    if (self->kind == RUN) {
        if (!parse_score(field[4], len[4], &score)) return 0;
        memcpy(values->p + values->used, &score, 8);
    } else {
        if (!parse_grade(field[self->v_field], len[self->v_field], &grade)) return 0;
        memcpy(values->p + values->used, &grade, 8);
    }
    values->used += 8;
    const char *qs = field[self->q_field];
    size_t qlen = len[self->q_field];
    int64_t q;
    size_t prev_len;
    const char *prev = self->prev_q >= 0 ? table_id(&self->queries, self->prev_q, &prev_len)
                                         : NULL;
    if (prev && prev_len == qlen && memcmp(prev, qs, qlen) == 0) {
        q = self->prev_q; /* the query of the line before: no hashing */
    } else {
        q = table_intern(&self->queries, qs, qlen);
        if (q < 0) return -1;
    }
    const char *ds = field[self->d_field];
    size_t dlen = len[self->d_field];
    if (self->kind == RUN) {
        if (self->rows == 0) { /* made a bytes object by feed() */
            self->first_tag_at = field[5];
            self->first_tag_len = len[5];
        }
        if (table_append(&self->docs, ds, dlen) < 0) return -1;
        if (q == self->prev_q) {
            if (score > self->prev_score) self->descending = 0;
            if (score == self->prev_score) self->tied = 1;
        } else {
            if (self->grouped && (q != self->queries.n - 1 || self->prev_q >= q)) {
                if (codes_from_bounds(self) < 0) return -1;
                self->grouped = 0; /* a query seen before comes back */
            }
            if (self->grouped) {
                if (buf_reserve(&self->q_bounds, 8) < 0) return -1;
                memcpy(self->q_bounds.p + self->q_bounds.used, &self->rows, 8);
                self->q_bounds.used += 8;
            }
            seen_restart(&self->seen, self->rows);
        }
        if (!self->grouped && add_code(self, q) < 0) return -1;
        if (self->grouped && !self->duplicate) { /* else the pure reader's checks decide */
            int twin = seen_add(&self->seen, &self->docs, ds, dlen, self->rows);
            if (twin < 0) return -1;
            self->duplicate = twin;
        }
        self->prev_q = (int32_t)q;
        self->prev_score = score;
    } else {
        if (add_code(self, q) < 0 || buf_reserve(&self->d_codes, 4) < 0) return -1;
        int64_t d = table_intern(&self->docs, ds, dlen);
        if (d < 0) return -1;
        ((int32_t *)(self->d_codes.p + self->d_codes.used))[0] = (int32_t)d;
        self->d_codes.used += 4;
        self->prev_q = (int32_t)q;
    }
    self->rows++;
    return 1;
}

/* The first byte at or after p that ends a field: a space or control byte (<= ' ') or a
 * byte >= 0x80; end if none. Eight bytes at a time: in a word x, the bytes below 0x21
 * set their top bit in (x - 0x21..21) & ~x (the lowest such bit is exact: a borrow only
 * comes from a byte that is itself below), the bytes >= 0x80 in x itself. */
static inline const char *field_end(const char *p, const char *end) {
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    const uint64_t ones = 0x0101010101010101ULL, high = 0x8080808080808080ULL;
    while (end - p >= 8) {
        uint64_t x;
        memcpy(&x, p, 8);
        uint64_t hit = (((x - 0x21 * ones) & ~x) | x) & high;
        if (hit) return p + (__builtin_ctzll(hit) >> 3);
        p += 8;
    }
#endif
    while (p < end && (unsigned char)*p > ' ' && (unsigned char)*p < 0x80) p++;
    return p;
}

#if defined(__SSE2__) && defined(__GNUC__)
#include <emmintrin.h>
#define SIMPLE_LINE_BYTES 64
/* The common line in one step: its fields separated by single spaces and ended by LF, all
 * in the next 64 bytes (which must be readable). Four 16-byte compares give a bit per byte
 * for "ends a field" (a signed byte < 0x21: the controls, the space, and every byte >=
 * 0x80), for the space and for LF; the line is simple when, before its first LF, the
 * field ends are exactly n_fields - 1 spaces, none first, none last and no two adjacent
 * (a line of other fields goes to the general path, which names the line).
 * Returns the byte after the LF with field/len set, or NULL for field_end's general path
 * (which accepts the same simple lines, so both give the same fields). */
static inline const char *split_simple(const char *p, int n_fields, const char **field,
                                       size_t *len) {
    const __m128i limit = _mm_set1_epi8(0x21), space = _mm_set1_epi8(' '),
                  lf = _mm_set1_epi8('\n');
    uint64_t ends = 0, spaces = 0, lfs = 0;
    for (int i = 0; i < SIMPLE_LINE_BYTES / 16; i++) {
        __m128i x = _mm_loadu_si128((const __m128i *)(p + 16 * i));
        ends |= (uint64_t)(uint16_t)_mm_movemask_epi8(_mm_cmplt_epi8(x, limit)) << (16 * i);
        spaces |= (uint64_t)(uint16_t)_mm_movemask_epi8(_mm_cmpeq_epi8(x, space)) << (16 * i);
        lfs |= (uint64_t)(uint16_t)_mm_movemask_epi8(_mm_cmpeq_epi8(x, lf)) << (16 * i);
    }
    if (!lfs) return NULL;
    int stop = __builtin_ctzll(lfs);
    uint64_t before = (1ULL << stop) - 1;
    ends &= before;
    if (!stop || ends != (spaces & before)) return NULL;
    if ((ends & 1) || (ends >> (stop - 1)) || (ends & (ends >> 1))) return NULL;
    const char *start = p;
    int n = 0;
    for (; ends; ends &= ends - 1) {
        if (n == n_fields - 1) return NULL; /* a field too many */
        const char *at = p + __builtin_ctzll(ends);
        field[n] = start;
        len[n++] = (size_t)(at - start);
        start = at + 1;
    }
    if (n != n_fields - 1) return NULL;
    field[n] = start;
    len[n] = (size_t)(p + stop - start);
    return p + stop + 1;
}
#endif

/* Parse the whole lines of [p, end): 1 when done, 0 when the block needs the pure reader,
 * -1 out of memory (no exception set: feed() raises it). */
static int scan_lines(ScannerObject *self, const char *p, const char *end) {
    const char *field[MAX_FIELDS + 1];
    size_t len[MAX_FIELDS + 1];
    int ok = 1;
    if (!memchr(p, '\n', (size_t)(end - p)) && memchr(p, '\r', (size_t)(end - p))) ok = 0;
    while (ok > 0 && p < end) {
        while (p < end && (*p == ' ' || *p == '\t')) p++;
        if (p == end) break;
        if (*p == '\n') {
            p++;
            continue;
        }
        if (*p == '\r') {
            if (p + 1 == end) break;
            if (p[1] != '\n') {
                ok = 0;
                break;
            }
            p += 2;
            continue;
        }
        if (*p == '#') { /* a comment line: the pure reader drops it whatever it holds */
            const char *nl = memchr(p, '\n', (size_t)(end - p));
            p = nl ? nl + 1 : end;
            continue;
        }
#ifdef SIMPLE_LINE_BYTES
        if (end - p >= SIMPLE_LINE_BYTES) {
            const char *next = split_simple(p, self->n_fields, field, len);
            if (next) {
                p = next;
                ok = add_line(self, field, len);
                continue;
            }
        }
#endif
        int n = 0;
        for (;;) {
            const char *start = p;
            p = field_end(p, end);
            if (p == start || n == MAX_FIELDS) { /* an odd byte, or too many fields */
                ok = 0;
                break;
            }
            field[n] = start;
            len[n++] = (size_t)(p - start);
            if (end - p > 1 && *p == ' ' && (unsigned char)p[1] > ' ') { /* one space */
                p++;
                continue;
            }
            if (p < end && *p == '\n') { /* LF */
                p++;
                break;
            }
            while (p < end && (*p == ' ' || *p == '\t')) p++;
            if (p == end) break;
            if (*p == '\r') {
                if (p + 1 < end && p[1] != '\n') {
                    ok = 0;
                    break;
                }
                p++;
                if (p == end) break;
            }
            if (*p == '\n') {
                p++;
                break;
            }
        }
        if (!ok) break;
        if (n != self->n_fields) {
            ok = 0;
            break;
        }
        ok = add_line(self, field, len);
    }
    return ok;
}

/* feed(block): parse whole lines; False when the block needs the pure reader. The lines are
 * parsed without the GIL (other threads run Python meanwhile: eval reads the qrels while
 * a run is scanned); one feed() at a time per scanner. */
static PyObject *scanner_feed(ScannerObject *self, PyObject *arg) {
    Py_buffer view;
    if (self->finished || self->busy || self->sealed) {
        PyErr_SetString(PyExc_RuntimeError,
                        self->busy     ? "the scanner is in use"
                        : self->sealed ? "the scanner has absorbed another: finish() is left"
                                       : "the scanner is finished");
        return NULL;
    }
    if (PyObject_GetBuffer(arg, &view, PyBUF_SIMPLE) < 0) return NULL;
    const char *p = view.buf, *end = p + view.len;
    if (self->kind != RUN && self->rows == 0 && view.len > (1 << 16)) {
        /* size the doc table for the block's lines (counted in its first 64 KiB): growing
         * it step by step would move every id again at each doubling */
        int64_t lines = 0;
        for (const char *q = p; (q = memchr(q, '\n', (size_t)(p + (1 << 16) - q))); q++)
            lines++;
        int64_t expect = lines * (view.len >> 16);
        if (table_presize(&self->docs, expect < (1 << 26) ? expect : (1 << 26)) < 0) {
            PyBuffer_Release(&view);
            return PyErr_NoMemory();
        }
    }
    int64_t rows_before = self->rows;
    int ok;
    self->busy = 1;
    Py_BEGIN_ALLOW_THREADS
    ok = scan_lines(self, p, end);
    Py_END_ALLOW_THREADS
    self->busy = 0;
    if (ok >= 0 && rows_before == 0 && self->rows > 0 && self->kind == RUN) {
        self->first_tag = PyBytes_FromStringAndSize(self->first_tag_at,
                                                    (Py_ssize_t)self->first_tag_len);
        if (!self->first_tag) ok = -2;
    }
    PyBuffer_Release(&view);
    if (ok == -1) PyErr_NoMemory();
    if (ok < 0) return NULL;
    return PyBool_FromLong(ok);
}

/* A Vocab or Entries taking the ids of t (and of tail, if not NULL: see VocabObject). */
static PyObject *new_vocab(Table *t, Table *tail, PyTypeObject *type) {
    VocabObject *v = PyObject_New(VocabObject, type);
    if (!v) return NULL;
    v->t = *t;
    memset(t, 0, sizeof(*t));
    memset(&v->tail, 0, sizeof(v->tail));
    if (tail) {
        v->tail = *tail;
        memset(tail, 0, sizeof(*tail));
    }
    return (PyObject *)v;
}

/* finish() -> dict of the columns (bytearrays), the vocabularies and the flags */
static PyObject *scanner_finish(ScannerObject *self, PyObject *Py_UNUSED(ignored)) {
    if (self->finished || self->busy) {
        PyErr_SetString(PyExc_RuntimeError, self->busy ? "the scanner is in use"
                                                       : "the scanner is finished");
        return NULL;
    }
    self->finished = 1;
    PyObject *queries = new_vocab(&self->queries, NULL, &VocabType);
    if (self->kind == RUN) { /* the ids one per entry, not interned */
        free(self->docs.slots);
        self->docs.slots = NULL;
        free(self->docs_tail.slots);
        self->docs_tail.slots = NULL;
    }
    PyObject *docs = queries ? new_vocab(&self->docs, &self->docs_tail,
                                         self->kind == RUN ? &EntriesType
                                                                          : &VocabType)
                             : NULL;
    int by_bounds = self->kind == RUN && self->grouped; /* query_codes None, query_bounds */
    if (by_bounds && buf_reserve(&self->q_bounds, 8) < 0) {
        Py_XDECREF(queries);
        Py_XDECREF(docs);
        return PyErr_NoMemory();
    }
    if (by_bounds) { /* the end of the last query */
        memcpy(self->q_bounds.p + self->q_bounds.used, &self->rows, 8);
        self->q_bounds.used += 8;
    }
    PyObject *q_codes = !docs ? NULL : by_bounds ? Py_NewRef(Py_None) : buf_take(&self->q_codes);
    PyObject *q_bounds = !q_codes ? NULL : by_bounds ? buf_take(&self->q_bounds)
                                                     : Py_NewRef(Py_None);
    PyObject *d_codes = q_bounds ? buf_take(&self->d_codes) : NULL;
    PyObject *values = d_codes ? buf_take(&self->values) : NULL;
    PyObject *out = NULL;
    if (values) {
        out = Py_BuildValue(
            "{sNsNsNsNsNsNsLsOsOsOsOsO}", "queries", queries, "docs", docs, "query_codes",
            q_codes, "query_bounds", q_bounds, "doc_codes", d_codes, "values", values,
            "rows", (long long)self->rows,
            "grouped", self->grouped ? Py_True : Py_False, "descending",
            self->descending ? Py_True : Py_False, "duplicate",
            self->duplicate ? Py_True : Py_False, "tied", self->tied ? Py_True : Py_False,
            "tag", self->first_tag ? self->first_tag : Py_None);
        return out;
    }
    Py_XDECREF(queries);
    Py_XDECREF(docs);
    Py_XDECREF(q_codes);
    Py_XDECREF(q_bounds);
    Py_XDECREF(d_codes);
    return NULL;
}

/* absorb()'s copies, run at once: 0.6 GB at 10^8 lines, most of the cost the page faults
 * of the memory they fill. (Copying the ids too took 1.5 s on one thread after both parts'
 * scans; they stay where the second part wrote them: see VocabObject.) */
typedef struct {
    ScannerObject *self, *b;
    const int32_t *to; /* b's query code -> self's (NULL: both grouped, no codes) */
    size_t rows;
} Append;

static void *append_scores(void *arg) {
    const Append *job = (const Append *)arg;
    memcpy(job->self->values.p + job->self->values.used, job->b->values.p, job->rows * 8);
    job->self->values.used += job->rows * 8;
    return NULL;
}

static void append_queries(const Append *job) { /* b's query codes, remapped */
    if (!job->to) return; /* grouped: the bounds are appended already */
    int32_t *q_out = (int32_t *)(job->self->q_codes.p + job->self->q_codes.used);
    const int32_t *q_in = (const int32_t *)job->b->q_codes.p;
    for (size_t i = 0; i < job->rows; i++) q_out[i] = job->to[q_in[i]];
    job->self->q_codes.used += job->rows * 4;
}

/* Append the rows of b (a run scanner fed the lines that follow this one's in the file)
 * to self's: b's query ids interned into self's table and its query codes remapped, its
 * scores and flags appended, its doc ids taken as self's tail; b is emptied. A query both
 * hold means the run is not grouped. -1 out of memory (no exception set). */
static int absorb_rows(ScannerObject *self, ScannerObject *b) {
    int64_t known = self->queries.n;
    Buf remap = {0};
    if (buf_reserve(&remap, (size_t)(b->queries.n ? b->queries.n : 1) * 4) < 0) return -1;
    int32_t *to = (int32_t *)remap.p;
    int shared = 0;
    for (int64_t code = 0; code < b->queries.n; code++) {
        size_t len;
        const char *id = table_id(&b->queries, code, &len);
        int64_t q = table_intern(&self->queries, id, len);
        if (q < 0) {
            buf_free(&remap);
            return -1;
        }
        shared |= q < known;
        to[code] = (int32_t)q;
    }
    size_t rows = (size_t)b->rows;
    int grouped = self->grouped && b->grouped && !shared;
    if (grouped) { /* b's queries are self's next ones, in order: their first rows follow */
        if (buf_reserve(&self->q_bounds, b->q_bounds.used) < 0) {
            buf_free(&remap);
            return -1;
        }
        int64_t *out = (int64_t *)(self->q_bounds.p + self->q_bounds.used);
        const int64_t *in = (const int64_t *)b->q_bounds.p;
        for (size_t k = 0; k < b->q_bounds.used / 8; k++) out[k] = in[k] + self->rows;
        self->q_bounds.used += b->q_bounds.used;
    } else if ((self->grouped && codes_from_bounds(self) < 0) ||
               (b->grouped && codes_from_bounds(b) < 0) ||
               buf_reserve(&self->q_codes, rows * 4) < 0) {
        buf_free(&remap);
        return -1;
    }
    if (buf_reserve(&self->values, rows * 8) < 0) {
        buf_free(&remap);
        return -1;
    }
    Append job = {self, b, grouped ? NULL : to, rows};
    self->busy = b->busy = 1; /* no feed() or finish() while the GIL is let go */
    Py_BEGIN_ALLOW_THREADS
    pthread_t helper; /* the scores there, the query codes here */
    int started = pthread_create(&helper, NULL, append_scores, &job) == 0;
    if (!started) append_scores(&job);
    append_queries(&job);
    if (started) pthread_join(helper, NULL);
    Py_END_ALLOW_THREADS
    self->busy = b->busy = 0;
    buf_free(&remap);
    buf_free(&b->q_codes);
    buf_free(&b->q_bounds);
    buf_free(&b->values);
    self->docs_tail = b->docs; /* absorb() takes one part: the tail is empty until now */
    memset(&b->docs, 0, sizeof(b->docs));
    self->grouped = grouped;
    self->descending = self->descending && b->descending;
    self->duplicate = self->duplicate || b->duplicate;
    self->tied = self->tied || b->tied;
    if (!self->rows && b->rows) { /* this part held no data line: the tag is b's */
        Py_XSETREF(self->first_tag, b->first_tag);
        b->first_tag = NULL;
    }
    self->rows += b->rows;
    b->rows = 0;
    b->finished = 1;
    return 0;
}

/* absorb(other): see absorb_rows; both are run scanners, neither finished nor in use. */
static PyObject *scanner_absorb(ScannerObject *self, PyObject *arg) {
    if (!PyObject_TypeCheck(arg, Py_TYPE(self))) {
        PyErr_SetString(PyExc_TypeError, "absorb() takes a Scanner");
        return NULL;
    }
    ScannerObject *b = (ScannerObject *)arg;
    if (b == self || self->kind != RUN || b->kind != RUN || self->finished || b->finished ||
        self->busy || b->busy || self->sealed || b->sealed) {
        PyErr_SetString(PyExc_ValueError,
                        "absorb() takes another run scanner, once; neither finished nor in use");
        return NULL;
    }
    if (absorb_rows(self, b) < 0) return PyErr_NoMemory();
    self->sealed = 1;
    Py_RETURN_NONE;
}

static PyMethodDef scanner_methods[] = {
    {"absorb", (PyCFunction)scanner_absorb, METH_O,
     "Append the rows of another run scanner (fed the lines after this one's)."},
    {"feed", (PyCFunction)scanner_feed, METH_O,
     "Parse a block of whole lines; False: the block needs the pure reader."},
    {"finish", (PyCFunction)scanner_finish, METH_NOARGS,
     "The columns, vocabularies and flags (once)."},
    {NULL, NULL, 0, NULL}};

static PyTypeObject ScannerType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "searchbench.data._scan.Scanner",
    .tp_basicsize = sizeof(ScannerObject),
    .tp_dealloc = (destructor)scanner_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Scanner(kind, skip_first=False): kind 'run', 'trec' or 'beir' (qrels).",
    .tp_methods = scanner_methods,
    .tp_init = (initproc)scanner_init,
    .tp_new = PyType_GenericNew,
};

/* ---- module functions ------------------------------------------------------------------ */

/* utf8_column(ids, at=None): (offsets, data) bytearrays, the int64 offsets and UTF-8 bytes
 * of ids[at[0]], ids[at[1]], ... (at: int32 indices into the sequence of str ``ids``;
 * None: every id in turn), as an Arrow string column holds them. */
static PyObject *utf8_column(PyObject *Py_UNUSED(module), PyObject *args) {
    PyObject *ids, *at_obj = Py_None;
    if (!PyArg_ParseTuple(args, "O|O:utf8_column", &ids, &at_obj)) return NULL;
    PyObject *seq = PySequence_Fast(ids, "utf8_column() takes a sequence of str");
    if (!seq) return NULL;
    Py_ssize_t n_ids = PySequence_Fast_GET_SIZE(seq);
    PyObject **items = PySequence_Fast_ITEMS(seq);
    Py_buffer at = {0};
    int has_at = at_obj != Py_None;
    if (has_at && get_array(at_obj, &at, 4, -1, "at") < 0) {
        Py_DECREF(seq);
        return NULL;
    }
    Py_ssize_t n = has_at ? at.len / 4 : n_ids;
    const int32_t *index = has_at ? at.buf : NULL;
    PyObject *offsets = PyByteArray_FromStringAndSize(NULL, (n + 1) * 8);
    Buf data = {0};
    int ok = offsets != NULL;
    int64_t *off = ok ? (int64_t *)PyByteArray_AS_STRING(offsets) : NULL;
    if (ok) off[0] = 0;
    for (Py_ssize_t i = 0; ok && i < n; i++) {
        Py_ssize_t k = index ? index[i] : i, len = 0;
        if (k < 0 || k >= n_ids) {
            PyErr_SetString(PyExc_IndexError, "utf8_column(): an index out of range");
            ok = 0;
            break;
        }
        const char *s = PyUnicode_Check(items[k]) ? PyUnicode_AsUTF8AndSize(items[k], &len)
                                                  : NULL;
        if (!s) {
            if (!PyErr_Occurred())
                PyErr_SetString(PyExc_TypeError, "utf8_column() takes a sequence of str");
            ok = 0;
        } else if (buf_reserve(&data, (size_t)len) < 0) {
            PyErr_NoMemory();
            ok = 0;
        } else {
            memcpy(data.p + data.used, s, (size_t)len);
            data.used += (size_t)len;
            off[i + 1] = (int64_t)data.used;
        }
    }
    PyObject *bytes = ok ? PyByteArray_FromStringAndSize(data.p ? data.p : "", (Py_ssize_t)data.used)
                         : NULL;
    buf_free(&data);
    if (has_at) PyBuffer_Release(&at);
    Py_DECREF(seq);
    if (!bytes) {
        Py_XDECREF(offsets);
        return NULL;
    }
    return Py_BuildValue("(NN)", offsets, bytes);
}

static PyMethodDef module_methods[] = {
    {"utf8_column", utf8_column, METH_VARARGS,
     "utf8_column(ids, at=None): (offsets, data) bytearrays: int64 offsets and UTF-8 bytes of "
     "ids[at[i]] (every id: at None), as an Arrow string column."},
    {NULL, NULL, 0, NULL}};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, .m_name = "searchbench.data._scan",
    .m_doc = "One-pass TREC run and qrels scanner (see searchbench.data.trec).", .m_size = -1,
    .m_methods = module_methods};

PyMODINIT_FUNC PyInit__scan(void) {
    if (PyType_Ready(&BlockType) < 0 || PyType_Ready(&VocabType) < 0 ||
        PyType_Ready(&EntriesType) < 0 ||
        PyType_Ready(&ScannerType) < 0)
        return NULL;
    PyObject *m = PyModule_Create(&module);
    if (!m) return NULL;
    Py_INCREF(&VocabType);
    Py_INCREF(&ScannerType);
    Py_INCREF(&EntriesType);
    if (PyModule_AddIntConstant(m, "ABI", 5) < 0 ||
        PyModule_AddObject(m, "Vocab", (PyObject *)&VocabType) < 0 ||
        PyModule_AddObject(m, "Entries", (PyObject *)&EntriesType) < 0 ||
        PyModule_AddObject(m, "Scanner", (PyObject *)&ScannerType) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
