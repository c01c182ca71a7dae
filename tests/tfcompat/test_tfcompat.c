/* SPDX-License-Identifier: Apache-2.0 */
/* TensorFlow plug-ins (tests/tfcompat/plugins/, built against the compatibility headers only)
 * run as tensorplug devices: listed, placed on, their results bit for bit the CPU's, a failing
 * kernel's status on exactly its op, memory returned; broken variants refused with one line
 * each while the process goes on. */
#include "plugin_support.h"

#include <dlfcn.h>

static char *placement_text;
static size_t placement_length;
static FILE *placement_log;

static tp_context_t *context_for(const char *path) {
    tp_context_options_t options = TP_CONTEXT_OPTIONS_INIT;
    options.plugin_path = path;
    options.skip_installed_plugins = true;
    options.log_device_placement = true;
    options.placement_log = placement_log;
    tp_context_t *context = NULL;
    assert_ok(tp_context_create(&options, &context));
    return context;
}

static tp_tensor_t *values(tp_context_t *context, tp_dtype_t dtype, tp_shape_t shape,
                           const void *data, size_t size) {
    tp_tensor_t *tensor = NULL;
    assert_ok(tp_tensor_create(context, dtype, shape, data, size, &tensor));
    return tensor;
}

/* Both tensors' bytes are equal, and their shapes. */
static void assert_same_bits(tp_tensor_t *device_result, tp_tensor_t *cpu_result) {
    assert_true(same_shape(tp_tensor_shape(device_result), tp_tensor_shape(cpu_result)));
    size_t size = tp_tensor_byte_size(cpu_result);
    assert_int_equal(tp_tensor_byte_size(device_result), size);
    void *a = malloc(size + 1), *b = malloc(size + 1);
    assert_non_null(a);
    assert_non_null(b);
    assert_ok(tp_tensor_read(device_result, a, size));
    assert_ok(tp_tensor_read(cpu_result, b, size));
    assert_memory_equal(a, b, size);
    free(a);
    free(b);
}

static void push(tp_context_t *context, const char *device) {
    assert_ok(tp_device_push(context, device));
}

static void pop(tp_context_t *context) { assert_ok(tp_device_pop(context)); }

/* ---- Tests -------------------------------------------------------------------------------- */

static void plugins_load_and_list_their_devices(void **state) {
    (void)state;
    tp_context_t *context = context_for(TP_TFCOMPAT_PLUGIN_DIR);
    tp_plugin_info_t c_plugin = plugin_named(context, "libtp_tfcompat_my_device.so");
    if (!c_plugin.loaded) print_error("refused: %s\n", c_plugin.reason);
    assert_true(c_plugin.loaded);
    assert_string_equal(c_plugin.device_types, "MY_DEVICE");
    assert_string_equal(c_plugin.name, "tp_tfcompat_my_device");
    /* Relu, MatMul, AddV2 (as Add), Square and MaxPool; three more were skipped. */
    assert_int_equal(c_plugin.num_kernels, 5);
    tp_plugin_info_t failing = plugin_named(context, "libtp_tfcompat_failing_device.so");
    assert_true(failing.loaded);
    assert_string_equal(failing.device_types, "FAILING_DEVICE");
    tp_plugin_info_t cxx_plugin = plugin_named(context, "libtp_tfcompat_cxx_device.so");
    assert_true(cxx_plugin.loaded);
    assert_string_equal(cxx_plugin.device_types, "CXX_DEVICE");
    assert_int_equal(cxx_plugin.num_kernels, 1);

    char *text = list_devices(context, NULL);
    assert_non_null(strstr(text, "PhysicalDevice(name='/physical_device:MY_DEVICE:0', "
                                 "device_type='MY_DEVICE')"));
    assert_non_null(strstr(text, "/physical_device:CXX_DEVICE:0"));
    free(text);

    /* One line per registration that could not be honoured, for TF_InitGraph and for
     * TF_InitProfiler. */
    const char *skipped[] = {
        "skipped TensorFlow kernel 'Conv3D' (op Conv3D on MY_DEVICE): tensorplug has no op "
        "matching TensorFlow's Conv3D",
        "skipped TensorFlow kernel 'Identity' (op Identity on MY_DEVICE): tensorplug has no "
        "dtype for TensorFlow's dtype 7 of 'T'",
        "skipped TensorFlow kernel 'Sqrt' (op Sqrt on MY_DEVICE): it wants argument 'x' in host "
        "memory, which tensorplug cannot give yet",
        "[tp_tfcompat_my_device] TF_InitGraph: graph optimizers of TensorFlow plug-ins are not "
        "supported yet; its devices and kernels load without them",
        "[tp_tfcompat_cxx_device] TF_InitProfiler: profilers of TensorFlow plug-ins are not "
        "supported yet; its devices and kernels load without them"};
    for (size_t i = 0; i < sizeof skipped / sizeof skipped[0]; i++) {
        if (count_occurrences(captured_log, skipped[i]) != 1) {
            print_error("wanted once: %s\nlog:\n%s", skipped[i], captured_log);
            fail();
        }
    }
    assert_int_equal(count_occurrences(captured_log, "skipped TensorFlow kernel"), 3);
    assert_int_equal(count_occurrences(captured_log, "skipped plug-in"), 0);
    tp_context_destroy(context);
}

static void results_are_the_cpus_bit_for_bit(void **state) {
    (void)state;
    tp_context_t *context = context_for(TP_TFCOMPAT_PLUGIN_DIR);
    const char *devices[] = {"/device:MY_DEVICE:0", "/device:CXX_DEVICE:0"};
    tp_tensor_t *x = NULL;
    assert_ok(tp_random_normal(context, TP_FLOAT32, TP_SHAPE(17, 31), 7, &x));
    tp_tensor_t *cpu_relu = NULL;
    push(context, "/CPU:0");
    assert_ok(tp_relu(context, x, &cpu_relu));
    pop(context);
    for (size_t d = 0; d < 2; d++) {
        tp_tensor_t *relu = NULL;
        push(context, devices[d]);
        assert_ok(tp_relu(context, x, &relu));
        pop(context);
        assert_string_equal(tp_tensor_device(relu) + strlen(tp_tensor_device(relu)) -
                                strlen(devices[d]),
                            devices[d]);
        assert_same_bits(relu, cpu_relu);
        tp_tensor_release(relu);
    }
    tp_tensor_release(cpu_relu);

    /* MatMul with each pair of transposes. The values are small integers, so that every sum
     * is exact whatever order the CPU's BLAS adds in. */
    float a_values[12], b_values[12];
    for (int i = 0; i < 12; i++) {
        a_values[i] = (float)(i % 5 - 2);
        b_values[i] = (float)(3 - i % 7);
    }
    for (int transposes = 0; transposes < 4; transposes++) {
        bool ta = transposes & 1, tb = transposes & 2;
        tp_tensor_t *a = values(context, TP_FLOAT32, ta ? TP_SHAPE(4, 3) : TP_SHAPE(3, 4),
                                a_values, sizeof a_values);
        tp_tensor_t *b = values(context, TP_FLOAT32, tb ? TP_SHAPE(3, 4) : TP_SHAPE(4, 3),
                                b_values, sizeof b_values);
        tp_tensor_t *on_device = NULL, *on_cpu = NULL;
        push(context, "/device:MY_DEVICE:0");
        assert_ok(tp_matmul(context, a, b, ta, tb, &on_device));
        pop(context);
        push(context, "/CPU:0");
        assert_ok(tp_matmul(context, a, b, ta, tb, &on_cpu));
        pop(context);
        assert_same_bits(on_device, on_cpu);
        tp_tensor_release(a);
        tp_tensor_release(b);
        tp_tensor_release(on_device);
        tp_tensor_release(on_cpu);
    }

    /* AddV2 broadcasting, in float and int32; Square through a temporary. */
    const float f6[] = {1.5f, -2.25f, 3.0f, 0.125f, -7.5f, 1e-3f};
    const int32_t i12[] = {1, -2, 3, 2147483647, 5, 6, -7, 8, 9, 10, 11, -2147483647 - 1};
    struct {
        tp_dtype_t dtype;
        tp_shape_t x_shape, y_shape;
        const void *x, *y;
        size_t x_size, y_size;
    } adds[] = {
        {TP_FLOAT32, TP_SHAPE(2, 3), TP_SHAPE(3), f6, f6 + 3, 24, 12},
        {TP_FLOAT32, TP_SHAPE(2, 1), TP_SHAPE(1, 3), f6, f6 + 2, 8, 12},
        {TP_FLOAT32, TP_SHAPE(6), TP_SCALAR_SHAPE, f6, f6 + 4, 24, 4},
        {TP_INT32, TP_SHAPE(4, 1), TP_SHAPE(3), i12, i12 + 9, 16, 12},
    };
    for (size_t i = 0; i < sizeof adds / sizeof adds[0]; i++) {
        tp_tensor_t *tx = values(context, adds[i].dtype, adds[i].x_shape, adds[i].x,
                                 adds[i].x_size);
        tp_tensor_t *ty = values(context, adds[i].dtype, adds[i].y_shape, adds[i].y,
                                 adds[i].y_size);
        tp_tensor_t *on_device = NULL, *on_cpu = NULL;
        push(context, "/device:MY_DEVICE:0");
        assert_ok(tp_add(context, tx, ty, &on_device));
        pop(context);
        push(context, "/CPU:0");
        assert_ok(tp_add(context, tx, ty, &on_cpu));
        pop(context);
        assert_same_bits(on_device, on_cpu);
        tp_tensor_release(tx);
        tp_tensor_release(ty);
        tp_tensor_release(on_device);
        tp_tensor_release(on_cpu);
    }
    tp_tensor_t *square = NULL, *cpu_square = NULL;
    push(context, "/device:MY_DEVICE:0");
    assert_ok(tp_square(context, x, &square));
    pop(context);
    push(context, "/CPU:0");
    assert_ok(tp_square(context, x, &cpu_square));
    pop(context);
    assert_same_bits(square, cpu_square);
    tp_tensor_release(square);
    tp_tensor_release(cpu_square);
    tp_tensor_release(x);

    fflush(placement_log);
    const char *placed[] = {"Relu in device /job:localhost/replica:0/task:0/device:MY_DEVICE:0",
                            "Relu in device /job:localhost/replica:0/task:0/device:CXX_DEVICE:0",
                            "MatMul in device /job:localhost/replica:0/task:0/device:MY_DEVICE:0",
                            "Add in device /job:localhost/replica:0/task:0/device:MY_DEVICE:0",
                            "Square in device /job:localhost/replica:0/task:0/device:MY_DEVICE:0"};
    for (size_t i = 0; i < sizeof placed / sizeof placed[0]; i++) {
        char line[160];
        snprintf(line, sizeof line, "Executing op %s\n", placed[i]);
        if (strstr(placement_text, line) == NULL) {
            print_error("no placement line '%s' in:\n%s", line, placement_text);
            fail();
        }
    }
    tp_context_destroy(context);
}

/* MaxPool's kernel reads its attributes every way TensorFlow's kernels do; what each getter
 * gave is TensorFlow's documented behaviour, and the pooling it then does is the CPU's. */
static void attributes_read_as_tensorflow_documents(void **state) {
    (void)state;
    tp_context_t *context = context_for(TP_TFCOMPAT_PLUGIN_DIR);
    tp_tensor_t *x = NULL;
    assert_ok(tp_random_normal(context, TP_FLOAT32, TP_SHAPE(2, 7, 9, 3), 11, &x));
    const tp_pool_options_t options[] = {
        {.window_height = 3, .window_width = 3, .stride_height = 1, .stride_width = 2,
         .padding = TP_PADDING_SAME},
        {.window_height = 2, .window_width = 3, .stride_height = 2, .stride_width = 1,
         .padding = TP_PADDING_VALID}};
    for (size_t i = 0; i < 2; i++) {
        tp_tensor_t *on_device = NULL, *on_cpu = NULL;
        push(context, "/device:MY_DEVICE:0");
        assert_ok(tp_max_pool(context, x, &options[i], &on_device));
        pop(context);
        push(context, "/CPU:0");
        assert_ok(tp_max_pool(context, x, &options[i], &on_cpu));
        pop(context);
        assert_same_bits(on_device, on_cpu);
        tp_tensor_release(on_device);
        tp_tensor_release(on_cpu);
    }
    tp_tensor_release(x);
    tp_context_destroy(context);

    void *library = dlopen(TP_TFCOMPAT_PLUGIN_DIR "/libtp_tfcompat_my_device.so",
                           RTLD_NOW | RTLD_NOLOAD);
    assert_non_null(library);
    const char *(*report)(void);
    void *symbol = dlsym(library, "my_device_attribute_report");
    assert_non_null(symbol);
    memcpy(&report, &symbol, sizeof report);
    /* The first run's readings (SAME, strides 1 and 2): list sizes, strings' byte lengths, a
     * list cut at max_vals leaving the rest alone, a string cut at max_length with no NUL,
     * HasAttr, a missing attribute's error, and an unimplemented getter naming itself. */
    assert_string_equal(report(),
                        "ksize size 4/-1; strides cut at 2: 1 1 77; padding size -1/4; "
                        "padding cut at 3: SAM#; padding: SAME#; T 1; "
                        "has padding 1, has nothing 0; int32 nothing: code 3, left 5; "
                        "type list: code 12, TF_OpKernelConstruction_GetAttrTypeList is not "
                        "implemented by tensorplug yet: tensorplug has no attribute of this "
                        "kind to read");
    dlclose(library);
}

static void a_failing_kernel_fails_its_op_alone(void **state) {
    (void)state;
    tp_context_t *context = context_for(TP_TFCOMPAT_PLUGIN_DIR);
    const float x_values[] = {-1.0f, 2.0f, -3.0f, 4.0f};
    tp_tensor_t *x = values(context, TP_FLOAT32, TP_SHAPE(4), x_values, sizeof x_values);
    tp_tensor_t *y = NULL, *z = NULL, *after = NULL;
    push(context, "/device:MY_DEVICE:0");
    assert_ok(tp_relu(context, x, &y));
    pop(context);
    push(context, "/device:FAILING_DEVICE:0");
    assert_error(tp_neg(context, y, &z), TP_DATA_LOSS,
                 "Neg on /job:localhost/replica:0/task:0/device:FAILING_DEVICE:0: Neg: "
                 "FAILING_DEVICE's Neg always fails");
    assert_null(z);
    /* A kernel that asks TF_AllocateOutput for another shape than the op's is told both. */
    assert_error(tp_abs(context, y, &z), TP_INVALID_ARGUMENT,
                 "Abs on /job:localhost/replica:0/task:0/device:FAILING_DEVICE:0: Abs: "
                 "TF_AllocateOutput: output 0 of Abs has shape [4] as tensorplug infers it, but "
                 "the kernel asked for [4,1]");
    assert_null(z);
    /* The device, the op's input and everything else are unaffected. */
    assert_ok(tp_relu(context, y, &after));
    pop(context);
    float read[4];
    const float expected[] = {0.0f, 2.0f, 0.0f, 4.0f};
    assert_ok(tp_tensor_read(after, read, sizeof read));
    assert_memory_equal(read, expected, sizeof read);
    assert_ok(tp_tensor_read(y, read, sizeof read));
    assert_memory_equal(read, expected, sizeof read);
    tp_tensor_release(x);
    tp_tensor_release(y);
    tp_tensor_release(after);
    tp_context_destroy(context);
}

static void temporaries_and_tensors_give_their_memory_back(void **state) {
    (void)state;
    void *library = dlopen(TP_TFCOMPAT_PLUGIN_DIR "/libtp_tfcompat_my_device.so",
                           RTLD_NOW | RTLD_NOLOAD);
    assert_non_null(library);
    int64_t (*live_allocations)(void);
    void *symbol = dlsym(library, "my_device_live_allocations");
    assert_non_null(symbol);
    memcpy(&live_allocations, &symbol, sizeof live_allocations);

    tp_context_t *context = context_for(TP_TFCOMPAT_PLUGIN_DIR);
    tp_tensor_t *x = NULL, *square = NULL;
    assert_ok(tp_random_normal(context, TP_FLOAT32, TP_SHAPE(1000), 3, &x));
    push(context, "/device:MY_DEVICE:0");
    assert_ok(tp_square(context, x, &square));
    assert_ok(tp_tensor_wait(square));
    tp_tensor_release(square);
    int64_t before = live_allocations();
    for (int i = 0; i < 3; i++) {
        assert_ok(tp_square(context, x, &square));
        assert_ok(tp_tensor_wait(square));
        tp_tensor_release(square);
        /* TF_AllocateTemp's memory is the plug-in's own, and was returned after the stream
         * passed the kernel. */
        assert_int_equal(live_allocations(), before);
    }
    pop(context);
    tp_tensor_release(x);
    assert_ok(tp_context_synchronize(context));
    tp_memory_stats_t stats = {.struct_size = sizeof stats};
    assert_ok(tp_context_memory_stats(context, "MY_DEVICE:0", &stats));
    assert_int_equal(stats.bytes_in_use, 0);
    assert_int_equal(stats.num_allocations, 0);
    assert_true(stats.total_allocations > 0);
    tp_context_destroy(context);
    dlclose(library);
}

static void broken_plugins_are_refused_with_one_line_each(void **state) {
    (void)state;
    captured_log[0] = '\0';
    tp_context_t *context = context_for(TP_TFCOMPAT_BROKEN_PLUGIN_DIR);
    const struct {
        const char *file, *reason;
    } refused[] = {
        {"libtp_tfcompat_missing_callback.so",
         "its init failed: SP_StreamExecutor.memcpy_dtoh is not set, and it is required"},
        {"libtp_tfcompat_zero_struct_size.so",
         "its init failed: create_stream_executor or create_device_fns left struct_size 0 in "
         "SP_StreamExecutor"},
        {"libtp_tfcompat_bad_type_name.so",
         "its init failed: SP_Platform.type 'my device' is not [A-Z][A-Z_]* of at most 31 "
         "characters"},
        {"libtp_tfcompat_unresolved_symbol.so",
         "it is a TensorFlow plug-in that needs a function tensorplug's TensorFlow adapter does "
         "not provide"},
    };
    for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++) {
        tp_plugin_info_t info = plugin_named(context, refused[i].file);
        if (info.loaded || strstr(info.reason, refused[i].reason) == NULL) {
            print_error("%s: loaded=%d reason '%s', wanted '%s'\n", refused[i].file,
                        info.loaded, info.reason, refused[i].reason);
            fail();
        }
        char line[256];
        snprintf(line, sizeof line, "skipped plug-in %s/%s: ", TP_TFCOMPAT_BROKEN_PLUGIN_DIR,
                 refused[i].file);
        assert_int_equal(count_occurrences(captured_log, line), 1);
    }
    assert_non_null(strstr(captured_log, "undefined symbol: TF_NewOpDefinitionBuilder"));
    assert_int_equal(count_occurrences(captured_log, "skipped plug-in"), 4);
    assert_int_equal(count_occurrences(captured_log, "\n"), 4);
    /* The process goes on: the CPU runs, and none of the refused types exists. */
    assert_int_equal(tp_physical_device_count(context, "MY_DEVICE"), 0);
    const float one[] = {-1.0f};
    tp_tensor_t *x = values(context, TP_FLOAT32, TP_SHAPE(1), one, sizeof one), *y = NULL;
    assert_ok(tp_relu(context, x, &y));
    tp_tensor_release(x);
    tp_tensor_release(y);
    tp_context_destroy(context);
}

int main(void) {
    placement_log = open_memstream(&placement_text, &placement_length);
    if (placement_log == NULL) return 1;
    tp_log_set_callback(capture_log, NULL);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(plugins_load_and_list_their_devices),
        cmocka_unit_test(results_are_the_cpus_bit_for_bit),
        cmocka_unit_test(attributes_read_as_tensorflow_documents),
        cmocka_unit_test(a_failing_kernel_fails_its_op_alone),
        cmocka_unit_test(temporaries_and_tensors_give_their_memory_back),
        cmocka_unit_test(broken_plugins_are_refused_with_one_line_each),
    };
    int failures = cmocka_run_group_tests(tests, NULL, NULL);
    fclose(placement_log);
    free(placement_text);
    return failures;
}
