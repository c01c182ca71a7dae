/* The APU's injected faults through the runtime: each becomes a status naming the op and the
 * device, the context stays usable, and no memory is left behind. The fault comes from the
 * environment (read once per process), so ctest runs this program once per fault:
 *   TP_APU_FAIL_ALLOCATION=1 test_apu_faults allocation
 *   TP_APU_FAIL_KERNEL=2     test_apu_faults kernel                                        */
#include "../unit/test_support.h"

#include <stdlib.h>

#include "../unit/device_support.h"

static const float values[4] = {-1, 2, -3, 4};

static tp_context_t *apu_context(void) {
    tp_context_options_t options = TP_CONTEXT_OPTIONS_INIT;
    options.plugin_path = TP_APU_PLUGIN_DIR;
    options.skip_installed_plugins = true;
    tp_context_t *context;
    assert_ok(tp_context_create(&options, &context));
    assert_int_equal(tp_physical_device_count(context, "APU"), 1);
    return context;
}

/* relu(values) on the APU, read back; the status of whichever step failed. */
static tp_status_t *relu_on_apu(tp_context_t *context, float *out) {
    tp_tensor_t *a = NULL, *b = NULL;
    tp_status_t *status =
        tp_tensor_create(context, TP_FLOAT32, TP_SHAPE(4), values, sizeof values, &a);
    if (status == NULL) status = tp_relu(context, a, &b);
    if (status == NULL) status = tp_tensor_read(b, out, 4 * sizeof(float));
    tp_tensor_release(a);
    tp_tensor_release(b);
    return status;
}

static void assert_correct(const float *got) {
    assert_true(got[0] == 0 && got[1] == 2 && got[2] == 0 && got[3] == 4);
}

/* No error left unreported, no tensor memory in use. */
static void assert_nothing_left(tp_context_t *context) {
    for (size_t i = 0; i < context->registry.num_devices; i++)
        assert_ok(tp_device_synchronize(context->registry.devices[i]));
    assert_int_equal(tensor_bytes_in_use(context), 0);
}

/* TP_APU_FAIL_ALLOCATION=1: the APU's allocator takes its region from the device on the first
 * tensor, the input's copy; that fails, and the next Relu's attempt succeeds. */
static void a_failed_allocation_is_a_status(void **state) {
    (void)state;
    tp_context_t *context = apu_context();
    float got[4];
    assert_error(relu_on_apu(context, got), TP_RESOURCE_EXHAUSTED,
                 "OOM when allocating tensor with shape [4] and type float32 on "
                 "/job:localhost/replica:0/task:0/device:APU:0 by allocator APU_0_bfc\n"
                 "cannot allocate 16 bytes (allocating 8388608 bytes on "
                 "/job:localhost/replica:0/task:0/device:APU:0: APU:0: injected failure of "
                 "allocation 1 (TP_APU_FAIL_ALLOCATION)); APU_0_bfc: in use 0 bytes");
    assert_ok(relu_on_apu(context, got)); /* only the first fails */
    assert_correct(got);
    assert_nothing_left(context);
    tp_context_destroy(context);
}

/* TP_APU_FAIL_KERNEL=2: the second launch fails on the queue thread; the read reports it. */
static void a_failed_kernel_surfaces_at_the_read(void **state) {
    (void)state;
    tp_context_t *context = apu_context();
    float got[4];
    assert_ok(relu_on_apu(context, got));
    assert_error(relu_on_apu(context, got), TP_INTERNAL,
                 "Relu on APU:0: injected failure of kernel launch 2 (TP_APU_FAIL_KERNEL)");
    assert_ok(relu_on_apu(context, got));
    assert_correct(got);
    assert_nothing_left(context);
    tp_context_destroy(context);
}

int main(int argc, char **argv) {
    const struct CMUnitTest allocation[] = {cmocka_unit_test(a_failed_allocation_is_a_status)};
    const struct CMUnitTest kernel[] = {cmocka_unit_test(a_failed_kernel_surfaces_at_the_read)};
    tp_log_set_level(TP_LOG_ERROR);
    if (argc == 2 && strcmp(argv[1], "allocation") == 0)
        return cmocka_run_group_tests(allocation, NULL, NULL);
    if (argc == 2 && strcmp(argv[1], "kernel") == 0)
        return cmocka_run_group_tests(kernel, NULL, NULL);
    fprintf(stderr, "usage: test_apu_faults allocation|kernel\n");
    return 2;
}
