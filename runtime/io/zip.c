/* zip.c - the zip container of .npz archives: reading stored and deflated
 * members (ZIP64 records included, as numpy writes them) and writing a
 * plain archive. Deflate is zlib's, in raw mode (zip has no zlib wrapper).
 *
 * zlib allocates through pool scratch memory, so an error raised at any
 * point (even a memory-limit error from inside zlib's own allocation)
 * strands nothing: the stream's memory dies with the pool. Since that
 * memory is only given back when the operation ends, one stream serves all
 * the members of an archive, reset in between. */
#include "npy.h"

#include <limits.h>
#include <zlib.h>

#define SIG_LOCAL 0x04034b50u
#define SIG_CENTRAL 0x02014b50u
#define SIG_END 0x06054b50u
#define SIG_END64 0x06064b50u
#define SIG_LOCATOR64 0x07064b50u

#define LOCAL_SIZE 30
#define CENTRAL_SIZE 46
#define END_SIZE 22
#define LOCATOR64_SIZE 20
#define END64_SIZE 56

#define METHOD_STORED 0
#define METHOD_DEFLATE 8

/* What we write, as numpy does: version 2.0 needed; made by Unix (3) 2.0;
 * mode 0600; date 1980-01-01 00:00, which also keeps our output
 * reproducible byte for byte. */
#define VERSION_NEEDED 20
#define VERSION_MADE_BY (3 << 8 | 20)
#define EXTERNAL_ATTR (0600u << 16)
#define DOS_DATE ((0 << 9) | (1 << 5) | 1)
#define FLAG_UTF8 0x800

/* --- zlib through the pool ------------------------------------------------------ */

static voidpf z_alloc(voidpf opaque, uInt items, uInt size) {
  return mq_scratch((mq_state *)opaque, (size_t)items * size);
}
static void z_free(voidpf opaque, voidpf address) {
  (void)opaque;
  (void)address; /* the pool frees it when the operation ends */
}

/* A zlib stream for one archive: started on first use, reset after. */
typedef struct zstream {
  z_stream z;
  bool started;
} zstream;

/* Readies [zs] for one more member; [deflating] picks the direction. */
static void z_begin(mq_state *S, zstream *zs, bool deflating, const char *who) {
  z_stream *z = &zs->z;
  if (zs->started) {
    if ((deflating ? deflateReset(z) : inflateReset(z)) == Z_OK) return;
    mq_error(S, "%s: zlib cannot reset its stream", who);
  }
  memset(z, 0, sizeof *z);
  z->zalloc = z_alloc;
  z->zfree = z_free;
  z->opaque = S;
  int rc = deflating ? deflateInit2(z, Z_DEFAULT_COMPRESSION, Z_DEFLATED, -MAX_WBITS, 8,
                                    Z_DEFAULT_STRATEGY)
                     : inflateInit2(z, -MAX_WBITS);
  if (rc != Z_OK) mq_error(S, "%s: zlib cannot start (%d)", who, rc);
  zs->started = true;
}

/* Runs [zs] from [src] (n bytes) into [dst] (cap bytes) to the end of the
 * stream; returns zlib's last code and sets *produced. zlib counts in uInt,
 * so both sides are handed over in pieces it can take. */
static int z_run(zstream *zs, bool deflating, const uint8_t *src, size_t n, uint8_t *dst,
                 size_t cap, size_t *produced) {
  z_stream *z = &zs->z;
  size_t in_left = n, out_left = cap;
  z->avail_in = z->avail_out = 0;
  int rc = Z_OK;
  while (rc == Z_OK) {
    if (z->avail_in == 0 && in_left) {
      uInt take = in_left > UINT_MAX ? UINT_MAX : (uInt)in_left;
      z->next_in = (Bytef *)(uintptr_t)(src + (n - in_left)); /* next_in is not const */
      z->avail_in = take;
      in_left -= take;
    }
    if (z->avail_out == 0 && out_left) {
      uInt take = out_left > UINT_MAX ? UINT_MAX : (uInt)out_left;
      z->next_out = dst + (cap - out_left);
      z->avail_out = take;
      out_left -= take;
    }
    rc = deflating ? deflate(z, in_left ? Z_NO_FLUSH : Z_FINISH) : inflate(z, Z_NO_FLUSH);
    /* Z_BUF_ERROR means "no progress possible": fine while a piece of
     * input or output is still to be handed over, the end otherwise. */
    if (rc == Z_BUF_ERROR && ((z->avail_in == 0 && in_left) || (z->avail_out == 0 && out_left)))
      rc = Z_OK;
  }
  *produced = cap - out_left - z->avail_out;
  return rc;
}

/* Inflates [csize] raw-deflate bytes into exactly [usize] bytes. */
static const uint8_t *inflate_member(mq_state *S, zstream *zs, const uint8_t *src, size_t csize,
                                     size_t usize, const char *file, int nlen, const char *name) {
  uint8_t *out = mq_scratch(S, usize);
  z_begin(S, zs, false, "load");
  size_t produced;
  int rc = z_run(zs, false, src, csize, out, usize, &produced);
  /* The output buffer is the declared size, so a stream that would
   * inflate past it (a zip bomb) stops there with data still to come. */
  if (rc != Z_STREAM_END && produced == usize)
    mq_error(S, "load: %s: member '%.*s' inflates to more than its recorded %zu bytes", file,
             nlen, name, usize);
  if (rc != Z_STREAM_END || produced != usize)
    mq_error(S, "load: %s: member '%.*s' does not inflate to its recorded %zu bytes (%s)", file,
             nlen, name, usize,
             rc == Z_STREAM_END ? "wrong size" : zs->z.msg ? zs->z.msg : "corrupt data");
  return out;
}

/* Deflates [n] bytes into scratch; returns the compressed size. */
static size_t deflate_member(mq_state *S, zstream *zs, const uint8_t *src, size_t n,
                             const char *who, uint8_t **out) {
  z_begin(S, zs, true, who);
  size_t cap = deflateBound(&zs->z, (uLong)n), produced;
  *out = mq_scratch(S, cap);
  if (z_run(zs, true, src, n, *out, cap, &produced) != Z_STREAM_END)
    mq_error(S, "%s: deflate failed (%s)", who, zs->z.msg ? zs->z.msg : "zlib error");
  return produced;
}

static uint32_t crc_of(const uint8_t *p, size_t n) {
  return (uint32_t)crc32_z(crc32_z(0, Z_NULL, 0), p, n);
}

/* --- reading ------------------------------------------------------------------------ */

typedef struct archive {
  mq_state *S;
  const uint8_t *p;
  size_t n;
  const char *file;
  zstream zs; /* for the deflated members */
} archive;

/* The bytes [off, off+len) of the archive, or an error if they are not all
 * there. */
static const uint8_t *span(const archive *a, uint64_t off, uint64_t len, const char *part) {
  if (off > a->n || len > a->n - off)
    mq_error(a->S, "load: %s is truncated or corrupt: its %s lies past the end of the file",
             a->file, part);
  return a->p + off;
}

/* Finds the end-of-central-directory record: the last one, searching back
 * over the longest possible archive comment. */
static size_t find_end(const archive *a) {
  if (a->n >= END_SIZE) {
    size_t stop = a->n - END_SIZE > 0xffff ? a->n - END_SIZE - 0xffff : 0;
    for (size_t i = a->n - END_SIZE + 1; i-- > stop;)
      if (mq_ld32(a->p + i) == SIG_END) return i;
  }
  mq_error(a->S, "load: %s is truncated or not a zip archive (no end-of-central-directory record)",
           a->file);
}

/* Count, size and offset of the central directory, from the ZIP64 record
 * when the classic one holds the 0xffff / 0xffffffff placeholders. */
static void central_directory(const archive *a, uint64_t *count, uint64_t *size, uint64_t *off) {
  size_t e = find_end(a);
  *count = mq_ld16(a->p + e + 10);
  *size = mq_ld32(a->p + e + 12);
  *off = mq_ld32(a->p + e + 16);
  if (*count != 0xffff && *size != 0xffffffff && *off != 0xffffffff) return;
  if (e < LOCATOR64_SIZE || mq_ld32(a->p + e - LOCATOR64_SIZE) != SIG_LOCATOR64)
    mq_error(a->S, "load: %s is corrupt: a ZIP64 archive without its ZIP64 locator", a->file);
  const uint8_t *r = span(a, mq_ld64(a->p + e - LOCATOR64_SIZE + 8), END64_SIZE, "ZIP64 record");
  if (mq_ld32(r) != SIG_END64) mq_error(a->S, "load: %s is corrupt: bad ZIP64 end record", a->file);
  *count = mq_ld64(r + 32);
  *size = mq_ld64(r + 40);
  *off = mq_ld64(r + 48);
}

/* Replaces the 0xffffffff placeholders among a central entry's sizes and
 * offset with the 64-bit values of its ZIP64 extra field (id 1), which
 * holds only the placeholders' values, in this order. */
static void zip64_extra(const archive *a, const uint8_t *x, size_t xlen, uint64_t *usize,
                        uint64_t *csize, uint64_t *off) {
  uint64_t *fields[3] = {usize, csize, off};
  while (xlen >= 4) {
    unsigned id = mq_ld16(x), len = mq_ld16(x + 2);
    if (len > xlen - 4) break;
    if (id == 1) {
      const uint8_t *v = x + 4;
      for (int i = 0; i < 3; i++) {
        if (*fields[i] != 0xffffffff) continue;
        if (v + 8 > x + 4 + len)
          mq_error(a->S, "load: %s is corrupt: a short ZIP64 extra field", a->file);
        *fields[i] = mq_ld64(v);
        v += 8;
      }
      return;
    }
    x += 4 + len;
    xlen -= 4 + len;
  }
}

/* Reads the member of central entry [c] into [m]; returns the entry's
 * length. */
static size_t read_member(archive *a, const uint8_t *c, mq_zip_member *m) {
  mq_state *S = a->S;
  if (mq_ld32(c) != SIG_CENTRAL)
    mq_error(S, "load: %s is corrupt: bad central directory entry", a->file);
  unsigned flags = mq_ld16(c + 8), method = mq_ld16(c + 10);
  uint32_t crc = mq_ld32(c + 16);
  uint64_t csize = mq_ld32(c + 20), usize = mq_ld32(c + 24), off = mq_ld32(c + 42);
  size_t nlen = mq_ld16(c + 28), xlen = mq_ld16(c + 30), clen = mq_ld16(c + 32);
  const uint8_t *name = span(a, (uint64_t)(c - a->p) + CENTRAL_SIZE, nlen + xlen + clen,
                             "central directory");
  zip64_extra(a, name + nlen, xlen, &usize, &csize, &off);
  m->name = (const char *)name;
  m->name_len = nlen;
  int nl = (int)nlen;
  if (flags & 1) mq_error(S, "load: %s: member '%.*s' is encrypted", a->file, nl, m->name);

  const uint8_t *l = span(a, off, LOCAL_SIZE, "member header");
  if (mq_ld32(l) != SIG_LOCAL)
    mq_error(S, "load: %s is corrupt: bad local header for member '%.*s'", a->file, nl, m->name);
  /* The data follows the local header, whose name and extra field may
   * differ in length from the central entry's. */
  uint64_t data_off = off + LOCAL_SIZE + mq_ld16(l + 26) + mq_ld16(l + 28);
  const uint8_t *data = span(a, data_off, csize, "member data");
  if (usize > SIZE_MAX / 2)
    mq_error(S, "load: %s: member '%.*s' is too large", a->file, nl, m->name);
  m->size = (size_t)usize;
  if (method == METHOD_STORED) {
    if (csize != usize)
      mq_error(S, "load: %s is corrupt: stored member '%.*s' has two different sizes", a->file, nl,
               m->name);
    m->data = data;
  } else if (method == METHOD_DEFLATE) {
    /* Deflate expands at most 1032:1; a larger claim is a forged size,
     * refused before it becomes an allocation. */
    if (usize / 1032 > csize + 1)
      mq_error(S, "load: %s is corrupt: member '%.*s' claims %llu bytes from %llu compressed",
               a->file, nl, m->name, (unsigned long long)usize, (unsigned long long)csize);
    m->data = inflate_member(S, &a->zs, data, (size_t)csize, m->size, a->file, nl, m->name);
  } else {
    mq_error(S,
             "load: %s: member '%.*s' uses zip compression method %u; masq reads stored (0) and "
             "deflated (8) members",
             a->file, nl, m->name, method);
  }
  if (crc_of(m->data, m->size) != crc)
    mq_error(S, "load: %s: member '%.*s' is corrupt (CRC-32 mismatch)", a->file, nl, m->name);
  return CENTRAL_SIZE + nlen + xlen + clen;
}

int mq_zip_read(mq_state *S, const uint8_t *p, size_t n, const char *file, mq_zip_member **out) {
  archive a;
  memset(&a, 0, sizeof a);
  a.S = S;
  a.p = p;
  a.n = n;
  a.file = file;
  uint64_t count, size, off;
  central_directory(&a, &count, &size, &off);
  const uint8_t *cd = span(&a, off, size, "central directory");
  /* Each entry takes at least CENTRAL_SIZE bytes: a bound on [count] that
   * a forged header cannot get past. */
  if (count > size / CENTRAL_SIZE || count > INT_MAX)
    mq_error(S, "load: %s is corrupt: %llu members do not fit its central directory", file,
             (unsigned long long)count);
  mq_zip_member *m = mq_scratch(S, (size_t)count * sizeof *m);
  size_t pos = 0;
  for (uint64_t i = 0; i < count; i++) {
    /* An entry, names and fields included, stays inside the directory the
     * end record sized. */
    if (pos > size || size - pos < CENTRAL_SIZE)
      mq_error(S, "load: %s is corrupt: entry %llu lies past the end of its central directory",
               file, (unsigned long long)i);
    pos += read_member(&a, cd + pos, &m[i]);
    if (pos > size)
      mq_error(S, "load: %s is corrupt: entry %llu lies past the end of its central directory",
               file, (unsigned long long)i);
  }
  *out = m;
  return (int)count;
}

/* --- writing ------------------------------------------------------------------------ */

/* The fields a local header (from its byte 4) and a central entry (from its
 * byte 6, after "version made by") share, from "version needed" to the
 * extra field's length. */
static void put_common(uint8_t *p, const mq_zip_member *m, unsigned method, uint32_t crc,
                       size_t csize) {
  bool utf8 = false;
  for (size_t i = 0; i < m->name_len; i++) utf8 |= (uint8_t)m->name[i] >= 0x80;
  mq_st16(p, VERSION_NEEDED);
  mq_st16(p + 2, utf8 ? FLAG_UTF8 : 0);
  mq_st16(p + 4, (uint16_t)method);
  mq_st16(p + 6, 0); /* time 00:00:00 */
  mq_st16(p + 8, DOS_DATE);
  mq_st32(p + 10, crc);
  mq_st32(p + 14, (uint32_t)csize);
  mq_st32(p + 18, (uint32_t)m->size);
  mq_st16(p + 22, (uint16_t)m->name_len);
  mq_st16(p + 24, 0); /* no extra field */
}

uint8_t *mq_zip_write(mq_state *S, const mq_zip_member *m, int n, bool deflate, const char *who,
                      const char *file, size_t *len) {
  const uint8_t **data = mq_scratch(S, (size_t)(n ? n : 1) * sizeof *data);
  size_t *csize = mq_scratch(S, (size_t)(n ? n : 1) * sizeof *csize);
  uint32_t *crc = mq_scratch(S, (size_t)(n ? n : 1) * sizeof *crc);
  uint64_t total = END_SIZE;
  zstream zs = {.started = false};
  if (n > 0xfffe) mq_error(S, "%s: %s would have more than 65534 members", who, file);
  for (int i = 0; i < n; i++) {
    if (m[i].size >= 0xffffffffu)
      mq_error(S, "%s: %s: member '%.*s' is 4 GiB or more, which needs ZIP64 (masq writes none)",
               who, file, (int)m[i].name_len, m[i].name);
    crc[i] = crc_of(m[i].data, m[i].size);
    data[i] = m[i].data;
    csize[i] = m[i].size;
    if (deflate) {
      uint8_t *z;
      csize[i] = deflate_member(S, &zs, m[i].data, m[i].size, who, &z);
      data[i] = z;
    }
    total += LOCAL_SIZE + CENTRAL_SIZE + 2 * m[i].name_len + csize[i];
  }
  if (total >= 0xffffffffu)
    mq_error(S, "%s: %s would be 4 GiB or more, which needs ZIP64 (masq writes none)", who, file);

  unsigned method = deflate ? METHOD_DEFLATE : METHOD_STORED;
  uint8_t *out = mq_scratch(S, (size_t)total), *q = out;
  uint32_t *offsets = mq_scratch(S, (size_t)(n ? n : 1) * sizeof *offsets);
  for (int i = 0; i < n; i++) {
    offsets[i] = (uint32_t)(q - out);
    mq_st32(q, SIG_LOCAL);
    put_common(q + 4, &m[i], method, crc[i], csize[i]);
    memcpy(q + LOCAL_SIZE, m[i].name, m[i].name_len);
    q += LOCAL_SIZE + m[i].name_len;
    if (csize[i]) memcpy(q, data[i], csize[i]);
    q += csize[i];
  }
  uint8_t *cd = q;
  for (int i = 0; i < n; i++) {
    mq_st32(q, SIG_CENTRAL);
    mq_st16(q + 4, VERSION_MADE_BY);
    put_common(q + 6, &m[i], method, crc[i], csize[i]);
    mq_st16(q + 32, 0); /* comment length */
    mq_st16(q + 34, 0); /* disk */
    mq_st16(q + 36, 0); /* internal attributes */
    mq_st32(q + 38, EXTERNAL_ATTR);
    mq_st32(q + 42, offsets[i]);
    memcpy(q + CENTRAL_SIZE, m[i].name, m[i].name_len);
    q += CENTRAL_SIZE + m[i].name_len;
  }
  mq_st32(q, SIG_END);
  mq_st16(q + 4, 0); /* this disk */
  mq_st16(q + 6, 0); /* the directory's disk */
  mq_st16(q + 8, (uint16_t)n);
  mq_st16(q + 10, (uint16_t)n);
  mq_st32(q + 12, (uint32_t)(q - cd));
  mq_st32(q + 16, (uint32_t)(cd - out));
  mq_st16(q + 20, 0); /* comment length */
  *len = (size_t)(q + END_SIZE - out);
  return out;
}
