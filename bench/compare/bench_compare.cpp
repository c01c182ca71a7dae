// SPDX-License-Identifier: Apache-2.0
// tensorplug beside libtorch 1.13 (C++, 2 threads) and the plain-C or direct-library limit, all
// in one process, for the rows and goals of issue 21. Each row's contenders run interleaved,
// round by round, in an order that rotates every round, so that a neighbour's build slowing the
// machine slows every contender alike; each figure is the median of the rounds. Every figure is
// printed with its speed relative to the row's baseline (the plain loop or the faster direct
// library call) and to libtorch's `_out` form (the one that allocates nothing).
//
// C++ only because libtorch is C++; tensorplug is called through its public C API alone.
// TP_COMPARE_ROUNDS sets the rounds (default 5); TP_COMPARE_CPU_TIME=1 runs everything on one
// thread timed by CPU time (see seconds_now); TP_COMPARE_ONLY=text runs only the rows whose
// name contains the text. TP_COMPARE_SETTLE_MS sets the quiet pause before each timing
// (default 30 ms; see settle).
#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <cblas.h>
#include <torch/csrc/autograd/autograd.h>
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <dnnl.hpp>
#include <pthread.h>
#include <functional>
#include <ctime>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "tensorplug/tensorplug.h"
#include "tensorplug/training.h"

#include "../mlp_direct.h"
#include "../op_chain.h"

namespace {

enum class Unit { GBPS, GFLOPS, NS };

struct Side {
    std::string name;
    std::function<void()> run;
};

// One row: `work` is bytes moved (read + written) for GB/s, floating-point operations for
// GFLOP/s, and for ns the count of what each figure is per (1: per call). `baselines` are the indices of the limit contenders (the fastest
// of them is the baseline); `torch` the index of libtorch's `_out` form, or -1.
struct Row {
    std::string what;
    Unit unit;
    double work;
    std::vector<Side> sides;
    std::vector<int> baselines;
    int torch;
    std::string note;
    Row(std::string what_, Unit unit_, double work_, std::vector<Side> sides_,
        std::vector<int> baselines_, int torch_, std::string note_ = "")
        : what(std::move(what_)), unit(unit_), work(work_), sides(std::move(sides_)),
          baselines(std::move(baselines_)), torch(torch_), note(std::move(note_)) {}
};

// TP_COMPARE_CPU_TIME=1: every contender on one thread, timed by the process's CPU time, which
// a neighbour's work on the machine does not inflate as it does wall time (it still shares the
// caches). For per-thread efficiency on a busy machine; the default is 2 threads, wall time.
bool cpu_time_mode() {
    const char *text = std::getenv("TP_COMPARE_CPU_TIME");
    return text != nullptr && std::strcmp(text, "1") == 0;
}

double seconds_now() {
    static const bool cpu_time = cpu_time_mode();
    if (cpu_time) {
        timespec now;
        clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &now);
        return static_cast<double>(now.tv_sec) + static_cast<double>(now.tv_nsec) * 1e-9;
    }
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch())
        .count();
}

int rounds_wanted() {
    const char *text = std::getenv("TP_COMPARE_ROUNDS");
    int rounds = text != nullptr ? std::atoi(text) : 5;
    return rounds > 0 ? rounds : 5;
}

double median(std::vector<double> values) {
    std::sort(values.begin(), values.end());
    size_t n = values.size();
    return n % 2 == 1 ? values[n / 2] : 0.5 * (values[n / 2 - 1] + values[n / 2]);
}

std::string figure(Unit unit, double work, double seconds) {
    char text[64];
    if (unit == Unit::GBPS)
        std::snprintf(text, sizeof text, "%9.2f GB/s", work / seconds * 1e-9);
    else if (unit == Unit::GFLOPS)
        std::snprintf(text, sizeof text, "%9.1f GFLOP/s", work / seconds * 1e-9);
    else  // per unit of work: per node of a graph, per op of a chain
        std::snprintf(text, sizeof text, "%9.0f ns", seconds / work * 1e9);
    return text;
}

// Waits, idle, for the threads of the contender that ran before to go to sleep. Three thread
// pools share this process (libgomp's for libtorch and the plain loops, OpenBLAS's, and the
// runtime's own), and each keeps its workers spinning for a while after a loop so that the next
// loop starts at once: libgomp's spin for several milliseconds by default. On 2 cores a
// contender timed while another's workers still spin loses one of its cores to them (a 16M Add
// measured 0.55-0.7x of libtorch so; 0.95x with libgomp told to sleep at once). Pausing
// before each timing measures every contender on a machine it has to itself, as a program
// that uses one runtime runs.
void settle() {
    static const int ms = [] {
        const char *text = std::getenv("TP_COMPARE_SETTLE_MS");
        return text != nullptr ? std::max(0, std::atoi(text)) : 30;
    }();
    if (ms > 0) std::this_thread::sleep_for(std::chrono::milliseconds(ms));
}

// Runs the row's contenders, each repeated often enough (about 20 ms per timing) that the clock
// does not matter, and prints every one beside the baseline and libtorch.
void run_row(const Row &row) {
    const char *only = std::getenv("TP_COMPARE_ONLY");
    if (only != nullptr && row.what.find(only) == std::string::npos) return;
    size_t n = row.sides.size();
    std::vector<int> inner(n);
    for (size_t s = 0; s < n; s++) {
        row.sides[s].run();  // warm: first-touch pages, primitive caches, thread pools
        double start = seconds_now();
        row.sides[s].run();
        double once = seconds_now() - start;
        inner[s] = std::max(1, std::min(100000, static_cast<int>(0.02 / std::max(once, 1e-9))));
    }
    std::vector<std::vector<double>> times(n);
    int rounds = rounds_wanted();
    for (int r = 0; r < rounds; r++) {
        for (size_t i = 0; i < n; i++) {
            size_t s = (i + static_cast<size_t>(r)) % n;
            settle();
            double start = seconds_now();
            for (int k = 0; k < inner[s]; k++) row.sides[s].run();
            times[s].push_back((seconds_now() - start) / inner[s]);
        }
    }
    std::vector<double> med(n);
    for (size_t s = 0; s < n; s++) med[s] = median(times[s]);
    double base = 0;
    for (int b : row.baselines)
        if (base == 0 || med[b] < base) base = med[b];
    std::printf("%s%s%s\n", row.what.c_str(), row.note.empty() ? "" : "  -- ",
                row.note.c_str());
    for (size_t s = 0; s < n; s++) {
        std::string vs_base = base > 0 ? std::to_string(base / med[s]).substr(0, 4) + "x" : "-";
        std::string vs_torch =
            row.torch >= 0 ? std::to_string(med[row.torch] / med[s]).substr(0, 4) + "x" : "-";
        std::printf("  %-34s %s   vs limit %6s   vs libtorch _out %6s\n",
                    row.sides[s].name.c_str(), figure(row.unit, row.work, med[s]).c_str(),
                    vs_base.c_str(), vs_torch.c_str());
    }
    std::fflush(stdout);
}

// ---- Inputs, the same values on every side ----------------------------------------------------

tp_context_t *tp_ctx = nullptr;

// The threads of the plain-C limits, as many as every other contender has.
int plain_threads() { return cpu_time_mode() ? 1 : 2; }

tp_shape_t shape_of(std::initializer_list<int64_t> dims) {
    tp_shape_t shape{};
    shape.rank = static_cast<int32_t>(dims.size());
    int d = 0;
    for (int64_t size : dims) shape.dims[d++] = size;
    return shape;
}

std::vector<float> values(size_t count, float low, float high, unsigned seed) {
    std::vector<float> v(count);
    uint32_t state = seed * 2654435761u + 1;
    for (auto &x : v) {
        state = state * 1664525u + 1013904223u;
        x = low + (high - low) * static_cast<float>(state >> 8) / 16777216.0f;
    }
    return v;
}

// The same values as a tensorplug tensor and a libtorch tensor (each owning its own copy).
struct Pair {
    tp_tensor_t *tp = nullptr;
    at::Tensor torch;
    std::vector<float> host;
};

Pair pair(std::initializer_list<int64_t> dims, float low, float high, unsigned seed) {
    Pair p;
    size_t count = 1;
    for (int64_t d : dims) count *= static_cast<size_t>(d);
    p.host = values(count, low, high, seed);
    tp_shape_t shape = shape_of(dims);
    TP_CHECK(tp_tensor_create(tp_ctx, TP_FLOAT32, shape, p.host.data(), count * sizeof(float),
                              &p.tp));
    p.torch = at::from_blob(p.host.data(), std::vector<int64_t>(dims), at::kFloat).clone();
    return p;
}

// A tensorplug call that makes one output, which is released at once (the runtime has no
// `_out` form: outputs come from its allocator).
template <typename F>
std::function<void()> tp_side(F call) {
    return [call] {
        tp_tensor_t *y = nullptr;
        TP_CHECK(call(&y));
        tp_tensor_release(y);
    };
}

// ---- The plain-C limits ---------------------------------------------------------------------

void parallel_memcpy(float *to, const float *from, size_t count) {
#pragma omp parallel for num_threads(plain_threads()) schedule(static)
    for (int part = 0; part < 2; part++) {
        size_t begin = count * static_cast<size_t>(part) / 2,
               end = count * static_cast<size_t>(part + 1) / 2;
        std::memcpy(to + begin, from + begin, (end - begin) * sizeof(float));
    }
}

// out[c][r] = in[r][c] for each of `batch` rows x cols matrices, in 32 x 32 tiles so that both
// sides of each tile stay in the cache: the loop the issue names as Transpose's limit.
void blocked_transpose(float *out, const float *in, int64_t batch, int64_t rows, int64_t cols) {
    const int64_t tile = 32;
    int64_t row_tiles = (rows + tile - 1) / tile;
#pragma omp parallel for num_threads(plain_threads()) schedule(static) collapse(2)
    for (int64_t b = 0; b < batch; b++)
        for (int64_t rt = 0; rt < row_tiles; rt++) {
            const float *src = in + b * rows * cols;
            float *dst = out + b * rows * cols;
            int64_t r0 = rt * tile, r1 = std::min(rows, r0 + tile);
            for (int64_t c0 = 0; c0 < cols; c0 += tile) {
                int64_t c1 = std::min(cols, c0 + tile);
                for (int64_t r = r0; r < r1; r++)
                    for (int64_t c = c0; c < c1; c++) dst[c * rows + r] = src[r * cols + c];
            }
        }
}

// A oneDNN matmul primitive for [batch,] m x k times k x n, created once as a caller would.
struct OnednnMatmul {
    dnnl::engine engine{dnnl::engine::kind::cpu, 0};
    dnnl::stream stream{engine};
    dnnl::matmul primitive;
    dnnl::memory a, b, c;
    OnednnMatmul(int64_t batch, int64_t m, int64_t k, int64_t n, float *pa, float *pb,
                 float *pc) {
        using tag = dnnl::memory::format_tag;
        using dt = dnnl::memory::data_type;
        dnnl::memory::desc a_md = batch > 1 ? dnnl::memory::desc({batch, m, k}, dt::f32, tag::abc)
                                            : dnnl::memory::desc({m, k}, dt::f32, tag::ab);
        dnnl::memory::desc b_md = batch > 1 ? dnnl::memory::desc({batch, k, n}, dt::f32, tag::abc)
                                            : dnnl::memory::desc({k, n}, dt::f32, tag::ab);
        dnnl::memory::desc c_md = batch > 1 ? dnnl::memory::desc({batch, m, n}, dt::f32, tag::abc)
                                            : dnnl::memory::desc({m, n}, dt::f32, tag::ab);
        dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(a_md, b_md, c_md), engine);
        primitive = dnnl::matmul(pd);
        a = dnnl::memory(a_md, engine, pa);
        b = dnnl::memory(b_md, engine, pb);
        c = dnnl::memory(c_md, engine, pc);
    }
    void run() {
        primitive.execute(stream, {{DNNL_ARG_SRC, a}, {DNNL_ARG_WEIGHTS, b}, {DNNL_ARG_DST, c}});
        stream.wait();
    }
};

// ---- The rows -------------------------------------------------------------------------------

const int64_t ELEMENTS = 1 << 24;  // 16M, the element-wise size
const int64_t SIDE = 4096;         // 4096 x 4096 = 16M for reductions, BiasAdd, Transpose

void elementwise_rows() {
    Pair x = pair({SIDE, SIDE}, -1.0f, 1.0f, 1), y = pair({SIDE, SIDE}, 0.5f, 1.5f, 2);
    Pair bias = pair({SIDE}, -1.0f, 1.0f, 3), column = pair({SIDE, 1}, 0.5f, 1.5f, 4);
    at::Tensor out = at::empty({SIDE, SIDE}, at::kFloat);
    std::vector<float> copy(static_cast<size_t>(ELEMENTS));
    const double unary = 8.0 * ELEMENTS, binary = 12.0 * ELEMENTS;
    Side limit{"memcpy", [&] {
                   parallel_memcpy(copy.data(), x.host.data(), static_cast<size_t>(ELEMENTS));
               }};
    auto unary_row = [&](const char *name, tp_status_t *(*tp)(tp_context_t *, tp_tensor_t *,
                                                              tp_tensor_t **),
                         std::function<void()> torch_out, std::function<void()> torch_alloc,
                         const std::string &note) {
        tp_tensor_t *in = x.tp;
        run_row({std::string(name) + " 16M", Unit::GBPS, unary,
                 {limit,
                  {"tensorplug", tp_side([tp, in](tp_tensor_t **o) { return tp(tp_ctx, in, o); })},
                  {"libtorch _out", torch_out},
                  {"libtorch allocating", torch_alloc}},
                 {0},
                 2,
                 note});
    };
    unary_row("Relu", tp_relu, [&] { at::relu_out(out, x.torch); },
              [&] { (void)at::relu(x.torch); }, "");
    unary_row("Neg", tp_neg, [&] { at::neg_out(out, x.torch); }, [&] { (void)at::neg(x.torch); },
              "");
    unary_row("Abs", tp_abs, [&] { at::abs_out(out, x.torch); }, [&] { (void)at::abs(x.torch); },
              "");
    unary_row("Square", tp_square, [&] { at::square_out(out, x.torch); },
              [&] { (void)at::square(x.torch); }, "");

    auto binary_row = [&](const char *name, tp_status_t *(*tp)(tp_context_t *, tp_tensor_t *,
                                                               tp_tensor_t *, tp_tensor_t **),
                          std::function<void()> torch_out, std::function<void()> torch_alloc) {
        tp_tensor_t *a = x.tp, *b = y.tp;
        std::vector<Side> sides{limit};
        if (tp != nullptr)
            sides.push_back(
                {"tensorplug", tp_side([tp, a, b](tp_tensor_t **o) { return tp(tp_ctx, a, b, o); })});
        sides.push_back({"libtorch _out", torch_out});
        sides.push_back({"libtorch allocating", torch_alloc});
        run_row({std::string(name) + " 16M", Unit::GBPS, binary, sides, {0},
                 static_cast<int>(sides.size()) - 2,
                 tp == nullptr ? "tensorplug has no such op" : ""});
    };
    binary_row("Add", tp_add, [&] { at::add_out(out, x.torch, y.torch); },
               [&] { (void)at::add(x.torch, y.torch); });
    binary_row("Sub", tp_sub, [&] { at::sub_out(out, x.torch, y.torch); },
               [&] { (void)at::sub(x.torch, y.torch); });
    binary_row("Mul", tp_mul, [&] { at::mul_out(out, x.torch, y.torch); },
               [&] { (void)at::mul(x.torch, y.torch); });
    binary_row("Div", tp_div, [&] { at::div_out(out, x.torch, y.torch); },
               [&] { (void)at::div(x.torch, y.torch); });
    binary_row("Maximum", tp_maximum, [&] { at::maximum_out(out, x.torch, y.torch); },
               [&] { (void)at::maximum(x.torch, y.torch); });
    binary_row("Minimum", tp_minimum, [&] { at::minimum_out(out, x.torch, y.torch); },
               [&] { (void)at::minimum(x.torch, y.torch); });

    // Broadcasting: a bias along the last axis, and a column against every column.
    {
        tp_tensor_t *a = x.tp, *b = bias.tp, *c = column.tp;
        run_row({"BiasAdd 4096x4096 + 4096", Unit::GBPS, unary,
                 {limit,
                  {"tensorplug", tp_side([a, b](tp_tensor_t **o) { return tp_bias_add(tp_ctx, a, b, o); })},
                  {"libtorch _out", [&] { at::add_out(out, x.torch, bias.torch); }},
                  {"libtorch allocating", [&] { (void)at::add(x.torch, bias.torch); }}},
                 {0},
                 2});
        run_row({"Add 4096x4096 + 4096x1 (broadcast)", Unit::GBPS, unary,
                 {limit,
                  {"tensorplug", tp_side([a, c](tp_tensor_t **o) { return tp_add(tp_ctx, a, c, o); })},
                  {"libtorch _out", [&] { at::add_out(out, x.torch, column.torch); }},
                  {"libtorch allocating", [&] { (void)at::add(x.torch, column.torch); }}},
                 {0},
                 2});
    }
    // Cast float32 -> int32, a comparison (bool out: 4 + 4 + 1 bytes), Select (1 + 4 + 4 + 4).
    {
        tp_tensor_t *a = x.tp, *b = y.tp;
        at::Tensor as_int = at::empty({SIDE, SIDE}, at::kInt);
        at::Tensor as_bool = at::empty({SIDE, SIDE}, at::kBool);
        run_row({"Cast float32->int32 16M", Unit::GBPS, unary,
                 {limit,
                  {"tensorplug", tp_side([a](tp_tensor_t **o) { return tp_cast(tp_ctx, a, TP_INT32, o); })},
                  {"libtorch copy_ into int32", [&] { as_int.copy_(x.torch); }},
                  {"libtorch allocating", [&] { (void)x.torch.to(at::kInt); }}},
                 {0},
                 2});
        run_row({"Greater 16M", Unit::GBPS, 9.0 * ELEMENTS,
                 {limit,
                  {"tensorplug", tp_side([a, b](tp_tensor_t **o) { return tp_greater(tp_ctx, a, b, o); })},
                  {"libtorch _out", [&] { at::gt_out(as_bool, x.torch, y.torch); }},
                  {"libtorch allocating", [&] { (void)at::gt(x.torch, y.torch); }}},
                 {0},
                 2});
        at::Tensor condition = at::gt(x.torch, 0);
        tp_tensor_t *tp_condition = nullptr;
        TP_CHECK(tp_greater(tp_ctx, a, b, &tp_condition));
        run_row({"Select 16M", Unit::GBPS, 13.0 * ELEMENTS,
                 {limit,
                  {"tensorplug", tp_side([tp_condition, a, b](tp_tensor_t **o) {
                       return tp_select(tp_ctx, tp_condition, a, b, o);
                   })},
                  {"libtorch where (no _out in 1.13)", [&] { (void)at::where(condition, x.torch, y.torch); }}},
                 {0},
                 2});
        tp_tensor_release(tp_condition);
    }
    tp_tensor_release(x.tp);
    tp_tensor_release(y.tp);
    tp_tensor_release(bias.tp);
    tp_tensor_release(column.tp);
}

void transcendental_rows() {
    Pair x = pair({SIDE, SIDE}, -4.0f, 4.0f, 5), positive = pair({SIDE, SIDE}, 0.01f, 4.0f, 6);
    at::Tensor out = at::empty({SIDE, SIDE}, at::kFloat);
    std::vector<float> copy(static_cast<size_t>(ELEMENTS));
    Side limit{"memcpy", [&] {
                   parallel_memcpy(copy.data(), x.host.data(), static_cast<size_t>(ELEMENTS));
               }};
    using Tp = tp_status_t *(*)(tp_context_t *, tp_tensor_t *, tp_tensor_t **);
    using Out = at::Tensor &(*)(at::Tensor &, const at::Tensor &);
    using Alloc = at::Tensor (*)(const at::Tensor &);
    struct Op {
        const char *name;
        Tp tp;
        Out out;
        Alloc alloc;
        bool positive;
    };
    const Op ops[] = {{"Exp", tp_exp, at::exp_out, at::exp, false},
                      {"Log", tp_log, at::log_out, at::log, true},
                      {"Tanh", tp_tanh, at::tanh_out, at::tanh, false},
                      {"Sigmoid", tp_sigmoid, at::sigmoid_out, at::sigmoid, false},
                      {"Sqrt", tp_sqrt, at::sqrt_out, at::sqrt, true},
                      {"Rsqrt", tp_rsqrt, at::rsqrt_out, at::rsqrt, true}};
    for (const Op &op : ops) {
        Pair &in = op.positive ? positive : x;
        tp_tensor_t *tin = in.tp;
        Tp tp = op.tp;
        Out o = op.out;
        Alloc a = op.alloc;
        run_row({std::string(op.name) + " 16M", Unit::GBPS, 8.0 * ELEMENTS,
                 {limit,
                  {"tensorplug", tp_side([tp, tin](tp_tensor_t **y) { return tp(tp_ctx, tin, y); })},
                  {"libtorch _out", [&, o] { o(out, in.torch); }},
                  {"libtorch allocating", [&, a] { (void)a(in.torch); }}},
                 {0},
                 2});
    }
    tp_tensor_release(x.tp);
    tp_tensor_release(positive.tp);
}

void reduction_rows() {
    Pair x = pair({SIDE, SIDE}, -1.0f, 1.0f, 7);
    const double bytes = 4.0 * SIDE * SIDE;
    std::vector<float> copy(static_cast<size_t>(ELEMENTS));
    // A read-only limit: the bytes a reduction reads, summed by a plain loop on 2 threads.
    Side limit{"plain sum loop", [&] {
                   const float *p = x.host.data();
                   float total = 0;
#pragma omp parallel for num_threads(plain_threads()) reduction(+ : total) schedule(static)
                   for (int64_t i = 0; i < ELEMENTS; i++) total += p[i];
                   volatile float sink = total;
                   (void)sink;
               }};
    using TpReduce = tp_status_t *(*)(tp_context_t *, tp_tensor_t *, const int64_t *, size_t, bool,
                                      tp_tensor_t **);
    struct Axes {
        const char *name;
        std::vector<int64_t> dims;
    };
    const Axes axes_sets[] = {{"axis 0", {0}}, {"axis 1", {1}}, {"all axes", {0, 1}}};
    struct Op {
        const char *name;
        TpReduce tp;
        std::function<void(at::Tensor &, at::IntArrayRef)> out;
        std::function<void(at::IntArrayRef)> alloc;
    };
    const Op ops[] = {
        {"Sum", tp_sum, [&](at::Tensor &o, at::IntArrayRef d) { at::sum_out(o, x.torch, d); },
         [&](at::IntArrayRef d) { (void)at::sum(x.torch, d); }},
        {"Mean", tp_mean, [&](at::Tensor &o, at::IntArrayRef d) { at::mean_out(o, x.torch, d); },
         [&](at::IntArrayRef d) { (void)at::mean(x.torch, d); }},
        {"Max", tp_max, [&](at::Tensor &o, at::IntArrayRef d) { at::amax_out(o, x.torch, d); },
         [&](at::IntArrayRef d) { (void)at::amax(x.torch, d); }},
        {"Min", tp_min, [&](at::Tensor &o, at::IntArrayRef d) { at::amin_out(o, x.torch, d); },
         [&](at::IntArrayRef d) { (void)at::amin(x.torch, d); }}};
    for (const Op &op : ops)
        for (const Axes &axes : axes_sets) {
            at::Tensor out = at::empty({axes.dims.size() == 2 ? 1 : SIDE}, at::kFloat);
            if (axes.dims.size() == 2) out = at::empty({}, at::kFloat);
            tp_tensor_t *tin = x.tp;
            TpReduce tp = op.tp;
            std::vector<int64_t> dims = axes.dims;
            auto torch_out = op.out;
            auto torch_alloc = op.alloc;
            run_row({std::string(op.name) + " 4096x4096 " + axes.name, Unit::GBPS, bytes,
                     {limit,
                      {"tensorplug", tp_side([tp, tin, dims](tp_tensor_t **y) {
                           return tp(tp_ctx, tin, dims.data(), dims.size(), false, y);
                       })},
                      {"libtorch _out", [&out, torch_out, dims] { torch_out(out, dims); }},
                      {"libtorch allocating", [torch_alloc, dims] { torch_alloc(dims); }}},
                     {0},
                     2});
        }
    // Prod and ArgMax, over one axis each (ArgMax takes one).
    for (int64_t axis = 0; axis < 2; axis++) {
        at::Tensor out = at::empty({SIDE}, at::kFloat), index = at::empty({SIDE}, at::kLong);
        tp_tensor_t *tin = x.tp;
        run_row({"Prod 4096x4096 axis " + std::to_string(axis), Unit::GBPS, bytes,
                 {limit,
                  {"tensorplug", tp_side([tin, axis](tp_tensor_t **y) {
                       return tp_prod(tp_ctx, tin, &axis, 1, false, y);
                   })},
                  {"libtorch _out", [&, axis] { at::prod_out(out, x.torch, axis); }},
                  {"libtorch allocating", [&, axis] { (void)at::prod(x.torch, axis); }}},
                 {0},
                 2});
        run_row({"ArgMax 4096x4096 axis " + std::to_string(axis), Unit::GBPS, bytes,
                 {limit,
                  {"tensorplug", tp_side([tin, axis](tp_tensor_t **y) {
                       return tp_argmax(tp_ctx, tin, axis, TP_INT64, y);
                   })},
                  {"libtorch _out", [&, axis] { at::argmax_out(index, x.torch, axis); }},
                  {"libtorch allocating", [&, axis] { (void)at::argmax(x.torch, axis); }}},
                 {0},
                 2});
    }
    tp_tensor_release(x.tp);
}

void softmax_and_transpose_rows() {
    {
        Pair x = pair({SIDE, 1000}, -4.0f, 4.0f, 8);
        at::Tensor out = at::empty({SIDE, 1000}, at::kFloat);
        std::vector<float> copy(x.host.size());
        Side limit{"memcpy",
                   [&] { parallel_memcpy(copy.data(), x.host.data(), copy.size()); }};
        tp_tensor_t *tin = x.tp;
        const double bytes = 8.0 * SIDE * 1000;
        run_row({"Softmax 4096x1000", Unit::GBPS, bytes,
                 {limit,
                  {"tensorplug", tp_side([tin](tp_tensor_t **y) { return tp_softmax(tp_ctx, tin, y); })},
                  {"libtorch _softmax_out", [&] { at::_softmax_out(out, x.torch, 1, false); }},
                  {"libtorch allocating", [&] { (void)at::softmax(x.torch, 1); }}},
                 {0},
                 2});
        run_row({"LogSoftmax 4096x1000", Unit::GBPS, bytes,
                 {limit,
                  {"tensorplug", tp_side([tin](tp_tensor_t **y) { return tp_log_softmax(tp_ctx, tin, y); })},
                  {"libtorch _log_softmax_out", [&] { at::_log_softmax_out(out, x.torch, 1, false); }},
                  {"libtorch allocating", [&] { (void)at::log_softmax(x.torch, 1); }}},
                 {0},
                 2});
        tp_tensor_release(x.tp);
    }
    struct Case {
        const char *name;
        int64_t batch, rows, cols;
    };
    const Case cases[] = {{"Transpose 4096x4096", 1, SIDE, SIDE},
                          {"Transpose batched 64x256x256 (last two axes)", 64, 256, 256}};
    for (const Case &c : cases) {
        Pair x = c.batch == 1 ? pair({c.rows, c.cols}, -1.0f, 1.0f, 9)
                              : pair({c.batch, c.rows, c.cols}, -1.0f, 1.0f, 9);
        at::Tensor out = c.batch == 1 ? at::empty({c.cols, c.rows}, at::kFloat)
                                      : at::empty({c.batch, c.cols, c.rows}, at::kFloat);
        std::vector<float> moved(x.host.size());
        tp_tensor_t *tin = x.tp;
        std::vector<int64_t> perm = c.batch == 1 ? std::vector<int64_t>{1, 0}
                                                 : std::vector<int64_t>{0, 2, 1};
        int64_t b = c.batch, r = c.rows, k = c.cols;
        run_row({c.name, Unit::GBPS, 8.0 * static_cast<double>(x.host.size()),
                 {{"blocked loop",
                   [&, b, r, k] { blocked_transpose(moved.data(), x.host.data(), b, r, k); }},
                  {"tensorplug", tp_side([tin, perm](tp_tensor_t **y) {
                       return tp_transpose(tp_ctx, tin, perm.data(), perm.size(), y);
                   })},
                  {"libtorch copy_ into out", [&] { out.copy_(x.torch.transpose(-1, -2)); }},
                  {"libtorch contiguous()", [&] { (void)x.torch.transpose(-1, -2).contiguous(); }}},
                 {0},
                 2});
        tp_tensor_release(x.tp);
    }
}

void matmul_rows() {
    for (int64_t n : {256, 1024, 2048}) {
        Pair a = pair({n, n}, -1.0f, 1.0f, 10), b = pair({n, n}, -1.0f, 1.0f, 11);
        at::Tensor out = at::empty({n, n}, at::kFloat);
        std::vector<float> c(static_cast<size_t>(n * n));
        OnednnMatmul onednn(1, n, n, n, a.host.data(), b.host.data(), c.data());
        tp_tensor_t *ta = a.tp, *tb = b.tp;
        int size = static_cast<int>(n);
        run_row({"MatMul " + std::to_string(n), Unit::GFLOPS, 2.0 * n * n * n,
                 {{"OpenBLAS cblas_sgemm", [&, size] {
                       cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, size, size, size,
                                   1.0f, a.host.data(), size, b.host.data(), size, 0.0f, c.data(),
                                   size);
                   }},
                  {"oneDNN matmul", [&] { onednn.run(); }},
                  {"tensorplug", tp_side([ta, tb](tp_tensor_t **y) {
                       return tp_matmul(tp_ctx, ta, tb, false, false, y);
                   })},
                  {"libtorch mm_out", [&] { at::mm_out(out, a.torch, b.torch); }},
                  {"libtorch mm", [&] { (void)at::mm(a.torch, b.torch); }}},
                 {0, 1},
                 3,
                 "limit: the faster direct call"});
        tp_tensor_release(a.tp);
        tp_tensor_release(b.tp);
    }
    // A batch of 256 small 64x64 products: one tp_matmul on the [256, 64, 64] stacks, which
    // runs BatchMatMulV2.
    const int64_t batch = 256, n = 64;
    Pair a = pair({batch, n, n}, -1.0f, 1.0f, 12), b = pair({batch, n, n}, -1.0f, 1.0f, 13);
    at::Tensor out = at::empty({batch, n, n}, at::kFloat);
    std::vector<float> c(static_cast<size_t>(batch * n * n));
    OnednnMatmul onednn(batch, n, n, n, a.host.data(), b.host.data(), c.data());
    int size = static_cast<int>(n);
    run_row({"MatMul batch 256 of 64x64", Unit::GFLOPS, 2.0 * batch * n * n * n,
             {{"OpenBLAS cblas_sgemm per product", [&, size] {
                   for (int64_t i = 0; i < batch; i++) {
                       size_t o = static_cast<size_t>(i * size * size);
                       cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, size, size, size,
                                   1.0f, a.host.data() + o, size, b.host.data() + o, size, 0.0f,
                                   c.data() + o, size);
                   }
               }},
              {"oneDNN batched matmul", [&] { onednn.run(); }},
              {"tensorplug (BatchMatMulV2)", tp_side([&](tp_tensor_t **y) {
                   return tp_matmul(tp_ctx, a.tp, b.tp, false, false, y);
               })},
              {"libtorch bmm_out", [&] { at::bmm_out(out, a.torch, b.torch); }},
              {"libtorch bmm", [&] { (void)at::bmm(a.torch, b.torch); }}},
             {0, 1},
             3,
             "limit: the faster direct call"});
    tp_tensor_release(a.tp);
    tp_tensor_release(b.tp);
}

void dispatch_rows() {
    float one = 1.0f;
    tp_tensor_t *x = nullptr;
    TP_CHECK(tp_tensor_create(tp_ctx, TP_FLOAT32, shape_of({}), &one, sizeof one, &x));
    at::Tensor tx = at::ones({}, at::kFloat), out = at::empty({}, at::kFloat);
    run_row({"Add of 1 element (dispatch)", Unit::NS, 1,
             {{"tensorplug", tp_side([x](tp_tensor_t **y) { return tp_add(tp_ctx, x, x, y); })},
              {"libtorch add_out", [&] { at::add_out(out, tx, tx); }},
              {"libtorch add", [&] { (void)at::add(tx, tx); }}},
             {},
             1,
             "goal: tensorplug <= 150 ns"});
    tp_tensor_release(x);
}


// ---- The runtime's own costs: plug-ins, a device round trip, graphs, a training step --------

// Two threads handing a token back and forth through one mutex and condition variable: what a
// host thread's hand-off to a device's queue thread and back costs at least.
class PingPong {
  public:
    PingPong() { pthread_create(&thread_, nullptr, &PingPong::serve, this); }
    ~PingPong() {
        pthread_mutex_lock(&mutex_);
        stop_ = true;
        pthread_cond_broadcast(&changed_);
        pthread_mutex_unlock(&mutex_);
        pthread_join(thread_, nullptr);
    }
    void round_trip() {
        pthread_mutex_lock(&mutex_);
        pending_ = true;
        pthread_cond_broadcast(&changed_);
        while (pending_) pthread_cond_wait(&changed_, &mutex_);
        pthread_mutex_unlock(&mutex_);
    }

  private:
    static void *serve(void *self) {
        auto *p = static_cast<PingPong *>(self);
        pthread_mutex_lock(&p->mutex_);
        for (;;) {
            while (!p->pending_ && !p->stop_) pthread_cond_wait(&p->changed_, &p->mutex_);
            if (p->stop_) break;
            p->pending_ = false;
            pthread_cond_broadcast(&p->changed_);
        }
        pthread_mutex_unlock(&p->mutex_);
        return nullptr;
    }
    pthread_t thread_;
    pthread_mutex_t mutex_ = PTHREAD_MUTEX_INITIALIZER;
    pthread_cond_t changed_ = PTHREAD_COND_INITIALIZER;
    bool pending_ = false, stop_ = false;
};

// A context that loads the APU's plug-in beside the CPU (the main one loads none).
tp_context_t *apu_context() {
    tp_context_options_t options = TP_CONTEXT_OPTIONS_INIT;
    options.plugin_path = TP_BENCH_APU_PLUGIN_DIR;
    options.skip_installed_plugins = true;
    tp_context_t *context = nullptr;
    TP_CHECK(tp_context_create(&options, &context));
    return context;
}

void plugin_rows(tp_context_t *apu) {
    float one = 1.0f;
    tp_tensor_t *x = nullptr, *on_cpu = nullptr, *on_apu = nullptr;
    TP_CHECK(tp_tensor_create(tp_ctx, TP_FLOAT32, shape_of({}), &one, sizeof one, &x));
    TP_CHECK(tp_tensor_create(apu, TP_FLOAT32, shape_of({}), &one, sizeof one, &on_cpu));
    run_row({"Add of 1 element on the CPU, the APU's plug-in loaded", Unit::NS, 1,
             {{"tensorplug, no plug-in", tp_side([x](tp_tensor_t **y) {
                   return tp_add(tp_ctx, x, x, y);
               })},
              {"tensorplug, APU plug-in loaded", tp_side([apu, on_cpu](tp_tensor_t **y) {
                   return tp_add(apu, on_cpu, on_cpu, y);
               })}},
             {0},
             -1,
             "goal: the plug-in adds at most 10 ns"});
    // The APU's queue thread runs the kernel: a launch, the thread's wake-up and the host's
    // wait for the result. Beside it the least such a round trip costs: a pthread condition
    // variable ping-pong with a second thread.
    TP_CHECK(tp_relu(apu, on_cpu, &on_apu));  // Relu runs on APU:0, its output stays there
    TP_CHECK(tp_tensor_wait(on_apu));
    PingPong ping;
    run_row({"APU launch + wait round trip (Relu of 1 element)", Unit::NS, 1,
             {{"thread ping-pong (condition variable)", [&ping] { ping.round_trip(); }},
              {"tensorplug, APU:0", [apu, on_apu] {
                   tp_tensor_t *y = nullptr;
                   TP_CHECK(tp_relu(apu, on_apu, &y));
                   TP_CHECK(tp_tensor_wait(y));
                   tp_tensor_release(y);
               }}},
             {0},
             -1,
             "goal: at most 10 us"});
    tp_tensor_release(on_apu);
    tp_tensor_release(on_cpu);
    tp_tensor_release(x);
}

// The chain of op_chain.h (1000 cheap ops, Neg and Relu alternating) on one float: per node as
// a traced function, per op eagerly, and per op in libtorch (`_out` forms into one tensor).
enum { CHAIN = OP_CHAIN_LENGTH };

void graph_rows() {
    float one = 1.0f;
    tp_tensor_t *x = nullptr;
    TP_CHECK(tp_tensor_create(tp_ctx, TP_FLOAT32, shape_of({}), &one, sizeof one, &x));
    tp_function_t *function = nullptr;
    TP_CHECK(tp_function_create(tp_ctx, "chain", op_chain_body, 1, nullptr, &function));
    at::Tensor tx = at::ones({}, at::kFloat), a = at::empty({}, at::kFloat),
               b = at::empty({}, at::kFloat);
    run_row({"Chain of 1000 Neg/Relu on 1 element, per node", Unit::NS, CHAIN,
             {{"tensorplug graph (traced function)", tp_side([function, x](tp_tensor_t **y) {
                   return tp_function_call(function, &x, 1, y, 1);
               })},
              {"tensorplug eager", tp_side([x](tp_tensor_t **y) { return op_chain(tp_ctx, x, y); })},
              {"libtorch neg_out/relu_out", [&] {
                   at::neg_out(a, tx);
                   for (int i = 1; i < CHAIN; i++)
                       if (i % 2 == 0)
                           at::neg_out(a, b);
                       else
                           at::relu_out(b, a);
               }}},
             {},
             2,
             "goal: graph at most 30 ns per node"});
    tp_function_destroy(function);
    tp_tensor_release(x);
}

// The training step of mlp_direct.h (Dense(256, relu), Dense(10), MSE, SGD) on a batch of 64:
// tensorplug eagerly (a tape, the ops, tp_sgd_apply), tensorplug as a traced function that
// returns the new weights, the step written directly with OpenBLAS, and libtorch's autograd.
enum { MLP_BATCH = 64 };
constexpr float MLP_RATE = 0.01f;

struct TpMlp {
    tp_variable_t *variables[4] = {};
    tp_tensor_t *x = nullptr, *t = nullptr, *rate = nullptr;
    tp_function_t *step = nullptr;
};

// The forward pass and the loss; weights w1, b1, w2, b2.
tp_status_t *mlp_loss(tp_context_t *c, tp_tensor_t *x, tp_tensor_t *t, tp_tensor_t *const *w,
                      tp_tensor_t **loss) {
    tp_tensor_t *z1 = nullptr, *a1 = nullptr, *h = nullptr, *z2 = nullptr, *y = nullptr;
    tp_status_t *error = tp_matmul(c, x, w[0], false, false, &z1);
    if (error == nullptr) error = tp_bias_add(c, z1, w[1], &a1);
    if (error == nullptr) error = tp_relu(c, a1, &h);
    if (error == nullptr) error = tp_matmul(c, h, w[2], false, false, &z2);
    if (error == nullptr) error = tp_bias_add(c, z2, w[3], &y);
    if (error == nullptr) error = tp_mean_squared_error(c, t, y, loss);
    for (tp_tensor_t *made : {z1, a1, h, z2, y}) tp_tensor_release(made);
    return error;
}

void tp_eager_step(TpMlp *m) {
    tp_tape_t *tape = nullptr;
    TP_CHECK(tp_tape_begin(tp_ctx, &tape));
    tp_tensor_t *w[4], *loss = nullptr, *grads[4];
    for (int i = 0; i < 4; i++) TP_CHECK(tp_variable_read(m->variables[i], &w[i]));
    TP_CHECK(mlp_loss(tp_ctx, m->x, m->t, w, &loss));
    TP_CHECK(tp_tape_gradient_variables(tape, loss, m->variables, 4, grads));
    TP_CHECK(tp_sgd_apply(m->variables, grads, 4, MLP_RATE));
    for (int i = 0; i < 4; i++) tp_tensor_release(w[i]), tp_tensor_release(grads[i]);
    tp_tensor_release(loss);
    tp_tape_destroy(tape);
}

// inputs: x, t, rate, w1, b1, w2, b2; outputs: the four weights after one step.
tp_status_t *mlp_step_body(tp_context_t *c, tp_tensor_t *const *inputs, size_t,
                           tp_tensor_t **outputs, size_t, void *) {
    tp_tape_t *tape = nullptr;
    tp_status_t *error = tp_tape_begin(c, &tape);
    for (int i = 0; i < 4 && error == nullptr; i++) error = tp_tape_watch(tape, inputs[3 + i]);
    tp_tensor_t *loss = nullptr, *grads[4] = {};
    if (error == nullptr) error = mlp_loss(c, inputs[0], inputs[1], inputs + 3, &loss);
    if (error == nullptr) error = tp_tape_gradients(tape, &loss, nullptr, 1, inputs + 3, 4, grads);
    // w - rate * g in one pass per variable, as tp_sgd_apply takes it eagerly.
    for (int i = 0; i < 4 && error == nullptr; i++) {
        tp_tensor_t *update[3] = {inputs[3 + i], inputs[2], grads[i]};
        error = tp_execute(c, "GradientDescentUpdate", update, 3, nullptr, 0, &outputs[i], 1);
    }
    for (int i = 0; i < 4; i++) tp_tensor_release(grads[i]);
    tp_tensor_release(loss);
    tp_tape_destroy(tape);
    return error;
}

void tp_graph_step(TpMlp *m) {
    tp_tensor_t *inputs[7] = {m->x, m->t, m->rate}, *updated[4];
    for (int i = 0; i < 4; i++) TP_CHECK(tp_variable_read(m->variables[i], &inputs[3 + i]));
    TP_CHECK(tp_function_call(m->step, inputs, 7, updated, 4));
    TP_CHECK(tp_variable_assign_all(m->variables, updated, 4));
    for (int i = 0; i < 4; i++) tp_tensor_release(inputs[3 + i]), tp_tensor_release(updated[i]);
}

void training_rows() {
    const int F = MLP_FEATURES, H = MLP_HIDDEN, U = MLP_UNITS;
    std::vector<float> x = values(static_cast<size_t>(MLP_BATCH * F), 0.0f, 1.0f, 21);
    std::vector<float> t = values(static_cast<size_t>(MLP_BATCH * U), -0.5f, 0.5f, 22);
    std::vector<float> w1 = values(static_cast<size_t>(F * H), -0.07f, 0.07f, 23);
    std::vector<float> w2 = values(static_cast<size_t>(H * U), -0.15f, 0.15f, 24);
    std::vector<float> b1(H, 0.0f), b2(U, 0.0f);

    TpMlp m;
    TP_CHECK(tp_tensor_create(tp_ctx, TP_FLOAT32, shape_of({MLP_BATCH, F}), x.data(),
                              x.size() * sizeof(float), &m.x));
    TP_CHECK(tp_tensor_create(tp_ctx, TP_FLOAT32, shape_of({MLP_BATCH, U}), t.data(),
                              t.size() * sizeof(float), &m.t));
    TP_CHECK(tp_tensor_create(tp_ctx, TP_FLOAT32, shape_of({}), &MLP_RATE, sizeof MLP_RATE,
                              &m.rate));
    const std::vector<float> *initial[4] = {&w1, &b1, &w2, &b2};
    const std::initializer_list<int64_t> shapes[4] = {{F, H}, {H}, {H, U}, {U}};
    for (int i = 0; i < 4; i++) {
        tp_tensor_t *value = nullptr;
        TP_CHECK(tp_tensor_create(tp_ctx, TP_FLOAT32, shape_of(shapes[i]), initial[i]->data(),
                                  initial[i]->size() * sizeof(float), &value));
        TP_CHECK(tp_variable_create(tp_ctx, "w", value, nullptr, &m.variables[i]));
        tp_tensor_release(value);
    }
    TP_CHECK(tp_function_create(tp_ctx, "mlp_step", mlp_step_body, 4, nullptr, &m.step));

    mlp_weights_t direct = {mlp_floats(w1.size()), mlp_floats(b1.size()), mlp_floats(w2.size()),
                            mlp_floats(b2.size())};
    std::copy(w1.begin(), w1.end(), direct.w1);
    std::copy(w2.begin(), w2.end(), direct.w2);
    mlp_share_t share;
    mlp_share_init(&share, &direct, MLP_BATCH, MLP_BATCH);
    share.x = x.data();
    share.y = t.data();

    at::Tensor tx = at::from_blob(x.data(), {MLP_BATCH, F}, at::kFloat).clone();
    at::Tensor tt = at::from_blob(t.data(), {MLP_BATCH, U}, at::kFloat).clone();
    std::vector<at::Tensor> tw = {
        at::from_blob(w1.data(), {F, H}, at::kFloat).clone().set_requires_grad(true),
        at::from_blob(b1.data(), {H}, at::kFloat).clone().set_requires_grad(true),
        at::from_blob(w2.data(), {H, U}, at::kFloat).clone().set_requires_grad(true),
        at::from_blob(b2.data(), {U}, at::kFloat).clone().set_requires_grad(true)};

    run_row({"MLP 784-256-10 training step, batch 64 (MSE, SGD)", Unit::NS, 1,
             {{"OpenBLAS by hand", [&share, &direct] {
                   mlp_share_step(&share);
                   mlp_apply_all(&direct, &share, 1, MLP_RATE);
               }},
              {"tensorplug eager (tape, sgd_apply)", [&m] { tp_eager_step(&m); }},
              {"tensorplug graph (traced step)", [&m] { tp_graph_step(&m); }},
              {"libtorch autograd", [&tx, &tt, &tw] {
                   at::Tensor h = at::relu(at::addmm(tw[1], tx, tw[0]));
                   at::Tensor loss = at::mse_loss(at::addmm(tw[3], h, tw[2]), tt);
                   std::vector<at::Tensor> grads = torch::autograd::grad({loss}, tw);
                   at::NoGradGuard no_grad;
                   for (size_t i = 0; i < tw.size(); i++) tw[i].sub_(grads[i], MLP_RATE);
               }}},
             {0},
             3,
             "goal: eager at least 0.9x the OpenBLAS step, graph at least eager"});

    mlp_share_free(&share);
    for (float *w : {direct.w1, direct.b1, direct.w2, direct.b2}) free(w);
    tp_function_destroy(m.step);
    for (tp_variable_t *v : m.variables) tp_variable_destroy(v);
    for (tp_tensor_t *tensor : {m.x, m.t, m.rate}) tp_tensor_release(tensor);
}
}  // namespace

int main() {
    const int threads = cpu_time_mode() ? 1 : 2;
    // Before the first context: the CPU device reads it once (OpenBLAS's threads included).
    if (threads == 1) setenv("TP_CPU_THREADS", "1", 1);
    tp_log_set_level(TP_LOG_ERROR);
    tp_context_options_t options = TP_CONTEXT_OPTIONS_INIT;
    options.no_plugins = true;  // the built-in CPU alone: no plug-in's devices in the figures
    TP_CHECK(tp_context_create(&options, &tp_ctx));
    at::set_num_threads(threads);
    omp_set_num_threads(threads);
    std::printf("tensorplug vs libtorch and the direct limit; float32, %d thread(s), %s, median "
                "of %d interleaved rounds.\nGB/s counts bytes read + written; 'vs' is speed "
                "relative (above 1: faster).\n\n",
                threads, threads == 1 ? "process CPU time" : "wall time", rounds_wanted());
    dispatch_rows();
    tp_context_t *apu = apu_context();
    plugin_rows(apu);
    tp_context_destroy(apu);
    graph_rows();
    training_rows();
    elementwise_rows();
    transcendental_rows();
    reduction_rows();
    softmax_and_transpose_rows();
    matmul_rows();
    tp_context_destroy(tp_ctx);
    return 0;
}
