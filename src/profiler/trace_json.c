/* SPDX-License-Identifier: Apache-2.0 */
/* strverscmp is a GNU extension; the rest of the core asks only for POSIX. */
#define _GNU_SOURCE
#include "profiler/trace_json.h"

#include <stdlib.h>
#include <string.h>

#include "base/printable.h"

/* ---- Strings ------------------------------------------------------------------------------ */

void tp_json_append_string(tp_strbuf_t *out, const char *text) {
    tp_strbuf_append(out, "\"", 1);
    const unsigned char *p = (const unsigned char *)(text != NULL ? text : "");
    while (*p != '\0') {
        const unsigned char *run = p;
        while (*p >= 0x20 && *p < 0x7F && *p != '"' && *p != '\\') p++;
        tp_strbuf_append(out, (const char *)run, (size_t)(p - run));
        if (*p == '\0') break;
        unsigned char c = *p;
        if (c == '"' || c == '\\') {
            char escaped[2] = {'\\', (char)c};
            tp_strbuf_append(out, escaped, 2);
            p++;
        } else if (c == '\n') {
            tp_strbuf_puts(out, "\\n");
            p++;
        } else if (c == '\t') {
            tp_strbuf_puts(out, "\\t");
            p++;
        } else if (c == '\r') {
            tp_strbuf_puts(out, "\\r");
            p++;
        } else if (c < 0x20 || c == 0x7F) {
            tp_strbuf_printf(out, "\\u%04x", c);
            p++;
        } else {
            uint32_t code_point = 0;
            size_t length = tp_utf8_multibyte(p, &code_point);
            if (length == 0) {
                tp_strbuf_puts(out, "\\ufffd");
                p++;
            } else if (code_point == 0x2028 || code_point == 0x2029) {
                tp_strbuf_printf(out, "\\u%04x", (unsigned)code_point);
                p += 3;
            } else {
                tp_strbuf_append(out, (const char *)p, length);
                p += length;
            }
        }
    }
    tp_strbuf_append(out, "\"", 1);
}

void tp_json_append_uint(tp_strbuf_t *out, uint64_t value) {
    char digits[20];
    size_t count = 0;
    do {
        digits[sizeof digits - ++count] = (char)('0' + value % 10);
        value /= 10;
    } while (value > 0);
    tp_strbuf_append(out, digits + sizeof digits - count, count);
}

/* ---- Tracks ------------------------------------------------------------------------------- */

/* Names to numbers: processes by name, threads by process and name. */
typedef struct {
    char *key;
    uint32_t hash;
    int32_t id;
} track_slot_t;

typedef struct {
    track_slot_t *slots;
    size_t capacity, used;
} track_table_t;

static uint32_t hash_key(const char *key) {
    uint32_t hash = 2166136261u;
    for (const unsigned char *p = (const unsigned char *)key; *p != '\0'; p++)
        hash = (hash ^ *p) * 16777619u;
    return hash;
}

static track_slot_t *find_slot(const track_table_t *table, const char *key, uint32_t hash) {
    size_t at = hash & (table->capacity - 1);
    while (table->slots[at].key != NULL &&
           (table->slots[at].hash != hash || strcmp(table->slots[at].key, key) != 0))
        at = (at + 1) & (table->capacity - 1);
    return &table->slots[at];
}

/* The id of `key`, -1 when it is not in the table. */
static int32_t table_get(const track_table_t *table, const char *key) {
    if (table->capacity == 0) return -1;
    track_slot_t *slot = find_slot(table, key, hash_key(key));
    return slot->key != NULL ? slot->id : -1;
}

/* Adds `key` with `id` if it is new; false when out of memory. */
static bool table_put(track_table_t *table, const char *key, int32_t id, bool *out_added) {
    *out_added = false;
    if ((table->used + 1) * 2 > table->capacity) {
        size_t capacity = table->capacity == 0 ? 32 : table->capacity * 2;
        track_table_t grown = {calloc(capacity, sizeof(track_slot_t)), capacity, table->used};
        if (grown.slots == NULL) return false;
        for (size_t i = 0; i < table->capacity; i++)
            if (table->slots[i].key != NULL)
                *find_slot(&grown, table->slots[i].key, table->slots[i].hash) = table->slots[i];
        free(table->slots);
        *table = grown;
    }
    uint32_t hash = hash_key(key);
    track_slot_t *slot = find_slot(table, key, hash);
    if (slot->key != NULL) return true;
    if ((slot->key = strdup(key)) == NULL) return false;
    slot->hash = hash;
    slot->id = id;
    table->used++;
    *out_added = true;
    return true;
}

static void table_free(track_table_t *table) {
    for (size_t i = 0; i < table->capacity; i++) free(table->slots[i].key);
    free(table->slots);
}

/* Host threads are process 1; devices 2, 3, ... in name order. Threads are numbered within a
 * process in name order, numbers by value ("thread 2" before "thread 10"), the host's "main"
 * and a device's stream tracks first. */
typedef struct {
    int32_t pid;
    char *name;
} thread_name_t;

typedef struct {
    track_table_t processes, threads;
    char **device_names;
    size_t num_devices, devices_capacity;
    thread_name_t *thread_names; /* sorted, once numbered */
    size_t num_threads, threads_capacity;
    tp_strbuf_t key;
    const char *last_process, *last_thread; /* the last track added, by address */
    bool failed;
} tracks_t;

static const char HOST_PROCESS[] = "Host";

/* "pid\x1fname": the threads table's key. */
static const char *thread_key(tp_strbuf_t *key, int32_t pid, const char *thread) {
    tp_strbuf_clear(key);
    tp_strbuf_printf(key, "%d\x1f%s", (int)pid, thread != NULL ? thread : "");
    return tp_strbuf_text(key);
}

static bool push_device(tracks_t *tracks, const char *name) {
    if (tracks->num_devices == tracks->devices_capacity) {
        size_t capacity = tracks->devices_capacity == 0 ? 16 : tracks->devices_capacity * 2;
        char **grown = realloc(tracks->device_names, capacity * sizeof *grown);
        if (grown == NULL) return false;
        tracks->device_names = grown;
        tracks->devices_capacity = capacity;
    }
    if ((tracks->device_names[tracks->num_devices] = strdup(name)) == NULL) return false;
    tracks->num_devices++;
    return true;
}

static bool push_thread(tracks_t *tracks, int32_t pid, const char *name) {
    if (tracks->num_threads == tracks->threads_capacity) {
        size_t capacity = tracks->threads_capacity == 0 ? 16 : tracks->threads_capacity * 2;
        thread_name_t *grown = realloc(tracks->thread_names, capacity * sizeof *grown);
        if (grown == NULL) return false;
        tracks->thread_names = grown;
        tracks->threads_capacity = capacity;
    }
    thread_name_t *thread = &tracks->thread_names[tracks->num_threads];
    if ((thread->name = strdup(name)) == NULL) return false;
    thread->pid = pid;
    tracks->num_threads++;
    return true;
}

static void collect_device(const tp_profile_event_t *event, void *arg) {
    tracks_t *tracks = arg;
    if (event->process == NULL || tracks->failed) return;
    bool added;
    if (!table_put(&tracks->processes, event->process, 0, &added) ||
        (added && !push_device(tracks, event->process)))
        tracks->failed = true;
}

static int32_t pid_of(const tracks_t *tracks, const tp_profile_event_t *event) {
    return event->process == NULL ? 1 : table_get(&tracks->processes, event->process);
}

static void collect_thread(const tp_profile_event_t *event, void *arg) {
    tracks_t *tracks = arg;
    if (tracks->failed || event->kind == TP_PROFILE_COUNTER) return;
    /* Names are interned per thread's events: the same address is the same track. */
    if (tracks->last_thread != NULL && event->process == tracks->last_process &&
        event->thread == tracks->last_thread)
        return;
    tracks->last_process = event->process;
    tracks->last_thread = event->thread;
    int32_t pid = pid_of(tracks, event);
    const char *name = event->thread != NULL ? event->thread : "";
    bool added;
    if (tp_strbuf_failed(&tracks->key) ||
        !table_put(&tracks->threads, thread_key(&tracks->key, pid, name), 0, &added) ||
        (added && !push_thread(tracks, pid, name)))
        tracks->failed = true;
}

static int compare_names(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static bool comes_first(const char *thread) {
    return strcmp(thread, "main") == 0 || strncmp(thread, "stream", 6) == 0;
}

static int compare_threads(const void *a, const void *b) {
    const thread_name_t *x = a, *y = b;
    if (x->pid != y->pid) return x->pid < y->pid ? -1 : 1;
    if (comes_first(x->name) != comes_first(y->name)) return comes_first(x->name) ? -1 : 1;
    return strverscmp(x->name, y->name);
}

static bool build_tracks(tracks_t *tracks, const tp_profile_collection_t *events) {
    tp_profile_collection_each(events, collect_device, tracks);
    if (tracks->failed) return false;
    if (tracks->num_devices > 1)
        qsort(tracks->device_names, tracks->num_devices, sizeof *tracks->device_names,
              compare_names);
    for (size_t d = 0; d < tracks->num_devices; d++) {
        track_slot_t *slot = find_slot(&tracks->processes, tracks->device_names[d],
                                       hash_key(tracks->device_names[d]));
        slot->id = (int32_t)d + 2;
    }
    tp_profile_collection_each(events, collect_thread, tracks);
    if (tracks->failed) return false;
    if (tracks->num_threads > 1)
        qsort(tracks->thread_names, tracks->num_threads, sizeof *tracks->thread_names,
              compare_threads);
    int32_t tid = 0;
    for (size_t t = 0; t < tracks->num_threads; t++) {
        const thread_name_t *thread = &tracks->thread_names[t];
        tid = t > 0 && tracks->thread_names[t - 1].pid == thread->pid ? tid + 1 : 1;
        const char *key = thread_key(&tracks->key, thread->pid, thread->name);
        track_slot_t *slot = find_slot(&tracks->threads, key, hash_key(key));
        slot->id = tid;
    }
    return !tp_strbuf_failed(&tracks->key);
}

static void free_tracks(tracks_t *tracks) {
    table_free(&tracks->processes);
    table_free(&tracks->threads);
    for (size_t i = 0; i < tracks->num_devices; i++) free(tracks->device_names[i]);
    free(tracks->device_names);
    for (size_t i = 0; i < tracks->num_threads; i++) free(tracks->thread_names[i].name);
    free(tracks->thread_names);
    tp_strbuf_free(&tracks->key);
}

/* ---- Writing ------------------------------------------------------------------------------ */

/* The last tracks looked up, by the interned names' addresses: within one thread's events
 * a name is one string, and consecutive events mostly alternate between a few tracks. */
enum { RECENT_TRACKS = 8 };
typedef struct {
    const char *process, *thread;
    int32_t pid, tid;
} recent_track_t;

typedef struct {
    FILE *file;
    tracks_t *tracks;
    uint64_t origin_ns;
    tp_strbuf_t line, key;
    recent_track_t recent[RECENT_TRACKS];
    size_t next_recent;
    bool used; /* an event was written: the next needs a comma */
    bool failed;
} writer_t;

/* Writes the line built so far as one element of the array. */
static void flush_line(writer_t *writer) {
    if (tp_strbuf_failed(&writer->line)) writer->failed = true;
    if (writer->failed) return;
    if (fputs(writer->used ? ",\n" : "\n", writer->file) == EOF ||
        fputs(tp_strbuf_text(&writer->line), writer->file) == EOF)
        writer->failed = true;
    writer->used = true;
    tp_strbuf_clear(&writer->line);
}

static void metadata(writer_t *writer, const char *what, int32_t pid, int32_t tid,
                     const char *key, const char *name, int64_t number) {
    tp_strbuf_t *line = &writer->line;
    tp_strbuf_printf(line, "{\"ph\":\"M\",\"name\":\"%s\",\"pid\":%d", what, (int)pid);
    if (tid > 0) tp_strbuf_printf(line, ",\"tid\":%d", (int)tid);
    tp_strbuf_printf(line, ",\"args\":{\"%s\":", key);
    if (name != NULL)
        tp_json_append_string(line, name);
    else
        tp_strbuf_printf(line, "%lld", (long long)number);
    tp_strbuf_puts(line, "}}");
    flush_line(writer);
}

static void write_metadata(writer_t *writer) {
    const tracks_t *tracks = writer->tracks;
    metadata(writer, "process_name", 1, 0, "name", HOST_PROCESS, 0);
    metadata(writer, "process_sort_index", 1, 0, "sort_index", NULL, 0);
    for (size_t d = 0; d < tracks->num_devices; d++) {
        metadata(writer, "process_name", (int32_t)d + 2, 0, "name", tracks->device_names[d], 0);
        metadata(writer, "process_sort_index", (int32_t)d + 2, 0, "sort_index", NULL,
                 (int64_t)d + 1);
    }
    for (size_t t = 0; t < tracks->num_threads; t++) {
        const thread_name_t *thread = &tracks->thread_names[t];
        int32_t tid = table_get(&tracks->threads,
                                thread_key(&writer->key, thread->pid, thread->name));
        metadata(writer, "thread_name", thread->pid, tid, "name", thread->name, 0);
        metadata(writer, "thread_sort_index", thread->pid, tid, "sort_index", NULL, tid);
    }
}

/* ,"field":microseconds since the origin, to the nanosecond. */
static void append_microseconds(tp_strbuf_t *line, const char *field, uint64_t ns) {
    tp_strbuf_puts(line, ",\"");
    tp_strbuf_puts(line, field);
    tp_strbuf_puts(line, "\":");
    tp_json_append_uint(line, ns / 1000);
    char fraction[4] = {'.', (char)('0' + ns / 100 % 10), (char)('0' + ns / 10 % 10),
                        (char)('0' + ns % 10)};
    tp_strbuf_append(line, fraction, sizeof fraction);
}

static void track_of(writer_t *writer, const tp_profile_event_t *event, int32_t *out_pid,
                     int32_t *out_tid) {
    for (size_t i = 0; i < RECENT_TRACKS; i++) {
        const recent_track_t *recent = &writer->recent[i];
        if (recent->pid != 0 && recent->process == event->process &&
            recent->thread == event->thread) {
            *out_pid = recent->pid;
            *out_tid = recent->tid;
            return;
        }
    }
    *out_pid = pid_of(writer->tracks, event);
    *out_tid = event->kind == TP_PROFILE_COUNTER
                   ? 0
                   : table_get(&writer->tracks->threads,
                               thread_key(&writer->key, *out_pid, event->thread));
    writer->recent[writer->next_recent] =
        (recent_track_t){event->process, event->thread, *out_pid, *out_tid};
    writer->next_recent = (writer->next_recent + 1) % RECENT_TRACKS;
}

static void write_event(const tp_profile_event_t *event, void *arg) {
    writer_t *writer = arg;
    if (writer->failed) return;
    tp_strbuf_t *line = &writer->line;
    /* Work the device began before the profile did is drawn from the profile's start. */
    uint64_t begin = event->begin_ns > writer->origin_ns ? event->begin_ns : writer->origin_ns;
    uint64_t end = event->begin_ns + event->duration_ns;
    static const char *const phases[] = {"{\"ph\":\"X\",\"cat\":", "{\"ph\":\"C\",\"cat\":",
                                         "{\"ph\":\"i\",\"cat\":"};
    tp_strbuf_puts(line, phases[event->kind]);
    tp_json_append_string(line, event->category);
    tp_strbuf_puts(line, ",\"name\":");
    tp_json_append_string(line, event->name);
    int32_t pid, tid;
    track_of(writer, event, &pid, &tid);
    tp_strbuf_puts(line, ",\"pid\":");
    tp_json_append_uint(line, (uint64_t)pid);
    if (event->kind != TP_PROFILE_COUNTER) {
        tp_strbuf_puts(line, ",\"tid\":");
        tp_json_append_uint(line, (uint64_t)tid);
    }
    append_microseconds(line, "ts", begin - writer->origin_ns);
    if (event->kind == TP_PROFILE_SPAN)
        append_microseconds(line, "dur", end > begin ? end - begin : 0);
    if (event->kind == TP_PROFILE_INSTANT)
        tp_strbuf_puts(line, event->global ? ",\"s\":\"g\"" : ",\"s\":\"t\"");
    if (event->kind == TP_PROFILE_COUNTER) {
        tp_strbuf_puts(line, ",\"args\":{");
        tp_json_append_string(line, event->series);
        tp_strbuf_puts(line, ":");
        tp_json_append_uint(line, event->value);
        tp_strbuf_puts(line, "}");
    } else if (event->args != NULL) {
        tp_strbuf_puts(line, ",\"args\":");
        tp_strbuf_puts(line, event->args);
    }
    tp_strbuf_puts(line, "}");
    flush_line(writer);
}

bool tp_trace_json_write(FILE *file, const tp_profile_collection_t *events, uint64_t origin_ns,
                         const char *producer) {
    tracks_t tracks = {0};
    writer_t writer = {.file = file, .tracks = &tracks, .origin_ns = origin_ns,
                       .line = TP_STRBUF_INIT, .key = TP_STRBUF_INIT};
    writer.failed = !build_tracks(&tracks, events);
    if (!writer.failed && fputs("{\"traceEvents\":[", file) == EOF) writer.failed = true;
    if (!writer.failed) write_metadata(&writer);
    tp_profile_collection_each(events, write_event, &writer);
    if (!writer.failed) {
        tp_strbuf_t *line = &writer.line;
        tp_strbuf_puts(line, "\n],\n\"displayTimeUnit\":\"ns\",\n\"otherData\":{\"producer\":");
        tp_json_append_string(line, producer);
        tp_strbuf_printf(line, ",\"dropped_events\":%llu,\"clock\":\"CLOCK_MONOTONIC; ts and "
                         "dur in microseconds from the start of the profile\"}}\n",
                         (unsigned long long)events->dropped);
        if (tp_strbuf_failed(line) || fputs(tp_strbuf_text(line), file) == EOF)
            writer.failed = true;
    }
    if (ferror(file)) writer.failed = true;
    tp_strbuf_free(&writer.line);
    tp_strbuf_free(&writer.key);
    free_tracks(&tracks);
    return !writer.failed;
}
