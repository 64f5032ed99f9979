/* userdict.h — the user dictionary: words and phrases a user added or accepted, with counts, held in memory
 * for lookups (exact and by prefix, no allocation) and kept in one file per user that survives kill -9 and
 * power loss at any moment and is shared safely by concurrent processes. Not here: how much a count boosts a
 * candidate (the session decides), the sensitive flag (a sensitive session never calls ud_learn/ud_add).
 *
 * File (PATH, little-endian; its lock is the separate file PATH.lock, which is never renamed):
 *   header, 40 bytes: "LAYAUDIC", u32 version (1), u32 n_snapshot_records, u64 generation,
 *                     u32 snapshot_bytes, u32 crc32(snapshot), u32 reserved (0), u32 crc32(bytes 0..35)
 *   snapshot:         n_snapshot_records SET records, the compacted state (written by write+fsync+rename)
 *   journal:          records appended (and fsynced) after the snapshot, one write per mutating call
 *   record:           u8 op (1 SET, 2 DEL), u8 len (1..UD_WORD_MAX), u16 flags, u32 count, u32 last_used,
 *                     f32 boost, len bytes of UTF-8 word, u32 crc32(all of the above)
 * A SET record carries the whole state of an entry (it replaces the entry); DEL removes it. Mutations run
 * under an exclusive flock on PATH.lock after catching up with what other processes appended, so absolute
 * SET records never lose a concurrent update. A record cut short at the end of the file is what a crash
 * during an append leaves: it is ignored (the call that wrote it had not returned) and cut off by the next
 * writer. Anything else that fails a check is LAYA_ERR_FORMAT. */
#ifndef LAYA_USERDICT_H
#define LAYA_USERDICT_H

#include <stddef.h>
#include <stdint.h>

#include "laya.h"

#define UD_WORD_MAX 64                 /* bytes of one word or phrase (UTF-8) */
#define UD_DEFAULT_MAX_ENTRIES 20000u  /* learned entries beyond this evict the least used */
#define UD_LIMIT_ENTRIES (1u << 20)    /* the largest max_entries accepted */

enum {
    UD_F_USER = 1,   /* added by ud_add (the user's own word): never evicted */
    UD_F_PHRASE = 2, /* contains a space */
};

typedef struct ud_entry {
    uint32_t count;     /* times learned or added, saturating */
    uint32_t last_used; /* unix seconds of the last learn/add */
    float boost;        /* the weight given to ud_add; 0 for words only learned */
    uint16_t flags;     /* UD_F_* */
    uint8_t len;        /* bytes of word */
    char word[UD_WORD_MAX + 1]; /* NUL-terminated */
} ud_entry;

typedef struct ud_params {
    uint32_t max_entries; /* 0: UD_DEFAULT_MAX_ENTRIES; at most UD_LIMIT_ENTRIES */
    int learn_phrases;    /* ud_learn of several words also learns the whole phrase (default 1) */
    int recover;          /* a corrupt file is renamed to PATH.corrupt and its valid records are kept
                             (default 0: ud_open fails with LAYA_ERR_FORMAT and touches nothing) */
    int no_fsync;         /* skip fsync: still safe against kill -9, not against power loss (tests) */
    uint32_t write_chunk; /* tests: append in pieces of this many bytes, so that a kill -9 can land inside
                             a record (0: one write per call) */
} ud_params;

ud_params ud_default_params(void);

typedef struct ud_dict ud_dict;

typedef struct ud_info {
    uint32_t n_entries;
    uint32_t journal_records; /* records after the snapshot */
    uint64_t file_bytes;      /* 0: no file yet */
    uint64_t torn_bytes;      /* bytes of an incomplete last record ignored at the last load */
    int recovered;            /* 1: ud_open set a corrupt file aside (params.recover) */
} ud_info;

/* Open (or start, if PATH does not exist: the file is created by the first mutation) the dictionary at
 * path. p may be NULL for defaults. Errors: LAYA_ERR_FORMAT (corrupt or truncated file; err says where),
 * LAYA_ERR_IO, LAYA_ERR_NOMEM, LAYA_ERR_INVALID_ARG. On failure *out is NULL. The handle belongs to one
 * thread at a time; several handles and processes may share one path. */
laya_status ud_open(const char *path, const ud_params *p, ud_dict **out, char *err, size_t errlen);
void ud_free(ud_dict *d);                 /* accepts NULL */
const char *ud_error(const ud_dict *d);   /* the message of the last failed call on d */
void ud_get_info(const ud_dict *d, ud_info *out);

/* Mutations. Each one is durable when it returns LAYA_OK (appended and fsynced, or rewritten, fsynced and
 * renamed); on an error the file holds the state before the call and memory is reloaded from it. Words must be valid UTF-8 of 1 to
 * UD_WORD_MAX bytes with no control characters and no leading, trailing or doubled spaces
 * (LAYA_ERR_INVALID_ARG otherwise). They may allocate. */

/* Add a word or phrase the user chose (flag UD_F_USER: never evicted; count + 1, boost replaced).
 * LAYA_ERR_CAPACITY when max_entries user words already exist. */
laya_status ud_add(ud_dict *d, const char *word, size_t len, float boost);
/* Learn an accepted candidate (at most 4096 bytes): text is trimmed of white space and of quotes/brackets/punctuation around
 * each word; every word is learned (count + 1), and with learn_phrases a text of several words is learned
 * as a phrase too (if it fits UD_WORD_MAX). All or nothing: an invalid text learns nothing. A new entry
 * beyond max_entries evicts the learned (not UD_F_USER) entry with the lowest count, oldest first. */
laya_status ud_learn(ud_dict *d, const char *text, size_t len);
/* Erase a word, and every phrase that contains it as a whole word, from memory and from the file (the file
 * is rewritten without them at once). LAYA_ERR_NOT_FOUND if there was nothing to erase. */
laya_status ud_forget(ud_dict *d, const char *word, size_t len);
laya_status ud_clear(ud_dict *d);         /* erase everything */
laya_status ud_compact(ud_dict *d);       /* rewrite the file as a snapshot (done automatically) */
/* Catch up with what other processes wrote (cheap when nothing changed: one fstat and a header read). */
laya_status ud_refresh(ud_dict *d);

/* Lookups: memory only, no allocation, no system call. Pointers stay valid until the next mutation or
 * ud_refresh on d. Order is byte order of the words. */
const ud_entry *ud_lookup(const ud_dict *d, const char *word, size_t len); /* exact; NULL if absent */
size_t ud_count(const ud_dict *d);
const ud_entry *ud_at(const ud_dict *d, size_t i); /* i < ud_count, in byte order */
/* The entries that start with prefix (byte-wise) are ud_at(first .. first + return value - 1). */
size_t ud_prefix(const ud_dict *d, const char *prefix, size_t len, size_t *first);
/* The best (at most cap) entries starting with prefix, by count + boost, then most recent; returns how many
 * were written to out. */
size_t ud_prefix_top(const ud_dict *d, const char *prefix, size_t len, const ud_entry **out, size_t cap);

#endif
