/* The compiled evaluation of mteb_stratified.core.ranking.walk, one row (query) at a time:
 *
 *   1. one pass over the row: float32 sort keys, the lowest score and how often it occurs (the
 *      truncated-tie flag), the relevant counts and the positive grades (the ideal DCG);
 *   2. one selection (quickselect) of the k-th best float32 key, k the largest cutoff, and the
 *      window: every entry at least as good, i.e. the top k and the whole tie group at k;
 *   3. one sort of the window in the tie-oblivious order (and, only when float64 ties differ
 *      from float32 ties, one more in the exact order);
 *   4. one walk over the tie groups that computes, for every measure family at every cutoff,
 *      the sums of the per-position contributions of four arrangements: the expectation over
 *      all orders of each tie group (E), the worst and best orders inside each group (min,
 *      max), and the tie-oblivious order (obl), and the tie audit.
 *
 * The formulas are those of mteb_stratified/core/ranking/kernels.py (module docstring); each
 * contribution uses the same floating-point operations in the same order as the numpy
 * kernels there, and positions are summed left to right, so the oblivious sums equal the
 * numpy path's bit for bit.
 *
 * Loaded with ctypes (see walk.py); the module init below only makes the shared object a
 * valid extension module for the build tools.  Build without -ffast-math: the sums must
 * follow IEEE 754 exactly (and without FMA contraction, -ffp-contract=off).
 */
#include <Python.h>
#include <stdint.h>
#include <stdlib.h>
#include <math.h>
#include <string.h>

/* The kinds of the families' sums: each family's MeasureFamily.walk in measures.py names one
 * of these and holds its value (a test parses this enum and compares). */
enum walk_kind { DCG_LINEAR = 0, DCG_EXP = 1, HITS = 2, AP = 3, RR = 4, FIRST = 5 };
/* The arrangements, in the order of the output axis (results.py's ARRANGEMENT_KEYS) */
enum walk_arrangement { E = 0, MIN = 1, MAX = 2, OBL = 3 };

typedef struct { double grade; double gain; } item;

static int by_grade(const void *a, const void *b) {
    double x = ((const item *)a)->grade, y = ((const item *)b)->grade;
    return (x > y) - (x < y);
}

static void sort_items(item *v, int64_t n) {
    if (n <= 16) {  /* insertion sort: tie groups are mostly small */
        for (int64_t i = 1; i < n; i++) {
            item t = v[i];
            int64_t j = i - 1;
            while (j >= 0 && v[j].grade > t.grade) { v[j + 1] = v[j]; j--; }
            v[j + 1] = t;
        }
    } else {
        qsort(v, (size_t)n, sizeof(item), by_grade);
    }
}

/* Deterministic contribution of one position for family f (numpy: deterministic_contributions).
 * hits is the running count of relevant documents of that arrangement. */
static inline double det(int kind, double level, double grade, double xgain, double disc,
                         double inv, double *hits) {
    double rel;
    switch (kind) {
    case DCG_LINEAR: return (grade > 0 ? grade : 0.0) * disc;
    case DCG_EXP: return xgain * disc;
    default: break;
    }
    rel = grade >= level ? 1.0 : 0.0;
    *hits += rel;
    switch (kind) {
    case HITS: return rel;
    case AP: return rel * *hits * inv;
    case FIRST: return rel * (*hits == 1.0 ? 1.0 : 0.0);
    default: return rel * (*hits == 1.0 ? 1.0 : 0.0) * inv;  /* RR */
    }
}

/* the running sums of every family, at cutoff ci: row[(f * nc + ci) * 4 + arrangement] */
static void record(double *row, const double *sum, int64_t nf, int64_t nc, int64_t ci) {
    for (int64_t f = 0; f < nf; f++)
        for (int k = 0; k < 4; k++) row[(f * nc + ci) * 4 + k] = sum[4 * f + k];
}

/* The normalisations (numpy: evaluate._finish): nDCG divides by the ideal DCG, P by k, R and
 * AP by the relevant count, each 0 when its divisor is 0; RR and Success are the sums. */
enum walk_norm { NORM_NONE = 0, NORM_IDEAL = 1, NORM_K = 2, NORM_REL = 3 };


/* ---- sort keys: ascending key = descending score (-0.0 is +0.0, as trec_eval compares) ---- */
static inline uint32_t desc_key32(float f) {
    uint32_t b;
    f = f + 0.0f;
    memcpy(&b, &f, 4);
    return ~(b ^ ((b >> 31) ? 0xFFFFFFFFu : 0x80000000u));
}

static inline uint64_t desc_key64(double d) {
    uint64_t b;
    d = d + 0.0;
    memcpy(&b, &d, 8);
    return ~(b ^ ((b >> 63) ? 0xFFFFFFFFFFFFFFFFull : 0x8000000000000000ull));
}

typedef struct { uint64_t key; int64_t col; } entry;  /* ordered by (key, col) */

#define KEY_LT(a, b) ((a) < (b))
#define ENTRY_LT(a, b) ((a).key < (b).key || ((a).key == (b).key && (a).col < (b).col))

/* introsort: quicksort (median of three), insertion sort below 16, heapsort past a depth */
#define DEFINE_SORT(NAME, T, LT)                                                             \
    static void NAME##_sift(T *v, int64_t root, int64_t n) {                                  \
        for (;;) {                                                                            \
            int64_t c = 2 * root + 1;                                                         \
            if (c >= n) return;                                                               \
            if (c + 1 < n && LT(v[c], v[c + 1])) c++;                                         \
            if (!LT(v[root], v[c])) return;                                                   \
            T t = v[root]; v[root] = v[c]; v[c] = t;                                          \
            root = c;                                                                         \
        }                                                                                     \
    }                                                                                         \
    static void NAME(T *v, int64_t n, int depth) {                                            \
        while (n > 16) {                                                                      \
            if (depth-- == 0) {                                                               \
                for (int64_t i = n / 2 - 1; i >= 0; i--) NAME##_sift(v, i, n);                \
                for (int64_t i = n - 1; i > 0; i--) {                                         \
                    T t = v[0]; v[0] = v[i]; v[i] = t;                                        \
                    NAME##_sift(v, 0, i);                                                     \
                }                                                                             \
                return;                                                                       \
            }                                                                                 \
            int64_t mid = n / 2;                                                              \
            if (LT(v[mid], v[0])) { T t = v[mid]; v[mid] = v[0]; v[0] = t; }                  \
            if (LT(v[n - 1], v[0])) { T t = v[n - 1]; v[n - 1] = v[0]; v[0] = t; }            \
            if (LT(v[n - 1], v[mid])) { T t = v[n - 1]; v[n - 1] = v[mid]; v[mid] = t; }      \
            T pivot = v[mid];                                                                 \
            int64_t i = 0, j = n - 1;                                                         \
            for (;;) {                                                                        \
                while (LT(v[i], pivot)) i++;                                                  \
                while (LT(pivot, v[j])) j--;                                                  \
                if (i >= j) break;                                                            \
                T t = v[i]; v[i] = v[j]; v[j] = t;                                            \
                i++; j--;                                                                     \
            }                                                                                 \
            /* [0, j] <= pivot <= [j + 1, n): recurse on the smaller side */                  \
            if (j + 1 < n - j - 1) { NAME(v, j + 1, depth); v += j + 1; n -= j + 1; }         \
            else { NAME(v + j + 1, n - j - 1, depth); n = j + 1; }                            \
        }                                                                                     \
        for (int64_t i = 1; i < n; i++) {                                                     \
            T t = v[i];                                                                       \
            int64_t j = i - 1;                                                                \
            while (j >= 0 && LT(t, v[j])) { v[j + 1] = v[j]; j--; }                           \
            v[j + 1] = t;                                                                     \
        }                                                                                     \
    }

DEFINE_SORT(sort_keys, uint64_t, KEY_LT)
DEFINE_SORT(sort_entries, entry, ENTRY_LT)

/* Integer keys ascending: LSD radix sort by bytes, skipping every byte that all keys share
 * (sort keys of nearby scores share their high bytes); introsort below RADIX_MIN keys.
 * tmp holds n keys; hist 256 counters, all zero (and left so). */
#ifndef RADIX_MIN
#define RADIX_MIN 64
#endif
static void radix_sort(uint64_t *v, uint64_t *tmp, int64_t n, int64_t *hist) {
    if (n < RADIX_MIN) {
        sort_keys(v, n, 64);
        return;
    }
    uint64_t differ = 0;  /* the bits in which some key differs from the first */
    for (int64_t i = 1; i < n; i++) differ |= v[i] ^ v[0];
    uint64_t *src = v, *dst = tmp;
    for (int shift = 0; shift < 64; shift += 8) {
        if (!((differ >> shift) & 255)) continue;  /* one byte value: nothing moves */
        /* hist is all zeros between passes: only the byte values seen are counted, summed
         * up and cleared again (nearby scores span few of the 256) */
        unsigned lo = 255, hi = 0;
        for (int64_t i = 0; i < n; i++) {
            unsigned d = (unsigned)((src[i] >> shift) & 255);
            hist[d]++;
            lo = d < lo ? d : lo;
            hi = d > hi ? d : hi;
        }
        int64_t run = 0;
        for (unsigned d = lo; d <= hi; d++) { int64_t c = hist[d]; hist[d] = run; run += c; }
        for (int64_t i = 0; i < n; i++) dst[hist[(src[i] >> shift) & 255]++] = src[i];
        memset(hist + lo, 0, sizeof(int64_t) * (hi - lo + 1));
        uint64_t *t = src; src = dst; dst = t;
    }
    if (src != v) memcpy(v, src, sizeof(uint64_t) * (size_t)n);
}

/* the k-th smallest (0-based) of keys[0..n): radix selection by bytes, most significant
 * first; each level counts the candidates' byte values and keeps those in the bucket that
 * holds the k-th (branch-free compaction into cand, which holds n keys; hist 256 counters,
 * all zero, and left so) */
static uint32_t select_kth(const uint32_t *keys, uint32_t *cand, int64_t n, int64_t k,
                           int64_t *hist) {
    const uint32_t *src = keys;
    uint32_t prefix = 0;
    for (int shift = 24; shift >= 0; shift -= 8) {
        for (int64_t i = 0; i < n; i++) hist[(src[i] >> shift) & 255]++;
        uint32_t b = 0;
        while (k >= hist[b]) k -= hist[b++];
        prefix |= b << shift;
        int64_t in_b = hist[b];
        memset(hist, 0, sizeof(int64_t) * 256);  /* all zero again, as radix_sort wants it */
        if (shift && in_b < n) {
            int64_t c = 0;
            for (int64_t i = 0; i < n; i++) {
                cand[c] = src[i];
                c += ((src[i] >> shift) & 255) == b;
            }
            src = cand;
            n = c;
        }
    }
    return prefix;
}

static void sort_desc(double *v, int64_t n) {  /* insertion sort: few positive grades */
    for (int64_t i = 1; i < n; i++) {
        double t = v[i];
        int64_t j = i - 1;
        while (j >= 0 && v[j] < t) { v[j + 1] = v[j]; j--; }
        v[j + 1] = t;
    }
}

static int by_desc(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x < y) - (x > y);
}

/* element j of a row of grades of any of the numeric dtypes numpy hands over */
enum grade_type {
    G_F64 = 0, G_F32 = 1, G_I8 = 2, G_I16 = 3, G_I32 = 4, G_I64 = 5, G_U8 = 6
};

static inline double grade_at(const void *row, int type, int64_t j) {
    switch (type) {
    case G_F64: return ((const double *)row)[j];
    case G_F32: return (double)((const float *)row)[j];
    case G_I8: return (double)((const int8_t *)row)[j];
    case G_I16: return (double)((const int16_t *)row)[j];
    case G_I32: return (double)((const int32_t *)row)[j];
    case G_I64: return (double)((const int64_t *)row)[j];
    default: return (double)((const uint8_t *)row)[j];
    }
}

static inline double gain_of(int dcg, double g) {
    if (!(g > 0)) return 0.0;
    return dcg == DCG_EXP ? exp2(g) - 1.0 : g;
}

/* The arguments of evaluate_rows, in one struct: walk.py's WalkArgs (a ctypes.Structure) lists
 * the same fields in the same order with the same types (a test parses this definition and
 * compares).  Arrays are C-contiguous; (q, n) arrays are the RankingArrays' rows. */
typedef struct {
    int64_t q;                /* rows */
    int64_t n;                /* width */
    const void *scores;       /* (q, n) float32 (f32 = 1) or float64 (f32 = 0); padded past nc[r] */
    int64_t f32;
    const void *grades;       /* (q, n) grades of type gtype (enum grade_type); -inf for unjudged */
    int64_t gtype;
    const int64_t *tiebreak;  /* (q, n) doc-id ranks, or NULL (the column is the tiebreak) */
    const int64_t *nc;        /* (q,) real candidates per row */
    const double *qg;         /* (q, nj) all judged grades per query sorted descending (-inf
                               * padded), or NULL: the candidates are all the judgments */
    int64_t nj;
    int64_t ideal_cands;      /* 1: ideal DCG from the candidates even when qg is given */
    int64_t input_order;      /* 1: oblivious = score descending, then column (oblivious="input");
                               * 0: float32 score descending, then tiebreak descending */
    int64_t depth;            /* the run's depth (truncated-tie flag) */
    const double *disc;       /* (max(n, nj),) 1/log2(p+1) for p = 1.. */
    const double *inv;        /* (max(n, nj),) 1/p for p = 1.. */
    int64_t nf;               /* the families: their kinds (enum walk_kind) and levels */
    const int64_t *kind;
    const double *level;
    int64_t nc_;              /* cutoffs (ascending, >= 1; the whole list is passed as n) */
    const int64_t *cut;
    int64_t na;               /* audit cutoffs (ascending, >= 1) */
    const int64_t *acut;
    int64_t nl;               /* the relevance levels of the R and AP normalisers */
    const double *levels;
    int64_t nd;               /* ideal DCG gains (enum walk_kind: DCG_*) */
    const int64_t *dcgs;
    int64_t nic;              /* ideal DCG cutoffs (INT64_MAX: the whole list) */
    const int64_t *icut;
    int64_t nm;               /* the measures: family and cutoff index, normalisation */
    const int64_t *mfam;
    const int64_t *mcut;
    const int64_t *mnorm;     /* enum walk_norm */
    const int64_t *marg;      /* the normaliser's slot: ideal d * nic + i, or level l */
    const double *mk;         /* the cutoff k (NORM_K) */
    double *res;              /* output (nm, 4, q): every measure's values */
    int64_t *audit;           /* output (3, na, q) */
    uint8_t *trunc;           /* output (q,) */
    double *nrel;             /* output (nl, q) */
} walk_args;

/* sizeof(walk_args): walk.py loads a build only when this equals its WalkArgs' size (a build
 * of an older signature is not called; the numpy path stands in) */
int64_t walk_args_size(void) { return (int64_t)sizeof(walk_args); }

/* The struct's fields in order, for the loader's check against its ctypes twin (WalkArgs in
 * walk.py): a build of another version of this file is then never called.  The test of the
 * struct (tests/core/ranking/test_walk_spec.py) checks that this list is the struct's. */
static const char WALK_LAYOUT[] =
    "q,n,scores,f32,grades,gtype,tiebreak,nc,qg,nj,ideal_cands,input_order,depth,"
    "disc,inv,nf,kind,level,nc_,cut,na,acut,nl,levels,nd,dcgs,nic,icut,nm,mfam,mcut,"
    "mnorm,marg,mk,res,audit,trunc,nrel";
const char *walk_layout(void) { return WALK_LAYOUT; }

/* Every row through the walk (the numbered steps above).  Returns 0, or -1 when out of
 * memory. */
int evaluate_rows(const walk_args *args) {
    const int64_t q = args->q, n = args->n, nj = args->nj, depth = args->depth;
    const int f32 = (int)args->f32, gtype = (int)args->gtype;
    const int ideal_cands = (int)args->ideal_cands, input_order = (int)args->input_order;
    const void *scores = args->scores, *grades = args->grades;
    const int64_t *tiebreak = args->tiebreak, *nc = args->nc;
    const double *qg = args->qg, *disc = args->disc, *inv = args->inv;
    const int64_t nf = args->nf, nc_ = args->nc_, na = args->na, nl = args->nl;
    const int64_t nd = args->nd, nic = args->nic, nm = args->nm;
    const int64_t *kind = args->kind, *cut = args->cut, *acut = args->acut, *dcgs = args->dcgs;
    const int64_t *icut = args->icut, *mfam = args->mfam, *mcut = args->mcut;
    const int64_t *mnorm = args->mnorm, *marg = args->marg;
    const double *level = args->level, *levels = args->levels, *mk = args->mk;
    double *res = args->res, *nrel = args->nrel;
    int64_t *audit = args->audit;
    uint8_t *trunc = args->trunc;
    int64_t wmax = n > nj ? n : nj;
    size_t nn = (size_t)(wmax > 0 ? wmax : 1);
    uint32_t *key32 = malloc(sizeof(uint32_t) * nn), *sel = malloc(sizeof(uint32_t) * nn);
    entry *ent = malloc(sizeof(entry) * nn), *ent2 = malloc(sizeof(entry) * nn);
    double *S = malloc(sizeof(double) * nn), *G = malloc(sizeof(double) * nn);
    double *Go = malloc(sizeof(double) * nn), *X = malloc(sizeof(double) * nn);
    double *Xo = malloc(sizeof(double) * nn), *pos_g = malloc(sizeof(double) * nn);
    item *buf = malloc(sizeof(item) * nn);
    uint64_t *k64 = malloc(sizeof(uint64_t) * nn), *k64b = malloc(sizeof(uint64_t) * nn);
    int64_t *hist = calloc(256, sizeof(int64_t));
    int64_t *at = malloc(sizeof(int64_t) * nn), *seen = calloc(nn, sizeof(int64_t));
    double *sum = malloc(sizeof(double) * (size_t)(4 * nf + 1));
    double *hit = malloc(sizeof(double) * (size_t)(3 * nf + 1));
    double *before = malloc(sizeof(double) * (size_t)(4 * nf + 4));
    double *row = malloc(sizeof(double) * (size_t)(4 * nf * nc_ + 1));
    double *ideal = malloc(sizeof(double) * (size_t)(nd * nic + 1));
    int ok = key32 && sel && ent && ent2 && S && G && Go && X && Xo && pos_g && buf && sum &&
             hit && before && k64 && k64b && hist && at && seen && row && ideal;
    if (ok) {
        double *tot = before + nf + 1, *pair = tot + nf + 1, *prod = pair + nf + 1;
        int has_dcg = 0, has_exp = 0;
        double minlv = INFINITY;
        for (int64_t f = 0; f < nf; f++) {
            if (kind[f] <= DCG_EXP) has_dcg = 1;
            else if (level[f] < minlv) minlv = level[f];
            if (kind[f] == DCG_EXP) has_exp = 1;
        }
        /* a grade adds to a deterministic sum when it is a gain (> 0, with a DCG family) or
         * reaches the lowest relevance level of the level families */
#define ACTIVE(grade) ((has_dcg && (grade) > 0) || (grade) >= minlv)
        int64_t reach = nc_ ? cut[nc_ - 1] : 0;
        if (na && acut[na - 1] > reach) reach = acut[na - 1];
        size_t gsize = gtype == G_F64 || gtype == G_I64 ? 8 : gtype == G_F32 || gtype == G_I32
                       ? 4 : gtype == G_I16 ? 2 : 1;
        for (int64_t r = 0; r < q; r++) {
            int64_t mrow = nc[r] < n ? nc[r] : n;
            const float *s32 = f32 ? (const float *)scores + r * n : NULL;
            const double *s64 = f32 ? NULL : (const double *)scores + r * n;
            const void *grow = (const char *)grades + (size_t)(r * n) * gsize;
            const int64_t *tb = tiebreak ? tiebreak + r * n : NULL;
            const double *qrow = qg ? qg + r * nj : NULL;

            /* 1. one pass: keys, the lowest score and its count, relevant counts, gains */
            double lowest = INFINITY;
            int64_t n_low = 0, n_pos = 0;
            for (int64_t l = 0; l < nl; l++) nrel[l * q + r] = 0.0;
            if (f32) {
                for (int64_t j = 0; j < mrow; j++) {
                    float sj = s32[j];
                    key32[j] = desc_key32(sj);
                    if (sj < lowest) { lowest = sj; n_low = 1; }
                    else if (sj == lowest) n_low++;
                }
            } else {
                for (int64_t j = 0; j < mrow; j++) {
                    double sj = s64[j];
                    key32[j] = desc_key32((float)sj);
                    if (sj < lowest) { lowest = sj; n_low = 1; }
                    else if (sj == lowest) n_low++;
                }
            }
            if (!qrow || ideal_cands) {  /* positive grades (the ideal) and relevant counts */
                double lv0 = nl ? levels[0] : INFINITY, c0 = 0.0;
                int count = !qrow;
#define GRADES(T)                                                                           \
                for (int64_t j = 0; j < mrow; j++) {                                        \
                    double gj = (double)((const T *)grow)[j];                               \
                    pos_g[n_pos] = gj;                                                      \
                    n_pos += gj > 0;                                                        \
                    c0 += gj >= lv0;                                                        \
                    for (int64_t l = 1; l < nl && count; l++) nrel[l * q + r] += gj >= levels[l]; \
                }
                switch (gtype) {
                case G_F64: GRADES(double) break;
                case G_F32: GRADES(float) break;
                case G_I8: GRADES(int8_t) break;
                case G_I16: GRADES(int16_t) break;
                case G_I32: GRADES(int32_t) break;
                case G_I64: GRADES(int64_t) break;
                default: GRADES(uint8_t) break;
                }
#undef GRADES
                if (count && nl) nrel[r] = c0;
            }
            trunc[r] = mrow == depth && mrow >= 2 && n_low >= 2;

            /* the normalisers: relevant counts and the ideal DCG at every cutoff */
            if (qrow)
                for (int64_t l = 0; l < nl; l++) {
                    double c = 0.0;
                    for (int64_t j = 0; j < nj && qrow[j] >= levels[l]; j++) c += 1.0;
                    nrel[l * q + r] = c;
                }
            const double *best = pos_g;
            int64_t n_best = n_pos;
            if (qrow && !ideal_cands) {
                best = qrow;
                for (n_best = 0; n_best < nj && qrow[n_best] > 0; n_best++) {}
            } else if (n_pos <= 32) {
                sort_desc(pos_g, n_pos);
            } else {
                qsort(pos_g, (size_t)n_pos, sizeof(double), by_desc);
            }
            for (int64_t d = 0; d < nd; d++) {
                double acc = 0.0;
                int64_t ci = 0;
                for (int64_t j = 0; j < n_best; j++) {
                    for (; ci < nic && icut[ci] == j; ci++) ideal[d * nic + ci] = acc;
                    acc += gain_of((int)dcgs[d], best[j]) * disc[j];
                }
                for (; ci < nic; ci++) ideal[d * nic + ci] = acc;
            }

            /* 2. the window: the top `reach` by float32 key and every entry tied with the last */
            int64_t w = 0;
            uint32_t v = 0xFFFFFFFFu;
            if (reach < mrow) {
                v = select_kth(key32, sel, mrow, reach - 1, hist);
            }
            /* 3. the window sorted: trec_eval's order (float32 desc, doc id desc) or the input's.
             * trec_eval's keys are unique (the doc-id rank is in the low 32 bits), so they sort
             * as plain integers and give their column back through the rank; the input order
             * (and tiebreaks that are not ranks) sort (key, column) pairs. */
            int exact_f32 = 1, packed = !input_order;
            for (int64_t j = 0; j < mrow && packed && tb; j++) {
                if (key32[j] > v) continue;
                uint64_t t = (uint64_t)tb[j];
                if (t >= (uint64_t)n || seen[t] == r + 1) packed = 0;  /* not a rank */
                else { seen[t] = r + 1; at[t] = j; }
            }
            if (packed) {
                for (int64_t j = 0; j < mrow; j++) {  /* branch-free: keep the window's */
                    uint64_t t = tb ? (uint64_t)tb[j] : (uint64_t)j;
                    k64[w] = ((uint64_t)key32[j] << 32) | (0xFFFFFFFFull - t);
                    w += key32[j] <= v;
                }
                for (int64_t p = 0; p < w && !f32; p++) {
                    double sj = s64[tb ? at[0xFFFFFFFFull - (k64[p] & 0xFFFFFFFFull)]
                                       : (int64_t)(0xFFFFFFFFull - (k64[p] & 0xFFFFFFFFull))];
                    if ((double)(float)sj != sj) exact_f32 = 0;
                }
                radix_sort(k64, k64b, w, hist);
                for (int64_t p = 0; p < w; p++) {
                    uint64_t t = 0xFFFFFFFFull - (k64[p] & 0xFFFFFFFFull);
                    ent[p].key = k64[p];
                    ent[p].col = tb ? at[t] : (int64_t)t;
                }
            } else {
                for (int64_t j = 0; j < mrow; j++) {
                    if (key32[j] > v) continue;
                    double sj = f32 ? (double)s32[j] : s64[j];
                    if (input_order) {
                        ent[w].key = desc_key64(sj);
                    } else {
                        uint64_t t = tb ? (uint64_t)tb[j] : (uint64_t)j;
                        ent[w].key = ((uint64_t)key32[j] << 32) | (0xFFFFFFFFull - t);
                        if (!f32 && (double)(float)sj != sj) exact_f32 = 0;
                    }
                    ent[w].col = j;
                    w++;
                }
                sort_entries(ent, w, 64);
            }
            const entry *order = ent;
            if (!exact_f32) {  /* float64 ties differ from float32 ties: the exact order too */
                for (int64_t j = 0; j < w; j++) {
                    ent2[j].key = desc_key64(s64[ent[j].col]);
                    ent2[j].col = ent[j].col;
                }
                sort_entries(ent2, w, 64);
                order = ent2;
            }
            for (int64_t p = 0; p < w; p++) {
                int64_t j = order[p].col, jo = ent[p].col;
                S[p] = f32 ? (double)s32[j] : s64[j];
                G[p] = grade_at(grow, gtype, j);
                Go[p] = grade_at(grow, gtype, jo);
                if (has_exp) { X[p] = gain_of(DCG_EXP, G[p]); Xo[p] = gain_of(DCG_EXP, Go[p]); }
            }

            /* 4. the walk over the tie groups */
            const double *sr = S, *gr = G, *gor = Go;
            const double *xr = has_exp ? X : NULL, *xor_ = has_exp ? Xo : NULL;
            int64_t mr = w;
            int64_t end = reach < mr ? reach : mr;
            int64_t ci = 0;
            memset(sum, 0, sizeof(double) * (size_t)(4 * nf));
            memset(hit, 0, sizeof(double) * (size_t)(3 * nf));
            memset(before, 0, sizeof(double) * (size_t)nf);
            for (int64_t a = 0; a < na; a++)
                for (int k = 0; k < 3; k++) audit[(k * na + a) * q + r] = 0;
            int64_t p = 0;
            while (p < end) {
                int64_t b = p + 1;
                while (b < mr && sr[b] == sr[p]) b++;
                int64_t gn = b - p;
                double size = (double)gn;
                /* tie audit: this group reaches into the top k when it starts before min(k, m) */
                for (int64_t a = 0; a < na; a++) {
                    int64_t kk = acut[a] < mr ? acut[a] : mr;
                    if (p < kk) {
                        audit[(0 * na + a) * q + r] += 1;
                        audit[(1 * na + a) * q + r] = b;
                        if (gn > audit[(2 * na + a) * q + r]) audit[(2 * na + a) * q + r] = gn;
                    }
                }
                /* group totals per family: gain (numpy: group_sum of the gains), relevant count;
                 * only for a group with a grade that counts (most groups have none) */
                int any = 0;
                for (int64_t j = p; j < b && !any; j++) any = ACTIVE(gr[j]);
                for (int64_t f = 0; f < nf && any; f++) {
                    int kd = (int)kind[f];
                    double lv = level[f], t = 0.0;
                    for (int64_t j = 0; j < gn; j++) {
                        double gj = gr[p + j];
                        if (kd == DCG_LINEAR) t += gj > 0 ? gj : 0.0;
                        else if (kd == DCG_EXP) t += xr[p + j];
                        else t += gj >= lv ? 1.0 : 0.0;
                    }
                    tot[f] = t;
                    pair[f] = gn > 1 ? t * (t - 1.0) / (size * (size - 1.0)) : 0.0;
                    prod[f] = 1.0;
                }
                /* A group without gain or relevant document adds 0 to every expectation, and a
                 * grade that is neither a gain nor relevant adds 0 to every deterministic sum:
                 * both are skipped, exactly (x + 0.0 == x).  Otherwise the group's items,
                 * ascending by grade, give the worst arrangement and, reversed, the best. */
                if (any) {
                    for (int64_t j = 0; j < gn; j++) {
                        buf[j].grade = gr[p + j];
                        buf[j].gain = xr ? xr[p + j] : 0.0;
                    }
                    if (gn > 1) sort_items(buf, gn);
                }
                int64_t stop = b < end ? b : end;
                for (int64_t pos = p; pos < stop; pos++) {
                    int64_t i = pos - p;
                    double di = (double)i;
                    if (any) {
                        const item *lo = buf + i, *hi = buf + (gn - 1 - i);
                        int act_lo = ACTIVE(lo->grade), act_hi = ACTIVE(hi->grade);
                        for (int64_t f = 0; f < nf; f++) {
                            int kd = (int)kind[f];
                            double lv = level[f], t = tot[f], e;
                            double *sf = sum + 4 * f, *hf = hit + 3 * f;
                            if (t != 0.0) {
                                switch (kd) {
                                case DCG_LINEAR: case DCG_EXP: e = t / size * disc[pos]; break;
                                case HITS: e = t / size; break;
                                case AP:
                                    e = ((t / size) * (1.0 + before[f]) + di * pair[f]) * inv[pos];
                                    break;
                                default:
                                    if (before[f] == 0.0 && di <= size - t) {
                                        e = prod[f] * t / (size - di);
                                        prod[f] *= (size - t - di) / (size - di);
                                    } else {
                                        e = 0.0;
                                    }
                                    if (kd == RR) e = e * inv[pos];
                                }
                                sf[E] += e;
                            }
                            if (act_lo)
                                sf[MIN] += det(kd, lv, lo->grade, lo->gain, disc[pos], inv[pos],
                                               hf);
                            if (act_hi)
                                sf[MAX] += det(kd, lv, hi->grade, hi->gain, disc[pos], inv[pos],
                                               hf + 1);
                        }
                    }
                    double go_ = gor[pos];
                    if (ACTIVE(go_))
                        for (int64_t f = 0; f < nf; f++)
                            sum[4 * f + OBL] += det((int)kind[f], level[f], go_,
                                                    xor_ ? xor_[pos] : 0.0, disc[pos], inv[pos],
                                                    hit + 3 * f + 2);
                    for (; ci < nc_ && cut[ci] == pos + 1; ci++)
                        record(row, sum, nf, nc_, ci);
                }
                for (int64_t f = 0; f < nf && any; f++) before[f] += tot[f];
                p = b;
            }
            for (; ci < nc_; ci++) record(row, sum, nf, nc_, ci);  /* past the list */
            for (int64_t mi = 0; mi < nm; mi++) {  /* every measure, normalised */
                const double *v = row + (mfam[mi] * nc_ + mcut[mi]) * 4;
                double div = mnorm[mi] == NORM_IDEAL ? ideal[marg[mi]]
                             : mnorm[mi] == NORM_REL ? nrel[marg[mi] * q + r]
                             : mnorm[mi] == NORM_K ? mk[mi] : 1.0;
                for (int k = 0; k < 4; k++)
                    res[(mi * 4 + k) * q + r] = mnorm[mi] == NORM_NONE ? v[k]
                                                : mnorm[mi] == NORM_K ? v[k] / div
                                                : div > 0 ? v[k] / div : 0.0;
            }
        }
#undef ACTIVE
    }
    free(key32); free(sel); free(ent); free(ent2); free(S); free(G); free(Go); free(X);
    free(Xo); free(pos_g); free(buf); free(sum); free(hit); free(before); free(k64); free(k64b);
    free(hist); free(at); free(seen); free(row); free(ideal);
    return ok ? 0 : -1;
}

static struct PyModuleDef walk_module = {PyModuleDef_HEAD_INIT, "_walk",
                                         "The compiled evaluation (loaded with ctypes).", -1,
                                         NULL, NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit__walk(void) { return PyModule_Create(&walk_module); }
