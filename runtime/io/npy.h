/* npy.h - NumPy's file formats: .npy arrays (npy.c), the zip container of
 * .npz archives (zip.c), and whole-file reads and writes (file.c).
 *
 * Everything here works on bytes in memory: a file is read whole into
 * pool-owned scratch memory and closed before anything is parsed, and an
 * output file is built whole in scratch memory and written in one go. So an
 * error raised while parsing or building (mq_error, with the file named in
 * the message) can never strand an open FILE*, and every buffer dies with
 * the pool. Format notes and decisions: docs/IO.md.
 */
#ifndef MQ_NPY_H
#define MQ_NPY_H

#include <stdio.h>

#include "../tensor/tensor.h"

/* Both formats are little-endian whatever the host is; these read and write
 * their integers byte by byte (also safe at any alignment). */
static inline uint16_t mq_ld16(const uint8_t *p) { return (uint16_t)(p[0] | p[1] << 8); }
static inline uint32_t mq_ld32(const uint8_t *p) {
  return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}
static inline uint64_t mq_ld64(const uint8_t *p) {
  return (uint64_t)mq_ld32(p) | (uint64_t)mq_ld32(p + 4) << 32;
}
static inline void mq_st16(uint8_t *p, uint16_t v) {
  p[0] = (uint8_t)v;
  p[1] = (uint8_t)(v >> 8);
}
static inline void mq_st32(uint8_t *p, uint32_t v) {
  mq_st16(p, (uint16_t)v);
  mq_st16(p + 2, (uint16_t)(v >> 16));
}
static inline void mq_st64(uint8_t *p, uint64_t v) {
  mq_st32(p, (uint32_t)v);
  mq_st32(p + 4, (uint32_t)(v >> 32));
}

/* --- .npy --------------------------------------------------------------------- */

/* The 6-byte magic that starts every .npy file. */
#define MQ_NPY_MAGIC "\x93NUMPY"

/* Parses one .npy image of [n] bytes into a new contiguous plain tensor.
 * [what] names the array in messages, quoted as the caller likes ("'x.npy'",
 * "'x.npz' member 'data.npy'"). Accepts header versions 1 to 3; dtypes <f4
 * <f8 <i8 |b1 natively, <f2 widened to float32, <i4 <i2 |i1 |u1 <u2 <u4
 * widened to int64. Errors: truncation, bad magic, an unsupported or
 * big-endian dtype, Fortran order, a malformed header. */
MQ_INTERNAL mq_tensor *mq_npy_parse(mq_state *S, const uint8_t *p, size_t n, const char *what);

/* Maps the .npy file at [path] read-only and returns a tensor whose data is
 * the mapping itself, as numpy's np.load(mmap_mode='r'): nothing is copied
 * or counted against the memory limit, and pages are read as kernels touch
 * them, so a reduction streams through a file larger than the limit or than
 * RAM. Only dtypes stored as they are on disk map (<f4 <f8 <i8); others,
 * bool included (its bytes must be 0 or 1, which a file that can change
 * under the mapping cannot promise), are an error that says to load
 * without mmap. [file] names it in messages. The file must not shrink while
 * mapped: masq never rewrites a file in place (mq_file_write), but another
 * process truncating it makes later reads fault (SIGBUS), as with numpy. */
MQ_INTERNAL mq_tensor *mq_npy_map(mq_state *S, const char *path, const char *file);

/* Bytes to write: [n] at [p]. */
typedef struct mq_bytes {
  const void *p;
  size_t n;
} mq_bytes;

/* Plain tensor [t] (any strides) as a .npy image byte-identical to what
 * numpy's np.save writes for the same array, in two parts: the header
 * (scratch) and the data, which is [t]'s own memory when [t] is contiguous
 * and stored as numpy stores it (not bool, a little-endian host), else a
 * copy in scratch. save writes the parts as they are, so a large or mapped
 * tensor is saved without a copy of its data. */
MQ_INTERNAL void mq_npy_parts(mq_state *S, mq_tensor *t, mq_bytes parts[2]);
/* The same image in one block of scratch memory, its length in *len. */
MQ_INTERNAL uint8_t *mq_npy_encode(mq_state *S, mq_tensor *t, size_t *len);

/* --- .npz: the zip container ------------------------------------------------- */

/* One member of an archive: a name (not NUL-terminated) and its bytes. */
typedef struct mq_zip_member {
  const char *name;
  size_t name_len;
  const uint8_t *data;
  size_t size;
} mq_zip_member;

/* The 4-byte signature that starts a zip archive with at least one member. */
#define MQ_ZIP_MAGIC "PK\x03\x04"

/* Lists the members of the zip archive in [p, p+n), in central-directory
 * order, with their data stored or inflated (deflate, through zlib) and the
 * CRC-32 checked; handles ZIP64 records as numpy writes them. Returns the
 * count and sets *out to a scratch array; member data points into [p] or
 * into scratch. [file] names the archive in messages ("'x.npz'"). */
MQ_INTERNAL int mq_zip_read(mq_state *S, const uint8_t *p, size_t n, const char *file,
                            mq_zip_member **out);

/* Builds a zip archive of [n] members, each stored or (if [deflate])
 * deflated; returns scratch memory and its length in *len. No ZIP64: a
 * member or archive of 4 GiB or more is an error naming [file]; [who]
 * prefixes messages ("save"). */
MQ_INTERNAL uint8_t *mq_zip_write(mq_state *S, const mq_zip_member *m, int n, bool deflate,
                                  const char *who, const char *file, size_t *len);

/* --- whole files ------------------------------------------------------------------ */

/* Opens [path] for reading if it is a regular file. On failure returns
 * NULL with errno set, or with *irregular true when [path] exists but is a
 * directory, FIFO, device or socket. */
MQ_INTERNAL FILE *mq_file_open_regular(const char *path, bool *irregular);
/* Reads the file at [path] whole into scratch memory (NUL-terminated past
 * *len). [who] prefixes messages ("load"). */
MQ_INTERNAL uint8_t *mq_file_read(mq_state *S, const char *path, const char *who, size_t *len);
/* Replaces the file at [path] (or the file its symbolic links lead to)
 * with [n] bytes: written to a new file beside it, which is renamed over
 * it once complete (file_write.c). On any failure the old file is left
 * byte for byte, the new one removed, and the error names [path]. */
MQ_INTERNAL void mq_file_write(mq_state *S, const char *path, const char *who, const void *p,
                               size_t n);
/* The same with the file's bytes in [n] parts, written one after the other. */
MQ_INTERNAL void mq_file_write_parts(mq_state *S, const char *path, const char *who,
                                     const mq_bytes *parts, int n);

/* Maps the regular file at [path] read-only (mq_mapping, tensor.h: the
 * storage it becomes unmaps it when its last view goes); [who] prefixes
 * messages. An empty file is an error (there is nothing to map). */
MQ_INTERNAL mq_mapping *mq_file_map(mq_state *S, const char *path, const char *who);

#endif
