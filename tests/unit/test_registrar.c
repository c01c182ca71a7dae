/* SPDX-License-Identifier: Apache-2.0 */
/* The host's checks of descriptors and registrations, driven through the host function table
 * exactly as a plug-in drives it. */
#include "test_support.h"

#include <stdlib.h>

#include "kernel/kernel_context.h"
#include "plugin/plugin_record.h"
#include "plugin/plugin_status.h"
#include "tensor/tensor.h"

/* ---- A fake plug-in whose init runs whatever the test puts in `current_init` ---------------- */

static void (*current_init)(const tp_host_api_t *host, tp_registrar_t *registrar,
                            tp_plugin_status_t *status);

static void dispatch_init(const tp_host_api_t *host, tp_registrar_t *registrar,
                          tp_plugin_status_t *status) {
    current_init(host, registrar, status);
}

static tp_plugin_descriptor_t descriptor(void) {
    tp_plugin_descriptor_t d = {sizeof d, TP_ABI_MAJOR, TP_ABI_MINOR, "fake", "0.0.1",
                                dispatch_init};
    return d;
}

static tp_plugin_record_t *load(const tp_plugin_descriptor_t *d) {
    tp_plugin_record_t *record = calloc(1, sizeof *record);
    assert_non_null(record);
    record->path = "fake.so";
    tp_plugin_record_init_from_descriptor(record, d);
    return record;
}

static void unload(tp_plugin_record_t *record) {
    free(record->device_types);
    free(record->ops);
    free(record->kernels);
    tp_arena_free(&record->arena);
    free(record);
}

static void assert_refusal(tp_plugin_record_t *record, const char *fragment) {
    if (record->refusal == NULL || strstr(record->refusal, fragment) == NULL) {
        print_error("refusal '%s' lacks '%s'\n", record->refusal ? record->refusal : "(none)",
                    fragment);
        fail();
    }
    /* A refused plug-in keeps nothing it registered. */
    assert_int_equal(record->num_device_types, 0);
    assert_int_equal(record->num_ops, 0);
    assert_int_equal(record->num_kernels, 0);
    assert_false(record->has_graph_pass);
    unload(record);
}

/* ---- Device functions for the registrations: never called by these tests ------------------ */

static int32_t count(void *s, tp_plugin_status_t *st) { (void)s; (void)st; return 1; }
static void init_device(void *s, int32_t o, tp_device_info_t *i, void **d, tp_plugin_status_t *st) {
    (void)s; (void)o; (void)i; (void)d; (void)st;
}
static void release(void *d) { (void)d; }
static void allocate(void *d, uint64_t n, void **m, tp_plugin_status_t *st) {
    (void)d; (void)n; (void)m; (void)st;
}
static void deallocate(void *d, void *m) { (void)d; (void)m; }
static void create(void *d, void **h, tp_plugin_status_t *st) { (void)d; (void)h; (void)st; }
static void destroy(void *d, void *h) { (void)d; (void)h; }
static void sync_stream(void *d, void *s, tp_plugin_status_t *st) { (void)d; (void)s; (void)st; }
static void to_device(void *d, void *s, void *m, uint64_t o, const void *src, uint64_t n,
                      tp_plugin_status_t *st) {
    (void)d; (void)s; (void)m; (void)o; (void)src; (void)n; (void)st;
}
static void to_host(void *d, void *s, void *dst, const void *m, uint64_t o, uint64_t n,
                    tp_plugin_status_t *st) {
    (void)d; (void)s; (void)dst; (void)m; (void)o; (void)n; (void)st;
}
static void record_event(void *d, void *s, void *e, tp_plugin_status_t *st) {
    (void)d; (void)s; (void)e; (void)st;
}
static void compute(void *k, tp_kernel_context_t *c, tp_plugin_status_t *st) {
    (void)k; (void)c; (void)st;
}
static void run_pass(void *s, tp_plugin_graph_t *g, tp_plugin_status_t *st) {
    (void)s; (void)g; (void)st;
}

static tp_device_type_def_t device_type(const char *type) {
    tp_device_type_def_t def = {
        .struct_size = sizeof def, .type = type, .priority = 100, .device_count = count,
        .device_init = init_device, .device_release = release, .allocate = allocate,
        .deallocate = deallocate, .stream_create = create, .stream_destroy = destroy,
        .stream_synchronize = sync_stream, .memcpy_host_to_device = to_device,
        .memcpy_device_to_host = to_host};
    return def;
}

static const tp_dtype_t float32_only[] = {TP_FLOAT32};

static tp_kernel_def_t relu_kernel(void) {
    static const tp_type_constraint_t constraint = {sizeof constraint, "T", float32_only, 1};
    tp_kernel_def_t def = {.struct_size = sizeof def, .op = "Relu", .device_type = "APU",
                           .constraints = &constraint, .num_constraints = 1, .priority = 1,
                           .compute = compute};
    return def;
}

/* ---- Descriptor checks ----------------------------------------------------------------------- */

static void never_called(const tp_host_api_t *host, tp_registrar_t *registrar,
                         tp_plugin_status_t *status) {
    (void)host; (void)registrar; (void)status;
    fail_msg("init must not run for a refused descriptor");
}

static void descriptors_are_checked_before_init(void **state) {
    (void)state;
    current_init = never_called;
    assert_refusal(load(NULL), "its entry point returned no descriptor");

    tp_plugin_descriptor_t d = descriptor();
    d.struct_size = sizeof(size_t);
    assert_refusal(load(&d), "too small to hold an ABI version");

    d = descriptor();
    d.abi_minor = TP_ABI_MINOR + 1;
    assert_refusal(load(&d), "newer than this runtime's 1.8; upgrade tensorplug");

    d = descriptor();
    d.abi_major = 0;
    assert_refusal(load(&d), "built for plug-in ABI 0.8; this runtime speaks ABI 1.8");

    d = descriptor();
    d.struct_size = offsetof(tp_plugin_descriptor_t, init);
    assert_refusal(load(&d), "smaller than the");

    d = descriptor();
    d.name = "";
    assert_refusal(load(&d), "needs a name");

    d = descriptor();
    d.version = "1.0 beta";
    assert_refusal(load(&d), "and a version");

    d = descriptor();
    d.init = NULL;
    assert_refusal(load(&d), "no init function");
}

/* ---- Device types ---------------------------------------------------------------------------- */

static void register_two_types(const tp_host_api_t *host, tp_registrar_t *registrar,
                               tp_plugin_status_t *status) {
    tp_device_type_def_t apu = device_type("APU"), npu = device_type("NPU_2");
    host->register_device_type(registrar, &apu, status);
    assert_int_equal(status->code, TP_OK);
    host->register_device_type(registrar, &npu, status);
    assert_int_equal(status->code, TP_OK);
}

static void valid_device_types_are_copied(void **state) {
    (void)state;
    current_init = register_two_types;
    tp_plugin_descriptor_t d = descriptor();
    tp_plugin_record_t *record = load(&d);
    assert_null(record->refusal);
    assert_int_equal(record->num_device_types, 2);
    assert_string_equal(record->device_types[1].type, "NPU_2");
    assert_int_equal(record->device_types[0].priority, 100);
    assert_int_equal(record->device_types[0].struct_size, sizeof(tp_device_type_def_t));
    assert_string_equal(record->name, "fake");
    unload(record);
}

static tp_device_type_def_t bad_type;
static tp_code_t expected_code;

/* Registers `bad_type` and checks that the plug-in hears about the refusal. */
static void register_bad_type(const tp_host_api_t *host, tp_registrar_t *registrar,
                              tp_plugin_status_t *status) {
    host->register_device_type(registrar, &bad_type, status);
    assert_int_equal(status->code, expected_code);
    host->status_set(status, TP_OK, NULL); /* the plug-in ignores it; the host must not */
}

static void refuse_type(tp_device_type_def_t def, tp_code_t code, const char *fragment) {
    bad_type = def;
    expected_code = code;
    current_init = register_bad_type;
    tp_plugin_descriptor_t d = descriptor();
    assert_refusal(load(&d), fragment);
}

static void invalid_device_types_are_refused(void **state) {
    (void)state;
    refuse_type(device_type("has space"), TP_INVALID_ARGUMENT,
                "device type name 'has space' is invalid");
    refuse_type(device_type(""), TP_INVALID_ARGUMENT, "device type name '' is invalid");
    refuse_type(device_type(NULL), TP_INVALID_ARGUMENT, "device type name '(null)' is invalid");
    refuse_type(device_type("A23456789012345678901234567890123"), TP_INVALID_ARGUMENT,
                "is invalid");
    tp_device_type_def_t def = device_type("APU");
    def.stream_synchronize = NULL;
    refuse_type(def, TP_INVALID_ARGUMENT,
                "device type 'APU' lacks the required function stream_synchronize");
    def = device_type("APU");
    def.event_create = create;
    def.event_record = record_event;
    refuse_type(def, TP_INVALID_ARGUMENT, "provides 2 of the 5 event functions");
    def = device_type("APU");
    def.struct_size = 16;
    refuse_type(def, TP_INVALID_ARGUMENT,
                "tp_device_type_def_t.struct_size is 16, smaller than the");
}

static void register_same_type_twice(const tp_host_api_t *host, tp_registrar_t *registrar,
                                     tp_plugin_status_t *status) {
    tp_device_type_def_t apu = device_type("APU"), again = device_type("apu");
    host->register_device_type(registrar, &apu, status);
    host->register_device_type(registrar, &again, status);
    assert_int_equal(status->code, TP_ALREADY_EXISTS);
    host->status_set(status, TP_OK, NULL);
}

static void a_type_registered_twice_is_refused(void **state) {
    (void)state;
    current_init = register_same_type_twice;
    tp_plugin_descriptor_t d = descriptor();
    assert_refusal(load(&d), "invalid registration: device type 'apu' is registered twice");
}

/* ---- Kernels ------------------------------------------------------------------------------- */

static tp_kernel_def_t kernel_under_test;

static void register_kernel_under_test(const tp_host_api_t *host, tp_registrar_t *registrar,
                                       tp_plugin_status_t *status) {
    host->register_kernel(registrar, &kernel_under_test, status);
}

static tp_plugin_record_t *load_kernel(tp_kernel_def_t def) {
    kernel_under_test = def;
    current_init = register_kernel_under_test;
    tp_plugin_descriptor_t d = descriptor();
    return load(&d);
}

static void kernels_are_checked_and_copied(void **state) {
    (void)state;
    tp_plugin_record_t *record = load_kernel(relu_kernel());
    assert_null(record->refusal);
    assert_int_equal(record->num_kernels, 1);
    const tp_kernel_def_t *kernel = &record->kernels[0];
    assert_string_equal(kernel->op, "Relu");
    assert_string_equal(kernel->device_type, "APU");
    assert_int_equal(kernel->num_constraints, 1);
    assert_string_equal(kernel->constraints[0].attr, "T");
    assert_int_equal(kernel->constraints[0].dtypes[0], TP_FLOAT32);
    /* The host keeps its own copies, not the plug-in's pointers. */
    assert_ptr_not_equal(kernel->constraints[0].dtypes, float32_only);
    assert_ptr_equal(kernel->compute, compute);
    unload(record);

    tp_kernel_def_t def = relu_kernel();
    def.compute = NULL;
    assert_refusal(load_kernel(def), "kernel for op Relu on APU has no compute function");
    def = relu_kernel();
    def.op = "relu";
    assert_refusal(load_kernel(def), "kernel for op 'relu': the op name is invalid");
    def = relu_kernel();
    def.device_type = "A-PU";
    assert_refusal(load_kernel(def), "device type 'A-PU' is invalid");
    def = relu_kernel();
    static const tp_dtype_t bogus[] = {(tp_dtype_t)77};
    static const tp_type_constraint_t bad_constraint = {sizeof bad_constraint, "T", bogus, 1};
    def.constraints = &bad_constraint;
    assert_refusal(load_kernel(def), "constraint on 'T' lists invalid dtype 77");
    def = relu_kernel();
    def.constraints = NULL;
    assert_refusal(load_kernel(def), "num_constraints is 1 but constraints is NULL");
    def = relu_kernel();
    def.flags = TP_KERNEL_REUSE_INSTANCE | 1u << 7;
    assert_refusal(load_kernel(def), "kernel for op Relu on APU: unknown flags 0x80");
}

/* The flags of 1.8 are kept; a kernel as a 1.7 plug-in built it ends before them, and whatever
 * lies past its struct_size is not read. */
static void kernel_flags_are_read_within_struct_size(void **state) {
    (void)state;
    tp_kernel_def_t def = relu_kernel();
    def.flags = TP_KERNEL_REUSE_INSTANCE | TP_KERNEL_CONCURRENT_COMPUTE;
    tp_plugin_record_t *record = load_kernel(def);
    assert_null(record->refusal);
    assert_int_equal(record->kernels[0].flags,
                     TP_KERNEL_REUSE_INSTANCE | TP_KERNEL_CONCURRENT_COMPUTE);
    unload(record);
    def.struct_size = offsetof(tp_kernel_def_t, flags);
    def.flags = 0xdeadbeef;
    record = load_kernel(def);
    assert_null(record->refusal);
    assert_int_equal(record->kernels[0].flags, 0);
    unload(record);
}

/* ---- Ops ------------------------------------------------------------------------------------- */

static tp_op_def_t op_under_test;

static void register_op_under_test(const tp_host_api_t *host, tp_registrar_t *registrar,
                                   tp_plugin_status_t *status) {
    host->register_op(registrar, &op_under_test, status);
}

static tp_plugin_record_t *load_op(tp_op_def_t def) {
    op_under_test = def;
    current_init = register_op_under_test;
    tp_plugin_descriptor_t d = descriptor();
    return load(&d);
}

static const tp_op_attr_def_t scale_attrs[] = {
    {.struct_size = sizeof(tp_op_attr_def_t), .name = "T", .type = TP_ATTR_DTYPE,
     .allowed_dtypes = float32_only, .num_allowed_dtypes = 1, .has_default = 1,
     .default_int = TP_FLOAT32},
    {.struct_size = sizeof(tp_op_attr_def_t), .name = "label", .type = TP_ATTR_STRING,
     .has_default = 1, .default_string = "scaled"},
};
static const tp_op_arg_def_t scale_input = {sizeof(tp_op_arg_def_t), "x", TP_DTYPE_INVALID, "T", NULL};
static const tp_op_arg_def_t scale_output = {sizeof(tp_op_arg_def_t), "y", TP_DTYPE_INVALID,
                                             "T", NULL};

static tp_op_def_t scale_op(void) {
    tp_op_def_t def = {.struct_size = sizeof def, .name = "Scale", .inputs = &scale_input,
                       .num_inputs = 1, .outputs = &scale_output, .num_outputs = 1,
                       .attrs = scale_attrs, .num_attrs = 2, .is_stateful = 0};
    return def;
}

static void ops_are_checked_and_copied(void **state) {
    (void)state;
    tp_plugin_record_t *record = load_op(scale_op());
    assert_null(record->refusal);
    assert_int_equal(record->num_ops, 1);
    const tp_op_def_t *op = &record->ops[0];
    assert_string_equal(op->name, "Scale");
    assert_string_equal(op->inputs[0].name, "x");
    assert_string_equal(op->inputs[0].type_attr, "T");
    assert_string_equal(op->attrs[1].default_string, "scaled");
    assert_ptr_not_equal(op->attrs, scale_attrs);
    unload(record);

    tp_op_def_t def = scale_op();
    def.name = "9Scale";
    assert_refusal(load_op(def), "op name '9Scale' is invalid");
    static const tp_op_arg_def_t both = {sizeof both, "x", TP_FLOAT32, "T", NULL};
    def = scale_op();
    def.inputs = &both;
    assert_refusal(load_op(def), "input 'x' must give exactly one of dtype and type_attr");
    static const tp_op_arg_def_t unknown_attr = {sizeof unknown_attr, "x", TP_DTYPE_INVALID,
                                                 "U", NULL};
    def = scale_op();
    def.inputs = &unknown_attr;
    assert_refusal(load_op(def), "takes its dtype from 'U', which is not a dtype attribute");
    static const tp_op_arg_def_t from_string = {sizeof from_string, "x", TP_DTYPE_INVALID,
                                                "label", NULL};
    def = scale_op();
    def.inputs = &from_string;
    assert_refusal(load_op(def), "takes its dtype from 'label'");
    static const tp_op_attr_def_t twice[] = {
        {.struct_size = sizeof(tp_op_attr_def_t), .name = "T", .type = TP_ATTR_DTYPE},
        {.struct_size = sizeof(tp_op_attr_def_t), .name = "T", .type = TP_ATTR_DTYPE}};
    def = scale_op();
    def.attrs = twice;
    assert_refusal(load_op(def), "attribute 'T' is declared twice");
    def = scale_op();
    def.num_inputs = 2;
    def.inputs = NULL;
    assert_refusal(load_op(def), "2 input declared but the array is NULL");
}

/* A plug-in built against ABI 1.6 cannot have meant the dtypes 1.7 added: a kernel or an op of
 * its that names one is refused, and its op's dtype attribute that allows "any" allows the
 * dtypes of 1.6. The same registrations from a 1.7 plug-in are accepted as they are. */
static void registrations_of_an_older_abi_name_its_dtypes_only(void **state) {
    (void)state;
    static const tp_dtype_t with_float16[] = {TP_FLOAT32, TP_FLOAT16};
    static const tp_type_constraint_t newer = {sizeof newer, "T", with_float16, 2};
    tp_kernel_def_t kernel = relu_kernel();
    kernel.constraints = &newer;
    kernel_under_test = kernel;
    current_init = register_kernel_under_test;
    tp_plugin_descriptor_t d = descriptor();
    d.abi_minor = 6;
    assert_refusal(load(&d), "kernel for op Relu on APU: constraint on 'T' lists invalid dtype 7 "
                             "(plug-in ABI 1.6 has no such dtype)");
    d.abi_minor = 7;
    tp_plugin_record_t *record = load(&d);
    assert_null(record->refusal);
    assert_int_equal(record->kernels[0].constraints[0].dtypes[1], TP_FLOAT16);
    unload(record);

    static const tp_op_arg_def_t int8_input = {sizeof int8_input, "x", TP_INT8, NULL, NULL};
    op_under_test = scale_op();
    op_under_test.inputs = &int8_input;
    current_init = register_op_under_test;
    d.abi_minor = 6;
    assert_refusal(load(&d), "op Scale: input 'x' has invalid dtype 9");

    static const tp_op_attr_def_t any_type[] = {
        {.struct_size = sizeof(tp_op_attr_def_t), .name = "T", .type = TP_ATTR_DTYPE}};
    op_under_test = scale_op();
    op_under_test.attrs = any_type;
    op_under_test.num_attrs = 1;
    record = load(&d);
    assert_null(record->refusal);
    const tp_op_attr_def_t *attr = &record->ops[0].attrs[0];
    assert_int_equal(attr->num_allowed_dtypes, 6);
    for (size_t i = 0; i < attr->num_allowed_dtypes; i++)
        assert_true(attr->allowed_dtypes[i] >= TP_FLOAT32 && attr->allowed_dtypes[i] <= TP_BOOL);
    unload(record);
    d.abi_minor = 7;
    record = load(&d);
    assert_null(record->refusal);
    assert_null(record->ops[0].attrs[0].allowed_dtypes); /* any, the new dtypes included */
    unload(record);
}

/* A registered op whose inputs are several lists: the lengths a call gives them may add up
 * past SIZE_MAX, and a sum that wrapped round to the number of inputs sent resolution reading
 * far past the inputs (found by the fuzz target attributes). */
static void list_lengths_that_overflow_are_refused(void **state) {
    (void)state;
    static const tp_op_attr_def_t lengths[] = {
        {.struct_size = sizeof(tp_op_attr_def_t), .name = "N", .type = TP_ATTR_INT},
        {.struct_size = sizeof(tp_op_attr_def_t), .name = "M", .type = TP_ATTR_INT}};
    static const tp_op_arg_def_t lists[] = {
        {sizeof(tp_op_arg_def_t), "a", TP_FLOAT32, NULL, "N"},
        {sizeof(tp_op_arg_def_t), "b", TP_FLOAT32, NULL, "N"},
        {sizeof(tp_op_arg_def_t), "c", TP_FLOAT32, NULL, "M"}};
    tp_op_def_t def = scale_op();
    def.name = "Lists";
    def.inputs = lists;
    def.num_inputs = 3;
    def.outputs = &lists[0];
    def.attrs = lengths;
    def.num_attrs = 2;
    tp_plugin_record_t *record = load_op(def);
    assert_null(record->refusal);
    tp_op_t op = {&record->ops[0], NULL, record};
    tp_tensor_t x = {.dtype = TP_FLOAT32, .num_elements = 1, .byte_size = 4};
    tp_tensor_t *inputs[] = {&x};
    /* 2 * (2^63 - 1) + 3 is 1 modulo 2^64: one input, as many as were given. */
    tp_attr_t given[] = {TP_ATTR_INT_VALUE("N", INT64_MAX), TP_ATTR_INT_VALUE("M", 3)};
    tp_kernel_context_t call;
    assert_error(tp_kernel_context_resolve(&call, &op, inputs, 1, given, 2, 1),
                 TP_INVALID_ARGUMENT, "Lists takes");
    unload(record);
}

/* ---- Sizes and lengths a plug-in claims ------------------------------------------------------ */

/* Each is bounded before the memory it describes is read: a 1 TiB stride crashed the registrar,
 * and a descriptor claiming SIZE_MAX bytes loaded. */
static void claimed_sizes_and_lengths_are_bounded(void **state) {
    (void)state;
    const size_t tebibyte = (size_t)1 << 40;
    current_init = never_called;
    tp_plugin_descriptor_t d = descriptor();
    d.struct_size = SIZE_MAX;
    assert_refusal(load(&d), "its descriptor claims 18446744073709551615 bytes, more than the "
                             "65536 any struct of the ABI may claim");

    tp_device_type_def_t type = device_type("APU");
    type.struct_size = SIZE_MAX;
    refuse_type(type, TP_INVALID_ARGUMENT,
                "tp_device_type_def_t.struct_size is 18446744073709551615, larger than the 65536 "
                "bytes any struct of the ABI may claim");

    tp_kernel_def_t kernel = relu_kernel();
    kernel.struct_size = tebibyte;
    assert_refusal(load_kernel(kernel), "tp_kernel_def_t.struct_size is 1099511627776, larger "
                                        "than the 65536 bytes");

    /* Element 1 of this array would lie a tebibyte past element 0. */
    static tp_type_constraint_t strided[2];
    strided[0] = (tp_type_constraint_t){tebibyte, "T", float32_only, 1};
    strided[1] = strided[0];
    kernel = relu_kernel();
    kernel.constraints = strided;
    kernel.num_constraints = 2;
    assert_refusal(load_kernel(kernel), "tp_type_constraint_t.struct_size is 1099511627776, "
                                        "larger than the 65536 bytes");

    /* The cap itself is a size the host accepts. */
    static union {
        tp_type_constraint_t constraint;
        unsigned char bytes[65537];
    } largest;
    largest.constraint = (tp_type_constraint_t){65536, "T", float32_only, 1};
    kernel = relu_kernel();
    kernel.constraints = &largest.constraint;
    tp_plugin_record_t *record = load_kernel(kernel);
    assert_null(record->refusal);
    assert_int_equal(record->kernels[0].constraints[0].dtypes[0], TP_FLOAT32);
    unload(record);
    largest.constraint.struct_size = 65537;
    assert_refusal(load_kernel(kernel), "tp_type_constraint_t.struct_size is 65537, larger");

    kernel = relu_kernel();
    kernel.num_constraints = SIZE_MAX;
    assert_refusal(load_kernel(kernel), "tp_type_constraint_t: 18446744073709551615 elements, "
                                        "more than the 4096 the host accepts");
    static const tp_type_constraint_t endless_dtypes = {sizeof endless_dtypes, "T", float32_only,
                                                        SIZE_MAX};
    kernel = relu_kernel();
    kernel.constraints = &endless_dtypes;
    assert_refusal(load_kernel(kernel), "tp_type_constraint_t.dtypes: 18446744073709551615 "
                                        "elements, more than the 4096");

    tp_op_def_t op = scale_op();
    op.num_attrs = (size_t)1 << 62;
    assert_refusal(load_op(op), "tp_op_attr_def_t: 4611686018427387904 elements, more than the "
                                "4096 the host accepts");
    static tp_op_arg_def_t wide_input;
    wide_input = scale_input;
    wide_input.struct_size = SIZE_MAX;
    op = scale_op();
    op.inputs = &wide_input;
    assert_refusal(load_op(op), "tp_op_arg_def_t.struct_size is 18446744073709551615, larger");
    static tp_op_attr_def_t endless_allowed;
    endless_allowed = scale_attrs[0];
    endless_allowed.num_allowed_dtypes = SIZE_MAX;
    op = scale_op();
    op.attrs = &endless_allowed;
    op.num_attrs = 1;
    assert_refusal(load_op(op), "tp_op_attr_def_t.allowed_dtypes: 18446744073709551615 "
                                "elements");
}

/* ---- Graph passes and the end of init -------------------------------------------------------- */

static void register_two_passes(const tp_host_api_t *host, tp_registrar_t *registrar,
                                tp_plugin_status_t *status) {
    tp_graph_pass_def_t pass = {sizeof pass, "relu_fusion", "APU", TP_PASS_CONSTANT_FOLDING,
                                NULL, run_pass};
    host->register_graph_pass(registrar, &pass, status);
    assert_int_equal(status->code, TP_OK);
    host->register_graph_pass(registrar, &pass, status);
    assert_int_equal(status->code, TP_ALREADY_EXISTS);
}

static void register_one_pass(const tp_host_api_t *host, tp_registrar_t *registrar,
                              tp_plugin_status_t *status) {
    tp_graph_pass_def_t pass = {sizeof pass, "relu_fusion", "APU", TP_PASS_CONSTANT_FOLDING,
                                NULL, run_pass};
    host->register_graph_pass(registrar, &pass, status);
}

static void register_pass_with_unknown_bits(const tp_host_api_t *host, tp_registrar_t *registrar,
                                            tp_plugin_status_t *status) {
    tp_graph_pass_def_t pass = {sizeof pass, "odd", "APU", 1u << 20, NULL, run_pass};
    host->register_graph_pass(registrar, &pass, status);
}

static void one_graph_pass_per_plugin(void **state) {
    (void)state;
    current_init = register_one_pass;
    tp_plugin_descriptor_t d = descriptor();
    tp_plugin_record_t *record = load(&d);
    assert_null(record->refusal);
    assert_true(record->has_graph_pass);
    assert_string_equal(record->graph_pass.device_type, "APU");
    assert_int_equal(record->graph_pass.disabled_standard_passes, TP_PASS_CONSTANT_FOLDING);
    unload(record);

    current_init = register_two_passes;
    assert_refusal(load(&d), "a plug-in may register one graph pass");
    current_init = register_pass_with_unknown_bits;
    assert_refusal(load(&d), "only known TP_PASS_* bits");
}

static tp_registrar_t *kept_registrar;
static const tp_host_api_t *kept_host;

static void keep_registrar(const tp_host_api_t *host, tp_registrar_t *registrar,
                           tp_plugin_status_t *status) {
    (void)status;
    kept_registrar = registrar;
    kept_host = host;
}

static void registration_after_init_is_refused(void **state) {
    (void)state;
    current_init = keep_registrar;
    tp_plugin_descriptor_t d = descriptor();
    tp_plugin_record_t *record = load(&d);
    assert_null(record->refusal);
    assert_int_equal(kept_host->struct_size, sizeof(tp_host_api_t));
    assert_int_equal(kept_host->abi_minor, TP_ABI_MINOR);
    tp_device_type_def_t late = device_type("LATE");
    tp_plugin_status_t status = TP_PLUGIN_STATUS_INIT;
    kept_host->register_device_type(kept_registrar, &late, &status);
    assert_int_equal(status.code, TP_FAILED_PRECONDITION);
    assert_non_null(strstr(status.message, "outside the plug-in's init"));
    assert_int_equal(record->num_device_types, 0);
    unload(record);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(descriptors_are_checked_before_init),
        cmocka_unit_test(valid_device_types_are_copied),
        cmocka_unit_test(invalid_device_types_are_refused),
        cmocka_unit_test(a_type_registered_twice_is_refused),
        cmocka_unit_test(kernels_are_checked_and_copied),
        cmocka_unit_test(kernel_flags_are_read_within_struct_size),
        cmocka_unit_test(ops_are_checked_and_copied),
        cmocka_unit_test(registrations_of_an_older_abi_name_its_dtypes_only),
        cmocka_unit_test(list_lengths_that_overflow_are_refused),
        cmocka_unit_test(claimed_sizes_and_lengths_are_bounded),
        cmocka_unit_test(one_graph_pass_per_plugin),
        cmocka_unit_test(registration_after_init_is_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
