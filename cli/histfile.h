/* histfile.h - the REPL's history file on disk: appending an entry and
 * trimming the file to its last lines, so that no failure destroys it.
 *
 * Sessions side by side share the file: both operations take a POSIX
 * write lock on it (fcntl), so an append never lands in a file a trim is
 * about to replace, and a failed append can be taken back exactly. */
#ifndef MASQ_CLI_HISTFILE_H
#define MASQ_CLI_HISTFILE_H

#include <stddef.h>

/* Appends [len] bytes (whole lines) to the file at [path], creating it
 * private (0600). A write that fails part way (a full disk) is taken back,
 * so a cut entry never joins the next one. Best effort: failures are
 * silent, the history stays what it was. */
void hist_append(const char *path, const char *text, size_t len);

/* Keeps the last [max] lines of the file at [path]: written to a new file
 * beside it, which replaces it only once complete and flushed, so a full
 * disk, a file size limit or a crash half way leaves the old file whole.
 * Best effort, as hist_append. */
void hist_trim(const char *path, int max);

#endif
