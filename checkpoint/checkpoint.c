/* SPDX-License-Identifier: Apache-2.0 */
/* Checkpoints as NumPy's .npz: one NAME.npy member per variable, in a zip archive that libzip
 * writes (into a new file beside the target, renamed over it when whole) and reads. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <zip.h>

#include "base/printable.h"
#include "base/status.h"
#include "tensorplug/training.h"

enum {
    MAX_NPY_HEADER = 12 + 65536, /* the most tp_tensor_decode_npy reads before the values */
    SHOWN = 1024,                /* a path or member name as messages show it */
};

/* The status code for a libzip error: the system's reason where there is one. */
static tp_code_t code_of(zip_error_t *error) {
    if (zip_error_system_type(error) == ZIP_ET_SYS) {
        tp_code_t code = tp_code_from_errno(zip_error_code_system(error));
        if (code != TP_UNKNOWN) return code;
    }
    switch (zip_error_code_zip(error)) {
    case ZIP_ER_NOENT:
        return TP_NOT_FOUND;
    case ZIP_ER_MEMORY:
        return TP_RESOURCE_EXHAUSTED;
    case ZIP_ER_NOZIP:
    case ZIP_ER_INCONS:
    case ZIP_ER_CRC:
    case ZIP_ER_COMPNOTSUPP:
    case ZIP_ER_ENCRNOTSUPP:
    case ZIP_ER_NOPASSWD:
    case ZIP_ER_WRONGPASSWD:
    case ZIP_ER_EOF:
    case ZIP_ER_ZLIB:
        return TP_INVALID_ARGUMENT;
    default:
        return TP_UNKNOWN;
    }
}

static tp_status_t *zip_failure(zip_error_t *error, const char *what) {
    return tp_status_make(code_of(error), "%s: %s", what, zip_error_strerror(error));
}

static tp_status_t *open_failure(int code, const char *what) {
    zip_error_t error;
    zip_error_init_with_code(&error, code);
    tp_status_t *status = zip_failure(&error, what);
    zip_error_fini(&error);
    return status;
}

static const char *name_of(tp_variable_t *const *variables, const char *const *names,
                           size_t i) {
    return names != NULL ? names[i] : tp_variable_name(variables[i]);
}

static tp_status_t *check_arguments(tp_variable_t *const *variables, const char *const *names,
                                    size_t count) {
    if (count == 0) return tp_status_make(TP_INVALID_ARGUMENT, "no variables were given");
    if (variables == NULL) return tp_status_make(TP_INVALID_ARGUMENT, "argument 'variables' is NULL");
    for (size_t i = 0; i < count; i++) {
        if (variables[i] == NULL)
            return tp_status_make(TP_INVALID_ARGUMENT, "variable %zu is NULL", i);
        const char *name = name_of(variables, names, i);
        if (name == NULL || name[0] == '\0')
            return tp_status_make(TP_INVALID_ARGUMENT, "variable %zu has %s name", i,
                                  name == NULL ? "a NULL" : "an empty");
    }
    return NULL;
}

/* NAME.npy, which numpy.load's NpzFile lists as NAME. */
static char *member_name(const char *name) {
    size_t length = strlen(name);
    char *member = malloc(length + 5);
    if (member != NULL) {
        memcpy(member, name, length);
        memcpy(member + length, ".npy", 5);
    }
    return member;
}

/* ---- Saving ----------------------------------------------------------------------------- */

/* Adds variable i's value as a stored member; libzip owns `bytes` once the source is made. */
static tp_status_t *add_member(zip_t *archive, tp_variable_t *variable, const char *name) {
    tp_tensor_t *value;
    TP_RETURN_IF_ERROR(tp_variable_read(variable, &value));
    void *bytes;
    size_t size;
    tp_status_t *error = tp_tensor_encode_npy(value, &bytes, &size);
    tp_tensor_release(value);
    if (error != NULL) return error;
    zip_source_t *source = zip_source_buffer(archive, bytes, size, 1);
    if (source == NULL) {
        free(bytes);
        return zip_failure(zip_get_error(archive), "adding it");
    }
    char *member = member_name(name);
    zip_int64_t index = member != NULL ? zip_file_add(archive, member, source, 0) : -1;
    free(member);
    if (index < 0) {
        zip_source_free(source);
        return member == NULL ? tp_status_make(TP_RESOURCE_EXHAUSTED, "out of host memory")
                              : zip_failure(zip_get_error(archive), "adding it");
    }
    /* As numpy.savez: stored, so that the values can be read (or mapped) in place. */
    if (zip_set_file_compression(archive, (zip_uint64_t)index, ZIP_CM_STORE, 0) != 0)
        return zip_failure(zip_get_error(archive), "adding it");
    return NULL;
}

static tp_status_t *save(const char *path, tp_variable_t *const *variables,
                         const char *const *names, size_t count) {
    TP_RETURN_IF_ERROR(check_arguments(variables, names, count));
    for (size_t i = 0; i < count; i++)
        for (size_t j = 0; j < i; j++)
            if (strcmp(name_of(variables, names, i), name_of(variables, names, j)) == 0)
                return tp_status_make(TP_INVALID_ARGUMENT,
                                      "variables %zu and %zu are both named '%s'", j, i,
                                      name_of(variables, names, i));
    struct stat info;
    if (stat(path, &info) == 0 && S_ISDIR(info.st_mode))
        return tp_status_make(TP_INVALID_ARGUMENT, "it is a folder");
    int code = 0;
    /* Nothing is written until zip_close, which writes the whole archive beside `path` and
     * renames it over; a failure before leaves `path` as it was. */
    zip_t *archive = zip_open(path, ZIP_CREATE | ZIP_TRUNCATE, &code);
    if (archive == NULL) return open_failure(code, "opening it");
    for (size_t i = 0; i < count; i++) {
        tp_status_t *error = add_member(archive, variables[i], name_of(variables, names, i));
        if (error != NULL) {
            zip_discard(archive);
            return tp_status_annotate(error, "variable '%s'", name_of(variables, names, i));
        }
    }
    if (zip_close(archive) != 0) {
        tp_status_t *error = zip_failure(zip_get_error(archive), "writing it");
        zip_discard(archive);
        return error;
    }
    return NULL;
}

tp_status_t *tp_checkpoint_save(const char *path, tp_variable_t *const *variables,
                                const char *const *names, size_t count) {
    TP_REQUIRE_ARG(path);
    char shown[SHOWN];
    tp_printable_copy(shown, sizeof shown, path);
    return tp_status_annotate(save(path, variables, names, count), "tp_checkpoint_save: '%s'",
                              shown);
}

/* ---- Loading ---------------------------------------------------------------------------- */

/* Up to 8 names of the archive's .npy members, for a message about one that is missing. */
static void list_members(zip_t *archive, char *out, size_t capacity) {
    zip_int64_t count = zip_get_num_entries(archive, 0);
    size_t used = 0;
    out[0] = '\0';
    for (zip_int64_t i = 0, listed = 0; i < count && used < capacity; i++) {
        const char *name = zip_get_name(archive, (zip_uint64_t)i, 0);
        size_t length = name != NULL ? strlen(name) : 0;
        if (length < 5 || strcmp(name + length - 4, ".npy") != 0) continue;
        if (listed++ == 8) {
            snprintf(out + used, capacity - used, ", ...");
            break;
        }
        char shown[SHOWN];
        tp_printable_copy(shown, sizeof shown, name);
        shown[strlen(shown) >= 4 ? strlen(shown) - 4 : 0] = '\0'; /* without .npy */
        int n = snprintf(out + used, capacity - used, "%s'%s'", used > 0 ? ", " : "", shown);
        if (n < 0) break;
        used += (size_t)n;
    }
}

static tp_status_t *read_member(zip_t *archive, zip_uint64_t index, size_t size,
                                unsigned char *bytes) {
    zip_file_t *file = zip_fopen_index(archive, index, 0);
    if (file == NULL) return zip_failure(zip_get_error(archive), "opening its member");
    size_t done = 0;
    tp_status_t *error = NULL;
    while (done < size && error == NULL) {
        zip_int64_t n = zip_fread(file, bytes + done, size - done);
        if (n < 0) error = zip_failure(zip_file_get_error(file), "reading its member");
        else if (n == 0) error = tp_status_make(TP_INVALID_ARGUMENT,
                                               "its member ends after %zu of its %zu bytes",
                                               done, size);
        else done += (size_t)n;
    }
    zip_fclose(file);
    return error;
}

/* Variable `variable`'s value from member NAME.npy, checked against it. */
static tp_status_t *load_one(tp_context_t *context, zip_t *archive, tp_variable_t *variable,
                             const char *name, tp_tensor_t **out) {
    char *member = member_name(name);
    if (member == NULL) return tp_status_make(TP_RESOURCE_EXHAUSTED, "out of host memory");
    zip_int64_t index = zip_name_locate(archive, member, 0);
    free(member);
    if (index < 0) {
        char members[512];
        list_members(archive, members, sizeof members);
        return tp_status_make(TP_NOT_FOUND, "the checkpoint has no member '%s.npy' (it holds %s)",
                              name, members[0] != '\0' ? members : "no .npy member");
    }
    zip_stat_t info;
    if (zip_stat_index(archive, (zip_uint64_t)index, 0, &info) != 0)
        return zip_failure(zip_get_error(archive), "examining its member");
    tp_shape_t shape = tp_variable_shape(variable);
    int64_t elements;
    TP_RETURN_IF_ERROR(tp_shape_num_elements(&shape, &elements));
    /* A member is read whole: one larger than the variable's .npy could be is refused before
     * its size is allocated. */
    uint64_t most = (uint64_t)elements * tp_dtype_size(tp_variable_dtype(variable)) +
                    MAX_NPY_HEADER;
    char shape_text[256];
    tp_shape_format(&shape, shape_text, sizeof shape_text);
    if (!(info.valid & ZIP_STAT_SIZE) || info.size > most)
        return tp_status_make(TP_INVALID_ARGUMENT,
                              "its member holds %llu bytes, more than a .npy of the variable "
                              "(%s, shape %s) can",
                              (unsigned long long)info.size,
                              tp_dtype_name(tp_variable_dtype(variable)), shape_text);
    unsigned char *bytes = malloc(info.size > 0 ? (size_t)info.size : 1);
    if (bytes == NULL) return tp_status_make(TP_RESOURCE_EXHAUSTED, "out of host memory");
    tp_status_t *error = read_member(archive, (zip_uint64_t)index, (size_t)info.size, bytes);
    tp_tensor_t *value = NULL;
    if (error == NULL) error = tp_tensor_decode_npy(context, bytes, (size_t)info.size, &value);
    free(bytes);
    if (error != NULL) return error;
    tp_shape_t got = tp_tensor_shape(value);
    bool same_shape = got.rank == shape.rank;
    for (int32_t d = 0; same_shape && d < shape.rank; d++) same_shape = got.dims[d] == shape.dims[d];
    if (tp_tensor_dtype(value) != tp_variable_dtype(variable) || !same_shape) {
        char got_text[256];
        tp_shape_format(&got, got_text, sizeof got_text);
        error = tp_status_make(TP_INVALID_ARGUMENT,
                               "the variable is %s of shape %s, the checkpoint holds %s of "
                               "shape %s",
                               tp_dtype_name(tp_variable_dtype(variable)), shape_text,
                               tp_dtype_name(tp_tensor_dtype(value)), got_text);
        tp_tensor_release(value);
        return error;
    }
    *out = value;
    return NULL;
}

static tp_status_t *load(tp_context_t *context, const char *path,
                         tp_variable_t *const *variables, const char *const *names,
                         size_t count) {
    TP_RETURN_IF_ERROR(check_arguments(variables, names, count));
    int code = 0;
    zip_t *archive = zip_open(path, ZIP_RDONLY, &code);
    if (archive == NULL) return open_failure(code, "opening it");
    tp_tensor_t **values = calloc(count, sizeof *values);
    tp_status_t *error =
        values == NULL ? tp_status_make(TP_RESOURCE_EXHAUSTED, "out of host memory") : NULL;
    for (size_t i = 0; i < count && error == NULL; i++)
        error = tp_status_annotate(load_one(context, archive, variables[i],
                                            name_of(variables, names, i), &values[i]),
                                   "variable '%s'", name_of(variables, names, i));
    zip_discard(archive);
    if (error == NULL) error = tp_variable_assign_all(variables, values, count);
    for (size_t i = 0; values != NULL && i < count; i++) tp_tensor_release(values[i]);
    free(values);
    return error;
}

tp_status_t *tp_checkpoint_load(tp_context_t *context, const char *path,
                                tp_variable_t *const *variables, const char *const *names,
                                size_t count) {
    TP_REQUIRE_ARG(context);
    TP_REQUIRE_ARG(path);
    char shown[SHOWN];
    tp_printable_copy(shown, sizeof shown, path);
    return tp_status_annotate(load(context, path, variables, names, count),
                              "tp_checkpoint_load: '%s'", shown);
}
